//! Following a store as it is written: pause with the changes held back, highlights of what
//! just changed, and how long each call has been in flight.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{App, Notice};
use tokscope_core::live::StoreEvent;
use tokscope_core::verdict::{Lifecycle, Summary};

/// How long a changed rollout stays highlighted.
pub(crate) const HIGHLIGHT: Duration = Duration::from_secs(2);

/// Live monitoring state (also the highlights of replay steps).
#[derive(Debug, Default)]
pub struct Live {
    /// A watcher feeds the app.
    pub watching: bool,
    /// The view is paused; changes wait in `pending`.
    pub paused: bool,
    /// Changes received while paused or replaying.
    pub pending: Vec<StoreEvent>,
    /// The initial scan is complete.
    pub ready: bool,
    /// The initial scan's progress: rollouts read, of how many.
    pub progress: Option<(usize, usize)>,
    /// Rollouts that changed recently (index into the analyses), for a brief highlight.
    pub recent: HashMap<usize, Instant>,
    /// When each in-flight call was first seen, by rollout index and call id.
    pub in_flight_since: HashMap<usize, HashMap<String, Instant>>,
    /// Followed directories that were deleted or renamed away (until they are back).
    pub gone: std::collections::BTreeSet<std::path::PathBuf>,
    /// Followed directories polled because their change events cannot be had.
    pub polled: std::collections::BTreeSet<std::path::PathBuf>,
}

impl Live {
    /// Following a watcher.
    pub(crate) fn watching() -> Live {
        Live {
            watching: true,
            ..Live::default()
        }
    }

    /// Hold `events` back (paused, or replaying); `false` when they are to be applied now.
    pub(crate) fn hold(&mut self, events: &mut Vec<StoreEvent>, replaying: bool) -> bool {
        if replaying || self.paused {
            for event in events.drain(..) {
                // Only a rollout's latest summary or analysis matters: held events stay as
                // many as the rollouts, however long the pause or the replay lasts.
                let replaces = |held: &StoreEvent| match (held, &event) {
                    (StoreEvent::Updated(a), StoreEvent::Updated(b)) => a.location == b.location,
                    (StoreEvent::Detail(a), StoreEvent::Detail(b)) => {
                        a.capture.location == b.capture.location
                    }
                    _ => false,
                };
                match self.pending.iter().position(replaces) {
                    Some(at) => self.pending[at] = event,
                    None => self.pending.push(event),
                }
            }
            return true;
        }
        false
    }

    /// Pause or resume; on resume, the changes held back.
    pub(crate) fn toggle_pause(&mut self) -> Vec<StoreEvent> {
        self.paused = !self.paused;
        if self.paused {
            Vec::new()
        } else {
            std::mem::take(&mut self.pending)
        }
    }

    /// Rollout `index` changed to `summary`: highlight it, and note when each call now in
    /// flight was first seen (forgetting those that landed). Only that rollout's calls are
    /// looked at.
    pub fn changed(&mut self, index: usize, summary: &Summary, now: Instant) {
        self.recent.insert(index, now);
        let open: &[String] = if summary.lifecycle == Lifecycle::Live {
            &summary.open_intents
        } else {
            &[]
        };
        if open.is_empty() {
            self.in_flight_since.remove(&index);
            return;
        }
        let since = self.in_flight_since.entry(index).or_default();
        since.retain(|call, _| open.contains(call));
        for call in open {
            since.entry(call.clone()).or_insert(now);
        }
    }

    /// Let highlights older than [`HIGHLIGHT`] fade; whether any did.
    pub(crate) fn expire(&mut self, now: Instant) -> bool {
        let before = self.recent.len();
        self.recent
            .retain(|_, at| now.duration_since(*at) < HIGHLIGHT);
        before != self.recent.len()
    }
}

/// Changes from the watcher as the app takes them in.
impl App {
    /// How long rollout `index` has waited at least on its call `call` (on its oldest call in
    /// flight, without one), in seconds: since its last record — the call was dispatched
    /// after it, so a stale intent looks stale — or since tokscope saw the call, whichever is
    /// longer.
    pub fn in_flight_age(&self, index: usize, call: Option<&str>) -> Option<f64> {
        let since = self.live.in_flight_since.get(&index);
        let seen = match call {
            Some(call) => since.and_then(|calls| calls.get(call)),
            None => since.and_then(|calls| calls.values().min()),
        }
        .map(|at| self.now.saturating_duration_since(*at).as_secs_f64());
        let since_write = self
            .rollouts
            .get(index)
            .and_then(|s| s.last_write)
            .zip(self.wall)
            .map(|(t, wall)| (wall - t).max(0.0));
        since_write.into_iter().chain(seen).reduce(f64::max)
    }

    /// Whether the open rollout's new calls still stand out (their highlight not faded yet).
    pub(super) fn new_calls_highlighted(&self) -> bool {
        self.view
            .as_ref()
            .and_then(|v| v.new_records)
            .is_some_and(|(_, at)| self.now.duration_since(at) < HIGHLIGHT)
    }

