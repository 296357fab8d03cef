//! A run over time, in buckets of a chosen width: rollouts finished and masked, the causes
//! that masked them, calls recorded and calls in flight — counted as rollouts come, change
//! and go ([`Timeline::add`] / [`Timeline::remove`], exact inverses), so a live run's series
//! never needs a pass over the other rollouts.
//!
//! Times are the records' `created_at` (the writer's clock, UNIX seconds):
//! - a rollout **finishes** at its last record (its freeze follows its last call); one without
//!   a record has no time and is counted in [`Timeline::untimed`];
//! - a call is **recorded** at its record, and **in flight** from its parent's record to its
//!   own (it continues that response, so it was dispatched after it); a root call's dispatch
//!   is not known, so it counts as recorded only. Calls in flight in a bucket is the mean over
//!   the bucket (call-seconds in flight ÷ its seconds): a lower bound.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::verdict::{Standing, Summary};

/// One bucket's counts (kept in integers, so that removing is the exact inverse of adding).
#[derive(Clone, Debug, Default, PartialEq)]
struct Counts {
    finished: usize,
    masked: usize,
    at_risk: usize,
    calls: u64,
    /// Milliseconds of calls in flight.
    busy_ms: u64,
    /// Masked (or at-risk) rollouts finished in the bucket, by cause key: title and count.
    causes: BTreeMap<String, (String, usize)>,
}

impl Counts {
    fn is_empty(&self) -> bool {
        *self == Counts::default()
    }
}

/// A run's series.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    bucket_ms: u64,
    buckets: BTreeMap<i64, Counts>,
    /// Rollouts counted with no record time (nothing to place).
    untimed: usize,
}

/// A cause among a bucket's masked rollouts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BucketCause {
    /// The group's title.
    pub title: String,
    /// Its signature key.
    pub key: String,
    /// Rollouts of the bucket in the group.
    pub count: usize,
}

/// One bucket of the series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bucket {
    /// Its start (UNIX seconds).
    pub start: f64,
    /// Its width in seconds.
    pub seconds: f64,
    /// Rollouts whose last record falls in it, frozen or retired (decided).
    pub finished: usize,
    /// Of those, masked.
    pub masked: usize,
    /// Live rollouts at risk whose last record falls in it.
    pub at_risk: usize,
    /// `masked / finished` (`None`: nothing finished).
    pub masked_fraction: Option<f64>,
    /// Records created in it.
    pub calls: u64,
    /// `calls / seconds`.
    pub calls_per_second: f64,
    /// Mean calls in flight (a lower bound; see the module).
    pub in_flight: f64,
    /// The causes of its masked and at-risk rollouts, the most frequent first.
    pub causes: Vec<BucketCause>,
}

/// The most buckets a series spans: a week in 1-second buckets is not a chart.
pub const MAX_BUCKETS: usize = 200_000;

/// A series that would span more than [`MAX_BUCKETS`].
#[derive(Debug, thiserror::Error)]
#[error("the run spans {spanned} buckets of {seconds} s; use a bucket of at least {suggested} s")]
pub struct TooManyBuckets {
    /// Buckets it would take.
    pub spanned: usize,
    /// The bucket width asked.
    pub seconds: f64,
    /// A width that fits.
    pub suggested: u64,
}

impl Timeline {
    /// An empty series of `bucket_seconds`-wide buckets (at least a millisecond).
    pub fn new(bucket_seconds: f64) -> Timeline {
        Timeline {
            bucket_ms: (bucket_seconds * 1000.0).round().max(1.0) as u64,
            buckets: BTreeMap::new(),
            untimed: 0,
        }
    }

    /// Its buckets' width in seconds.
    pub fn bucket_seconds(&self) -> f64 {
        self.bucket_ms as f64 / 1000.0
    }

    /// Rollouts with no record time.
    pub fn untimed(&self) -> usize {
        self.untimed
    }

    /// The bucket of a moment (UNIX seconds).
    pub fn bucket_of(&self, seconds: f64) -> i64 {
        (to_ms(seconds)).div_euclid(self.bucket_ms as i64)
    }

    /// The start of bucket `index` (UNIX seconds).
    pub fn start_of(&self, index: i64) -> f64 {
        (index * self.bucket_ms as i64) as f64 / 1000.0
    }

    /// Count `summary` in.
    pub fn add(&mut self, summary: &Summary) {
        self.count(summary, true);
    }

    /// Count `summary` out: the exact inverse of [`Timeline::add`].
    pub fn remove(&mut self, summary: &Summary) {
        self.count(summary, false);
    }

