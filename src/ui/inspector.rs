//! The inspector: divergence, what-if, every field of the selected record, the verdict.

use super::memo::{self, Slot};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use serde_json::Value;

use super::{Theme, clip, detail_block, short_call, strings};
use crate::app::App;
use tokscope_core::rebuild::divergence::{Divergence, Reference};
use tokscope_core::text::sanitize;
use tokscope_core::verdict::{Analysis, Summary};

/// Draw the inspector; returns its text's length in lines as wrapped (for scrolling) and,
/// when a search targets it, the first wrapped line of every line holding the query.
pub(crate) fn draw(
    frame: &mut Frame,
    app: &App,
    theme: Theme,
    area: Rect,
) -> (usize, Option<Vec<usize>>) {
    let block = detail_block(crate::app::Pane::Inspector.spec().title.into(), app, theme);
    let mut content = lines(app, theme);
    let matches = app
        .search
        .as_ref()
        .filter(|s| s.pane == crate::app::Pane::Inspector)
        .map(|search| {
            let width = area.width.saturating_sub(2);
            let mut at = 0;
            let mut found = Vec::new();
            for line in &mut content {
                let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
                if crate::app::search::matches(&text, &search.query) {
                    // The current match stands out; the others are marked.
                    let current = search.inspector_at == Some(found.len());
                    let mark = if current {
                        theme.selected()
                    } else {
                        ratatui::style::Style::new()
                            .add_modifier(ratatui::style::Modifier::UNDERLINED)
                    };
                    line.style = line.style.patch(mark);
                    found.push(at);
                }
                at += Paragraph::new(line.clone())
                    .wrap(Wrap { trim: false })
                    .line_count(width);
            }
            found
        });
    let paragraph = Paragraph::new(content).wrap(Wrap { trim: false });
    let length = memo::line_count(&paragraph, area.width.saturating_sub(2));
    // The app clamps its scroll to the length measured here; until that arrives, clamp too.
    let height = super::layout::inner_rows(area);
    let top = app
        .view
        .as_ref()
        .map_or(0, |v| v.inspector.top())
        .min(length.saturating_sub(height));
    let paragraph = paragraph
        .block(block)
        .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0));
    memo::render(frame, Slot::Detail, paragraph, area);
    (length, matches)
}

fn field(name: &str, value: impl std::fmt::Display, theme: Theme) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name}: "), theme.dim()),
        Span::raw(sanitize(&clip(&value.to_string(), 2000)).into_owned()),
    ])
}

/// The inspector's content.
pub(crate) fn lines(app: &App, theme: Theme) -> Vec<Line<'static>> {
    let (Some(view), Some(analysis)) = (&app.view, app.shown()) else {
        return vec![Line::from(strings::no_view(app))];
    };
    let mut out = Vec::new();
    if let Some(divergence) = &view.divergence {
        divergence_lines(analysis, divergence, app.detok.as_deref(), theme, &mut out);
    }
    if let Some(what_if) = &view.what_if {
        let terminal = what_if
            .options
            .terminal_call_id
            .as_deref()
            .unwrap_or("none");
        out.push(Line::from(Span::styled(
            format!(
                "WHAT-IF · terminal {} · mask_incomplete_when_attributed {}",
                sanitize(terminal),
                what_if.options.mask_incomplete_when_attributed
            ),
            theme.heading(),
        )));
        for change in &what_if.changes {
            out.push(Line::from(format!(
                "  {}",
                sanitize(&strings::what_if_change(change))
            )));
        }
        out.push(Line::from(""));
    }
    verdict_lines(analysis, theme, &mut out);
    // The rollout as listed (not a what-if): its row's context and its cause signature.
    if view.what_if.is_none()
        && let Some(summary) = app.rollouts.get(view.index)
    {
        sample_lines(summary, theme, &mut out);
    }
    out.push(Line::from(""));
    if let Some(record) = app.selected_record() {
        record_lines(analysis, record, app.zone, theme, &mut out);
        out.push(Line::from(""));
    }
    detail_lines(analysis, theme, &mut out);
    out
}

