//! Moving around: focus, the moving keys in each pane, the mouse, and the help's scroll.

use super::{Action, App, Pane};

impl App {
    /// The moving keys scroll the help while it is shown; whether `action` was one.
    pub(super) fn scroll_help(&mut self, action: Action) -> bool {
        let page = self.help.page() as isize;
        match action {
            Action::Up => self.help.move_by(-1),
            Action::Down => self.help.move_by(1),
            Action::PageUp => self.help.move_by(-page),
            Action::PageDown => self.help.move_by(page),
            Action::Top => self.help.home(),
            Action::Bottom => self.help.end(),
            _ => return false,
        }
        true
    }

    pub(super) fn focus_pane(&mut self, pane: Pane) {
        self.focus = pane;
        if matches!(pane, Pane::Inspector | Pane::Gaps | Pane::Graph) {
            self.detail = pane;
        }
    }

    pub(super) fn move_by(&mut self, delta: isize) {
        match self.focus {
            Pane::List => {
                if self.list.scroll.move_by(delta) {
                    self.open_selected();
                }
            }
            Pane::Tree => self.notice_from_view(|view, base| view.move_tree(base, delta)),
            Pane::Tokens => self.with_view(|view, _| {
                let per_row = view.tokens.per_row() as isize;
                view.tokens.move_cursor(delta.saturating_mul(per_row));
            }),
            Pane::Inspector => self.with_view(|view, _| view.inspector.move_by(delta)),
            Pane::Gaps => self.with_view(|view, _| {
                view.gap_list.move_by(delta);
            }),
            Pane::Graph => self.with_view(|view, _| {
                view.graph_list.move_by(delta);
            }),
        }
    }

    /// One page up (`-1`) or down (`1`) in the focused pane.
    pub(super) fn page(&mut self, direction: isize) {
        let rows = match (&self.view, self.focus) {
            (_, Pane::List) => self.list.scroll.page(),
            (Some(view), Pane::Tree) => view.tree.page(),
            (Some(view), Pane::Tokens) => view.tokens.rows.page(),
            (Some(view), Pane::Inspector) => view.inspector.page(),
            (Some(view), Pane::Gaps) => view.gap_list.page(),
            (Some(view), Pane::Graph) => view.graph_list.page(),
            (None, _) => 1,
        };
        self.move_by(direction * rows as isize);
    }

    /// First (`false`) or last (`true`) of the focused pane.
    pub(super) fn jump_to_end(&mut self, last: bool) {
        if self.focus == Pane::Inspector {
            self.with_view(|view, _| {
                if last {
                    view.inspector.end()
                } else {
                    view.inspector.home()
                }
            });
            return;
        }
        let delta = if last { isize::MAX / 4 } else { isize::MIN / 4 };
        if self.focus == Pane::Tokens {
            self.with_view(|view, _| view.tokens.move_cursor(delta));
        } else {
            self.move_by(delta);
        }
    }

    pub(super) fn on_click(&mut self, pane: Pane, row: Option<usize>) {
        self.focus_pane(pane);
        let Some(row) = row else { return };
        match pane {
            Pane::List => {
                if let Some(index) = self.list.scroll.hit(row)
                    && self.list.scroll.select(index)
                {
                    self.open_selected();
                }
            }
            Pane::Tree => self.notice_from_view(|view, base| {
                let index = view.tree.hit(row)?;
                view.select_tree_row(base, index)
            }),
            Pane::Gaps => self.with_view(|view, _| {
                if let Some(index) = view.gap_list.hit(row) {
                    view.gap_list.select(index);
                }
            }),
            Pane::Graph => self.with_view(|view, _| {
                if let Some(index) = view.graph_list.hit(row) {
                    view.graph_list.select(index);
                }
            }),
            Pane::Tokens | Pane::Inspector => {}
        }
    }

    /// The wheel scrolls the pane under it without moving the focus; a selection pushed off
    /// screen follows (and the rollout or call it lands on opens).
    pub(super) fn on_scroll(&mut self, pane: Pane, delta: isize) {
        if self.show_help {
            self.help.move_by(delta);
            return;
        }
        match pane {
            Pane::List => {
                let before = self.list.scroll.selected();
                self.list.scroll.scroll_by(delta);
                if self.list.scroll.selected() != before {
                    self.open_selected();
                }
            }
            Pane::Tree => self.notice_from_view(|view, base| {
                let before = view.tree.selected();
                view.tree.scroll_by(delta);
                let after = view.tree.selected();
                (after != before).then(|| view.select_tree_row(base, after))?
            }),
            Pane::Tokens => self.with_view(|view, _| {
                let per_row = view.tokens.per_row() as isize;
                view.tokens.move_cursor(delta.saturating_mul(per_row));
            }),
            Pane::Inspector => self.with_view(|view, _| view.inspector.move_by(delta)),
            Pane::Gaps => self.with_view(|view, _| view.gap_list.scroll_by(delta)),
            Pane::Graph => self.with_view(|view, _| view.graph_list.scroll_by(delta)),
        }
    }
}
