//! The mouse: which pane, and which of its item rows, a click or the wheel is over.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::layout::{areas_for, inner_rows};
use crate::app::{App, Message, Pane};

/// Rows the wheel scrolls per notch.
const WHEEL: isize = 3;

/// The message a mouse event sends to the app, if any.
pub fn message_for(app: &App, mouse: MouseEvent) -> Option<Message> {
    let screen = Rect::new(0, 0, app.viewport.width, app.viewport.height);
    let areas = areas_for(screen, app.zoomed());
    let at = Position::new(mouse.column, mouse.row);
    // The health strip's reasons open the causes view (its `+N more` among them).
    if areas.health.contains(at) && mouse.kind == MouseEventKind::Down(MouseButton::Left) {
        return Some(Message::Action(crate::app::Action::Causes));
    }
    let (rect, pane) = [
        (areas.list, Pane::List),
        (areas.tree, Pane::Tree),
        (areas.tokens, Pane::Tokens),
        (areas.detail, app.detail.pane()),
    ]
    .into_iter()
    .find(|(rect, _)| rect.contains(at))?;
    match mouse.kind {
        MouseEventKind::ScrollDown => Some(Message::Scroll { pane, delta: WHEEL }),
        MouseEventKind::ScrollUp => Some(Message::Scroll {
            pane,
            delta: -WHEEL,
        }),
        MouseEventKind::Down(MouseButton::Left) => Some(Message::Click {
            pane,
            row: item_row(rect, pane, mouse.row),
        }),
        _ => None,
    }
}

/// The item row under screen row `y` of a pane (inside its border, below the list's header).
fn item_row(rect: Rect, pane: Pane, y: u16) -> Option<usize> {
    let header = usize::from(pane == Pane::List);
    let row = usize::from(y.checked_sub(rect.y + 1)?).checked_sub(header)?;
    (row < inner_rows(rect)).then_some(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    #[test]
    fn rows_inside_the_border_below_the_header() {
        let rect = Rect::new(0, 2, 40, 10);
        assert_eq!(item_row(rect, Pane::Tree, 2), None, "the border");
        assert_eq!(item_row(rect, Pane::Tree, 3), Some(0));
        assert_eq!(item_row(rect, Pane::List, 3), None, "the list's header");
        assert_eq!(item_row(rect, Pane::List, 4), Some(0));
        assert_eq!(item_row(rect, Pane::Tree, 11), None, "the bottom border");
    }

    #[test]
    fn events_map_to_panes() {
        let viewport = super::super::layout::viewport(Rect::new(0, 0, 120, 40));
        let app = App::new(Vec::new(), Vec::new(), Default::default(), viewport);
        let areas = super::super::layout::areas(Rect::new(0, 0, 120, 40));
        let event = |kind, rect: Rect| MouseEvent {
            kind,
            column: rect.x + 2,
            row: rect.y + 2,
            modifiers: KeyModifiers::NONE,
        };
        assert!(matches!(
            message_for(&app, event(MouseEventKind::ScrollDown, areas.tree)),
            Some(Message::Scroll {
                pane: Pane::Tree,
                delta: WHEEL
            })
        ));
        assert!(matches!(
            message_for(
                &app,
                event(MouseEventKind::Down(MouseButton::Left), areas.list)
            ),
            Some(Message::Click {
                pane: Pane::List,
                row: Some(0)
            })
        ));
        assert!(message_for(&app, event(MouseEventKind::Moved, areas.list)).is_none());
    }
}