fn divergence_lines(
    analysis: &Analysis,
    d: &Divergence,
    detok: Option<&tokscope_core::detok::Detokenizer>,
    theme: Theme,
    out: &mut Vec<Line<'static>>,
) {
    let records = &analysis.capture.records;
    let Some(build) = analysis.build.as_ref() else {
        return;
    };
    let rid = analysis.rollout_id();
    let call = &records[build.record_of(d.node)].model_call_id;
    let against = match d.reference {
        Reference::ClaimedNode(_) => "its claimed parent",
        Reference::ClaimedRecord(_) => "its claimed parent (set aside)",
        Reference::Candidate(_) => "the longest-prefix candidate",
    };
    out.push(Line::from(Span::styled(
        format!(
            "DIVERGENCE · {} vs {against} {}",
            short_call(call, rid),
            short_call(&d.reference_call, rid)
        ),
        theme.heading(),
    )));
    if d.tokens_agree() {
        out.push(Line::from(format!(
            "  the prompt ({} tokens) starts with all {} reference tokens: the link failed on the \
             recorded lineage (cum_len / digest), not on tokens",
            d.prompt_len, d.reference_len
        )));
    } else {
        out.push(Line::from(format!(
            "  first difference at position {} (prompt {} tokens, reference {} tokens)",
            d.position, d.prompt_len, d.reference_len
        )));
        for (label, window) in [
            ("prompt   ", &d.prompt_window),
            ("reference", &d.reference_window),
        ] {
            let mut spans = vec![Span::styled(
                format!("  {label} @{}: ", d.window_start),
                theme.dim(),
            )];
            for (offset, token) in window.iter().enumerate() {
                let style = if d.window_start + offset == d.position {
                    theme.problem().patch(theme.cursor())
                } else if d.window_start + offset > d.position {
                    theme.dim()
                } else {
                    ratatui::style::Style::new()
                };
                spans.push(Span::styled(format!("{token} "), style));
            }
            if window.len() + d.window_start <= d.position {
                spans.push(Span::styled("(ends)", theme.problem()));
            }
            out.push(Line::from(spans));
            if let Some(detok) = detok {
                let split = d.position.saturating_sub(d.window_start).min(window.len());
                out.push(Line::from(vec![
                    Span::styled("    text: ", theme.dim()),
                    Span::raw(super::tokens::visible(&detok.decode(&window[..split]))),
                    Span::styled(
                        super::tokens::visible(&detok.decode(&window[split..])),
                        theme.problem(),
                    ),
                ]));
            }
        }
    }
    out.push(Line::from(""));
}

