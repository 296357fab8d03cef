//! Compare mode (`tokscope --compare A B`): both runs' rollouts are read, each of A's shown
//! with its counterpart's verdict in B (matched as `tokscope diff` matches them), the list
//! at first filtered to the flips; Enter on a matched rollout sets its two runs side by side
//! at the position where they part.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use tokscope_core::compare::{Diff, Side};
use tokscope_core::store::RolloutLocation;

use super::{Action, App, Notice};

/// Compare mode's state.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// Run A's store.
    pub a: PathBuf,
    /// Run B's store.
    pub b: PathBuf,
    /// The comparison of the summaries held.
    pub diff: Diff,
    /// Each matched rollout's counterpart, both ways (by index).
    pub partner: HashMap<usize, usize>,
    /// The list shows only the flips, and the rollouts of one run only.
    pub flips_only: bool,
    /// Summaries changed since the pairing was made.
    pub(super) dirty: bool,
}

/// The side-by-side view of one matched rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompareView {
    /// A's rollout.
    pub a: usize,
    /// B's rollout.
    pub b: usize,
}

/// What the list's B column says of a rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counterpart {
    /// A's rollout, matched: its counterpart in B.
    In(usize),
    /// A's rollout, not in B.
    Gone,
    /// B's rollout, not in A.
    New,
}

impl App {
    /// Compare the first two stores (A, then B), the list filtered to the flips.
    pub fn compare_stores(&mut self) {
        let (Some(a), Some(b)) = (self.stores.first(), self.stores.get(1)) else {
            return;
        };
        self.comparison = Some(Comparison {
            a: a.clone(),
            b: b.clone(),
            diff: Diff::default(),
            partner: HashMap::new(),
            flips_only: true,
            dirty: true,
        });
        self.recompare();
    }

    /// Pair the runs again from the summaries held, and filter the list to what compare
    /// mode shows.
    pub(super) fn recompare(&mut self) {
        let Some(comparison) = &self.comparison else {
            return;
        };
        let (dir_a, dir_b) = (comparison.a.clone(), comparison.b.clone());
        let mut side_a = Side::new(vec![dir_a.clone()]);
        let mut side_b = Side::new(vec![dir_b.clone()]);
        for summary in &self.rollouts {
            if summary.location.dir == dir_a {
                side_a.add(summary);
            } else if summary.location.dir == dir_b {
                side_b.add(summary);
            }
        }
        let diff = Diff::of(&side_a, &side_b);
        let index = |dir: &PathBuf, id: &str| {
            self.index_of
                .get(&RolloutLocation {
                    dir: dir.clone(),
                    id: id.to_owned(),
                })
                .copied()
        };
        let mut partner = HashMap::new();
        let mut shown = HashSet::new();
        let flips_only = comparison.flips_only;
        for pair in &diff.pairs {
            let (Some(a), Some(b)) = (index(&dir_a, &pair.a), index(&dir_b, &pair.b)) else {
                continue;
            };
            partner.insert(a, b);
            partner.insert(b, a);
            if !flips_only || pair.fixed() || pair.broke() {
                shown.insert(a);
            }
        }
        shown.extend(diff.only_a.iter().filter_map(|id| index(&dir_a, id)));
        shown.extend(diff.only_b.iter().filter_map(|id| index(&dir_b, id)));
        if let Some(comparison) = &mut self.comparison {
            (comparison.diff, comparison.partner, comparison.dirty) = (diff, partner, false);
        }
        if self.list.only.as_ref() != Some(&shown) {
            self.list.only = Some(shown);
            self.refresh_list();
        }
    }

    /// After summaries changed: pair the runs again if compare mode is on; whether it did.
    pub(super) fn pair_again(&mut self) -> bool {
        let dirty = self.comparison.as_ref().is_some_and(|c| c.dirty);
        if dirty {
            self.recompare();
        }
        dirty
    }

    /// What the list's B column says of rollout `index` (compare mode only).
    pub fn counterpart(&self, index: usize) -> Option<Counterpart> {
        let comparison = self.comparison.as_ref()?;
        if let Some(&other) = comparison.partner.get(&index) {
            return Some(Counterpart::In(other));
        }
        Some(if self.rollouts[index].location.dir == comparison.b {
            Counterpart::New
        } else {
            Counterpart::Gone
        })
    }

    /// The counterpart of the selected rollout, to be read with it (compare mode).
    pub(super) fn selected_partner(&self) -> Option<usize> {
        let selected = self.list.selected_rollout()?;
        self.comparison.as_ref()?.partner.get(&selected).copied()
    }

    /// Flips only, or every rollout (`F`).
    pub(super) fn toggle_flips(&mut self) {
        let Some(comparison) = &mut self.comparison else {
            self.message = Some(Notice::CompareOnly);
            return;
        };
        comparison.flips_only = !comparison.flips_only;
        self.recompare();
    }

    /// Enter in compare mode on a matched rollout: its two runs side by side; whether it
    /// did (else Enter does what it always does).
    pub(super) fn open_beside(&mut self) -> bool {
        let (Some(selected), Some(other)) = (self.list.selected_rollout(), self.selected_partner())
        else {
            return false;
        };
        let comparison = self
            .comparison
            .as_ref()
            .expect("a partner means compare mode");
        let (a, b) = if self.rollouts[selected].location.dir == comparison.a {
            (selected, other)
        } else {
            (other, selected)
        };
        self.beside = Some(CompareView { a, b });
        true
    }

    /// While the side-by-side view is open: Enter or Esc closes it, quitting and help work,
    /// and every other key is held (the list must not move under the rollout shown); whether
    /// `action` was taken.
    pub(super) fn beside_key(&mut self, action: Action) -> bool {
        match action {
            Action::Enter | Action::Dismiss => {
                self.beside = None;
                true
            }
            Action::Quit | Action::Help => false,
            _ => true,
        }
    }
}
