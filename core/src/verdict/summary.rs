//! What the list, the header and the health strip need of a rollout, without its records or
//! build: a few hundred bytes, kept for every rollout of a store of any size.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::cause::{Cause, cause_of};
use super::standing::{LiveStatus, Standing};
use super::{Analysis, Lifecycle, MaskReason, Verdict};
use crate::observe::RowContext;
use crate::store::{IssueKind, RolloutLocation, TokenRecord};

/// A rollout reduced to its counts, verdict and health contributions.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Where the rollout's files are.
    pub location: RolloutLocation,
    /// Live, frozen, retired or cleared.
    pub lifecycle: Lifecycle,
    /// Ok, masked or pending.
    pub verdict: Verdict,
    /// The consumer's mask decision (as if frozen now, for a live rollout).
    pub mask_sample: bool,
    /// Every reason the rollout is masked, most fundamental first.
    pub reasons: Vec<MaskReason>,
    /// Records read.
    pub records: usize,
    /// Intents without a record (calls in flight, for a live rollout).
    pub open_intents: Vec<String>,
    /// Chains of the build (`None`: no build).
    pub chains: Option<usize>,
    /// Delivered fraction of the generated tokens (`None`: no build).
    pub delivered: Option<f64>,
    /// The records file ends in a partial line (a write in progress, when live).
    pub torn_tail: bool,
    /// Generated tokens captured and delivered.
    pub tokens: (usize, usize),
    /// Records that requested the verified parent prefix, and those that proved it supplied.
    pub prefix: (usize, usize),
    /// Placed calls by parent decision: `root`, `resolved`, `recovered`, or the link note.
    pub parent_decisions: BTreeMap<&'static str, usize>,
    /// Records by whole second of `created_at` (for the calls-per-second series), in order
    /// of second, one entry a second. (A sorted list, not a map: a live append replaces a
    /// rollout's summary, and the health strip walks the old and the new side by side.)
    pub call_seconds: Vec<(i64, u32)>,
    /// Calls continuing a parent, each from its parent's `created_at` to its own (UNIX
    /// seconds): it continues the parent's response, so it was dispatched after it. For the
    /// calls-in-flight series.
    pub call_spans: Vec<(f64, f64)>,
    /// The latest record's `created_at` (UNIX seconds): a call still in flight was dispatched
    /// after it, so its age is at least the time since.
    pub last_write: Option<f64>,
    /// Why it is masked, refined (masked or at risk only).
    pub cause: Option<Cause>,
    /// What its row says of it (reward, agent, task), when rows were given and one names it.
    pub context: Option<RowContext>,
}

impl Summary {
    /// Where it stands in the run's accounting (see [`Standing`]).
    pub fn standing(&self) -> Standing {
        Standing::of(self.lifecycle, self.verdict, self.live_status())
    }

    /// What the verdict means now (see [`LiveStatus`]).
    pub fn live_status(&self) -> LiveStatus {
        LiveStatus::of(
            self.lifecycle,
            &self.reasons,
            self.open_intents.len(),
            self.mask_sample,
        )
    }

    /// The summary of `analysis`.
    pub fn of(analysis: &Analysis) -> Summary {
        Summary::of_tallied(analysis, &mut RecordTally::default())
    }

