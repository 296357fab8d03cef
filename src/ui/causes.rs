//! The causes overlay: one row a cause group (count, share of the masked, reward lost,
//! agents, title), then the tasks masking thins; below, the selected group whole: its title
//! wrapped, its signature and an example.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::{Theme, clip, pane_block, strings};
use crate::app::{App, CauseRow};
use tokscope_core::causes::render::example_line;
use tokscope_core::text::sanitize;

/// Width of the agents column (narrower below 120 columns, where the title needs it).
fn agents_width(width: usize) -> usize {
    if width >= 120 { 18 } else { 12 }
}

/// Draw the overlay centered on the screen.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme) {
    let Some(view) = &app.causes else {
        return;
    };
    let area = frame.area();
    let width = area.width.min(160);
    let causes = &app.health.causes;
    let masked = app.health.tally.masked + app.health.tally.at_risk;
    let title = format!(
        "{} · {} group(s) · {} of {} masked or at risk",
        strings::TITLE_CAUSES,
        causes.groups().len(),
        masked,
        app.health.rollouts(),
    );
    let inner_width = usize::from(width.saturating_sub(2));
    let rows = app.cause_rows();
    // Reward and agent columns only when rows said them: otherwise the title has the room.
    let rows_given = causes.rows_given();
    let agents_w = agents_width(inner_width);
    let header = if rows_given {
        format!(
            " {:>6} {:>6} {:>5} {:>5} {:<agents_w$} cause",
            "count", "share", "r>0", "mean", "agents"
        )
    } else {
        format!(" {:>6} {:>6} cause", "count", "share")
    };
    let mut lines = vec![Line::from(Span::styled(
        clip(&header, inner_width),
        theme.dim(),
    ))];
    if rows.is_empty() {
        lines.push(Line::from(Span::styled(strings::CAUSES_NONE, theme.good())));
    }
    let thinned = causes.thinned();
    let mut heading_shown = false;
    for index in view.rows.visible() {
        let selected = index == view.rows.selected();
        let style = |style: ratatui::style::Style| {
            if selected {
                style.patch(theme.selected())
            } else {
                style
            }
        };
        // (The rows the app knows of; a view one change behind draws what is there.)
        let Some(row) = rows.get(index) else {
            break;
        };
        let text = match row {
            CauseRow::Group(key) => {
                let Some(group) = causes.group(key) else {
                    continue;
                };
                let reward = group.reward();
                let share = tokscope_core::causes::render::share(group.len(), masked) * 100.0;
                if rows_given {
                    format!(
                        "{:>6} {:>5.1}% {:>5} {:>5} {:<agents_w$} {}",
                        group.len(),
                        share,
                        reward.masked_with_reward,
                        reward.mean.map_or("-".into(), |m| format!("{m:.2}")),
                        clip(&group.agents_line().unwrap_or_else(|| "-".into()), agents_w),
                        sanitize(&group.title)
                    )
                } else {
                    format!(
                        "{:>6} {:>5.1}% {}",
                        group.len(),
                        share,
                        sanitize(&group.title)
                    )
                }
            }
            CauseRow::Thinned(task) => {
                if !heading_shown {
                    heading_shown = true;
                    lines.push(Line::from(Span::styled(
                        clip(strings::CAUSES_THINNED, inner_width),
                        theme.heading(),
                    )));
                }
                let Some(t) = thinned.iter().find(|t| &t.task == task) else {
                    continue;
                };
                format!("  {}", t.line())
            }
        };
        let marker = if selected { "▸" } else { " " };
        lines.push(Line::from(Span::styled(
            clip(&format!("{marker}{text}"), inner_width),
            style(ratatui::style::Style::default()),
        )));
    }
    // The selected group whole: title, signature, example; then the keys.
    let mut detail = vec![Line::from("")];
    if !rows_given {
        detail.push(Line::from(Span::styled(
            tokscope_core::causes::render::NO_ROWS,
            theme.dim(),
        )));
    }
    if let Some(CauseRow::Thinned(task)) = rows.get(view.rows.selected())
        && let Some(t) = thinned.iter().find(|t| &t.task == task)
    {
        detail.push(Line::from(Span::styled(
            format!(
                "task {}: {} delivered, {} masked or at risk — {}",
                sanitize(&t.task),
                t.delivered,
                t.masked,
                strings::THINNED_WHY
            ),
            theme.problem(),
        )));
    }
    if let Some(CauseRow::Group(key)) = rows.get(view.rows.selected())
        && let Some(group) = causes.group(key)
    {
        detail.push(Line::from(Span::styled(
            sanitize(&group.title).into_owned(),
            theme.problem(),
        )));
        detail.push(Line::from(Span::styled(
            tokscope_core::verdict::cause::signature_line(&group.signature),
            theme.dim(),
        )));
        if let Some(((id, _), cause)) = group.example() {
            detail.push(Line::from(format!("e.g. {}", example_line(id, cause))));
        }
        if group.stores.len() > 1 {
            let stores: Vec<String> = group
                .stores
                .iter()
                .map(|(s, n)| format!("{} {n}", sanitize(&s.display().to_string())))
                .collect();
            detail.push(Line::from(Span::styled(
                format!("stores: {}", stores.join(", ")),
                theme.dim(),
            )));
        }
    }
    detail.push(Line::from(Span::styled(strings::CAUSES_KEYS, theme.dim())));
    let wrapped = Paragraph::new(detail.clone()).wrap(Wrap { trim: false });
    let detail_height = wrapped.line_count(width.saturating_sub(2)) as u16;
    let height = (lines.len() as u16 + detail_height + 2).min(area.height);
    let popup = super::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let block = pane_block(title, true, theme);
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let list_height = (lines.len() as u16).min(inner.height);
    frame.render_widget(
        Paragraph::new(lines),
        Rect::new(inner.x, inner.y, inner.width, list_height),
    );
    frame.render_widget(
        wrapped,
        Rect::new(
            inner.x,
            inner.y + list_height,
            inner.width,
            inner.height.saturating_sub(list_height),
        ),
    );
}
