//! Replaying a recorded store: every call in `created_at` order, the store rebuilt as it
//! stood after each one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::store::{Capture, RolloutLocation, RolloutState, read_capture};
use crate::verdict::{Analysis, VerdictOptions, analyze};

/// One recorded call on the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moment {
    /// `created_at` of the record.
    pub time: f64,
    /// Which rollout (index into the rollouts).
    pub rollout: usize,
    /// Which record of it.
    pub record: usize,
}

/// Captures read back from the files while seeking: the few most recent are kept.
const READ_BACK: usize = 8;

/// Where the full captures come from.
#[derive(Debug)]
enum Captures {
    /// Given up front (small stores, tests): kept.
    Held(Vec<Arc<Capture>>),
    /// Read again from the files when a rollout changes (the timeline holds only times and
    /// call ids, so memory does not grow with the store); the last few are kept.
    Files {
        locations: Vec<RolloutLocation>,
        recent: Mutex<VecDeque<(usize, Arc<Capture>)>>,
    },
}

impl Clone for Captures {
    fn clone(&self) -> Self {
        match self {
            Captures::Held(captures) => Captures::Held(captures.clone()),
            Captures::Files { locations, .. } => Captures::Files {
                locations: locations.clone(),
                recent: Mutex::new(VecDeque::new()),
            },
        }
    }
}

/// A store on a timeline: the calls in order, and where it stands. Cloning it is cheap (the
/// timeline is shared), so a worker can judge rollouts at a position while the UI moves on.
#[derive(Clone, Debug)]
pub struct Replay {
    timeline: Arc<Timeline>,
    position: usize,
}

/// What a replay does not change while it moves: the calls, and how to read the rollouts.
#[derive(Clone, Debug)]
struct Timeline {
    captures: Captures,
    moments: Vec<Moment>,
    /// The call id of each moment.
    calls: Vec<Box<str>>,
    /// For each rollout, for each record, its position on the timeline.
    position_of: Vec<Vec<usize>>,
    options: VerdictOptions,
    /// Rollout rows: each rollout is judged with the observations of its row, as live.
    rows: Arc<crate::observe::Rows>,
}

/// Each record's `created_at` and call id, in file order.
pub type RecordTimes = Vec<(f64, Box<str>)>;

/// What the timeline keeps of a rollout: its records' times and call ids.
pub fn record_times(capture: &Capture) -> RecordTimes {
    capture
        .records
        .iter()
        .map(|r| (r.created_at, r.model_call_id.as_str().into()))
        .collect()
}

impl Replay {
    /// A timeline over every record of `captures` (kept), positioned before the first call.
    pub fn new(captures: Vec<Capture>, options: VerdictOptions) -> Replay {
        let times = captures.iter().map(record_times).collect();
        let captures = Captures::Held(captures.into_iter().map(Arc::new).collect());
        Replay::with_times(captures, times, options)
    }

    /// A timeline over every record of the rollouts at `locations`, each read once (on all
    /// cores) for its records' times; while seeking, a changed rollout is read again.
    pub fn from_store(locations: Vec<RolloutLocation>, options: VerdictOptions) -> Replay {
        let mut times = Vec::with_capacity(locations.len());
        crate::load::read_in_order(
            &locations,
            |capture| record_times(&capture),
            |t| times.push(t),
        );
        Replay::from_times(locations, times, options)
    }

    /// A timeline over the rollouts at `locations` whose records' times were already read
    /// (`times[i]` for `locations[i]`).
    pub fn from_times(
        locations: Vec<RolloutLocation>,
        times: Vec<RecordTimes>,
        options: VerdictOptions,
    ) -> Replay {
        let captures = Captures::Files {
            locations,
            recent: Mutex::new(VecDeque::new()),
        };
        Replay::with_times(captures, times, options)
    }

    fn with_times(captures: Captures, times: Vec<RecordTimes>, options: VerdictOptions) -> Replay {
        let mut moments: Vec<Moment> = times
            .iter()
            .enumerate()
            .flat_map(|(rollout, records)| {
                records
                    .iter()
                    .enumerate()
                    .map(move |(record, (time, _))| Moment {
                        time: *time,
                        rollout,
                        record,
                    })
            })
            .collect();
        moments.sort_by(|a, b| {
            a.time
                .total_cmp(&b.time)
                .then(a.rollout.cmp(&b.rollout))
                .then(a.record.cmp(&b.record))
        });
        let mut position_of: Vec<Vec<usize>> = times.iter().map(|t| vec![0; t.len()]).collect();
        for (position, moment) in moments.iter().enumerate() {
            position_of[moment.rollout][moment.record] = position;
        }
        let calls = moments
            .iter()
            .map(|m| times[m.rollout][m.record].1.clone())
            .collect();
        Replay {
            timeline: Arc::new(Timeline {
                captures,
                moments,
                calls,
                position_of,
                options,
                rows: Arc::default(),
            }),
            position: 0,
        }
    }

