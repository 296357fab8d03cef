//! The gaps pane: everything not observed or not joinable.

use super::memo::{self, Slot};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::inner_width;
use super::{Theme, clip, detail_block, short_call, strings};
use crate::app::App;
use tokscope_core::gaps::GapKind;
use tokscope_core::text::sanitize;

fn label(kind: GapKind) -> &'static str {
    match kind {
        GapKind::InFlight => "in flight",
        GapKind::Dangling => "dangling",
        GapKind::IncompleteFlag => "incomplete",
        GapKind::SentinelLine => "sentinel",
        GapKind::ParentLink => "parent link",
        GapKind::UnresolvedRetry => "retry",
        GapKind::EmptyGeneration => "empty gen",
        GapKind::DroppedChain => "dropped",
        GapKind::ReadIssue => "read",
        GapKind::Observation => "observed",
        GapKind::Join => "join",
    }
}

/// Draw the gaps of the open rollout.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let Some(view) = &app.view else {
        let block = detail_block(crate::app::Pane::Gaps.spec().title.into(), app, theme);
        memo::render(
            frame,
            Slot::Detail,
            Paragraph::new(strings::no_view(app)).block(block),
            area,
        );
        return;
    };
    let rid = app
        .shown()
        .map(|a| a.rollout_id().to_owned())
        .unwrap_or_default();
    let block = detail_block(
        format!(
            "{} ({})",
            crate::app::Pane::Gaps.spec().title,
            view.gaps.len()
        ),
        app,
        theme,
    );
    if view.gaps.is_empty() {
        // Without a row nothing was observed, so "everything was joined" would be untrue.
        let observed = app
            .shown()
            .is_some_and(|a| a.options.observations.is_some());
        let text = if observed {
            strings::NO_GAPS
        } else {
            strings::NO_CAPTURE_GAPS_NO_ROW
        };
        memo::render(
            frame,
            Slot::Detail,
            Paragraph::new(Span::styled(text, theme.good())).block(block),
            area,
        );
        return;
    }
    let width = inner_width(area);
    let short = |call: &Option<String>| {
        call.as_deref()
            .map_or_else(|| "-".to_owned(), |c| short_call(c, &rid).into_owned())
    };
    // One column for the calls, as wide as the widest (within reason), so the facts align.
    let call_width = view
        .gaps
        .iter()
        .map(|g| short(&g.call).chars().count())
        .max()
        .unwrap_or(1)
        .min(24);
    let lines: Vec<Line> = view
        .gap_list
        .visible()
        .map(|index| {
            let gap = &view.gaps[index];
            let call = clip(&short(&gap.call), call_width);
            let age = match (gap.kind(), &gap.call) {
                (GapKind::InFlight, Some(call)) => app
                    .in_flight_age(view.index, Some(call))
                    .map(|age| format!(" (waiting {} at least)", super::age(age)))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let text = clip(
                &format!(
                    "{:<11} {call:<call_width$} {}{age}",
                    label(gap.kind()),
                    sanitize(&gap.fact.to_string())
                ),
                width,
            );
            let style = if index == view.gap_list.selected() {
                theme.selected()
            } else {
                theme.problem()
            };
            Line::from(Span::styled(text, style))
        })
        .collect();
    memo::render(
        frame,
        Slot::Detail,
        Paragraph::new(lines).block(block),
        area,
    );
}