    /// The summary of `analysis`, its records' part taken from `tally`, which the records
    /// new since it was last used are added to (a rollout followed live keeps one: an append
    /// costs its own record, not a walk over the rollout's, long out of the caches).
    pub(crate) fn of_tallied(analysis: &Analysis, tally: &mut RecordTally) -> Summary {
        let capture = &analysis.capture;
        tally.take_in(&capture.records);
        let (prefix, last_write) = (tally.prefix, tally.last_write);
        let call_seconds = tally.seconds.counts.clone();
        let (call_spans, parent_decisions) = match &analysis.build {
            Some(build) => {
                let calls = tally.calls.take_in(build, &tally.times);
                (calls.spans.clone(), calls.decisions.clone())
            }
            None => (Vec::new(), BTreeMap::new()),
        };
        Summary {
            location: capture.location.clone(),
            lifecycle: analysis.lifecycle,
            verdict: analysis.verdict,
            mask_sample: analysis.mask_sample,
            reasons: analysis.reasons.clone(),
            records: capture.records.len(),
            // (Counted by the analysis: listed only when there are some.)
            open_intents: match analysis.open_intents {
                0 => Vec::new(),
                _ => capture
                    .open_intents()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            },
            chains: analysis.build.as_ref().map(|b| b.chains.len()),
            delivered: analysis.build.as_ref().map(|b| b.notes.delivered_fraction),
            torn_tail: capture
                .issues
                .iter()
                .any(|issue| issue.kind == IssueKind::TornTail),
            tokens: analysis.build.as_ref().map_or((0, 0), |b| {
                (
                    b.notes.generated_tokens_captured,
                    b.notes.generated_tokens_delivered,
                )
            }),
            prefix,
            parent_decisions,
            call_seconds,
            call_spans,
            last_write,
            cause: matches!(analysis.standing(), Standing::Masked | Standing::AtRisk)
                .then(|| cause_of(analysis))
                .flatten(),
            context: analysis
                .options
                .observations
                .as_ref()
                .map(|o| o.context.clone())
                .filter(|c| !c.is_empty()),
        }
    }

    /// The row's reward, if its row gave one.
    pub fn reward(&self) -> Option<f64> {
        self.context.as_ref().and_then(|c| c.reward)
    }

    /// The agent its row names, if any.
    pub fn agent(&self) -> Option<&str> {
        self.context.as_ref().and_then(|c| c.agent.as_deref())
    }

    /// The task its row names, if any.
    pub fn task(&self) -> Option<&str> {
        self.context.as_ref().and_then(|c| c.task.as_deref())
    }

    /// Whether the row's own `mask_sample` disagrees with this verdict (judged rollouts only).
    pub fn row_disagrees(&self) -> bool {
        let judged = matches!(self.standing(), Standing::Ok | Standing::Masked);
        let row = self.context.as_ref().and_then(|c| c.mask_sample);
        judged && row.is_some_and(|row| row != (self.standing() == Standing::Masked))
    }

    /// The rollout id.
    pub fn rollout_id(&self) -> &str {
        &self.location.id
    }

    /// The most fundamental mask reason, if masked.
    pub fn first_reason(&self) -> Option<&MaskReason> {
        self.reasons.first()
    }

    /// A problem to look at: masked for good (frozen), or at risk (live, incurable).
    pub fn problem(&self) -> bool {
        match self.live_status() {
            LiveStatus::Final => self.verdict == Verdict::Masked,
            LiveStatus::AtRisk => true,
            _ => false,
        }
    }

    /// Calls in flight: the open intents of a live rollout.
    pub fn in_flight(&self) -> usize {
        if self.lifecycle == Lifecycle::Live {
            self.open_intents.len()
        } else {
            0
        }
    }

    /// Whether a write is in progress at the end of a live rollout's records file.
    pub fn writing(&self) -> bool {
        self.lifecycle == Lifecycle::Live && self.torn_tail
    }
}

impl From<&Analysis> for Summary {
    fn from(analysis: &Analysis) -> Summary {
        Summary::of(analysis)
    }
}

/// What a summary reads of a rollout's records, kept from one summary to the next of a
/// rollout followed live: the records taken in so far are those the next capture starts
/// with (the very same, carried over by the read), or all is taken in again.
#[derive(Debug, Default)]
pub(crate) struct RecordTally {
    /// The records taken in (held: no address compared is reused meanwhile).
    records: Vec<Arc<TokenRecord>>,
    /// Their `created_at`, in order (the calls' spans are read from here).
    times: Vec<f64>,
    /// Records by whole second of `created_at`.
    seconds: PerSecond,
    /// Records that requested the verified prefix, and those that proved it supplied.
    prefix: (usize, usize),
    /// The latest finite `created_at`.
    last_write: Option<f64>,
    /// What the summary reads of the build's calls.
    calls: CallTally,
}

/// The calls' spans (from their parent's record to theirs, when both have a time and the
/// parent's is earlier) and the parent decisions, in the build's order; taken in from the
/// calls an extended build placed after those of the build taken in before, else from all.
#[derive(Debug, Default)]
struct CallTally {
    /// The build taken in, and its number of calls.
    taken: Option<(u64, usize)>,
    spans: Vec<(f64, f64)>,
    decisions: BTreeMap<&'static str, usize>,
}