    fn count(&mut self, summary: &Summary, add: bool) {
        let step = |value: &mut u64, by: u64| {
            *value = if add {
                value.saturating_add(by)
            } else {
                value.saturating_sub(by)
            }
        };
        let standing = summary.standing();
        if standing == Standing::Cleared {
            return;
        }
        let bucket_ms = self.bucket_ms as i64;
        for &(second, n) in &summary.call_seconds {
            let index = (second * 1000).div_euclid(bucket_ms);
            step(
                &mut self.buckets.entry(index).or_default().calls,
                u64::from(n),
            );
        }
        for &(start, end) in &summary.call_spans {
            let (start, end) = (to_ms(start), to_ms(end));
            let mut at = start;
            while at < end {
                let index = at.div_euclid(bucket_ms);
                let bucket_end = (index + 1) * bucket_ms;
                let until = end.min(bucket_end);
                step(
                    &mut self.buckets.entry(index).or_default().busy_ms,
                    (until - at) as u64,
                );
                at = until;
            }
        }
        let finished = matches!(
            standing,
            Standing::Ok | Standing::Masked | Standing::Retired
        );
        let usize_step = |value: &mut usize| {
            *value = if add {
                value.saturating_add(1)
            } else {
                value.saturating_sub(1)
            }
        };
        match summary.last_write {
            Some(time) if finished || standing == Standing::AtRisk => {
                let index = self.bucket_of(time);
                let counts = self.buckets.entry(index).or_default();
                match standing {
                    Standing::AtRisk => usize_step(&mut counts.at_risk),
                    _ => usize_step(&mut counts.finished),
                }
                if standing == Standing::Masked {
                    usize_step(&mut counts.masked);
                }
                if let Some(cause) = &summary.cause {
                    let key = cause.key();
                    let entry = counts
                        .causes
                        .entry(key.clone())
                        .or_insert_with(|| (cause.title(), 0));
                    usize_step(&mut entry.1);
                    if entry.1 == 0 {
                        counts.causes.remove(&key);
                    }
                }
            }
            None if finished || standing == Standing::AtRisk => usize_step(&mut self.untimed),
            _ => {}
        }
        self.buckets.retain(|_, c| !c.is_empty());
    }

    /// The buckets from the first to the last, empty ones included (`Err` when that is more
    /// than [`MAX_BUCKETS`]).
    pub fn series(&self) -> Result<Vec<Bucket>, TooManyBuckets> {
        let (Some((&first, _)), Some((&last, _))) = (
            self.buckets.first_key_value(),
            self.buckets.last_key_value(),
        ) else {
            return Ok(Vec::new());
        };
        let spanned = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        if spanned > MAX_BUCKETS {
            let span_s = (last - first + 1) as f64 * self.bucket_seconds();
            return Err(TooManyBuckets {
                spanned,
                seconds: self.bucket_seconds(),
                suggested: (span_s / MAX_BUCKETS as f64).ceil() as u64,
            });
        }
        let empty = Counts::default();
        Ok((first..=last)
            .map(|index| self.bucket(index, self.buckets.get(&index).unwrap_or(&empty)))
            .collect())
    }

    /// Bucket `index`.
    pub fn at(&self, index: i64) -> Bucket {
        self.bucket(
            index,
            self.buckets.get(&index).unwrap_or(&Counts::default()),
        )
    }

    /// Whether bucket `index` holds something (a rollout finished or at risk, a call).
    pub fn holds(&self, index: i64) -> bool {
        // Emptied buckets are dropped as they are counted.
        self.buckets.contains_key(&index)
    }

    /// The first and last bucket with something in it.
    pub fn span(&self) -> Option<(i64, i64)> {
        Some((
            *self.buckets.first_key_value()?.0,
            *self.buckets.last_key_value()?.0,
        ))
    }

    fn bucket(&self, index: i64, counts: &Counts) -> Bucket {
        let seconds = self.bucket_seconds();
        let mut causes: Vec<BucketCause> = counts
            .causes
            .iter()
            .map(|(key, (title, count))| BucketCause {
                title: title.clone(),
                key: key.clone(),
                count: *count,
            })
            .collect();
        causes.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        Bucket {
            start: self.start_of(index),
            seconds,
            finished: counts.finished,
            masked: counts.masked,
            at_risk: counts.at_risk,
            masked_fraction: (counts.finished > 0)
                .then(|| counts.masked as f64 / counts.finished as f64),
            calls: counts.calls,
            calls_per_second: counts.calls as f64 / seconds,
            in_flight: counts.busy_ms as f64 / self.bucket_ms as f64,
            causes,
        }
    }
}

