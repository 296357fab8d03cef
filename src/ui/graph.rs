//! The observation graph pane: agents, subagents, model calls, tools, compactions, verifiers.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::{inner_rows, inner_width};
use super::{Theme, clip, pane_block, strings};
use crate::app::{App, Pane};
use crate::text::sanitize;

/// Draw the graph of the open rollout.
pub fn draw(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let focused = app.focus == Pane::Graph;
    let Some(view) = &app.view else {
        let block = pane_block(strings::TITLE_GRAPH.into(), focused, theme);
        frame.render_widget(Paragraph::new(strings::NO_SELECTION).block(block), area);
        return;
    };
    let block = pane_block(
        format!("{} ({})", strings::TITLE_GRAPH, view.graph.len()),
        focused,
        theme,
    );
    if view.graph.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(strings::NO_OBSERVATIONS, theme.dim())).block(block),
            area,
        );
        return;
    }
    let width = inner_width(area);
    // The record behind the selected line, as written, below the graph (every field shows).
    let raw = view
        .graph
        .get(view.graph_list.selected())
        .and_then(|l| l.raw.as_ref());
    let height = super::layout::graph_rows(area);
    let raw_rows = if raw.is_some() {
        inner_rows(area) - height
    } else {
        0
    };
    let lines: Vec<Line> = view
        .graph_list
        .visible()
        .map(|index| {
            let line = &view.graph[index];
            let text = clip(
                &format!(
                    "{}{}",
                    "  ".repeat(line.depth.min(10)),
                    sanitize(&line.text)
                ),
                width,
            );
            let mut style = if line.problem {
                theme.problem()
            } else if line.call.is_some() {
                theme.good()
            } else {
                ratatui::style::Style::new()
            };
            if index == view.graph_list.selected() {
                style = style.patch(theme.selected());
            }
            Line::from(Span::styled(text, style))
        })
        .collect();
    let mut lines = lines;
    if let (Some(raw), true) = (raw, raw_rows > 0) {
        while lines.len() < height {
            lines.push(Line::from(""));
        }
        let text: Vec<char> = sanitize(&raw.to_string()).chars().collect();
        for chunk in text.chunks(width.max(1)).take(raw_rows) {
            lines.push(Line::from(Span::styled(
                chunk.iter().collect::<String>(),
                theme.dim(),
            )));
        }
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