impl CallTally {
    /// Take in `build`'s calls (`times`: its records' `created_at`).
    fn take_in(&mut self, build: &crate::rebuild::BuildOutput, times: &[f64]) -> &CallTally {
        let lineage = build.lineage;
        let this = (lineage.build, build.nodes.len());
        let from = match self.taken {
            // This very build taken in already, or the one it extends.
            Some(taken) if taken.0 != 0 && (taken == this || lineage.extends == Some(taken)) => {
                taken.1
            }
            _ => {
                crate::work::count(|work| work.nodes_walked += build.nodes.len() as u64);
                self.spans.clear();
                self.decisions.clear();
                0
            }
        };
        self.add(build, times, from);
        self.taken = Some(this);
        #[cfg(debug_assertions)]
        if from > 0 {
            let mut whole = CallTally::default();
            whole.add(build, times, 0);
            debug_assert_eq!(
                (&self.spans, &self.decisions),
                (&whole.spans, &whole.decisions),
                "the calls taken in from where they stopped are those of all of them"
            );
        }
        self
    }

    /// Add the spans and decisions of `build`'s calls from `from` on.
    fn add(&mut self, build: &crate::rebuild::BuildOutput, times: &[f64], from: usize) {
        for node in &build.nodes[from..] {
            if let Some(parent) = node.parent {
                let start = times[build.nodes[parent].record];
                let end = times[node.record];
                if start.is_finite() && end.is_finite() && start < end {
                    self.spans.push((start, end));
                }
            }
            let decision = match (node.note, node.parent) {
                (Some(note), _) if note.is_boundary() => note.as_str(),
                (Some(_), _) => "recovered",
                (None, Some(_)) => "resolved",
                (None, None) => "root",
            };
            *self.decisions.entry(decision).or_default() += 1;
        }
    }
}

impl RecordTally {
    /// Take in `records`: those after the ones taken in before, when `records` starts with
    /// them; else all of them, from nothing.
    fn take_in(&mut self, records: &[Arc<TokenRecord>]) {
        let kept = self.records.len();
        let continues = kept <= records.len()
            && self
                .records
                .iter()
                .zip(records)
                .all(|(taken, now)| Arc::ptr_eq(taken, now));
        if !continues {
            *self = RecordTally::default();
        }
        for record in &records[self.records.len()..] {
            let at = record.created_at;
            if at.is_finite() {
                self.last_write = Some(self.last_write.map_or(at, |t| t.max(at)));
                self.seconds.add(at.floor() as i64);
            }
            self.prefix.0 += usize::from(record.prefix_requested);
            self.prefix.1 += usize::from(record.prefix_supplied);
            self.times.push(at);
            self.records.push(Arc::clone(record));
        }
    }
}

/// Counts by second, in order of second, one entry a second: records come most often in
/// time order, so a count is most often the last one's or a new one after it.
#[derive(Debug, Default)]
struct PerSecond {
    counts: Vec<(i64, u32)>,
}

