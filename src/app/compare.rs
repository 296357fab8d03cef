//! Compare mode (`tokscope --compare A B`): both runs' rollouts are read, each of A's shown
//! with its counterpart's verdict in B (matched as `tokscope diff` matches them), the list
//! at first filtered to the flips; Enter on a matched rollout sets its two runs side by side
//! at the position where they part.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use tokscope_core::compare::{Diff, Side};
use tokscope_core::verdict::Standing;

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
    /// Each run's counts: A's, then B's.
    pub counts: [SideCounts; 2],
    /// The list shows only the flips, and the rollouts of one run only.
    pub flips_only: bool,
    /// Summaries changed since the pairing was made.
    pub(super) dirty: bool,
    /// When the pairing was last made (while the first scan runs it is made at most every
    /// [`PAIRING_WHILE_READING`]).
    paired_at: Option<std::time::Instant>,
}

/// How often the pairing is made again while the stores are still being read: a pass over
/// every summary each batch would cost the first scan more than it shows.
const PAIRING_WHILE_READING: std::time::Duration = std::time::Duration::from_millis(250);

/// One run's rollouts, for the header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideCounts {
    /// Rollouts (not cleared).
    pub rollouts: usize,
    /// Masked (final verdicts).
    pub masked: usize,
    /// Live and at risk.
    pub at_risk: usize,
}

impl SideCounts {
    fn count(&mut self, standing: Standing) {
        if standing == Standing::Cleared {
            return;
        }
        self.rollouts += 1;
        self.masked += usize::from(standing == Standing::Masked);
        self.at_risk += usize::from(standing == Standing::AtRisk);
    }
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
    /// Not matched yet: the stores are still being read.
    Unread,
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
            counts: Default::default(),
            flips_only: true,
            dirty: true,
            paired_at: None,
        });
        // The health strip and the causes view count run A, the run the list shows (the two
        // runs' sums would mean nothing); the header counts both apart.
        self.health = tokscope_core::health::Health::of(
            (0..self.rollouts.len())
                .filter(|&index| self.in_run_view(index))
                .map(|index| &self.rollouts[index]),
        );
        self.recompare();
    }

    /// Pair the runs again from the summaries held, and filter the list to what compare
    /// mode shows.
    pub(super) fn recompare(&mut self) {
        let Some(comparison) = &self.comparison else {
            return;
        };
        let (dir_a, dir_b) = (comparison.a.as_os_str(), comparison.b.as_os_str());
        let mut side_a = Side::new(vec![comparison.a.clone()]);
        let mut side_b = Side::new(vec![comparison.b.clone()]);
        // Rollout ids to indices, each run's (the pairs name ids).
        let (mut index_a, mut index_b) = (HashMap::new(), HashMap::new());
        let mut counts = [SideCounts::default(); 2];
        for (index, summary) in self.rollouts.iter().enumerate() {
            // Only the pairing: the list needs no groups (one pass a batch of changes).
            let dir = summary.location.dir.as_os_str();
            if dir == dir_a {
                side_a.add_for_pairing(summary);
                index_a.insert(summary.rollout_id(), index);
                counts[0].count(summary.standing());
            } else if dir == dir_b {
                side_b.add_for_pairing(summary);
                index_b.insert(summary.rollout_id(), index);
                counts[1].count(summary.standing());
            }
        }
        let diff = Diff::of(&side_a, &side_b);
        let mut partner = HashMap::new();
        let mut shown = HashSet::new();
        let flips_only = comparison.flips_only;
        for pair in &diff.pairs {
            let (Some(&a), Some(&b)) = (index_a.get(pair.a.as_str()), index_b.get(pair.b.as_str()))
            else {
                continue;
            };
            partner.insert(a, b);
            partner.insert(b, a);
            if !flips_only || pair.flipped() {
                shown.insert(a);
            }
        }
        // Gone and new only once both stores are read: before, every rollout of A not read
        // in B yet would look gone.
        if self.stores_read() {
            shown.extend(diff.only_a.iter().filter_map(|id| index_a.get(id.as_str())));
            shown.extend(diff.only_b.iter().filter_map(|id| index_b.get(id.as_str())));
        } else if !flips_only {
            // Every rollout of A is shown, those not matched yet with `…`.
            shown.extend(diff.only_a.iter().filter_map(|id| index_a.get(id.as_str())));
        }
        if let Some(comparison) = &mut self.comparison {
            (comparison.diff, comparison.partner, comparison.dirty) = (diff, partner, false);
            comparison.counts = counts;
            comparison.paired_at = Some(std::time::Instant::now());
        }
        // Only the rollouts that came in or went out of view move in the list.
        let changed: Vec<usize> = match &self.list.only {
            Some(before) => before.symmetric_difference(&shown).copied().collect(),
            None => (0..self.rollouts.len()).collect(),
        };
        self.list.only = Some(shown);
        if !changed.is_empty() {
            self.list
                .update_many(&changed, &self.rollouts, self.replay.is_some());
            self.open_selected();
        }
    }

    /// After summaries changed: pair the runs again if compare mode is on; whether it did.
    pub(super) fn pair_again(&mut self) -> bool {
        let reading = !self.stores_read();
        let dirty = self.comparison.as_ref().is_some_and(|c| {
            c.dirty
                && !(reading
                    && c.paired_at
                        .is_some_and(|at| at.elapsed() < PAIRING_WHILE_READING))
        });
        if dirty {
            self.recompare();
        }
        dirty
    }

    /// Whether every rollout of the stores has been read (the first scan is over, or the
    /// analyses were all given).
    fn stores_read(&self) -> bool {
        self.live.ready || self.details.holds_all()
    }

    /// What the list's B column says of rollout `index` (compare mode only).
    pub fn counterpart(&self, index: usize) -> Option<Counterpart> {
        let comparison = self.comparison.as_ref()?;
        if let Some(&other) = comparison.partner.get(&index) {
            return Some(Counterpart::In(other));
        }
        Some(if !self.stores_read() {
            Counterpart::Unread
        } else if self.rollouts[index].location.dir == comparison.b {
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
        let Some(comparison) = &self.comparison else {
            self.message = Some(Notice::CompareOnly);
            return;
        };
        self.show_flips_only(!comparison.flips_only);
    }

    /// Show the flips only (or every rollout); the previous choice.
    pub(super) fn show_flips_only(&mut self, flips_only: bool) -> Option<bool> {
        let comparison = self.comparison.as_mut()?;
        let before = std::mem::replace(&mut comparison.flips_only, flips_only);
        self.recompare();
        Some(before)
    }

    /// Whether rollout `index` counts in the run-wide views (health strip, causes, timeline):
    /// every one, but in compare mode run A's only.
    pub fn in_run_view(&self, index: usize) -> bool {
        self.comparison
            .as_ref()
            .is_none_or(|c| self.rollouts[index].location.dir.as_os_str() == c.a.as_os_str())
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
