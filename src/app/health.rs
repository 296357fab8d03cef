//! Store-wide health: masked fraction by reason, parent decisions, prefix supply, delivered
//! fractions, calls per second. Computed when the rollouts change, never while drawing.

use std::collections::BTreeMap;

use crate::verdict::{Analysis, Lifecycle, Verdict};

/// Seconds of history in the calls-per-second series.
pub(crate) const RATE_WINDOW: usize = 60;

/// Store-wide counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Health {
    /// Rollouts.
    pub rollouts: usize,
    /// Rollouts masked (or that would be if frozen now).
    pub masked: usize,
    /// Rollouts still live.
    pub live: usize,
    /// Frozen rollouts, and how many of them are masked.
    pub frozen: usize,
    /// Frozen rollouts that are masked.
    pub frozen_masked: usize,
    /// Masked rollouts by mask reason code.
    pub masked_by_reason: BTreeMap<&'static str, usize>,
    /// Records.
    pub calls: usize,
    /// Calls in flight (live rollouts' intents without records).
    pub in_flight: usize,
    /// Generated tokens captured / delivered.
    pub tokens_captured: usize,
    /// Generated tokens delivered.
    pub tokens_delivered: usize,
    /// Placed calls by parent decision: `root`, `resolved`, `recovered`, or the link note.
    pub parent_decisions: BTreeMap<String, usize>,
    /// Calls that requested the verified parent prefix, and those that proved it supplied.
    pub prefix_requested: usize,
    /// Calls whose prompt proved the prefix was supplied.
    pub prefix_supplied: usize,
    /// Rollouts by delivered fraction: <25%, <50%, <75%, <100%, 100%.
    pub delivered_buckets: [usize; 5],
    /// Calls per second over the last [`RATE_WINDOW`] seconds of `created_at` times.
    pub calls_per_second: Vec<u64>,
}

impl Health {
    /// Count over every rollout.
    pub fn of(analyses: &[Analysis]) -> Health {
        let mut h = Health::default();
        let mut times: Vec<f64> = Vec::new();
        for a in analyses {
            if a.lifecycle == Lifecycle::Cleared {
                continue;
            }
            h.rollouts += 1;
            h.masked += usize::from(a.mask_sample);
            if a.mask_sample {
                for reason in &a.reasons {
                    *h.masked_by_reason.entry(reason.code()).or_default() += 1;
                }
            }
            // Final verdicts (frozen, retired, or unreadable files) count towards the alarm.
            if a.verdict == Verdict::Pending {
                h.live += 1;
                h.in_flight += a.capture.open_intents().len();
            } else {
                h.frozen += 1;
                h.frozen_masked += usize::from(a.mask_sample);
            }
            h.calls += a.capture.records.len();
            for record in &a.capture.records {
                h.prefix_requested += usize::from(record.prefix_requested);
                h.prefix_supplied += usize::from(record.prefix_supplied);
                times.push(record.created_at);
            }
            if let Some(build) = &a.build {
                h.tokens_captured += build.notes.generated_tokens_captured;
                h.tokens_delivered += build.notes.generated_tokens_delivered;
                for node in &build.nodes {
                    let decision = match (node.note, node.parent) {
                        (Some(note), _) if note.is_boundary() => note.as_str(),
                        (Some(_), _) => "recovered",
                        (None, Some(_)) => "resolved",
                        (None, None) => "root",
                    };
                    *h.parent_decisions.entry(decision.to_owned()).or_default() += 1;
                }
                let fraction = build.notes.delivered_fraction;
                let bucket = if fraction >= 1.0 {
                    4
                } else {
                    ((fraction * 4.0) as usize).min(3)
                };
                h.delivered_buckets[bucket] += 1;
            }
        }
        h.calls_per_second = rate(&times);
        h
    }

    /// Masked fraction of frozen rollouts (0 when none is frozen).
    pub(crate) fn frozen_masked_fraction(&self) -> f64 {
        if self.frozen == 0 {
            0.0
        } else {
            self.frozen_masked as f64 / self.frozen as f64
        }
    }

    /// Whether the masked fraction of frozen rollouts exceeds `limit`.
    pub fn alarm(&self, limit: Option<f64>) -> bool {
        limit.is_some_and(|limit| self.frozen > 0 && self.frozen_masked_fraction() > limit)
    }
}

/// Calls per second over the last window, oldest first.
fn rate(times: &[f64]) -> Vec<u64> {
    let Some(latest) = times
        .iter()
        .copied()
        .filter(|t| t.is_finite())
        .reduce(f64::max)
    else {
        return vec![0; RATE_WINDOW];
    };
    let mut buckets = vec![0u64; RATE_WINDOW];
    for &t in times {
        let age = (latest - t).floor();
        if age >= 0.0 && (age as usize) < RATE_WINDOW {
            buckets[RATE_WINDOW - 1 - age as usize] += 1;
        }
    }
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_per_second() {
        let series = super::rate(&[100.0, 100.5, 99.2, 40.0]);
        assert_eq!(series.len(), RATE_WINDOW);
        assert_eq!(series[RATE_WINDOW - 1], 2);
        assert_eq!(series[RATE_WINDOW - 2], 1);
        assert_eq!(
            series.iter().sum::<u64>(),
            3,
            "calls older than the window are left out"
        );
    }

    #[test]
    fn counts_the_conformance_store() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/conformance/store-1-0");
        let analyses = crate::load::analyze_all(
            &crate::load::locate(&[dir], &[]).unwrap(),
            &Default::default(),
        );
        let h = Health::of(&analyses);
        assert_eq!(h.rollouts, 30);
        assert_eq!(h.masked, 19);
        assert_eq!(h.frozen, 0);
        assert!(!h.alarm(Some(0.1)), "no frozen rollout, no alarm");
        assert_eq!(h.parent_decisions.get("parent_unresolved"), Some(&4));
        assert!(h.prefix_supplied <= h.prefix_requested + h.calls);
        assert_eq!(h.delivered_buckets.iter().sum::<usize>(), 25);
    }
}
