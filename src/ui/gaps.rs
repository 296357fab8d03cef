//! The gaps pane: everything not observed or not joinable.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::inner_width;
use super::{Theme, clip, pane_block, short_call, strings};
use crate::app::{App, Pane};
use crate::gaps::GapKind;
use crate::text::sanitize;

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
pub fn draw(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let focused = app.focus == Pane::Gaps;
    let Some(view) = &app.view else {
        let block = pane_block(strings::TITLE_GAPS.into(), focused, theme);
        frame.render_widget(Paragraph::new(strings::NO_SELECTION).block(block), area);
        return;
    };
    let rid = app
        .shown()
        .map(|a| a.rollout_id().to_owned())
        .unwrap_or_default();
    let block = pane_block(
        format!("{} ({})", strings::TITLE_GAPS, view.gaps.len()),
        focused,
        theme,
    );
    if view.gaps.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(strings::NO_GAPS, theme.good())).block(block),
            area,
        );
        return;
    }
    let width = inner_width(area);
    let lines: Vec<Line> = view
        .gap_list
        .visible()
        .map(|index| {
            let gap = &view.gaps[index];
            let call = gap
                .call
                .as_deref()
                .map(|c| short_call(c, &rid).into_owned())
                .unwrap_or_default();
            let age = match (gap.kind, &gap.call) {
                (GapKind::InFlight, Some(call)) => app
                    .live
                    .in_flight_since
                    .get(&(view.index, call.clone()))
                    .map(|since| {
                        format!(
                            " (seen {:.1}s ago)",
                            app.now.duration_since(*since).as_secs_f64()
                        )
                    })
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let text = clip(
                &format!(
                    "{:<11} {call} {}{age}",
                    label(gap.kind),
                    sanitize(&gap.detail)
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
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