fn to_ms(seconds: f64) -> i64 {
    (seconds * 1000.0).round() as i64
}

/// A bucket width that is not one.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadBucket {
    /// A unit other than s, m, h or d.
    #[error("{0:?}: the unit is s, m, h or d (60s, 5m, 1h)")]
    Unit(String),
    /// Not a number, or outside 1 s to 7 d.
    #[error("{0:?} is not a bucket between 1 s and 7 d (60s, 5m, 1h)")]
    Width(String),
}

/// A bucket width: seconds (`90`, `90s`), minutes (`5m`), hours (`1h`) or days (`1d`).
pub fn parse_bucket(text: &str) -> Result<f64, BadBucket> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let scale = match unit {
        "s" | "sec" | "secs" => 1.0,
        "m" | "min" | "mins" => 60.0,
        "h" | "hr" | "hrs" => 3600.0,
        "d" | "day" | "days" => 86_400.0,
        _ => return Err(BadBucket::Unit(text.to_owned())),
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n * scale >= 1.0 && n * scale <= 7.0 * 86_400.0 => Ok(n * scale),
        _ => Err(BadBucket::Width(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries() -> Vec<Summary> {
        crate::load::demo_store_analyses()
            .iter()
            .map(Summary::of)
            .collect()
    }

    #[test]
    fn removing_every_rollout_leaves_nothing_and_a_change_equals_counting_again() {
        let mut all = summaries();
        let mut timeline = Timeline::new(1.0);
        for s in &all {
            timeline.add(s);
        }
        let changed = all.iter().position(|s| s.cause.is_some()).unwrap();
        let before = all[changed].clone();
        all[changed].cause = None;
        timeline.remove(&before);
        timeline.add(&all[changed]);
        let mut again = Timeline::new(1.0);
        for s in &all {
            again.add(s);
        }
        assert_eq!(timeline, again);
        for s in &all {
            timeline.remove(s);
        }
        assert_eq!(timeline, Timeline::new(1.0));
    }

    #[test]
    fn a_bucket_counts_what_finished_in_it_and_the_calls_in_flight() {
        let mut base = summaries()
            .into_iter()
            .find(|s| s.standing() == Standing::Masked && s.cause.is_some())
            .unwrap();
        base.call_seconds = vec![(100, 2), (161, 1)];
        // Two calls in flight over 100.5..130.5 and 150..170.
        base.call_spans = vec![(100.5, 130.5), (150.0, 170.0)];
        base.last_write = Some(170.0);
        let mut timeline = Timeline::new(60.0);
        timeline.add(&base);
        let series = timeline.series().unwrap();
        let starts: Vec<f64> = series.iter().map(|b| b.start).collect();
        assert_eq!(starts, [60.0, 120.0]);
        assert_eq!(series[0].calls, 2);
        assert!((series[0].in_flight - 19.5 / 60.0).abs() < 1e-9);
        assert!((series[1].in_flight - (10.5 + 20.0) / 60.0).abs() < 1e-9);
        assert_eq!((series[1].finished, series[1].masked), (1, 1));
        assert_eq!(series[1].masked_fraction, Some(1.0));
        assert_eq!(series[1].causes.len(), 1);
        assert_eq!(series[0].masked_fraction, None);
    }

    #[test]
    fn buckets_read_with_their_units() {
        assert_eq!(parse_bucket("90"), Ok(90.0));
        assert_eq!(parse_bucket("5m"), Ok(300.0));
        assert_eq!(parse_bucket("1h"), Ok(3600.0));
        assert_eq!(parse_bucket("0.5m"), Ok(30.0));
        assert_eq!(parse_bucket("10sec"), Ok(10.0));
        assert_eq!(parse_bucket("2days"), Ok(172_800.0));
        assert!(parse_bucket("0s").is_err());
        assert!(parse_bucket("5 weeks").is_err());
        assert!(parse_bucket("-1m").is_err());
    }

    #[test]
    fn a_series_too_long_names_a_bucket_that_fits() {
        let mut s = summaries().into_iter().next().unwrap();
        s.call_seconds = vec![(0, 1), (10_000_000, 1)];
        s.call_spans.clear();
        s.last_write = Some(10_000_000.0);
        let mut timeline = Timeline::new(1.0);
        timeline.add(&s);
        let error = timeline.series().unwrap_err();
        assert_eq!(error.suggested, 51);
    }
}
