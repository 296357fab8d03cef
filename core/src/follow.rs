//! `check --follow`'s judge: a headless watch of the stores for a training launcher. Every
//! change of a rollout's standing becomes one event (a text line or a JSON object, each with
//! its UTC time and store), a heartbeat summarizes the run when asked, and the alarm fires
//! once when the masked fraction of the judged rollouts goes over the limit. It never decides
//! that the run is over: only a signal (or `--until-idle`) ends the watch.

use std::collections::HashMap;
use std::time::SystemTime;

use serde::Serialize;

use crate::health::Health;
use crate::store::RolloutLocation;
use crate::text::{sanitize, utc_timestamp};
use crate::verdict::{Lifecycle, Standing, Summary, Tally, Verdict};

/// The judged rollouts before the alarm may fire, by default: one masked rollout among the
/// first few judged is not yet a trend.
pub const DEFAULT_MIN_FROZEN: usize = 10;

/// Reasons named in the alarm and the heartbeat (the most frequent first).
const TOP_REASONS: usize = 5;

/// What a rollout's line says: its state and verdict (a change of either is reported).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VerdictChange {
    /// Always `verdict`.
    pub event: &'static str,
    /// When it was seen (UTC, RFC 3339).
    pub ts: String,
    /// The rollout id.
    pub rollout: String,
    /// Its store directory.
    pub store: String,
    /// `live`, `frozen`, `retired` or `cleared`.
    pub lifecycle: Lifecycle,
    /// `ok`, `masked` or `pending`.
    pub verdict: Verdict,
    /// Where it stands in the run's accounting.
    pub standing: Standing,
    /// The consumer's mask decision (as if frozen now, for a live rollout).
    pub mask_sample: bool,
    /// The first mask reason's code, when masked.
    pub reason_code: Option<&'static str>,
    /// The first mask reason, worded.
    pub reason: Option<String>,
}

/// The alarm: the judged rollouts' masked fraction went over the limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alarm {
    /// Always `alarm`.
    pub event: &'static str,
    /// When it fired (UTC, RFC 3339).
    pub ts: String,
    /// The stores watched.
    pub stores: Vec<String>,
    /// Judged rollouts (frozen and retired; with `--count-at-risk`, the at-risk too).
    pub frozen: usize,
    /// Those of them masked.
    pub frozen_masked: usize,
    /// `frozen_masked / frozen`.
    pub fraction: f64,
    /// The limit it went over.
    pub limit: f64,
    /// Masked and at-risk rollouts by mask reason code, the most frequent first.
    pub reasons: Vec<(&'static str, usize)>,
    /// The largest cause groups (see [`crate::causes`]), the largest first.
    pub causes: Vec<CauseCount>,
    /// Every count of the run.
    pub tally: Tally,
}

/// A cause group as the kill switch names it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CauseCount {
    /// The group's title.
    pub title: String,
    /// Its signature's key.
    pub key: String,
    /// Masked and at-risk rollouts in it.
    pub rollouts: usize,
}

/// Cause groups named in the alarm and the heartbeat (the largest first).
const TOP_CAUSES: usize = 3;

/// A summary of the run, so that a quiet log is not taken for a dead one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Heartbeat {
    /// Always `heartbeat`.
    pub event: &'static str,
    /// When (UTC, RFC 3339).
    pub ts: String,
    /// The stores watched.
    pub stores: Vec<String>,
    /// Every count of the run.
    pub tally: Tally,
    /// The masked fraction the alarm looks at.
    pub fraction: f64,
    /// Masked and at-risk rollouts by mask reason code, the most frequent first.
    pub reasons: Vec<(&'static str, usize)>,
    /// The largest cause groups, the largest first.
    pub causes: Vec<CauseCount>,
}

/// How the watch is judged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlarmRule {
    /// Trip when the masked fraction exceeds this (none: never).
    pub max_mask_fraction: Option<f64>,
    /// …once at least this many rollouts are judged.
    pub min_frozen: usize,
    /// Count live rollouts at risk (masked for a reason no later write can cure) as masked
    /// judged ones, so a run can be stopped before they freeze.
    pub count_at_risk: bool,
}

/// The standings seen so far and the run's counts.
#[derive(Debug, Default)]
pub struct Follower {
    known: HashMap<RolloutLocation, Summary>,
    health: Health,
    rule: AlarmRule,
    stores: Vec<String>,
    tripped: bool,
}

