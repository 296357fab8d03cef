//! The chain tree: roots, chains, branches, retries, quarantined calls, boundaries.

use super::memo::{self, Slot};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::{inner_rows, inner_width};
use super::{Theme, clip, pane_block, short_call, strings};
use crate::app::tree::TreeRow;
use crate::app::{App, Pane};
use tokscope_core::rebuild::RecordFate;
use tokscope_core::store::ParentResolution;

/// Draw the tree of the open rollout.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let focused = app.focus == Pane::Tree;
    let (Some(view), Some(analysis)) = (&app.view, app.shown()) else {
        let block = pane_block(crate::app::Pane::Tree.spec().title.into(), focused, theme);
        memo::render(
            frame,
            Slot::Tree,
            Paragraph::new(strings::no_view(app)).block(block),
            area,
        );
        return;
    };
    let rid = analysis.rollout_id();
    let Some(build) = &analysis.build else {
        let block = pane_block(
            format!(
                "{} · {}",
                crate::app::Pane::Tree.spec().title,
                short_call(rid, "")
            ),
            focused,
            theme,
        );
        memo::render(
            frame,
            Slot::Tree,
            Paragraph::new(strings::NO_BUILD).block(block),
            area,
        );
        return;
    };
    let records = &analysis.capture.records;
    let first_at = records
        .iter()
        .map(|r| r.created_at)
        .fold(f64::INFINITY, f64::min);
    // The calls' `+s` count from the first call, whose wall-clock time the title gives.
    let since = tokscope_core::text::moment(first_at, app.zone)
        .map_or(String::new(), |t| format!(" · +0 = {t}"));
    let title = format!(
        "{} · {} · {} · {}{}{since}",
        crate::app::Pane::Tree.spec().title,
        tokscope_core::text::count(build.nodes.len(), "call", "calls"),
        tokscope_core::text::count(build.notes.roots, "root", "roots"),
        tokscope_core::text::count(build.chains.len(), "chain", "chains"),
        if view.what_if.is_some() {
            " · WHAT-IF"
        } else {
            ""
        }
    );
    let block = pane_block(super::fit_title(&title, area), focused, theme);
    let width = inner_width(area);
    let mut lines = Vec::with_capacity(inner_rows(area));
    for row_index in view.tree.visible() {
        let row = &view.rows[row_index];
        let mut spans: Vec<Span> = Vec::new();
        match row {
            TreeRow::Node {
                node,
                depth,
                hidden,
                last_sibling,
            } => {
                let call = &build.nodes[*node];
                let record = &records[call.record];
                let indent = "  ".repeat((*depth).min(12));
                // A branch's siblings hang from ├ and the last from └; a chain goes on with │.
                let glyph = match (call.parent, last_sibling) {
                    (None, _) => "◆",
                    (Some(_), Some(false)) => "├",
                    (Some(_), Some(true)) => "└",
                    (Some(_), None) => "│",
                };
                let mut style = if build.on_main(*node) {
                    theme.good()
                } else if build.chain_of(*node).is_some() {
                    ratatui::style::Style::new()
                } else {
                    theme.dim()
                };
                if call.quarantined {
                    style = theme.quarantined();
                }
                let fresh = view.new_records.is_some_and(|(before, at)| {
                    call.record >= before && app.now.duration_since(at) < crate::app::HIGHLIGHT
                });
                spans.push(Span::raw(format!(
                    "{indent}{glyph}{}",
                    if fresh { "✦" } else { " " }
                )));
                spans.push(Span::styled(
                    short_call(&record.model_call_id, rid).into_owned(),
                    style,
                ));
                spans.push(Span::styled(
                    format!(
                        " p{} g{} +{:.1}s ",
                        call.prompt.len(),
                        record.generation_token_ids.len(),
                        record.created_at - first_at
                    ),
                    theme.dim(),
                ));
                let decision = match (call.note, call.parent) {
                    (Some(note), _) if note.is_boundary() => {
                        Span::styled(format!("⊘ {note}"), theme.problem())
                    }
                    (Some(note), Some(parent)) => Span::styled(
                        format!(
                            "← {} ({note})",
                            short_call(&records[build.record_of(parent)].model_call_id, rid)
                        ),
                        theme.heading(),
                    ),
                    (_, Some(parent)) => Span::raw(format!(
                        "← {}",
                        short_call(&records[build.record_of(parent)].model_call_id, rid)
                    )),
                    (_, None) => Span::raw(match record.parent_resolution {
                        Some(ParentResolution::Root) => "root",
                        _ => "root?",
                    }),
                };
                spans.push(decision);
                let mut flags = String::new();
                if record.prompt_is_delta {
                    flags.push_str(" Δ");
                }
                if record.prefix_supplied {
                    flags.push_str(" P✓");
                } else if record.prefix_requested {
                    flags.push_str(" P?");
                }
                if let Some(group) = build.retry_group(*node) {
                    flags.push_str(&format!(" retry×{}", group.len()));
                }
                if call.quarantined {
                    flags.push_str(" quarantined");
                }
                if *hidden > 0 {
                    flags.push_str(&format!(" [+{hidden} hidden]"));
                }
                spans.push(Span::styled(flags, theme.heading()));
                if let Some(chain) = build.chain_ending_at[*node] {
                    let chain = build.chains[chain].chain_id;
                    spans.push(Span::styled(format!(" ⇒ {chain}"), theme.good()));
                }
            }
            TreeRow::SetAside { record } => {
                let r = &records[*record];
                let (glyph, what) = match &build.fates[*record] {
                    RecordFate::Duplicate(_) => ("=", "duplicate record, ignored".to_string()),
                    RecordFate::Conflict(_) => ("≠", "conflicting duplicate".to_string()),
                    RecordFate::DeltaBroken => ("Δ✗", "delta prompt cannot be rebuilt".to_string()),
                    RecordFate::EmptyGeneration => ("∅", "empty generation, left out".to_string()),
                    RecordFate::Placed(_) => ("?", String::new()),
                };
                spans.push(Span::styled(format!("{glyph} "), theme.problem()));
                spans.push(Span::styled(
                    short_call(&r.model_call_id, rid).into_owned(),
                    theme.dim(),
                ));
                spans.push(Span::styled(format!(" {what}"), theme.dim()));
            }
        }
        // Clip the row to the pane width.
        let mut remaining = width;
        let mut clipped = Vec::new();
        for span in spans {
            if remaining == 0 {
                break;
            }
            let text = clip(&span.content, remaining);
            remaining = remaining.saturating_sub(text.chars().count());
            let mut style = span.style;
            if row_index == view.tree.selected() {
                style = style.patch(theme.selected());
            }
            clipped.push(Span::styled(text, style));
        }
        lines.push(Line::from(clipped));
    }
    memo::render(frame, Slot::Tree, Paragraph::new(lines).block(block), area);
}
