//! Store-wide health: masked fraction by reason, parent decisions, prefix supply, delivered
//! fractions, calls per second. Computed when the rollouts change, never while drawing.

use std::collections::BTreeMap;

use crate::causes::Causes;
use crate::verdict::{Standing, Summary, Tally};

/// Seconds of history in the calls-per-second series.
pub(crate) const RATE_WINDOW: usize = 60;

/// Store-wide counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Health {
    /// The rollouts by standing: the one count every surface shows (see [`Standing`]).
    pub tally: Tally,
    /// Masked (final) and at-risk (live) rollouts by mask reason code.
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
    pub parent_decisions: BTreeMap<&'static str, usize>,
    /// Calls that requested the verified parent prefix, and those that proved it supplied.
    pub prefix_requested: usize,
    /// Calls whose prompt proved the prefix was supplied.
    pub prefix_supplied: usize,
    /// Rollouts by delivered fraction: <25%, <50%, <75%, <100%, 100%.
    pub delivered_buckets: [usize; 5],
    /// Calls per second over the last [`RATE_WINDOW`] seconds of `created_at` times.
    pub calls_per_second: Vec<u64>,
    /// Masked and at-risk rollouts grouped by cause, and the tasks masking thins.
    pub causes: Causes,
    /// Records by whole second of `created_at`, over every rollout.
    seconds: BTreeMap<i64, u64>,
}

