//! Which changes reach the open rollout's panes (the tree, the tokens, the inspector).
//!
//! While a run is written, frames come every 100 ms for the list and the header, and each
//! frame built the open rollout's panes again though nothing of them had changed: a fifth of
//! the frame thread. [`App::detail_revision`] counts the changes that may reach those panes,
//! and the drawing side keeps a pane's rendering for its revision. Every message counts as
//! such a change, except three kinds, each by a check of its own:
//!
//! - the watcher's news of other rollouts (or progress), and the clock: they count only if
//!   they moved what the panes read of the open rollout ([`DetailProbe`]);
//! - the drawing side's measures: they count only if the app says they changed something.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokscope_core::live::StoreEvent;
use tokscope_core::store::RolloutLocation;
use tokscope_core::verdict::Analysis;

use super::{App, Message};

/// Apps made so far: a revision is of one app (tests draw many apps on one thread).
static APPS: AtomicU64 = AtomicU64::new(0);

/// The changes that may have reached the open rollout's panes, counted.
#[derive(Debug)]
pub(super) struct Revision {
    app: u64,
    count: u64,
}

impl Revision {
    pub(super) fn new() -> Revision {
        Revision {
            app: APPS.fetch_add(1, Ordering::Relaxed),
            count: 0,
        }
    }
}

/// What the open rollout's panes read that the watcher and the clock can change: which
/// rollout is open and its analysis (by address: a new one for the open rollout comes only
/// in an event about it, which always counts), the records highlighted as new, and whether
/// the panes wait for an analysis.
#[derive(Debug, PartialEq)]
pub(super) struct DetailProbe {
    open: Option<(
        usize,
        Option<RolloutLocation>,
        Option<*const Analysis>,
        bool,
    )>,
    new_records: Option<(usize, Instant)>,
    highlighted: bool,
    loading: bool,
}

/// How a message may reach the open rollout's panes.
pub(super) enum Reach {
    /// Through what [`DetailProbe`] sees, taken before the message.
    Probed(DetailProbe),
    /// Only if the app says something changed (the drawing side's measures).
    IfChanged,
    /// Always.
    Always,
}

impl App {
    /// Which app the panes are of, and how many changes may have reached the open rollout's
    /// panes: the same pair, the same tree, tokens and inspector (for the same theme, focus,
    /// tab and settings, which the drawing side compares too).
    pub fn detail_revision(&self) -> (u64, u64) {
        (self.revision.app, self.revision.count)
    }

    /// How `message` may reach the open rollout's panes (taken before it is handled).
    pub(super) fn reach(&self, message: &Message) -> Reach {
        match message {
            Message::Store(events) if !events.iter().any(|e| self.is_about_open(e)) => {
                Reach::Probed(self.detail_probe())
            }
            // (A replay's clock moves the rollouts themselves.)
            Message::Tick(_) if self.replay.is_none() => Reach::Probed(self.detail_probe()),
            Message::InspectorMeasured(_)
            | Message::InspectorMatches(_)
            | Message::HelpMeasured { .. } => Reach::IfChanged,
            _ => Reach::Always,
        }
    }

    /// Count `message`'s change if it may have reached the open rollout's panes (`reach`
    /// taken before it, `changed` what handling it returned).
    pub(super) fn count_reach(&mut self, reach: Reach, changed: bool) {
        let reached = match reach {
            Reach::Probed(before) => self.detail_probe() != before,
            Reach::IfChanged => changed,
            Reach::Always => true,
        };
        if reached {
            self.revision.count += 1;
        }
    }

    /// Whether a watcher's event may change the open rollout's panes directly: news of it,
    /// or a replay's timeline.
    fn is_about_open(&self, event: &StoreEvent) -> bool {
        let open = self
            .view
            .as_ref()
            .and_then(|view| self.rollouts.get(view.index))
            .map(|summary| &summary.location);
        match event {
            StoreEvent::Updated(summary) => Some(&summary.location) == open,
            StoreEvent::Detail(analysis) => Some(&analysis.capture.location) == open,
            StoreEvent::Timeline(_) => true,
            _ => false,
        }
    }

    fn detail_probe(&self) -> DetailProbe {
        let view = self.view.as_ref();
        DetailProbe {
            open: view.map(|view| {
                (
                    view.index,
                    self.rollouts.get(view.index).map(|s| s.location.clone()),
                    self.details
                        .get(view.index)
                        .map(|analysis| analysis as *const Analysis),
                    view.what_if.is_some(),
                )
            }),
            new_records: view.and_then(|view| view.new_records),
            highlighted: self.new_calls_highlighted(),
            loading: self.loading(),
        }
    }
}
