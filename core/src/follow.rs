//! `check --follow`: a headless watch of the stores for a training launcher. Every verdict
//! change becomes one line (text or JSON), and the watch ends with a decision: the frozen
//! rollouts' masked fraction went over the limit (the run's data went bad: status 1), or
//! every rollout was retired (status 0).

use std::collections::HashMap;

use serde::Serialize;

use crate::health::Health;
use crate::store::RolloutLocation;
use crate::verdict::{Lifecycle, Summary, Verdict};

/// The frozen rollouts judged before the alarm may fire, by default: one masked rollout among
/// the first few frozen is not yet a trend.
pub const DEFAULT_MIN_FROZEN: usize = 10;

/// What a rollout's line says: its state and verdict (a change of either is reported).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VerdictChange {
    /// Always `verdict`.
    pub event: &'static str,
    /// The rollout id.
    pub rollout: String,
    /// Its store directory.
    pub store: String,
    /// `live`, `frozen`, `retired` or `cleared`.
    pub lifecycle: Lifecycle,
    /// `ok`, `masked` or `pending`.
    pub verdict: Verdict,
    /// The consumer's mask decision (as if frozen now, for a live rollout).
    pub mask_sample: bool,
    /// The first mask reason's code, when masked.
    pub reason_code: Option<&'static str>,
    /// The first mask reason, worded.
    pub reason: Option<String>,
}

/// The alarm: the frozen rollouts' masked fraction went over the limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alarm {
    /// Always `alarm`.
    pub event: &'static str,
    /// Frozen (and retired) rollouts.
    pub frozen: usize,
    /// Those of them masked.
    pub frozen_masked: usize,
    /// `frozen_masked / frozen`.
    pub fraction: f64,
    /// The limit it went over.
    pub limit: f64,
}

/// How the watch stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Keep watching.
    Watching,
    /// Stop with status 1.
    Tripped(Alarm),
    /// Every rollout was retired: stop with status 0.
    AllRetired,
}

/// The verdicts seen so far and the store-wide counts.
#[derive(Debug, Default)]
pub struct Follower {
    known: HashMap<RolloutLocation, Summary>,
    health: Health,
    max_mask_fraction: Option<f64>,
    min_frozen: usize,
}

impl Follower {
    /// Judge with `max_mask_fraction` (none: never trip) once `min_frozen` rollouts are frozen.
    pub fn new(max_mask_fraction: Option<f64>, min_frozen: usize) -> Follower {
        Follower {
            max_mask_fraction,
            min_frozen,
            ..Follower::default()
        }
    }

    /// Take in a rollout's new summary; the line to print when its state or verdict changed.
    pub fn take(&mut self, summary: Summary) -> Option<VerdictChange> {
        let key = |s: &Summary| {
            (
                s.lifecycle,
                s.verdict,
                s.mask_sample,
                s.reasons.first().cloned(),
            )
        };
        let changed = self
            .known
            .get(&summary.location)
            .is_none_or(|before| key(before) != key(&summary));
        if let Some(before) = self.known.get(&summary.location) {
            self.health.remove(before);
        }
        self.health.add(&summary);
        let line = changed.then(|| VerdictChange {
            event: "verdict",
            rollout: crate::text::sanitize(summary.rollout_id()).into_owned(),
            store: crate::text::sanitize(&summary.location.dir.display().to_string()).into_owned(),
            lifecycle: summary.lifecycle,
            verdict: summary.verdict,
            mask_sample: summary.mask_sample,
            reason_code: summary.first_reason().map(|r| r.code()),
            reason: summary
                .first_reason()
                .map(|r| crate::text::sanitize(&r.to_string()).into_owned()),
        });
        self.known.insert(summary.location.clone(), summary);
        line
    }

    /// Where the watch stands now.
    pub fn decision(&self) -> Decision {
        let h = &self.health;
        if let Some(limit) = self.max_mask_fraction
            && h.alarm(Some(limit), self.min_frozen)
        {
            return Decision::Tripped(Alarm {
                event: "alarm",
                frozen: h.tally.judged(),
                frozen_masked: h.tally.masked,
                fraction: h.frozen_masked_fraction(),
                limit,
            });
        }
        let all_retired = !self.known.is_empty()
            && self
                .known
                .values()
                .all(|s| matches!(s.lifecycle, Lifecycle::Retired | Lifecycle::Cleared));
        if all_retired {
            Decision::AllRetired
        } else {
            Decision::Watching
        }
    }
}

impl VerdictChange {
    /// The text line: rollout, state, verdict, first reason.
    pub fn text(&self) -> String {
        let verdict = self.verdict.words(self.mask_sample);
        let state = self.lifecycle.name();
        let mut line = format!("{}  {state}  {verdict}", self.rollout);
        if let Some(reason) = &self.reason {
            line.push_str("  ");
            line.push_str(reason);
        }
        line
    }
}

impl Alarm {
    /// The text line.
    pub fn text(&self) -> String {
        format!(
            "ALARM: {} of {} frozen rollouts masked ({:.1}%), over the limit of {:.1}%",
            self.frozen_masked,
            self.frozen,
            self.fraction * 100.0,
            self.limit * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_changes_once_and_trips_only_after_enough_frozen() {
        let analyses = crate::load::demo_store_analyses();
        let summaries: Vec<Summary> = analyses.iter().map(Summary::of).collect();
        let frozen_masked = summaries
            .iter()
            .filter(|s| s.verdict == Verdict::Masked)
            .count();
        assert!(frozen_masked > 0);
        // A limit below the demo's masked fraction, but more frozen rollouts asked than exist.
        let mut waiting = Follower::new(Some(0.01), summaries.len() + 1);
        let mut tripping = Follower::new(Some(0.01), 1);
        for summary in &summaries {
            assert!(
                waiting.take(summary.clone()).is_some(),
                "a new rollout is a change"
            );
            tripping.take(summary.clone());
        }
        assert_eq!(waiting.decision(), Decision::Watching);
        assert!(matches!(tripping.decision(), Decision::Tripped(_)));
        // The same summary again is no change.
        assert_eq!(waiting.take(summaries[0].clone()), None);
        // Without a limit, never.
        let mut never = Follower::new(None, 0);
        for summary in &summaries {
            never.take(summary.clone());
        }
        assert_eq!(never.decision(), Decision::Watching);
        // Every rollout retired: done.
        let mut retired = Follower::new(Some(0.01), 1);
        for summary in &summaries {
            let mut summary = summary.clone();
            summary.lifecycle = Lifecycle::Retired;
            summary.verdict = Verdict::Ok;
            summary.mask_sample = false;
            retired.take(summary);
        }
        assert_eq!(retired.decision(), Decision::AllRetired);
    }
}