impl Follower {
    /// Judge the stores `stores` by `rule`.
    pub fn new(rule: AlarmRule, stores: &[std::path::PathBuf]) -> Follower {
        Follower {
            rule,
            stores: stores
                .iter()
                .map(|s| sanitize(&s.display().to_string()).into_owned())
                .collect(),
            ..Follower::default()
        }
    }

    /// Take in a rollout's new summary; the event to print when its state, verdict or
    /// standing changed.
    pub fn take(&mut self, summary: Summary, now: SystemTime) -> Option<VerdictChange> {
        let key = |s: &Summary| {
            (
                s.lifecycle,
                s.verdict,
                s.standing(),
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
            ts: utc_timestamp(now),
            rollout: sanitize(summary.rollout_id()).into_owned(),
            store: sanitize(&summary.location.dir.display().to_string()).into_owned(),
            lifecycle: summary.lifecycle,
            verdict: summary.verdict,
            standing: summary.standing(),
            mask_sample: summary.mask_sample,
            reason_code: summary.first_reason().map(|r| r.code()),
            reason: summary
                .first_reason()
                .map(|r| sanitize(&r.to_string()).into_owned()),
        });
        self.known.insert(summary.location.clone(), summary);
        line
    }

    /// The run's counts.
    pub fn tally(&self) -> &Tally {
        &self.health.tally
    }

    /// The alarm, the first time the run is over the limit (once: it is never repeated).
    pub fn alarm(&mut self, now: SystemTime) -> Option<Alarm> {
        let limit = self.rule.max_mask_fraction?;
        let tally = self.health.tally;
        let (masked, among) = tally.masked_among(self.rule.count_at_risk);
        let over = among >= self.rule.min_frozen.max(1)
            && tally.masked_fraction(self.rule.count_at_risk) > limit;
        if self.tripped || !over {
            return None;
        }
        self.tripped = true;
        Some(Alarm {
            event: "alarm",
            ts: utc_timestamp(now),
            stores: self.stores.clone(),
            frozen: among,
            frozen_masked: masked,
            fraction: tally.masked_fraction(self.rule.count_at_risk),
            limit,
            reasons: self.top_reasons(),
            causes: self.top_causes(),
            tally,
        })
    }

    /// Whether the alarm fired.
    pub fn tripped(&self) -> bool {
        self.tripped
    }

    /// A summary of the run now.
    pub fn heartbeat(&self, now: SystemTime) -> Heartbeat {
        Heartbeat {
            event: "heartbeat",
            ts: utc_timestamp(now),
            stores: self.stores.clone(),
            tally: self.health.tally,
            fraction: self.health.tally.masked_fraction(self.rule.count_at_risk),
            reasons: self.top_reasons(),
            causes: self.top_causes(),
        }
    }

    fn top_causes(&self) -> Vec<CauseCount> {
        self.health
            .causes
            .groups()
            .iter()
            .take(TOP_CAUSES)
            .map(|g| CauseCount {
                title: sanitize(&g.title).into_owned(),
                key: g.key.clone(),
                rollouts: g.len(),
            })
            .collect()
    }