impl PerSecond {
    fn add(&mut self, second: i64) {
        match self.counts.last_mut() {
            Some((last, n)) if *last == second => *n = n.saturating_add(1),
            Some((last, _)) if *last > second => {
                match self.counts.binary_search_by_key(&second, |&(s, _)| s) {
                    Ok(at) => self.counts[at].1 = self.counts[at].1.saturating_add(1),
                    Err(at) => self.counts.insert(at, (second, 1)),
                }
            }
            _ => self.counts.push((second, 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebuild::LinkNote;

    #[test]
    fn a_tally_goes_on_from_the_records_it_took_in_and_starts_over_for_others() {
        let record = |id: &str, at: f64, requested: bool| {
            let line = format!(
                r#"{{"generation_log_probs":[-0.5],"generation_token_ids":[2],"model_call_id":"{id}","parent_call_id":null,"parent_resolution":"root","prompt_token_ids":[1],"rollout_id":"r","created_at":{at},"prefix_requested":{requested}}}"#
            );
            Arc::new(TokenRecord::parse(line.as_bytes()).expect("a valid record"))
        };
        let fresh = |records: &[Arc<TokenRecord>]| {
            let mut tally = RecordTally::default();
            tally.take_in(records);
            tally
        };
        let same = |a: &RecordTally, b: &RecordTally| {
            a.times == b.times
                && a.seconds.counts == b.seconds.counts
                && a.prefix == b.prefix
                && a.last_write == b.last_write
                && a.records.len() == b.records.len()
        };
        let first = vec![record("a", 10.5, true), record("b", 11.2, false)];
        let mut tally = fresh(&first);
        // Appended: the new record alone is taken in.
        let mut grown = first.clone();
        grown.push(record("c", 9.9, true));
        tally.take_in(&grown);
        assert!(same(&tally, &fresh(&grown)));
        assert_eq!(tally.seconds.counts, [(9, 1), (10, 1), (11, 1)]);
        assert_eq!((tally.prefix, tally.last_write), ((2, 0), Some(11.2)));
        // Read again (other records, as many and more): started over.
        let other = vec![
            record("a", 20.0, false),
            record("b", 21.0, false),
            record("c", 22.0, false),
            record("d", 23.0, true),
        ];
        tally.take_in(&other);
        assert!(same(&tally, &fresh(&other)));
        // Fewer records: started over too.
        tally.take_in(&other[..1]);
        assert!(same(&tally, &fresh(&other[..1])));
    }

    #[test]
    fn counts_by_second_come_out_in_order_whatever_order_the_records_came_in() {
        let mut rng = tokscope_testkit::Rng::new(23);
        for case in 0..200 {
            let len = rng.range(0, 40) as usize;
            // Mostly increasing, as a writer's records are; every fifth case shuffled.
            let mut seconds: Vec<i64> = (0..len)
                .map(|k| k as i64 / 3 + rng.range(0, 2) as i64)
                .collect();
            if case % 5 == 0 {
                for at in (1..seconds.len()).rev() {
                    seconds.swap(at, rng.range(0, at as u64 + 1) as usize);
                }
            }
            let mut counted = PerSecond::default();
            let mut expected: BTreeMap<i64, u32> = BTreeMap::new();
            for &second in &seconds {
                counted.add(second);
                *expected.entry(second).or_default() += 1;
            }
            assert_eq!(
                counted.counts,
                expected.into_iter().collect::<Vec<_>>(),
                "{seconds:?}"
            );
        }
    }

    #[test]
    fn a_live_rollout_waits_on_calls_in_flight_and_is_at_risk_only_for_incurable_reasons() {
        let in_flight = MaskReason::CaptureIncomplete {
            state_flag: false,
            open_intents: vec!["c2".into()],
        };
        let failed_capture = MaskReason::CaptureIncomplete {
            state_flag: true,
            open_intents: Vec::new(),
        };
        let broken_link =
            MaskReason::UnresolvedParents(vec![("c3".into(), LinkNote::ParentDigestMismatch)]);
        let live = Lifecycle::Live;
        assert_eq!(
            LiveStatus::of(live, std::slice::from_ref(&in_flight), 1, true),
            LiveStatus::Waiting,
            "a call still generating is no problem"
        );
        assert_eq!(LiveStatus::of(live, &[], 0, false), LiveStatus::Good);
        assert_eq!(
            LiveStatus::of(live, &[MaskReason::NothingDelivered], 0, true),
            LiveStatus::Pending
        );
        assert_eq!(
            LiveStatus::of(live, &[in_flight.clone(), broken_link.clone()], 1, true),
            LiveStatus::AtRisk,
            "an incurable reason wins over calls in flight"
        );
        assert_eq!(
            LiveStatus::of(live, &[failed_capture], 0, true),
            LiveStatus::AtRisk
        );
        assert_eq!(
            LiveStatus::of(Lifecycle::Frozen, &[broken_link], 0, true),
            LiveStatus::Final
        );
        for curable in [
            in_flight,
            MaskReason::NoRecords,
            MaskReason::UnresolvedRetries(vec!["c1".into()]),
        ] {
            assert!(curable.curable_while_live(), "{curable}");
        }
        for incurable in [
            MaskReason::RootCount(vec!["a".into(), "b".into()]),
            MaskReason::ChainCount(2),
            MaskReason::BuildFailed("x".into()),
        ] {
            assert!(!incurable.curable_while_live(), "{incurable}");
        }
    }
}