    /// The full capture of `rollout`: held, or read again from its files.
    fn full_capture(&self, rollout: usize) -> Arc<Capture> {
        match &self.timeline.captures {
            Captures::Held(captures) => Arc::clone(&captures[rollout]),
            Captures::Files { locations, recent } => {
                let mut recent = recent
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some((_, capture)) = recent.iter().find(|(r, _)| *r == rollout) {
                    return Arc::clone(capture);
                }
                let capture = Arc::new(read_capture(&locations[rollout]));
                recent.push_back((rollout, Arc::clone(&capture)));
                if recent.len() > READ_BACK {
                    recent.pop_front();
                }
                capture
            }
        }
    }

    /// Number of calls on the timeline.
    pub fn len(&self) -> usize {
        self.timeline.moments.len()
    }

    /// Whether the timeline is empty.
    pub fn is_empty(&self) -> bool {
        self.timeline.moments.is_empty()
    }

    /// Calls applied so far (0 = before the first call).
    pub fn position(&self) -> usize {
        self.position
    }

    /// The moments of the timeline.
    pub fn moments(&self) -> &[Moment] {
        &self.timeline.moments
    }

    /// `created_at` of the last call applied.
    pub fn time(&self) -> Option<f64> {
        self.position
            .checked_sub(1)
            .map(|p| self.timeline.moments[p].time)
    }

    /// Time of the first call.
    pub fn start(&self) -> Option<f64> {
        self.timeline.moments.first().map(|m| m.time)
    }

    /// Number of rollouts.
    pub fn rollouts(&self) -> usize {
        self.timeline.position_of.len()
    }

    /// Records of `rollout` applied at the current position.
    fn applied(&self, rollout: usize) -> usize {
        self.timeline.position_of[rollout]
            .iter()
            .filter(|&&p| p < self.position)
            .count()
    }

