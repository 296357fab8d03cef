//! The full analyses the app holds: only the rollouts being looked at (the selected one and
//! its neighbours), in a small cache; every other rollout is known by its
//! [`Summary`](tokscope_core::verdict::Summary) alone. The watcher reads a rollout's detail when the
//! app asks for it (see [`App::detail_requests`](super::App::detail_requests)).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::App;
use tokscope_core::store::RolloutLocation;
use tokscope_core::verdict::{Analysis, Summary};

/// How many full analyses a live app keeps: the open rollout, its neighbours, and a few
/// recently open ones (going back to them is then instant).
pub const DETAIL_CACHE: usize = 8;

/// Full analyses by rollout index, bounded unless every analysis was given up front.
#[derive(Clone, Debug, Default)]
pub struct Details {
    held: HashMap<usize, Arc<Analysis>>,
    /// Least recently used first.
    order: VecDeque<usize>,
    /// `None`: keep everything (the analyses were all given, as in replay and tests).
    capacity: Option<usize>,
}

impl Details {
    /// A cache of at most `capacity` analyses.
    pub fn bounded(capacity: usize) -> Details {
        Details {
            capacity: Some(capacity.max(1)),
            ..Details::default()
        }
    }

    /// Every analysis, kept (nothing is ever asked of the watcher).
    pub fn all(analyses: impl IntoIterator<Item = Analysis>) -> Details {
        let mut details = Details::default();
        for (index, analysis) in analyses.into_iter().enumerate() {
            details.insert(index, Arc::new(analysis));
        }
        details
    }

    /// Whether every analysis is held (no bound).
    pub fn holds_all(&self) -> bool {
        self.capacity.is_none()
    }

    /// The analysis of rollout `index`, if held.
    pub fn get(&self, index: usize) -> Option<&Analysis> {
        self.held.get(&index).map(Arc::as_ref)
    }

    /// Whether rollout `index` is held.
    pub fn contains(&self, index: usize) -> bool {
        self.held.contains_key(&index)
    }

    /// Hold `analysis` as rollout `index`'s, evicting the least recently used beyond the
    /// bound (never one of `keep`).
    pub fn insert(&mut self, index: usize, analysis: Arc<Analysis>) {
        self.held.insert(index, analysis);
        self.touch(index);
    }

    /// Mark rollout `index` as just used.
    pub fn touch(&mut self, index: usize) {
        if !self.held.contains_key(&index) {
            return;
        }
        if let Some(at) = self.order.iter().position(|&i| i == index) {
            self.order.remove(at);
        }
        self.order.push_back(index);
    }

    /// Drop analyses beyond the bound, least recently used first, never one of `keep`.
    pub fn trim(&mut self, keep: &[usize]) {
        let Some(capacity) = self.capacity else {
            return;
        };
        let mut at = 0;
        while self.held.len() > capacity && at < self.order.len() {
            let index = self.order[at];
            if keep.contains(&index) {
                at += 1;
            } else {
                self.order.remove(at);
                self.held.remove(&index);
            }
        }
    }

    /// Forget rollout `index`'s analysis (it changed and is no longer looked at).
    pub fn remove(&mut self, index: usize) {
        if self.capacity.is_some() && self.held.remove(&index).is_some() {
            self.order.retain(|&i| i != index);
        }
    }

    /// Analyses held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

/// The app's side of summaries and details: what it asks of the watcher, and how it takes
/// in what arrives.
impl App {
    /// The full analysis of the open rollout (as built, without what-if).
    pub(super) fn base(&self) -> Option<&Analysis> {
        self.details.get(self.view.as_ref()?.index)
    }

    /// The rollouts whose full analyses the app wants now (the selected one first, then its
    /// neighbours in the list), when that changed since the last call: the event loop hands
    /// them to the watcher, which answers with [`StoreEvent::Detail`](tokscope_core::live::StoreEvent::Detail) and keeps sending a
    /// detail when one of them changes.
    pub fn detail_requests(&mut self) -> Option<Vec<RolloutLocation>> {
        // Replay answers from its own timeline (see `open_selected`).
        if self.details.holds_all() || self.replay.is_some() {
            return None;
        }
        let wanted: Vec<RolloutLocation> = self
            .looked_at()
            .into_iter()
            .map(|index| self.rollouts[index].location.clone())
            .collect();
        (wanted != self.requested).then(|| {
            self.requested = wanted.clone();
            wanted
        })
    }