fn record_lines(
    analysis: &Analysis,
    index: usize,
    zone: tokscope_core::text::Zone,
    theme: Theme,
    out: &mut Vec<Line<'static>>,
) {
    let r = &analysis.capture.records[index];
    let at = analysis.capture.record_lines[index];
    out.push(Line::from(Span::styled(
        format!(
            "RECORD {} · line {} (byte {})",
            sanitize(&r.model_call_id),
            at.line,
            at.offset
        ),
        theme.heading(),
    )));
    let fate = analysis.build.as_ref().map(|b| match &b.fates[index] {
        tokscope_core::rebuild::RecordFate::Placed(node) => {
            let n = &b.nodes[*node];
            let mut text = match n.parent {
                Some(p) => format!(
                    "placed; parent {}",
                    analysis.capture.records[b.record_of(p)].model_call_id
                ),
                None => "placed as a root".to_string(),
            };
            if let Some(note) = n.note {
                text.push_str(&format!(" ({note})"));
            }
            if n.quarantined {
                text.push_str("; quarantined");
            }
            text
        }
        tokscope_core::rebuild::RecordFate::Duplicate(of) => format!(
            "{} {}",
            strings::FATE_DUPLICATE,
            analysis.capture.records[*of].model_call_id
        ),
        tokscope_core::rebuild::RecordFate::Conflict(of) => format!(
            "{} {}",
            strings::FATE_CONFLICT,
            analysis.capture.records[*of].model_call_id
        ),
        tokscope_core::rebuild::RecordFate::DeltaBroken => strings::FATE_DELTA_BROKEN.into(),
        tokscope_core::rebuild::RecordFate::EmptyGeneration => strings::FATE_EMPTY.into(),
    });
    if let Some(fate) = fate {
        out.push(field("build decision", fate, theme));
    }
    out.push(field("schema_version", r.schema_version, theme));
    out.push(field("rollout_id", &r.rollout_id, theme));
    out.push(field("model", &r.model, theme));
    out.push(field(
        "created_at",
        match tokscope_core::text::moment(r.created_at, zone) {
            Some(moment) => format!("{} ({moment})", r.created_at),
            None => r.created_at.to_string(),
        },
        theme,
    ));
    out.push(field(
        "parent_resolution",
        r.parent_resolution.map_or("null", |p| p.as_str()),
        theme,
    ));
    out.push(field(
        "parent_call_id",
        r.parent_call_id.as_deref().unwrap_or("null"),
        theme,
    ));
    out.push(field(
        "parent_resolution_reason",
        &r.parent_resolution_reason,
        theme,
    ));
    out.push(field(
        "prompt / generation",
        format!(
            "{} / {} tokens{}",
            r.prompt_token_ids.len(),
            r.generation_token_ids.len(),
            if r.prompt_is_delta {
                " (prompt is a delta)"
            } else {
                ""
            }
        ),
        theme,
    ));
    out.push(field(
        "cum_len",
        r.cum_len.map_or("null".into(), |v| v.to_string()),
        theme,
    ));
    out.push(field(
        "digest",
        r.digest.as_deref().unwrap_or("null"),
        theme,
    ));
    out.push(field(
        "prefix requested / supplied",
        format!("{} / {}", r.prefix_requested, r.prefix_supplied),
        theme,
    ));
    out.push(field(
        "continuation",
        format!(
            "fingerprint {:?} · context {} {:?} · version {}",
            r.continuation_fingerprint,
            r.continuation_context_len,
            r.continuation_context_digest,
            r.fingerprint_version
                .map_or("null".into(), |v| v.to_string())
        ),
        theme,
    ));
    out.push(field(
        "token_item_index",
        r.token_item_index.map_or("null".into(), |v| v.to_string()),
        theme,
    ));
    if !r.routed_experts.is_null() {
        out.push(field(
            "routed_experts",
            super::preview(&r.routed_experts, 200),
            theme,
        ));
    }
    for (key, value) in r.extra.iter() {
        out.push(field(
            &format!("{} (unknown)", clip(key, 80)),
            super::preview(value, 200),
            theme,
        ));
    }
    out.push(Line::from(Span::styled(
        format!("output items ({})", r.output_items.len()),
        theme.dim(),
    )));
    for (index, item) in r.output_items.iter().enumerate() {
        let carrier = if r.token_item_index == Some(index) {
            " [tokens]"
        } else {
            ""
        };
        out.push(Line::from(format!(
            "  {index}. {}{carrier}",
            sanitize(&describe_item(item))
        )));
    }
}

/// One output item, readably: message text, reasoning summary, tool call with arguments.
pub(crate) fn describe_item(item: &serde_json::Map<String, Value>) -> String {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("?");
    // Only the start of each text is looked at: a message can be hundreds of megabytes.
    let texts = |key: &str| -> String {
        let mut out = String::new();
        let parts = item
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for text in parts.filter_map(|p| p.get("text").and_then(Value::as_str)) {
            if out.len() > 300 {
                break;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&clip(text, 301));
        }
        out
    };
    match kind {
        "message" => format!(
            "message ({}): {}",
            item.get("role").and_then(Value::as_str).unwrap_or("?"),
            clip(&texts("content"), 300)
        ),
        "reasoning" => format!("reasoning: {}", clip(&texts("summary"), 300)),
        "function_call" => format!(
            "tool call {}({})",
            item.get("name").and_then(Value::as_str).unwrap_or("?"),
            clip(
                item.get("arguments").and_then(Value::as_str).unwrap_or(""),
                300
            )
        ),
        _ => format!("{}: {}", clip(kind, 40), super::preview(item, 300)),
    }
}