    /// Move to `position` (clamped); returns the rollouts whose state changed.
    pub fn seek(&mut self, position: usize) -> Vec<usize> {
        let position = position.min(self.timeline.moments.len());
        let (low, high) = (self.position.min(position), self.position.max(position));
        self.position = position;
        let mut changed: Vec<usize> = self.timeline.moments[low..high]
            .iter()
            .map(|m| m.rollout)
            .collect();
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// The position of the last call at or before `time`.
    pub fn position_at(&self, time: f64) -> usize {
        self.timeline.moments.partition_point(|m| m.time <= time)
    }

    /// Move to the last call at or before `time`.
    #[cfg(test)]
    pub(crate) fn seek_time(&mut self, time: f64) -> Vec<usize> {
        let position = self.timeline.moments.partition_point(|m| m.time <= time);
        self.seek(position)
    }

    /// Position just after the call `call_id`, if it is on the timeline.
    pub fn position_of_call(&self, call_id: &str) -> Option<usize> {
        self.timeline
            .calls
            .iter()
            .position(|call| &**call == call_id)
            .map(|p| p + 1)
    }

    /// The capture of `rollout` as it stood at the current position.
    pub(crate) fn capture_at(&self, rollout: usize) -> Capture {
        let positions = &self.timeline.position_of[rollout];
        if self.applied(rollout) == 0 {
            // Nothing of it has happened yet: nothing to read.
            return Capture::unborn(match &self.timeline.captures {
                Captures::Files { locations, .. } => locations[rollout].clone(),
                Captures::Held(captures) => captures[rollout].location.clone(),
            });
        }
        let full = self.full_capture(rollout);
        let full = &*full;
        // A record is applied when the timeline holds it (the same call at the same place:
        // a file rewritten since reads differently) and its moment has passed.
        let on_timeline = |r: usize| {
            positions.get(r).is_some_and(|&p| {
                p < self.position && *self.timeline.calls[p] == *full.records[r].model_call_id
            })
        };
        let applied: Vec<usize> = (0..full.records.len())
            .filter(|&r| on_timeline(r))
            .collect();
        if applied.len() == full.records.len()
            && full.records.len() == positions.len()
            && self.position > 0
        {
            return full.clone();
        }
        let mut capture = full.clone();
        capture.records = applied.iter().map(|&r| full.records[r].clone()).collect();
        capture.intents_in_order = 0;
        capture.record_lines = applied.iter().map(|&r| full.record_lines[r]).collect();
        // Still being written: no freeze, no flags, no file-level problems yet.
        capture.state = RolloutState {
            present: full.state.present,
            ..RolloutState::absent()
        };
        capture.sentinel = None;
        capture.issues.clear();
        // Intents of the calls made so far, and of the next one (in flight).
        let next = (0..full.records.len().min(positions.len()))
            .filter(|&r| positions[r] >= self.position)
            .min_by_key(|&r| positions[r])
            .filter(|_| !applied.is_empty());
        let mut calls: Vec<&str> = applied
            .iter()
            .map(|&r| full.records[r].model_call_id.as_str())
            .collect();
        calls.extend(next.map(|r| full.records[r].model_call_id.as_str()));
        capture.intents = full
            .intents
            .iter()
            .filter(|i| calls.contains(&i.as_str()))
            .cloned()
            .collect();
        capture.files_present = !applied.is_empty();
        capture
    }

    /// The analysis of `rollout` at the current position.
    pub fn analysis_at(&self, rollout: usize) -> Analysis {
        let capture = self.capture_at(rollout);
        let options = crate::load::options_for(
            &self.timeline.options,
            &self.timeline.rows,
            &capture.location,
        );
        analyze(capture, &options)
    }

    /// Judge every rollout with the observations of its row in `rows`.
    pub fn with_rows(mut self, rows: Arc<crate::observe::Rows>) -> Replay {
        Arc::make_mut(&mut self.timeline).rows = rows;
        self
    }
}

/// A request to judge rollouts again as they stood at a replay's position (what a step or a
/// jump changed), answered by [`judge`] on a worker, never on the UI thread.
#[derive(Clone, Debug)]
pub struct JudgeRequest {
    /// Which request this is (the asker's count): its answers carry it.
    pub id: u64,
    /// The replay, at the position to judge at (a cheap clone: the timeline is shared).
    pub replay: Replay,
    /// The rollouts, each with whether its full analysis is wanted (else its summary only,
    /// so memory does not grow with the number of rollouts a jump moves).
    pub rollouts: Vec<(usize, bool)>,
}

/// A rollout judged again at a replay position.
#[derive(Debug)]
pub struct Judged {
    /// The request it answers.
    pub request: u64,
    /// The position it was judged at.
    pub position: usize,
    /// Which rollout (index into the replay's rollouts).
    pub rollout: usize,
    /// Its summary there.
    pub summary: crate::verdict::Summary,
    /// Its full analysis there, when it was asked for.
    pub analysis: Option<Analysis>,
}

/// Judge `request` on all cores; the results in the request's order.
pub fn judge(request: &JudgeRequest) -> Vec<Judged> {
    let replay = &request.replay;
    let mut results = Vec::with_capacity(request.rollouts.len());
    crate::pool::in_order(
        &request.rollouts,
        |&(rollout, keep)| {
            let analysis = replay.analysis_at(rollout);
            Judged {
                request: request.id,
                position: replay.position,
                rollout,
                summary: crate::verdict::Summary::of(&analysis),
                analysis: keep.then_some(analysis),
            }
        },
        |judged| results.push(judged),
    );
    results
}

/// A worker thread judging requests one after the other (see [`judge`]). Dropping it ends the
/// thread once the request in hand is done.
pub struct Judge {
    requests: std::sync::mpsc::Sender<JudgeRequest>,
    results: std::sync::mpsc::Receiver<Vec<Judged>>,
}

impl Judge {
    /// Start the worker.
    pub fn start() -> Judge {
        let (requests, received) = std::sync::mpsc::channel::<JudgeRequest>();
        let (sender, results) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("tokscope-replay".into())
            .stack_size(crate::pool::WORKER_STACK)
            .spawn(move || {
                for request in received {
                    if sender.send(judge(&request)).is_err() {
                        return;
                    }
                }
            })
            .expect("spawn the replay worker");
        Judge { requests, results }
    }