    /// Whether replay was asked for and waits for the watcher's timeline.
    pub fn replay_pending(&self) -> bool {
        self.replay_wanted
    }

    /// The rollouts, in the app's order, when the watcher should make a replay timeline of
    /// them (asked once; the answer is
    /// [`StoreEvent::Timeline`](tokscope_core::live::StoreEvent::Timeline)).
    pub fn replay_request(&mut self) -> Option<Vec<RolloutLocation>> {
        std::mem::take(&mut self.replay_requested)
            .then(|| self.rollouts.iter().map(|s| s.location.clone()).collect())
    }

    /// The rollouts looked at: the selected one, then its neighbours in the list.
    pub(super) fn looked_at(&self) -> Vec<usize> {
        let rows = &self.list.rows;
        let Some(selected) = self.list.selected_rollout() else {
            return Vec::new();
        };
        let at = self.list.scroll.selected();
        let mut indices = vec![selected];
        indices.extend(at.checked_sub(1).and_then(|i| rows.get(i)));
        indices.extend(rows.get(at + 1));
        // Compare mode: the selected rollout's counterpart, for the side-by-side view.
        indices.extend(self.selected_partner());
        indices
    }

    /// The summary of the rollout at `location`, if known.
    pub fn summary(&self, location: &RolloutLocation) -> Option<&Summary> {
        self.rollouts.get(*self.index_of.get(location)?)
    }

    /// Whether the selected rollout's analysis is still being read.
    pub fn loading(&self) -> bool {
        self.view.is_none()
            && self
                .list
                .selected_rollout()
                .is_some_and(|index| !self.details.contains(index))
    }

    /// Take in rollout `summary` (new or changed): health by difference, its list row
    /// moved; returns its index. A held analysis of a rollout not looked at is dropped (it
    /// is stale now); the watcher sends fresh ones of those looked at.
    pub(super) fn take_summary(&mut self, summary: Summary) -> usize {
        let index = self.take_summary_unlisted(summary);
        self.list
            .update(index, &self.rollouts, self.replay.is_some());
        index
    }

    /// Take in a rollout's summary (health counted) without placing its list row: the
    /// caller places a batch's rows at once ([`super::RolloutList::update_many`]).
    pub(super) fn take_summary_unlisted(&mut self, summary: Summary) -> usize {
        let index = match self.index_of.get(&summary.location) {
            Some(&index) => {
                let counted = self.in_run_view(index);
                self.timeline_count(index, false);
                let old = std::mem::replace(&mut self.rollouts[index], summary);
                match (counted, self.in_run_view(index)) {
                    (true, true) => self.health.replace(&old, &self.rollouts[index]),
                    (true, false) => self.health.remove(&old),
                    (false, true) => self.health.add(&self.rollouts[index]),
                    (false, false) => {}
                }
                index
            }
            None => {
                self.longest_id = self.longest_id.max(summary.rollout_id().len());
                self.index_of
                    .insert(summary.location.clone(), self.rollouts.len());
                self.rollouts.push(summary);
                let index = self.rollouts.len() - 1;
                if self.in_run_view(index) {
                    self.health.add(&self.rollouts[index]);
                }
                index
            }
        };
        self.timeline_count(index, true);
        if let Some(comparison) = &mut self.comparison {
            comparison.dirty = true;
        }
        index
    }

    /// Take in a full analysis (a detail asked for, or a replay step): its summary too.
    pub(super) fn take_detail(&mut self, analysis: Analysis) -> usize {
        let index = self.take_summary(Summary::of(&analysis));
        self.details.insert(index, std::sync::Arc::new(analysis));
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_its_bound_and_never_what_is_looked_at() {
        let analyses = tokscope_testkit::demo_analyses();
        let mut details = Details::bounded(3);
        for (index, analysis) in analyses.iter().enumerate() {
            details.insert(index, Arc::new(analysis.clone()));
            details.trim(&[0]);
            assert!(details.len() <= 3);
            assert!(details.contains(0), "the open rollout stays");
        }
        let last = analyses.len() - 1;
        assert!(details.contains(last) && details.contains(last - 1));
        details.remove(last);
        assert!(!details.contains(last));
        let all = Details::all(analyses.clone());
        assert_eq!(all.len(), analyses.len());
    }
}
