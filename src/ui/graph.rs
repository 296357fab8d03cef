//! The observation graph pane: agents, subagents, model calls, tools, compactions, verifiers.

use super::memo::{self, Slot};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::{inner_rows, inner_width};
use super::{Theme, clip, detail_block, strings};
use crate::app::App;
use tokscope_core::graph::text::line_text;
use tokscope_core::text::sanitize;

/// Draw the graph of the open rollout.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let Some(view) = &app.view else {
        let block = detail_block(crate::app::Pane::Graph.spec().title.into(), app, theme);
        memo::render(
            frame,
            Slot::Detail,
            Paragraph::new(strings::no_view(app)).block(block),
            area,
        );
        return;
    };
    let block = detail_block(
        format!(
            "{} ({})",
            crate::app::Tab::Graph.spec().label,
            view.graph.len()
        ),
        app,
        theme,
    );
    if view.graph.is_empty() {
        memo::render(
            frame,
            Slot::Detail,
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
            let text = clip(&sanitize(&line_text(line)), width);
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
        // Only what fits is serialized: a record can hold megabytes.
        let shown = super::preview(raw, width.max(1) * raw_rows);
        let text: Vec<char> = sanitize(&shown).chars().collect();
        for chunk in text.chunks(width.max(1)).take(raw_rows) {
            lines.push(Line::from(Span::styled(
                chunk.iter().collect::<String>(),
                theme.dim(),
            )));
        }
    }
    memo::render(
        frame,
        Slot::Detail,
        Paragraph::new(lines).block(block),
        area,
    );
}