fn verdict_lines(analysis: &Analysis, theme: Theme, out: &mut Vec<Line<'static>>) {
    out.push(Line::from(vec![
        Span::styled("VERDICT ", theme.heading()),
        Span::styled(
            super::list::badge(analysis.live_status(), analysis.verdict).to_string(),
            theme.verdict(analysis.live_status(), analysis.verdict),
        ),
        Span::raw(format!(
            " · {}{} · mask_sample {}",
            analysis.lifecycle.name(),
            match analysis.lifecycle {
                tokscope_core::verdict::Lifecycle::Live => ": would be, if frozen now",
                tokscope_core::verdict::Lifecycle::Cleared => ": every file deleted",
                tokscope_core::verdict::Lifecycle::Frozen
                | tokscope_core::verdict::Lifecycle::Retired => "",
            },
            analysis.mask_sample
        )),
    ]));
    if let Some(error) = &analysis.error {
        out.push(Line::from(Span::styled(
            format!("error: {}", sanitize(error)),
            theme.problem(),
        )));
    }
    for reason in &analysis.reasons {
        out.push(Line::from(Span::styled(
            format!("  ✗ {}", sanitize(&reason.to_string())),
            theme.problem(),
        )));
    }
}

/// What the row says of the rollout as a sample, and its cause signature.
fn sample_lines(summary: &Summary, theme: Theme, out: &mut Vec<Line<'static>>) {
    if let Some(context) = &summary.context {
        let mut facts = Vec::new();
        if let Some(reward) = context.reward {
            facts.push(format!("reward {reward}"));
        }
        if let Some(agent) = &context.agent {
            facts.push(format!("agent {}", sanitize(agent)));
        }
        if let Some(task) = &context.task {
            let sample = context
                .sample
                .as_deref()
                .map_or(String::new(), |s| format!(" sample {}", sanitize(s)));
            facts.push(format!("task {}{sample}", sanitize(task)));
        }
        if let Some(row) = context.mask_sample {
            facts.push(format!("row's mask_sample {row}"));
        }
        out.push(field("row", facts.join(" · "), theme));
        if summary.row_disagrees() {
            out.push(Line::from(Span::styled(
                format!("  ≠ {}", strings::ROW_DISAGREES),
                theme.problem(),
            )));
        }
    }
    if let Some(cause) = &summary.cause {
        out.push(field("cause", cause.title(), theme));
        out.push(field("  signature", cause.signature_line(), theme));
        if cause.call.is_some() {
            out.push(field(
                "  where",
                tokscope_core::causes::render::example_line(summary.rollout_id(), cause),
                theme,
            ));
        }
    }
}

/// Metrics, build notes and read issues of the rollout.
fn detail_lines(analysis: &Analysis, theme: Theme, out: &mut Vec<Line<'static>>) {
    if let Value::Object(metrics) = analysis.metrics_json() {
        out.push(Line::from(Span::styled("metrics", theme.dim())));
        for (key, value) in metrics {
            out.push(field(&format!("  {key}"), value, theme));
        }
    }
    if let Some(Value::Object(notes)) = analysis.notes_json() {
        out.push(Line::from(Span::styled("build notes", theme.dim())));
        for (key, value) in notes {
            out.push(field(
                &format!("  {key}"),
                super::preview(&value, 400),
                theme,
            ));
        }
    }
    for issue in &analysis.capture.issues {
        out.push(Line::from(Span::styled(
            format!("  ! {}", sanitize(&issue.to_string())),
            theme.problem(),
        )));
    }
}