    /// Judge `request` in the background.
    pub fn send(&self, request: JudgeRequest) {
        let _ = self.requests.send(request);
    }

    /// The answers ready now.
    pub fn results(&self) -> impl Iterator<Item = Vec<Judged>> + '_ {
        self.results.try_iter()
    }

    /// The next answer, waiting at most `timeout`.
    pub fn wait(&self, timeout: std::time::Duration) -> Option<Vec<Judged>> {
        self.results.recv_timeout(timeout).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokscope_testkit::{Call, Rollout};

    #[test]
    fn timeline_steps_and_converges_to_the_recorded_store() {
        let dir = tempfile::tempdir().unwrap();
        let a = Rollout {
            id: "a".into(),
            calls: vec![
                Call::root("a1", vec![1, 2], vec![3], 1.0),
                Call::child("a2", "a1", vec![1, 2, 3, 4], vec![5], 3.0),
            ],
            frozen: true,
            ..Rollout::default()
        };
        let b = Rollout {
            id: "b".into(),
            calls: vec![Call::root("b1", vec![7], vec![8], 2.0)],
            frozen: true,
            ..Rollout::default()
        };
        a.write(dir.path()).unwrap();
        b.write(dir.path()).unwrap();
        let locations = crate::load::locate(&[dir.path().to_path_buf()], &[]).unwrap();
        let captures: Vec<Capture> = locations.iter().map(crate::store::read_capture).collect();
        let cold: Vec<Analysis> = captures
            .iter()
            .cloned()
            .map(|c| analyze(c, &VerdictOptions::default()))
            .collect();
        let mut replay = Replay::new(captures, VerdictOptions::default());
        assert_eq!(replay.len(), 3);
        assert_eq!(replay.seek(1), vec![0]);
        let first = replay.analysis_at(0);
        assert_eq!(first.capture.records.len(), 1);
        assert_eq!(first.lifecycle, crate::verdict::Lifecycle::Live);
        assert_eq!(
            first.capture.open_intents(),
            vec!["a2"],
            "the next call is in flight"
        );
        assert_eq!(replay.analysis_at(1).capture.records.len(), 0);
        assert_eq!(replay.seek(2), vec![1]);
        assert_eq!(replay.seek_time(10.0), vec![0]);
        for (index, cold) in cold.iter().enumerate() {
            let now = serde_json::to_value(replay.analysis_at(index).report()).unwrap();
            assert_eq!(now, serde_json::to_value(cold.report()).unwrap());
        }
        assert_eq!(replay.position_of_call("b1"), Some(2));
        assert_eq!(replay.seek(0), vec![0, 1]);
    }

    #[test]
    fn a_timeline_from_the_files_holds_no_capture_and_converges_too() {
        let store = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/demo-store");
        let locations = crate::load::locate(&[store], &[]).unwrap();
        let cold: Vec<Analysis> = crate::load::analyze_all(&locations, &VerdictOptions::default());
        let held = Replay::new(
            locations.iter().map(read_capture).collect(),
            VerdictOptions::default(),
        );
        let mut replay = Replay::from_store(locations.clone(), VerdictOptions::default());
        assert_eq!(replay.len(), held.len());
        assert_eq!(
            replay.timeline.calls, held.timeline.calls,
            "the same timeline"
        );
        let Captures::Files { recent, .. } = &replay.timeline.captures else {
            panic!("read back from the files");
        };
        assert!(
            recent.lock().unwrap().is_empty(),
            "nothing kept after the first read"
        );
        // Midway, the rollouts agree with the held timeline's; at the end, with cold reads.
        let mut held = held;
        for position in [1, replay.len() / 2, replay.len()] {
            assert_eq!(replay.seek(position), held.seek(position));
            for (index, location) in locations.iter().enumerate() {
                let a = serde_json::to_value(replay.analysis_at(index).report()).unwrap();
                let b = serde_json::to_value(held.analysis_at(index).report()).unwrap();
                assert_eq!(a, b, "{} at {position}", location.id);
            }
            let Captures::Files { recent, .. } = &replay.timeline.captures else {
                unreachable!()
            };
            assert!(recent.lock().unwrap().len() <= READ_BACK);
        }
        for (index, cold) in cold.iter().enumerate() {
            let now = serde_json::to_value(replay.analysis_at(index).report()).unwrap();
            assert_eq!(now, serde_json::to_value(cold.report()).unwrap());
        }
    }
}
