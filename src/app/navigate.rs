//! Moving around: focus, the moving keys in each pane, the mouse, the help's scroll, and
//! going to a call (Enter, the divergence).

use tokscope_core::verdict::cause::Evidence;

use super::pane::{Enter, Items};
use super::{Action, App, Notice, Pane, RolloutView, Tab, search};

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
        if let Some(tab) = pane.tab() {
            self.detail = tab;
        }
    }

    pub(super) fn move_by(&mut self, delta: isize) {
        match self.focus.spec().items {
            Items::Rollouts => {
                if self.list.scroll.move_by(delta) {
                    self.open_selected();
                }
            }
            Items::Tree => self.notice_from_view(|view, base| view.move_tree(base, delta)),
            Items::Tokens => self.with_view(|view, _| {
                let per_row = view.tokens.per_row() as isize;
                view.tokens.move_cursor(delta.saturating_mul(per_row));
            }),
            Items::Text => self.with_view(|view, _| view.inspector.move_by(delta)),
            Items::Rows(rows) => self.with_view(|view, _| {
                (rows.list_mut)(view).move_by(delta);
            }),
        }
    }

    /// One page up (`-1`) or down (`1`) in the focused pane.
    pub(super) fn page(&mut self, direction: isize) {
        let rows = match (&self.view, self.focus.spec().items) {
            (_, Items::Rollouts) => self.list.scroll.page(),
            (Some(view), Items::Tree) => view.tree.page(),
            (Some(view), Items::Tokens) => view.tokens.rows.page(),
            (Some(view), Items::Text) => view.inspector.page(),
            (Some(view), Items::Rows(rows)) => (rows.list)(view).page(),
            (None, _) => 1,
        };
        self.move_by(direction * rows as isize);
    }

    /// First (`false`) or last (`true`) of the focused pane.
    pub(super) fn jump_to_end(&mut self, last: bool) {
        if matches!(self.focus.spec().items, Items::Text) {
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
        if matches!(self.focus.spec().items, Items::Tokens) {
            self.with_view(|view, _| view.tokens.move_cursor(delta));
        } else {
            self.move_by(delta);
        }
    }

    pub(super) fn on_click(&mut self, pane: Pane, row: Option<usize>) {
        self.focus_pane(pane);
        let Some(row) = row else { return };
        match pane.spec().items {
            Items::Rollouts => {
                if let Some(index) = self.list.scroll.hit(row)
                    && self.list.scroll.select(index)
                {
                    self.open_selected();
                }
            }
            Items::Tree => self.notice_from_view(|view, base| {
                let index = view.tree.hit(row)?;
                view.select_tree_row(base, index)
            }),
            Items::Rows(rows) => self.with_view(|view, _| {
                let list = (rows.list_mut)(view);
                if let Some(index) = list.hit(row) {
                    list.select(index);
                }
            }),
            Items::Tokens | Items::Text => {}
        }
    }

    /// The wheel scrolls the pane under it without moving the focus; a selection pushed off
    /// screen follows (and the rollout or call it lands on opens).
    pub(super) fn on_scroll(&mut self, pane: Pane, delta: isize) {
        if self.show_help {
            self.help.move_by(delta);
            return;
        }
        match pane.spec().items {
            Items::Rollouts => {
                let before = self.list.scroll.selected();
                self.list.scroll.scroll_by(delta);
                if self.list.scroll.selected() != before {
                    self.open_selected();
                }
            }
            Items::Tree => self.notice_from_view(|view, base| {
                let before = view.tree.selected();
                view.tree.scroll_by(delta);
                let after = view.tree.selected();
                (after != before).then(|| view.select_tree_row(base, after))?
            }),
            Items::Tokens => self.with_view(|view, _| {
                let per_row = view.tokens.per_row() as isize;
                view.tokens.move_cursor(delta.saturating_mul(per_row));
            }),
            Items::Text => self.with_view(|view, _| view.inspector.move_by(delta)),
            Items::Rows(rows) => self.with_view(|view, _| (rows.list_mut)(view).scroll_by(delta)),
        }
    }

    /// Enter, as the focused pane's spec says.
    pub(super) fn enter(&mut self) {
        let spec = self.focus.spec();
        match (spec.enter, spec.items) {
            (Enter::Open, _) => self.open_cause(),
            (Enter::Divergence, _) => self.show_divergence(),
            (Enter::GoToCall, Items::Rows(rows)) => (rows.enter)(self),
            (Enter::GoToCall | Enter::Nothing, _) => {}
        }
    }

    /// Enter on a gap: its call in the tree; a read problem's record when one was read at its
    /// line, else the problem itself, found in the inspector.
    pub(crate) fn enter_gap(&mut self) {
        let Some(gap) = self
            .view
            .as_ref()
            .and_then(|view| view.gaps.get(view.gap_list.selected()).cloned())
        else {
            return;
        };
        if let Some(call) = &gap.call {
            self.select_call(call);
            return;
        }
        let tokscope_core::gaps::GapFact::ReadIssue(issue) = &gap.fact else {
            self.message = Some(Notice::NotACall);
            return;
        };
        let records_file = issue.file == tokscope_core::store::FileKind::Records;
        let read_there = issue.at.filter(|_| records_file).and_then(|at| {
            let analysis = self.shown()?;
            let index = analysis
                .capture
                .record_lines
                .iter()
                .position(|l| l.line == at.line)?;
            Some(analysis.capture.records[index].model_call_id.clone())
        });
        match read_there {
            Some(call) => self.select_call(&call),
            None => {
                // The inspector lists every read problem: find this one there.
                self.focus_pane(Pane::Inspector);
                self.search = Some(search::Search::pending_in_inspector(issue.to_string()));
            }
        }
    }

    /// Select a call by id in the tree (and so in the token pane and inspector).
    pub(crate) fn select_call(&mut self, call: &str) {
        let Some(view) = &mut self.view else { return };
        let Some(base) = self.details.get(view.index) else {
            return;
        };
        match view.select_call(base, call) {
            Ok(()) => self.focus = Pane::Tree,
            Err(notice) => self.message = Some(notice),
        }
    }

    /// The divergence of the selected call; from the token pane, of the call whose tokens
    /// are under the cursor; from the gaps, of the gap's call.
    pub(super) fn show_divergence(&mut self) {
        let call = match self.focus.spec().items {
            Items::Tokens => self.call_at_cursor(),
            Items::Rows(rows) => self
                .view
                .as_ref()
                .and_then(|view| (rows.call)(view, (rows.list)(view).selected())),
            Items::Rollouts => return self.open_cause(),
            Items::Tree | Items::Text => None,
        };
        if let Some(call) = call {
            self.select_call(&call);
        }
        self.notice_from_view(RolloutView::show_divergence);
        self.detail = Tab::Inspector;
    }

    /// Open the selected rollout in the tree at the call its cause concerns: a broken link's
    /// divergence with the token cursor on the first differing position, else the call (an
    /// extra root, the call never recorded, a retry); a rollout with nothing to explain opens
    /// at its first row.
    pub(super) fn open_cause(&mut self) {
        self.focus = Pane::Tree;
        let Some(index) = self.list.selected_rollout() else {
            return;
        };
        let Some(cause) = self.rollouts[index].cause.as_ref() else {
            return;
        };
        let link = matches!(cause.evidence, Evidence::Link(_));
        let in_tree = matches!(
            cause.evidence,
            Evidence::Link(_) | Evidence::Roots { .. } | Evidence::Retry { .. }
        );
        let Some(call) = cause.call.clone().filter(|_| in_tree) else {
            return;
        };
        if self.view.as_ref().is_none_or(|view| view.index != index) {
            // Not read yet (the watcher's answer is on its way): done when it comes.
            self.dive_pending = Some(index);
            return;
        }
        self.select_call(&call);
        if link {
            self.notice_from_view(RolloutView::show_divergence);
            self.detail = Tab::Inspector;
        }
    }

    /// The call whose tokens are under the token cursor (the chain's first call for the root
    /// prompt).
    pub(super) fn call_at_cursor(&self) -> Option<String> {
        let view = self.view.as_ref()?;
        let analysis = self.shown()?;
        let build = analysis.build.as_ref()?;
        let provenance = view.tokens.provenance.as_ref()?;
        let node = match provenance.segment_at(view.tokens.cursor)?.origin {
            tokscope_core::rebuild::Origin::RootPrompt => {
                build.chains.get(view.tokens.chain?)?.links.first()?.node
            }
            tokscope_core::rebuild::Origin::Interstitial { node }
            | tokscope_core::rebuild::Origin::Generation { node } => node,
        };
        Some(
            analysis.capture.records[build.record_of(node)]
                .model_call_id
                .clone(),
        )
    }
}
