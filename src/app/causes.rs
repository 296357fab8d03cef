//! The causes view: the run's masked and at-risk rollouts grouped by cause signature, and the
//! tasks masking thins; Enter filters the list to what is selected.

use super::scroll::ScrollList;
use super::{Action, App, Notice, Pane, Viewport};

/// One row of the causes view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CauseRow {
    /// A cause group, by its signature's key.
    Group(String),
    /// A task masking thins.
    Thinned(String),
}

/// The causes view's state.
#[derive(Clone, Debug)]
pub struct CausesView {
    /// Selection and window over the rows.
    pub rows: ScrollList,
}

/// Rows of the overlay given to the groups and tasks (the rest shows the selected one).
pub fn list_rows(viewport: &Viewport) -> usize {
    usize::from(viewport.height).saturating_sub(12).max(3)
}

impl App {
    /// The causes view's rows: every group, largest first, then the thinned tasks.
    pub fn cause_rows(&self) -> Vec<CauseRow> {
        let causes = &self.health.causes;
        let groups = causes
            .groups()
            .into_iter()
            .map(|g| CauseRow::Group(g.key.clone()));
        let tasks = causes
            .thinned()
            .into_iter()
            .map(|t| CauseRow::Thinned(t.task));
        groups.chain(tasks).collect()
    }

    /// Open or close the causes view.
    pub(super) fn toggle_causes(&mut self) {
        self.causes = match self.causes {
            Some(_) => None,
            None => Some(CausesView {
                rows: ScrollList::new(self.cause_rows().len(), list_rows(&self.viewport)),
            }),
        };
    }

    /// While the causes view is open: the moving keys move in it, Enter filters the list,
    /// Esc closes it; whether `action` was one of those.
    pub(super) fn causes_key(&mut self, action: Action) -> bool {
        let len = self.cause_rows().len();
        let Some(view) = &mut self.causes else {
            return false;
        };
        view.rows.set_len(len);
        view.rows.set_height(list_rows(&self.viewport));
        let page = view.rows.page() as isize;
        match action {
            Action::Up => {
                view.rows.move_by(-1);
            }
            Action::Down => {
                view.rows.move_by(1);
            }
            Action::PageUp => {
                view.rows.move_by(-page);
            }
            Action::PageDown => {
                view.rows.move_by(page);
            }
            Action::Top => {
                view.rows.select(0);
            }
            Action::Bottom => {
                view.rows.select(len.saturating_sub(1));
            }
            Action::Enter => {
                let selected = view.rows.selected();
                self.causes = None;
                self.filter_to_cause_row(selected);
            }
            Action::Dismiss | Action::Causes => self.causes = None,
            _ => return false,
        }
        true
    }

    /// Filter the list to the rollouts of cause row `row`: a group's signature
    /// (`cause:KEY`), or a thinned task (`task:ID`).
    fn filter_to_cause_row(&mut self, row: usize) {
        let Some(entry) = self.cause_rows().into_iter().nth(row) else {
            self.message = Some(Notice::NoCauses);
            return;
        };
        self.list.filter = match entry {
            CauseRow::Group(key) => format!("cause:{key}"),
            CauseRow::Thinned(task) => format!("task:{task}"),
        };
        self.list.masked_only = false;
        self.list.reason = None;
        self.refresh_list();
        self.list.scroll.select(0);
        self.focus_pane(Pane::List);
        self.open_selected();
    }
}
