//! Replaying a recorded store: every call in `created_at` order, the store rebuilt as it
//! stood after each one.

use crate::store::{Capture, RolloutState};
use crate::verdict::{Analysis, VerdictOptions, analyze};

/// One recorded call on the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moment {
    /// `created_at` of the record.
    pub time: f64,
    /// Which rollout (index into the captures).
    pub rollout: usize,
    /// Which record of it.
    pub record: usize,
}

/// A store on a timeline.
#[derive(Clone, Debug)]
pub struct Replay {
    captures: Vec<Capture>,
    moments: Vec<Moment>,
    /// For each rollout, for each record, its position on the timeline.
    position_of: Vec<Vec<usize>>,
    position: usize,
    options: VerdictOptions,
}

impl Replay {
    /// A timeline over every record of `captures`, positioned before the first call.
    pub fn new(captures: Vec<Capture>, options: VerdictOptions) -> Replay {
        let mut moments: Vec<Moment> = captures
            .iter()
            .enumerate()
            .flat_map(|(rollout, capture)| {
                capture
                    .records
                    .iter()
                    .enumerate()
                    .map(move |(record, r)| Moment {
                        time: r.created_at,
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
        let mut position_of: Vec<Vec<usize>> =
            captures.iter().map(|c| vec![0; c.records.len()]).collect();
        for (position, moment) in moments.iter().enumerate() {
            position_of[moment.rollout][moment.record] = position;
        }
        Replay {
            captures,
            moments,
            position_of,
            position: 0,
            options,
        }
    }

    /// Number of calls on the timeline.
    pub fn len(&self) -> usize {
        self.moments.len()
    }

    /// Whether the timeline is empty.
    pub fn is_empty(&self) -> bool {
        self.moments.is_empty()
    }

    /// Calls applied so far (0 = before the first call).
    pub fn position(&self) -> usize {
        self.position
    }

    /// The moments of the timeline.
    pub(crate) fn moments(&self) -> &[Moment] {
        &self.moments
    }

    /// `created_at` of the last call applied.
    pub fn time(&self) -> Option<f64> {
        self.position.checked_sub(1).map(|p| self.moments[p].time)
    }

    /// Time of the first call.
    pub fn start(&self) -> Option<f64> {
        self.moments.first().map(|m| m.time)
    }

    /// Number of rollouts.
    pub fn rollouts(&self) -> usize {
        self.captures.len()
    }

    /// Move to `position` (clamped); returns the rollouts whose state changed.
    pub(crate) fn seek(&mut self, position: usize) -> Vec<usize> {
        let position = position.min(self.moments.len());
        let (low, high) = (self.position.min(position), self.position.max(position));
        self.position = position;
        let mut changed: Vec<usize> = self.moments[low..high].iter().map(|m| m.rollout).collect();
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// Move to the last call at or before `time`.
    pub(crate) fn seek_time(&mut self, time: f64) -> Vec<usize> {
        let position = self.moments.partition_point(|m| m.time <= time);
        self.seek(position)
    }

    /// Position just after the call `call_id`, if it is on the timeline.
    pub(crate) fn position_of_call(&self, call_id: &str) -> Option<usize> {
        self.moments
            .iter()
            .position(|m| self.captures[m.rollout].records[m.record].model_call_id == call_id)
            .map(|p| p + 1)
    }

    /// The capture of `rollout` as it stood at the current position.
    pub(crate) fn capture_at(&self, rollout: usize) -> Capture {
        let full = &self.captures[rollout];
        let positions = &self.position_of[rollout];
        let applied: Vec<usize> = (0..full.records.len())
            .filter(|&r| positions[r] < self.position)
            .collect();
        if applied.len() == full.records.len() && self.position > 0 {
            return full.clone();
        }
        let mut capture = full.clone();
        capture.records = applied.iter().map(|&r| full.records[r].clone()).collect();
        capture.record_lines = applied.iter().map(|&r| full.record_lines[r]).collect();
        // Still being written: no freeze, no flags, no file-level problems yet.
        capture.state = RolloutState {
            present: full.state.present,
            ..RolloutState::absent()
        };
        capture.sentinel = None;
        capture.issues.clear();
        // Intents of the calls made so far, and of the next one (in flight).
        let next = (0..full.records.len())
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
    pub(crate) fn analysis_at(&self, rollout: usize) -> Analysis {
        analyze(self.capture_at(rollout), &self.options)
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
}
