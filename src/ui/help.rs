//! The help overlay, drawn from the single list of key bindings.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{Theme, pane_block, strings};
use crate::app::keys::{BINDINGS, Scope};

/// Draw the overlay centered on the screen.
pub fn draw(frame: &mut Frame, theme: Theme) {
    let area = frame.area();
    let width = area.width.min(64);
    let height = area.height.min(BINDINGS.len() as u16 + 7);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    let mut lines = Vec::new();
    for (scope, name) in [
        (Scope::Global, "everywhere"),
        (Scope::List, "rollout list"),
        (Scope::Tree, "chain tree"),
        (Scope::Tokens, "tokens"),
        (Scope::Live, "live and replay"),
    ] {
        lines.push(Line::from(Span::styled(name, theme.heading())));
        for binding in BINDINGS.iter().filter(|b| b.scope == scope) {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<14}", binding.keys.join(" ")), theme.good()),
                Span::raw(binding.help),
            ]));
        }
    }
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(pane_block(strings::TITLE_HELP.into(), true, theme)),
        popup,
    );
}
