//! The help overlay, drawn from the single list of key bindings.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::keys::{BINDINGS, Scope};
use super::{Theme, pane_block, strings};

fn section(scopes: &[(Scope, &'static str)], theme: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (scope, name) in scopes {
        lines.push(Line::from(Span::styled(*name, theme.heading())));
        for binding in BINDINGS.iter().filter(|b| b.scope == *scope) {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<12}", binding.keys.join(" ")), theme.good()),
                Span::raw(binding.help),
            ]));
        }
    }
    lines
}

/// Draw the overlay centered on the screen, in two columns.
pub(crate) fn draw(frame: &mut Frame, theme: Theme) {
    let left = section(
        &[(Scope::Global, "everywhere"), (Scope::List, "rollout list")],
        theme,
    );
    let right = section(
        &[
            (Scope::Tree, "chain tree"),
            (Scope::Tokens, "tokens"),
            (Scope::Live, "live and replay"),
        ],
        theme,
    );
    let area = frame.area();
    let width = area.width.min(124);
    let height = area.height.min(left.len().max(right.len()) as u16 + 2);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    frame.render_widget(Clear, popup);
    let block = pane_block(strings::TITLE_HELP.into(), true, theme);
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let columns = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(inner);
    frame.render_widget(Paragraph::new(left), columns[0]);
    frame.render_widget(Paragraph::new(right), columns[1]);
}