    fn top_reasons(&self) -> Vec<(&'static str, usize)> {
        let mut reasons: Vec<(&'static str, usize)> = self
            .health
            .masked_by_reason
            .iter()
            .map(|(&code, &n)| (code, n))
            .collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        reasons.truncate(TOP_REASONS);
        reasons
    }
}

/// The cause groups as text: `title ×n; title ×n`.
fn causes_text(causes: &[CauseCount]) -> String {
    if causes.is_empty() {
        return "none".to_owned();
    }
    causes
        .iter()
        .map(|c| format!("{} ×{}", c.title, c.rollouts))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The reasons as text: `code n, code n`.
fn reasons_text(reasons: &[(&'static str, usize)]) -> String {
    if reasons.is_empty() {
        return "none".to_owned();
    }
    reasons
        .iter()
        .map(|(code, n)| format!("{code} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl VerdictChange {
    /// The text line: time, store, rollout, state, verdict, first reason.
    pub fn text(&self) -> String {
        let mut line = format!(
            "{}  {}  {}  {}  {}",
            self.ts,
            self.store,
            self.rollout,
            self.lifecycle.name(),
            self.verdict.words(self.mask_sample)
        );
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
            "{}  {}  ALARM: {} of {} judged rollouts masked ({:.1}%), over the limit of {:.1}%; by reason: {}; top causes: {}",
            self.ts,
            self.stores.join(", "),
            self.frozen_masked,
            self.frozen,
            self.fraction * 100.0,
            self.limit * 100.0,
            reasons_text(&self.reasons),
            causes_text(&self.causes)
        )
    }
}

impl Heartbeat {
    /// The text line.
    pub fn text(&self) -> String {
        let t = &self.tally;
        format!(
            "{}  {}  heartbeat: {} judged ({} ok, {} retired, {} masked, {:.1}%), {} live ({} waiting, {} at risk), {} cleared; top reasons: {}; top causes: {}",
            self.ts,
            self.stores.join(", "),
            t.judged(),
            t.ok,
            t.retired,
            t.masked,
            self.fraction * 100.0,
            t.live_total(),
            t.waiting,
            t.at_risk,
            t.cleared,
            reasons_text(&self.reasons),
            causes_text(&self.causes)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(limit: Option<f64>, min_frozen: usize) -> AlarmRule {
        AlarmRule {
            max_mask_fraction: limit,
            min_frozen,
            count_at_risk: false,
        }
    }

    #[test]
    fn reports_changes_once_and_trips_once_after_enough_judged() {
        let now = SystemTime::UNIX_EPOCH;
        let analyses = crate::load::demo_store_analyses();
        let summaries: Vec<Summary> = analyses.iter().map(Summary::of).collect();
        let masked = summaries
            .iter()
            .filter(|s| s.standing() == Standing::Masked)
            .count();
        assert!(masked > 0);
        // A limit below the demo's masked fraction, but more judged rollouts asked than exist.
        let mut waiting = Follower::new(rule(Some(0.01), summaries.len() + 1), &[]);
        let mut tripping = Follower::new(rule(Some(0.01), 1), &[]);
        for summary in &summaries {
            assert!(
                waiting.take(summary.clone(), now).is_some(),
                "a new rollout is a change"
            );
            tripping.take(summary.clone(), now);
        }
        assert_eq!(waiting.alarm(now), None);
        let alarm = tripping.alarm(now).expect("over the limit");
        assert_eq!(alarm.frozen_masked, masked);
        assert!(!alarm.reasons.is_empty(), "the alarm names its reasons");
        assert!(
            !alarm.causes.is_empty() && alarm.causes.len() <= TOP_CAUSES,
            "and its largest cause groups"
        );
        let largest = alarm.causes[0].rollouts;
        assert!(alarm.causes.iter().all(|c| c.rollouts <= largest));
        assert!(
            alarm
                .text()
                .contains(&format!("top causes: {} ×{largest}", alarm.causes[0].title)),
            "{}",
            alarm.text()
        );
        assert!(
            alarm.text().starts_with("1970-01-01T00:00:00.000Z"),
            "{}",
            alarm.text()
        );
        assert_eq!(tripping.alarm(now), None, "the alarm fires once");
        assert!(tripping.tripped());
        // The same summary again is no change.
        assert_eq!(waiting.take(summaries[0].clone(), now), None);
        // Without a limit, never.
        let mut never = Follower::new(rule(None, 0), &[]);
        for summary in &summaries {
            never.take(summary.clone(), now);
        }
        assert_eq!(never.alarm(now), None);
    }

    #[test]
    fn retired_rollouts_are_delivered_and_at_risk_ones_count_only_when_asked() {
        let now = SystemTime::UNIX_EPOCH;
        let summaries: Vec<Summary> = crate::load::demo_store_analyses()
            .iter()
            .map(Summary::of)
            .collect();
        // Every rollout retired (delivered): nothing masked, whatever the consumer says now.
        let mut retired = Follower::new(rule(Some(0.01), 1), &[]);
        for summary in &summaries {
            let mut summary = summary.clone();
            summary.lifecycle = Lifecycle::Retired;
            summary.verdict = Verdict::Ok;
            retired.take(summary, now);
        }
        assert_eq!(retired.alarm(now), None);
        assert_eq!(retired.tally().retired, summaries.len());
        // Live rollouts at risk: counted only with count_at_risk.
        let live = crate::load::at_risk_summaries();
        let mut plain = Follower::new(rule(Some(0.5), 1), &[]);
        let mut counting = Follower::new(
            AlarmRule {
                count_at_risk: true,
                ..rule(Some(0.5), 1)
            },
            &[],
        );
        for summary in &live {
            plain.take(summary.clone(), now);
            counting.take(summary.clone(), now);
        }
        assert!(plain.tally().at_risk > 0);
        assert_eq!(plain.alarm(now), None, "nothing judged yet");
        assert!(counting.alarm(now).is_some(), "at risk counted as masked");
        let beat = counting.heartbeat(now);
        assert!(beat.text().contains("at risk"), "{}", beat.text());
    }
}
