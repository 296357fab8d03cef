//! Screen geometry, shared by drawing, mouse hit-testing and the app's [`Viewport`].

use ratatui::layout::{Constraint, Direction, Layout, Rect};

use crate::app::pane::Place;
use crate::app::{Pane, Viewport};

/// The rectangles of every pane for a terminal size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    /// Store-wide counts and the mode badge, one line.
    pub header: Rect,
    /// Health strip, one line.
    pub health: Rect,
    /// Rollout list.
    pub list: Rect,
    /// Chain tree.
    pub tree: Rect,
    /// Token provenance.
    pub tokens: Rect,
    /// Inspector or gaps (whichever tab is shown).
    pub detail: Rect,
    /// Status bar, one line.
    pub status: Rect,
}

/// Below this width the rollout list spans the whole width above the other panes.
pub(crate) const NARROW: u16 = 100;

/// Lay out the panes in `area`.
pub fn areas(area: Rect) -> Areas {
    areas_for(area, None)
}

/// Lay out the panes in `area`, `zoom` (if any) taking the whole body; the other panes are
/// then empty rectangles.
pub fn areas_for(area: Rect, zoom: Option<Pane>) -> Areas {
    let Some(pane) = zoom else {
        return split(area);
    };
    let normal = split(area);
    let body = Rect::new(
        area.x,
        normal.health.y + normal.health.height,
        area.width,
        normal
            .status
            .y
            .saturating_sub(normal.health.y + normal.health.height),
    );
    let mut zoomed = Areas {
        header: normal.header,
        health: normal.health,
        status: normal.status,
        ..Areas::default()
    };
    match pane.spec().place {
        Place::List => zoomed.list = body,
        Place::Tree => zoomed.tree = body,
        Place::Tokens => zoomed.tokens = body,
        Place::Detail(_) => zoomed.detail = body,
    }
    zoomed
}

fn split(area: Rect) -> Areas {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(4),
            Constraint::Length(1),
        ])
        .split(area);
    let (header, health, body, status) = (rows[0], rows[1], rows[2], rows[3]);
    if area.width < NARROW {
        let body = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(32), Constraint::Percentage(68)])
            .split(body);
        let lower = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(body[1]);
        let right = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(lower[1]);
        return Areas {
            header,
            health,
            list: body[0],
            tree: lower[0],
            tokens: right[0],
            detail: right[1],
            status,
        };
    }
    let columns = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(42), Constraint::Percentage(58)])
        .split(body);
    let left = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(40), Constraint::Percentage(60)])
        .split(columns[0]);
    let right = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(columns[1]);
    Areas {
        header,
        health,
        list: left[0],
        tree: left[1],
        tokens: right[0],
        detail: right[1],
        status,
    }
}

/// Rows of content inside a bordered pane.
pub(crate) fn inner_rows(rect: Rect) -> usize {
    usize::from(rect.height.saturating_sub(2))
}

/// Width of content inside a bordered pane.
pub(crate) fn inner_width(rect: Rect) -> usize {
    usize::from(rect.width.saturating_sub(2))
}

/// Width of one token cell in the token pane (an id up to 6 digits and a space).
pub(crate) const TOKEN_CELL: usize = 7;

/// Tokens per row in the token pane.
pub(crate) fn tokens_per_row(rect: Rect) -> usize {
    (inner_width(rect) / TOKEN_CELL).max(1)
}

/// Width of a decoded cell: wide enough for most tokens whole (`<|im_start|>`, ` careful`)
/// where the pane keeps at least [`TEXT_CELLS_KEPT`] of them a row, else an id's width.
pub(crate) fn text_cell_width(rect: Rect) -> usize {
    if inner_width(rect) / TEXT_CELL >= TEXT_CELLS_KEPT {
        TEXT_CELL
    } else {
        TOKEN_CELL
    }
}

/// The wide decoded cell (11 characters and a space).
pub(crate) const TEXT_CELL: usize = 12;
/// Decoded cells a row must keep for them to be wide.
const TEXT_CELLS_KEPT: usize = 6;

/// Decoded tokens per row in the token pane.
pub(crate) fn text_tokens_per_row(rect: Rect) -> usize {
    (inner_width(rect) / text_cell_width(rect)).max(1)
}

/// Rows of tokens shown in the token pane (below the cursor line and the legend).
pub(crate) fn token_rows(rect: Rect) -> usize {
    inner_rows(rect).saturating_sub(2).max(1)
}

/// Rows of the graph pane's lines: the selected record as written takes three rows below
/// them when the pane is tall enough.
pub(crate) fn graph_rows(rect: Rect) -> usize {
    let rows = inner_rows(rect);
    if rows > 8 { rows - 3 } else { rows }
}

/// What each pane shows, for the app's scrolling and paging.
pub fn viewport(size: Rect) -> Viewport {
    viewport_for(size, None)
}

/// What each pane shows with `zoom` (if any) taking the whole body.
pub fn viewport_for(size: Rect, zoom: Option<Pane>) -> Viewport {
    let areas = areas_for(size, zoom);
    Viewport {
        width: size.width,
        height: size.height,
        // One header line inside the list's border.
        list_rows: inner_rows(areas.list).saturating_sub(1),
        tree_rows: inner_rows(areas.tree),
        detail_rows: inner_rows(areas.detail),
        graph_rows: graph_rows(areas.detail),
        token_rows: token_rows(areas.tokens),
        tokens_per_row: tokens_per_row(areas.tokens),
        text_tokens_per_row: text_tokens_per_row(areas.tokens),
    }
}
