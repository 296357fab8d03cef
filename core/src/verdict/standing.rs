//! Where a rollout stands in a run's accounting: one rule ([`Standing::of`]) and one count
//! ([`Tally`]) behind every number any surface shows — the `build` and `check` tables,
//! `check --follow`, the explorer's header and health strip.
//!
//! | lifecycle | verdict | standing | judged | masked |
//! |---|---|---|---|---|
//! | frozen | ok | ok | yes | no |
//! | frozen, or files that cannot be read | masked | masked | yes | yes |
//! | retired (built, delivered, payload deleted) | any | retired | yes | no |
//! | live | pending, an incurable reason | at risk | no | (with `--count-at-risk`) |
//! | live | pending, calls in flight | waiting | no | no |
//! | live | pending otherwise | live | no | no |
//! | cleared (every file deleted) | any | cleared | no | no |

use serde::Serialize;

use super::reason::MaskReason;
use super::{Lifecycle, Verdict};

/// What a live rollout's verdict means now (SPEC §6); frozen and retired rollouts are
/// `Final`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveStatus {
    /// Frozen, retired or cleared: the verdict is final.
    Final,
    /// Live, with a reason no later write can cure.
    AtRisk,
    /// Live, calls in flight, nothing incurable.
    Waiting,
    /// Live, nothing in flight, masked for reasons a later write may cure.
    Pending,
    /// Live, and a freeze now would deliver it.
    Good,
}

impl LiveStatus {
    /// The status of a rollout in `lifecycle` masked for `reasons` (mask decision
    /// `mask_sample`) with `in_flight` intents without records.
    pub fn of(
        lifecycle: Lifecycle,
        reasons: &[MaskReason],
        in_flight: usize,
        mask_sample: bool,
    ) -> LiveStatus {
        if lifecycle != Lifecycle::Live {
            LiveStatus::Final
        } else if reasons.iter().any(|r| !r.curable_while_live()) {
            LiveStatus::AtRisk
        } else if in_flight > 0 {
            LiveStatus::Waiting
        } else if mask_sample {
            LiveStatus::Pending
        } else {
            LiveStatus::Good
        }
    }
}

/// Where a rollout stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Frozen and trainable.
    Ok,
    /// Frozen (or its files cannot be read) and masked: a final masked verdict.
    Masked,
    /// Built, delivered and its payload deleted: it counts as delivered.
    Retired,
    /// Live, masked for a reason no later write can cure (SPEC §6).
    AtRisk,
    /// Live, calls in flight, nothing incurable.
    Waiting,
    /// Live otherwise.
    Live,
    /// Every file deleted (cleared before a new attempt): not a rollout of the run any more.
    Cleared,
}

impl Standing {
    /// The standing of a rollout in `lifecycle` with `verdict` and, live, `status`.
    pub fn of(lifecycle: Lifecycle, verdict: Verdict, status: LiveStatus) -> Standing {
        match (lifecycle, verdict) {
            (Lifecycle::Cleared, _) => Standing::Cleared,
            (Lifecycle::Retired, _) => Standing::Retired,
            (_, Verdict::Ok) => Standing::Ok,
            (_, Verdict::Masked) => Standing::Masked,
            (_, Verdict::Pending) => match status {
                LiveStatus::AtRisk => Standing::AtRisk,
                LiveStatus::Waiting => Standing::Waiting,
                LiveStatus::Final | LiveStatus::Pending | LiveStatus::Good => Standing::Live,
            },
        }
    }

    /// Its verdict is final (it counts towards the masked fraction).
    pub fn is_judged(self) -> bool {
        matches!(self, Standing::Ok | Standing::Masked | Standing::Retired)
    }

    /// Still being written.
    pub fn is_live(self) -> bool {
        matches!(self, Standing::AtRisk | Standing::Waiting | Standing::Live)
    }

    /// Its name, as every surface prints it.
    pub fn name(self) -> &'static str {
        match self {
            Standing::Ok => "ok",
            Standing::Masked => "masked",
            Standing::Retired => "retired",
            Standing::AtRisk => "at risk",
            Standing::Waiting => "waiting",
            Standing::Live => "live",
            Standing::Cleared => "cleared",
        }
    }
}