    /// Whether the screen changes with the clock alone (ages of calls in flight, a fading
    /// highlight, a replay playing): only then is an idle explorer redrawn.
    pub fn animating(&self) -> bool {
        let highlight = self.new_calls_highlighted();
        // Ages of calls in flight show for the open rollout and the waiting rows on screen.
        let ages = self
            .view
            .as_ref()
            .is_some_and(|v| self.live.in_flight_since.contains_key(&v.index))
            || self
                .list
                .scroll
                .visible()
                .filter_map(|row| self.list.rows.get(row))
                .any(|index| self.live.in_flight_since.contains_key(index));
        // A replay playing moves its clock between calls too.
        let playing = self.replay.as_ref().is_some_and(|r| r.playing.is_some());
        highlight || !self.live.recent.is_empty() || ages || playing
    }

    /// Take in changes from the watcher (held back while paused or replaying).
    pub(super) fn apply(&mut self, mut events: Vec<StoreEvent>) -> bool {
        // Every rollout read for replay: replay starts (never held back).
        if let Some(at) = events
            .iter()
            .position(|e| matches!(e, StoreEvent::Timeline(_)))
        {
            if let StoreEvent::Timeline(timeline) = events.remove(at) {
                self.replay_on(*timeline);
            }
            if events.is_empty() {
                return true;
            }
        }
        if self.live.paused && self.replay.is_none() {
            // Paused, the answers to what the user opens still come in (as analyses only: the
            // list keeps the paused summaries); the rest waits for resume. A held detail may be
            // older than these: it is applied again on resume, followed by the newer events.
            let mut answered = false;
            for event in &events {
                if let StoreEvent::Detail(analysis) = event
                    && let Some(&index) = self.index_of.get(&analysis.capture.location)
                    && !self.details.contains(index)
                {
                    self.details
                        .insert(index, std::sync::Arc::new((**analysis).clone()));
                    answered = true;
                }
            }
            if answered && self.view.is_none() {
                self.open_selected();
            }
            self.live.hold(&mut events, false);
            return answered;
        }
        if events.is_empty() || self.live.hold(&mut events, self.replay.is_some()) {
            return false;
        }
        let open = self.view.as_ref().map(|v| v.index);
        let mut kept = None;
        let mut updated = Vec::new();
        for event in events {
            match event {
                StoreEvent::Updated(summary) => {
                    let index = self.take_summary_unlisted(*summary);
                    updated.push(index);
                    if Some(index) != open {
                        // Stale now; the watcher sends a fresh one if it is looked at.
                        self.details.remove(index);
                    }
                    self.live.changed(index, &self.rollouts[index], self.now);
                }
                StoreEvent::Detail(analysis) => {
                    let location = &analysis.capture.location;
                    if let Some(view) = &self.view
                        && kept.is_none()
                        && self
                            .rollouts
                            .get(view.index)
                            .is_some_and(|s| &s.location == location)
                        && let Some(before) = self.details.get(view.index)
                    {
                        kept = Some(view.keep(before));
                    }
                    self.take_detail(*analysis);
                }
                StoreEvent::Error(error) => self.message = Some(Notice::Store(error)),
                StoreEvent::Ready => self.live.ready = true,
                StoreEvent::Timeline(_) => {}
                StoreEvent::Progress { read, total } => self.live.progress = Some((read, total)),
                StoreEvent::StoreGone(dir) => {
                    self.message = Some(Notice::StoreGone(dir.clone()));
                    self.live.gone.insert(dir);
                }
                StoreEvent::StoreBack(dir) => {
                    self.message = Some(Notice::StoreBack(dir.clone()));
                    self.live.gone.remove(&dir);
                }
                StoreEvent::Unlistable { dir, reason } => {
                    self.message = Some(Notice::Store(format!(
                        "{} cannot be listed ({reason}): its rollouts cannot be seen",
                        dir.display()
                    )));
                }
                StoreEvent::Polling { dir, reason } => {
                    self.message = Some(Notice::Polling {
                        dir: dir.clone(),
                        reason,
                    });
                    self.live.polled.insert(dir);
                }
            }
        }
        self.list
            .update_many(&updated, &self.rollouts, self.replay.is_some());
        self.after_change(kept);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_holds_changes_and_resume_releases_them() {
        let mut live = Live::watching();
        let mut events = vec![StoreEvent::Ready];
        assert!(!live.hold(&mut events, false));
        assert_eq!(events.len(), 1, "applied now");
        assert!(live.toggle_pause().is_empty());
        assert!(live.hold(&mut events, false));
        assert!(events.is_empty());
        let mut more = vec![StoreEvent::Error("x".into())];
        assert!(live.hold(&mut more, true), "replay holds too");
        let released = live.toggle_pause();
        assert_eq!(released.len(), 2);
        assert!(live.pending.is_empty());
    }

    #[test]
    fn highlights_fade() {
        let mut live = Live::default();
        let start = Instant::now();
        live.recent.insert(3, start);
        assert!(!live.expire(start + HIGHLIGHT / 2));
        assert!(live.expire(start + HIGHLIGHT * 2));
        assert!(live.recent.is_empty());
    }
}
