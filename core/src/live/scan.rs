//! The first scan: every rollout of the stores read on all cores, the summaries sent in
//! batches, what the UI looks at read first.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use std::sync::{Arc, Mutex};

use super::rollout::LiveRollout;
use super::{LiveStore, StoreEvent};
use crate::store::layout::natural_cmp;
use crate::store::{RolloutLocation, StoreDirError};

/// How long the first scan gathers finished rollouts before sending them (one list update
/// per batch, not per rollout).
pub const FIRST_SCAN_BATCH: Duration = Duration::from_millis(25);

/// Move the rollouts of `focus` still in `queue` to its front, in `focus`'s order.
fn to_front(queue: &mut VecDeque<(usize, RolloutLocation)>, focus: &[RolloutLocation]) {
    for location in focus.iter().rev() {
        if let Some(at) = queue.iter().position(|(_, l)| l == location)
            && let Some(wanted) = queue.remove(at)
        {
            queue.push_front(wanted);
        }
    }
}

impl LiveStore {
    /// The first scan: every rollout read on all cores, each summary sent as soon as it is
    /// ready, in batches of [`FIRST_SCAN_BATCH`] with the progress; between batches,
    /// `requests` is asked for the rollouts the UI now looks at, which are read next. Nothing
    /// is kept hot.
    pub fn first_scan(
        &mut self,
        send: &mut dyn FnMut(StoreEvent) -> bool,
        requests: &mut dyn FnMut() -> Option<Vec<RolloutLocation>>,
    ) -> Result<bool, StoreDirError> {
        let pending: Vec<RolloutLocation> = self
            .discover()?
            .into_iter()
            .filter(|l| !self.rollouts.contains_key(l))
            .collect();
        let total = pending.len();
        for event in self.take_listing_events() {
            if !send(event) {
                return Ok(false);
            }
        }
        // Taken before listing: a change made meanwhile makes the first poll list again.
        self.listed = self.dir_times();
        self.last_listing = Some(std::time::Instant::now());
        let queue = crate::pool::Queue::new(pending);
        // What the UI looks at already is read first (later requests come between batches).
        if let Some(focus) = requests() {
            queue.edit(|items| to_front(items, &focus));
            self.focus = focus;
        }
        // The workers read; this thread hands their results on, so no core waits for another
        // to finish a chunk, nor for the events to be sent.
        let (options, rows) = (self.options.clone(), Arc::clone(&self.rows));
        let following = self.following;
        // A worker sums its rollout up and drops the analysis itself (freed where it was
        // made, beside the next one), unless the UI looks at it: what it looks at is copied
        // here whenever it changes.
        let looked_at = Mutex::new(self.focus.clone());
        let read = |location: RolloutLocation| {
            let options = crate::load::options_for(&options, &rows, &location);
            let (rollout, analysis) = LiveRollout::read_first(location, &options, following);
            let summary = StoreEvent::updated(&analysis);
            let looked_at = looked_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&rollout.location);
            let detail = looked_at.then(|| StoreEvent::Detail(Box::new(analysis)));
            (rollout, summary, detail)
        };
        crate::pool::run(&queue, crate::pool::Order::Done, read, |results| {
            let mut read = 0;
            while let Some(first) = results.next() {
                let deadline = Instant::now() + FIRST_SCAN_BATCH;
                let mut batch = vec![first];
                while let Some(more) = results.next_until(deadline) {
                    batch.push(more);
                }
                read += batch.len();
                let mut events = Vec::new();
                for (rollout, summary, detail) in batch {
                    let location = rollout.location.clone();
                    let hot = !rollout.is_cold();
                    self.rollouts.insert(location.clone(), rollout);
                    if hot {
                        // (Within the bounds: the least recently read are cooled.)
                        self.warm(&location);
                    }
                    events.push(summary);
                    match detail {
                        Some(detail) => events.push(detail),
                        // Looked at since its worker dropped the analysis: made again.
                        None if self.focus.contains(&location) => {
                            events.extend(self.detail_of(&location));
                        }
                        None => {}
                    }
                }
                events.push(StoreEvent::Progress { read, total });
                if let Some(focus) = requests() {
                    // Looked at first: those read already are answered now, the others are
                    // moved to the front of the queue.
                    queue.edit(|items| to_front(items, &focus));
                    *looked_at
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = focus.clone();
                    events.extend(self.set_focus(focus));
                }
                if !events.into_iter().all(&mut *send) {
                    // Nobody listens: the workers stop after the rollout they are reading.
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }
    /// The rollouts of the followed directories, in store then natural id order. A
    /// directory that cannot be listed does not keep the others from being listed: it is
    /// reported once ([`StoreEvent::Unlistable`], in [`LiveStore::take_listing_events`]),
    /// and again when it can be listed ([`StoreEvent::StoreBack`]).
    pub(super) fn discover(&mut self) -> Result<Vec<RolloutLocation>, StoreDirError> {
        let mut found = Vec::new();
        for dir in self.dirs.clone() {
            match crate::store::discover(&dir) {
                Ok(locations) => {
                    found.extend(locations);
                    if self.unlistable.remove(&dir) {
                        self.listing_events.push(StoreEvent::StoreBack(dir));
                    }
                }
                // A directory that went away is reported by the watch; its rollouts are gone.
                Err(error) if error.source.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    if self.unlistable.insert(dir.clone()) {
                        self.listing_events.push(StoreEvent::Unlistable {
                            dir,
                            reason: error.source.to_string(),
                        });
                    }
                }
            }
        }
        found.sort_by(|a, b| a.dir.cmp(&b.dir).then_with(|| natural_cmp(&a.id, &b.id)));
        Ok(found)
    }
}