/// Rollouts counted by standing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Frozen and trainable.
    pub ok: usize,
    /// Final masked verdicts.
    pub masked: usize,
    /// Retired (delivered).
    pub retired: usize,
    /// Live and masked for an incurable reason.
    pub at_risk: usize,
    /// Live, waiting on calls in flight.
    pub waiting: usize,
    /// Live otherwise.
    pub live: usize,
    /// Cleared.
    pub cleared: usize,
}

impl Tally {
    /// Count a rollout of `standing` in (`sign` 1) or out (`sign` -1: it changed or went).
    pub fn count(&mut self, standing: Standing, sign: isize) {
        let slot = match standing {
            Standing::Ok => &mut self.ok,
            Standing::Masked => &mut self.masked,
            Standing::Retired => &mut self.retired,
            Standing::AtRisk => &mut self.at_risk,
            Standing::Waiting => &mut self.waiting,
            Standing::Live => &mut self.live,
            Standing::Cleared => &mut self.cleared,
        };
        *slot = if sign > 0 {
            slot.saturating_add(1)
        } else {
            slot.saturating_sub(1)
        };
    }

    /// The rollouts of the run (every one but the cleared).
    pub fn rollouts(&self) -> usize {
        self.judged() + self.live_total()
    }

    /// Rollouts with a final verdict: ok, masked and retired.
    pub fn judged(&self) -> usize {
        self.ok + self.masked + self.retired
    }

    /// Rollouts still being written: at risk, waiting and the rest.
    pub fn live_total(&self) -> usize {
        self.at_risk + self.waiting + self.live
    }

    /// The masked and the rollouts they are counted among, for the alarm: the judged, and
    /// with `count_at_risk` the live rollouts at risk too (as masked).
    pub fn masked_among(&self, count_at_risk: bool) -> (usize, usize) {
        let at_risk = if count_at_risk { self.at_risk } else { 0 };
        (self.masked + at_risk, self.judged() + at_risk)
    }

    /// The masked fraction of [`Tally::masked_among`] (0 when there is nothing to count).
    pub fn masked_fraction(&self, count_at_risk: bool) -> f64 {
        match self.masked_among(count_at_risk) {
            (_, 0) => 0.0,
            (masked, among) => masked as f64 / among as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lifecycle_counts_once_and_retired_as_delivered() {
        use Lifecycle::*;
        let cases = [
            (Frozen, Verdict::Ok, LiveStatus::Final, Standing::Ok),
            (Frozen, Verdict::Masked, LiveStatus::Final, Standing::Masked),
            (
                Retired,
                Verdict::Masked,
                LiveStatus::Final,
                Standing::Retired,
            ),
            (Retired, Verdict::Ok, LiveStatus::Final, Standing::Retired),
            (Live, Verdict::Masked, LiveStatus::AtRisk, Standing::Masked),
            (Live, Verdict::Pending, LiveStatus::AtRisk, Standing::AtRisk),
            (
                Live,
                Verdict::Pending,
                LiveStatus::Waiting,
                Standing::Waiting,
            ),
            (Live, Verdict::Pending, LiveStatus::Pending, Standing::Live),
            (Live, Verdict::Pending, LiveStatus::Good, Standing::Live),
            (
                Cleared,
                Verdict::Masked,
                LiveStatus::Final,
                Standing::Cleared,
            ),
        ];
        let mut tally = Tally::default();
        for (lifecycle, verdict, status, standing) in cases {
            assert_eq!(Standing::of(lifecycle, verdict, status), standing);
            tally.count(standing, 1);
        }
        assert_eq!(tally.judged(), 5);
        assert_eq!(tally.rollouts(), 9, "the cleared one is not the run's");
        assert_eq!(tally.masked_among(false), (2, 5));
        assert_eq!(tally.masked_among(true), (3, 6));
        // 5 frozen ok and 15 retired: nothing masked.
        let healthy = Tally {
            ok: 5,
            retired: 15,
            ..Tally::default()
        };
        assert_eq!(healthy.masked_fraction(false), 0.0);
        tally.count(Standing::Ok, -1);
        assert_eq!(tally.ok, 0);
    }
}