impl Health {
    /// Count over every rollout.
    pub fn of<'a>(summaries: impl IntoIterator<Item = &'a Summary>) -> Health {
        let mut h = Health::default();
        for summary in summaries {
            h.add(summary);
        }
        h.settle();
        h
    }

    /// Count `summary` in (a rollout appeared, or changed to this).
    pub fn add(&mut self, summary: &Summary) {
        self.count(summary, 1);
    }

    /// Count `summary` out (it changed or went away); the exact inverse of [`Health::add`].
    pub fn remove(&mut self, summary: &Summary) {
        self.count(summary, -1);
    }

    /// Recompute the calls-per-second series after adds and removes: the last
    /// [`RATE_WINDOW`] seconds before the latest call, from the per-second counts.
    pub fn settle(&mut self) {
        let mut series = vec![0u64; RATE_WINDOW];
        if let Some((&latest, _)) = self.seconds.last_key_value() {
            let first = latest.saturating_sub(RATE_WINDOW as i64 - 1);
            for (&second, &count) in self.seconds.range(first..=latest) {
                series[(second - first) as usize] = count;
            }
        }
        self.calls_per_second = series;
    }

    /// Count `old` out and `new` in (a rollout changed): what [`Health::remove`] then
    /// [`Health::add`] do, but the records by second are touched only where the two
    /// differ (an append changes one second of a rollout's dozens; counting all of them out
    /// and in again was a sixth of the explorer's frame thread while a run was written).
    /// `old` must be counted in (as remove's inverse of add presumes too).
    pub fn replace(&mut self, old: &Summary, new: &Summary) {
        let before: &[(i64, u32)] = if self.count_totals(old, -1) {
            &old.call_seconds
        } else {
            &[]
        };
        let after: &[(i64, u32)] = if self.count_totals(new, 1) {
            &new.call_seconds
        } else {
            &[]
        };
        // Per second, the old count out and the new one in, as remove then add do: both
        // maps walked side by side in order (an append changes a second or two of a
        // rollout's dozens; looking each up in the other map was most of an update).
        let (mut old, mut new) = (before.iter().peekable(), after.iter().peekable());
        loop {
            match (old.peek(), new.peek()) {
                (Some(&&(a, n)), Some(&&(b, _))) if a < b => {
                    self.count_second(a, n, -1);
                    old.next();
                }
                (Some(&&(a, _)), Some(&&(b, m))) if b < a => {
                    self.count_second(b, m, 1);
                    new.next();
                }
                (Some(&&(second, n)), Some(&&(_, m))) => {
                    if n != m {
                        self.count_second(second, n, -1);
                        self.count_second(second, m, 1);
                    }
                    old.next();
                    new.next();
                }
                (Some(&&(a, n)), None) => {
                    self.count_second(a, n, -1);
                    old.next();
                }
                (None, Some(&&(b, m))) => {
                    self.count_second(b, m, 1);
                    new.next();
                }
                (None, None) => break,
            }
        }
    }

    fn count(&mut self, s: &Summary, sign: isize) {
        if self.count_totals(s, sign) {
            for &(second, n) in &s.call_seconds {
                self.count_second(second, n, sign);
            }
        }
    }

    /// Count `s` in or out of everything but the records by second; whether those count
    /// too (a cleared rollout is in the tally alone).
    fn count_totals(&mut self, s: &Summary, sign: isize) -> bool {
        fn bump(value: &mut usize, by: usize, sign: isize) {
            *value = if sign > 0 {
                value.saturating_add(by)
            } else {
                value.saturating_sub(by)
            };
        }
        let standing = s.standing();
        self.tally.count(standing, sign);
        if standing == Standing::Cleared {
            return false;
        }
        if sign > 0 {
            self.causes.add(s);
        } else {
            self.causes.remove(s);
        }
        if matches!(standing, Standing::Masked | Standing::AtRisk) {
            for reason in &s.reasons {
                bump(
                    self.masked_by_reason.entry(reason.code()).or_default(),
                    1,
                    sign,
                );
            }
        }
        if standing.is_live() {
            bump(&mut self.in_flight, s.open_intents.len(), sign);
        }
        bump(&mut self.calls, s.records, sign);
        bump(&mut self.prefix_requested, s.prefix.0, sign);
        bump(&mut self.prefix_supplied, s.prefix.1, sign);
        bump(&mut self.tokens_captured, s.tokens.0, sign);
        bump(&mut self.tokens_delivered, s.tokens.1, sign);
        for (decision, &n) in &s.parent_decisions {
            bump(self.parent_decisions.entry(decision).or_default(), n, sign);
        }
        if let Some(fraction) = s.delivered {
            let bucket = if fraction >= 1.0 {
                4
            } else {
                ((fraction * 4.0) as usize).min(3)
            };
            bump(&mut self.delivered_buckets[bucket], 1, sign);
        }
        // Counts that reached zero are no longer shown.
        self.masked_by_reason.retain(|_, n| *n > 0);
        self.parent_decisions.retain(|_, n| *n > 0);
        true
    }

    /// Count `n` records of `second` in or out.
    fn count_second(&mut self, second: i64, n: u32, sign: isize) {
        if n == 0 {
            return;
        }
        let entry = self.seconds.entry(second).or_default();
        *entry = if sign > 0 {
            entry.saturating_add(u64::from(n))
        } else {
            entry.saturating_sub(u64::from(n))
        };
        if *entry == 0 {
            self.seconds.remove(&second);
        }
    }

    /// The health of no rollout, with its (empty) series.
    #[cfg(test)]
    fn default_settled() -> Health {
        let mut h = Health::default();
        h.settle();
        h
    }

    /// Rollouts of the run (the cleared are not).
    pub fn rollouts(&self) -> usize {
        self.tally.rollouts()
    }

    /// Masked fraction of the judged rollouts (0 when none is judged).
    pub fn frozen_masked_fraction(&self) -> f64 {
        self.tally.masked_fraction(false)
    }

    /// Whether the masked fraction of judged rollouts exceeds `limit`, once at least
    /// `min_frozen` are judged (one masked rollout among the first few is not yet a trend).
    pub fn alarm(&self, limit: Option<f64>, min_frozen: usize) -> bool {
        limit.is_some_and(|limit| {
            self.tally.judged() >= min_frozen.max(1) && self.frozen_masked_fraction() > limit
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_a_summary_counts_as_removing_it_and_adding_the_new_one() {
        let demo: Vec<Summary> = crate::load::demo_store_analyses()
            .iter()
            .map(Summary::of)
            .collect();
        // Each with its own seconds, some shared with the others, some not.
        let variants: Vec<Summary> = demo
            .iter()
            .enumerate()
            .flat_map(|(i, summary)| {
                (0..3i64).map(move |shift| {
                    let mut s = summary.clone();
                    s.call_seconds = (0..(i as i64 % 5 + shift))
                        .map(|k| (100 + k * (shift + 1) + i as i64 % 3, (k as u32 % 3) + 1))
                        .collect();
                    if shift == 2 && i % 2 == 0 {
                        s.lifecycle = crate::verdict::Lifecycle::Cleared;
                    }
                    s
                })
            })
            .collect();
        let standings: std::collections::BTreeSet<_> = variants
            .iter()
            .map(|s| format!("{:?}", s.standing()))
            .collect();
        assert!(standings.len() >= 3, "several standings: {standings:?}");
        assert!(standings.contains("Cleared"), "{standings:?}");
        for old in &variants {
            let base = Health::of(demo.iter().chain([old]));
            for new in &variants {
                let (mut replaced, mut counted) = (base.clone(), base.clone());
                replaced.replace(old, new);
                counted.remove(old);
                counted.add(new);
                replaced.settle();
                counted.settle();
                assert_eq!(replaced, counted);
            }
        }
    }

    #[test]
    fn calls_per_second() {
        let mut summary = Summary::of(&crate::load::demo_store_analyses()[0]);
        summary.call_seconds = vec![(40, 1), (99, 1), (100, 2)];
        let series = Health::of([&summary]).calls_per_second;
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
            .join("../tests/fixtures/conformance/store-1-0");
        let analyses = crate::load::analyze_all(
            &crate::load::locate(&[dir], &[]).unwrap(),
            &Default::default(),
        );
        let summaries: Vec<Summary> = analyses.iter().map(Summary::of).collect();
        let h = Health::of(&summaries);
        assert_eq!(h.rollouts(), 30);
        assert_eq!(h.tally.masked, 0, "nothing frozen: no final masked verdict");
        assert!(
            h.tally.at_risk > 0 && h.tally.at_risk <= 19,
            "at risk: incurable reasons only"
        );
        assert_eq!(h.tally.judged(), 0);
        assert!(!h.alarm(Some(0.1), 1), "no frozen rollout, no alarm");
        let demo: Vec<Summary> = crate::load::demo_store_analyses()
            .iter()
            .map(Summary::of)
            .collect();
        let d = Health::of(&demo);
        assert_eq!(
            (d.tally.masked, d.tally.judged()),
            (6, 12),
            "as `build` counts them"
        );
        assert!(
            d.alarm(Some(0.3), 12) && !d.alarm(Some(0.3), 13),
            "after enough frozen"
        );
        assert_eq!(h.parent_decisions.get("parent_unresolved"), Some(&4));
        assert!(h.prefix_supplied <= h.prefix_requested + h.calls);
        assert_eq!(h.delivered_buckets.iter().sum::<usize>(), 25);
        // By difference: taking every rollout out and putting it back changes nothing, and
        // taking all out leaves nothing.
        let mut again = h.clone();
        for s in &summaries {
            again.remove(s);
            again.add(s);
        }
        again.settle();
        assert_eq!(again, h);
        for s in &summaries {
            again.remove(s);
        }
        again.settle();
        assert_eq!(again, Health::default_settled());
    }
}
