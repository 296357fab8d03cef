//! Replaying the store call by call: the timeline, the clock when playing, and seeking.
//! Every operation returns the rollouts whose state changed, for the app to rebuild.

use std::time::Instant;

use super::{App, Details, Notice};
use tokscope_core::live::replay::{JudgeRequest, Judged, Replay};
use tokscope_core::verdict::{Analysis, Summary, VerdictOptions};

/// Replay state.
#[derive(Debug)]
pub struct ReplayState {
    /// The timeline.
    pub replay: Replay,
    /// The rollouts as they were before replay started (given back when it ends).
    pub original: Option<(Vec<Summary>, Details)>,
    /// Playing at this speed (1, 10, 100), or paused.
    pub playing: Option<f64>,
    /// Speed used by the next play.
    pub speed: f64,
    /// Wall clock and store time when play started.
    pub anchor: Option<(Instant, f64)>,
    /// Rollouts the timeline moved that are still to be judged again (the rollouts looked
    /// at first); at most [`SEEK_BUDGET`] are asked for at a time.
    pub pending: Vec<usize>,
    /// Rollouts asked to be judged and not answered yet: the request's id, the position
    /// they were asked at, the rollouts.
    pub in_flight: Option<(u64, usize, Vec<usize>)>,
    /// Requests asked so far (the next request's id).
    asked: u64,
    /// The request to send to the replay worker (taken by the event loop).
    request: Option<JudgeRequest>,
    /// Skip idle gaps while playing: the clock jumps to the next write.
    pub skip_idle: bool,
    /// Store seconds the clock last jumped over (for the status line), until taken.
    pub skipped: Option<f64>,
}

/// Wall-clock seconds of waiting, at the play speed, past which an idle gap is skipped.
pub const IDLE_WALL: f64 = 5.0;

/// Rollouts judged again at most in one request to the replay worker (each is read back from
/// its files): a jump that moves more is judged over several, each rollout once, the ones
/// looked at first, while the screen stays responsive.
pub const SEEK_BUDGET: usize = 64;

/// Where a jump goes.
#[derive(Clone, Debug, PartialEq)]
pub enum JumpTarget {
    /// A call number (1 is the first call).
    Call(usize),
    /// Seconds from the replay clock now (`+N` forward, `-N` back).
    Relative(f64),
    /// Seconds after the first call (`@N`).
    At(f64),
    /// A model call id.
    CallId(String),
}

impl JumpTarget {
    /// Read what was typed: `N` (a call number), `+seconds` / `-seconds` (from now),
    /// `@seconds` (after the first call) or a call id.
    pub fn parse(text: &str) -> Option<JumpTarget> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let seconds = |rest: &str| rest.trim().parse::<f64>().ok().filter(|s| s.is_finite());
        if let Some(rest) = text.strip_prefix('+') {
            return seconds(rest).map(JumpTarget::Relative);
        }
        if let Some(rest) = text.strip_prefix('-')
            && let Some(back) = seconds(rest)
        {
            return Some(JumpTarget::Relative(-back));
        }
        if let Some(rest) = text.strip_prefix('@') {
            return seconds(rest).map(JumpTarget::At);
        }
        Some(match text.parse() {
            Ok(position) => JumpTarget::Call(position),
            Err(_) => JumpTarget::CallId(text.to_owned()),
        })
    }
}

impl ReplayState {
    /// Replay `analyses`, starting at the present (step back from here).
    pub fn start(analyses: &[&Analysis], options: VerdictOptions) -> ReplayState {
        let captures = analyses.iter().map(|a| a.capture.clone()).collect();
        ReplayState::on(Replay::new(captures, options))
    }

    /// Replay along `replay`'s timeline, starting at the present.
    pub fn on(mut replay: Replay) -> ReplayState {
        let end = replay.len();
        replay.seek(end);
        ReplayState {
            replay,
            original: None,
            playing: None,
            speed: 1.0,
            anchor: None,
            pending: Vec::new(),
            in_flight: None,
            asked: 0,
            request: None,
            skip_idle: true,
            skipped: None,
        }
    }

    /// Stop playing.
    pub fn stop(&mut self) {
        self.playing = None;
        self.anchor = None;
    }

    /// Step `delta` calls (stops playing).
    pub fn step(&mut self, delta: isize) -> Vec<usize> {
        self.stop();
        let position = (self.replay.position() as isize)
            .saturating_add(delta)
            .max(0) as usize;
        self.replay.seek(position)
    }

    /// Seek to call `position`.
    pub(crate) fn seek(&mut self, position: usize) -> Vec<usize> {
        self.replay.seek(position)
    }

    /// Play at `speed` from here (from the start when at the end).
    pub fn play(&mut self, speed: f64, now: Instant) -> Vec<usize> {
        let changed = if self.replay.position() >= self.replay.len() {
            self.replay.seek(0)
        } else {
            Vec::new()
        };
        let time = self.replay.time().or(self.replay.start()).unwrap_or(0.0);
        self.speed = speed;
        self.playing = Some(speed);
        self.anchor = Some((now, time));
        changed
    }

    /// Play or pause at the last speed.
    pub(crate) fn toggle_play(&mut self, now: Instant) -> Vec<usize> {
        if self.playing.is_some() {
            self.stop();
            Vec::new()
        } else {
            self.play(self.speed, now)
        }
    }

    /// Jump; `None` when the target names no call.
    pub fn jump(&mut self, target: &JumpTarget, now: Instant) -> Option<Vec<usize>> {
        let position = match target {
            JumpTarget::At(offset) => {
                let start = self.replay.start().unwrap_or(0.0);
                self.replay.position_at(start + offset)
            }
            JumpTarget::Relative(delta) => {
                let now_at = self.clock(now).or(self.replay.start()).unwrap_or(0.0);
                self.replay.position_at(now_at + delta)
            }
            JumpTarget::Call(position) => *position,
            JumpTarget::CallId(call) => self.replay.position_of_call(call)?,
        };
        let changed = self.replay.seek(position);
        // Playing on from where it jumped (backwards too), not from the old clock.
        if self.playing.is_some() {
            let time = self.replay.time().or(self.replay.start()).unwrap_or(0.0);
            self.anchor = Some((now, time));
        }
        Some(changed)
    }

    /// The store time shown: the play clock while playing (it moves between calls too),
    /// else the time of the last call applied.
    pub fn clock(&self, now: Instant) -> Option<f64> {
        match (self.playing, self.anchor) {
            (Some(speed), Some((wall, store))) => {
                let end = self.replay.moments().last().map(|m| m.time);
                let clock = store + now.saturating_duration_since(wall).as_secs_f64() * speed;
                Some(end.map_or(clock, |end| clock.min(end)))
            }
            _ => self.replay.time(),
        }
    }

    /// The clock moved: the calls now due while playing (`None` when nothing is due), and
    /// whether play just reached the end.
    pub(crate) fn advance(&mut self, now: Instant) -> (Option<Vec<usize>>, bool) {
        let (Some(speed), Some((wall, store))) = (self.playing, self.anchor) else {
            return (None, false);
        };
        let mut target = store + now.duration_since(wall).as_secs_f64() * speed;
        let next = self
            .replay
            .moments()
            .get(self.replay.position())
            .map(|m| m.time);
        // An idle gap longer than a few seconds of watching: the clock jumps to the
        // next write (and says so), instead of showing nothing for minutes.
        if let Some(next) = next
            && self.skip_idle
            && next - target > IDLE_WALL * speed
        {
            self.skipped = Some(next - target);
            self.anchor = Some((now, next));
            target = next;
        }
        let changed = next
            .is_some_and(|t| t <= target)
            .then(|| self.replay.seek(self.replay.position_at(target)));
        let ended = self.replay.position() >= self.replay.len();
        if ended {
            self.stop();
        }
        (changed, ended)
    }
}

/// Replay as the app drives it: each step rebuilds the rollouts it changed.
impl App {
    pub(super) fn pause_or_play(&mut self) {
        if let Some(replay) = &mut self.replay {
            let rollouts = replay.toggle_play(self.now);
            self.after_seek(&rollouts);
            return;
        }
        if !self.live.watching {
            self.message = Some(Notice::LiveOnly);
            return;
        }
        let pending = self.live.toggle_pause();
        self.apply(pending);
    }

    pub(super) fn toggle_replay(&mut self) {
        if let Some(replay) = self.replay.take() {
            if let Some((rollouts, details)) = replay.original {
                self.health = super::Health::of(&rollouts);
                self.rollouts = rollouts;
                self.details = details;
            }
            self.view = None;
            // Ask the watcher again for what is looked at.
            self.requested.clear();
            self.list.refresh(&self.rollouts, false);
            self.after_change(None);
            // Catch up with what the watcher sent meanwhile.
            let pending = std::mem::take(&mut self.live.pending);
            self.apply(pending);
            self.message = Some(Notice::ReplayOff);
            return;
        }
        if !self.details.holds_all() {
            // The timeline needs every rollout's record times: the watcher reads them (see
            // [`App::replay_request`]) and replay starts when they arrive.
            if !self.replay_wanted {
                self.replay_wanted = true;
                self.replay_requested = true;
            }
            self.message = Some(Notice::ReplayReading);
            return;
        }
        let analyses: Option<Vec<&Analysis>> = (0..self.rollouts.len())
            .map(|index| self.details.get(index))
            .collect();
        let Some(analyses) = analyses else { return };
        let mut replay = ReplayState::start(&analyses, self.options.clone());
        replay.original = Some((self.rollouts.clone(), self.details.clone()));
        self.replay = Some(replay);
        self.message = Some(Notice::ReplayOn);
    }

    /// The timeline arrived (see [`App::replay_request`]; its rollouts are the app's, in
    /// the app's order): replay starts at the present. Only the rollouts a step changes are
    /// judged again, each read back from its files; the app keeps their summaries and the
    /// analyses of those looked at, as when live.
    pub fn replay_on(&mut self, timeline: Replay) {
        self.replay_wanted = false;
        if timeline.rollouts() != self.rollouts.len() {
            // Rollouts appeared meanwhile: ask again.
            self.replay_wanted = true;
            self.replay_requested = true;
            return;
        }
        let mut replay = ReplayState::on(timeline);
        replay.original = Some((self.rollouts.clone(), self.details.clone()));
        self.replay = Some(replay);
        self.message = Some(Notice::ReplayOn);
    }

    /// Start replay at the first call (for `tokscope replay`).
    pub fn start_replay(&mut self) {
        if self.replay.is_none() {
            self.toggle_replay();
        }
        if let Some(replay) = &mut self.replay {
            let rollouts = replay.seek(1);
            self.after_seek(&rollouts);
        }
    }

    pub(super) fn replay_step(&mut self, delta: isize) {
        let Some(replay) = &mut self.replay else {
            self.message = Some(Notice::ReplayOnly);
            return;
        };
        let rollouts = replay.step(delta);
        self.after_seek(&rollouts);
    }

    /// Skip idle gaps while playing, or not.
    pub(super) fn toggle_skip_idle(&mut self) {
        let Some(replay) = &mut self.replay else {
            self.message = Some(Notice::ReplayOnly);
            return;
        };
        replay.skip_idle = !replay.skip_idle;
        self.message = Some(Notice::SkipIdle(replay.skip_idle));
    }

    pub(super) fn replay_play(&mut self, speed: f64) {
        let Some(replay) = &mut self.replay else {
            self.message = Some(Notice::ReplayOnly);
            return;
        };
        let rollouts = replay.play(speed, self.now);
        self.after_seek(&rollouts);
    }

    /// Jump in the replay to `target`.
    pub(super) fn jump(&mut self, target: &JumpTarget) {
        let Some(replay) = &mut self.replay else {
            return;
        };
        match replay.jump(target, self.now) {
            Some(rollouts) => {
                self.after_seek(&rollouts);
                if let JumpTarget::CallId(call) = target {
                    self.select_replayed_call(call);
                }
            }
            None => {
                if let JumpTarget::CallId(call) = target {
                    self.message = Some(Notice::NoSuchCall(call.clone()));
                }
            }
        }
    }

    /// After a jump to a call: select its rollout in the list and the call in its tree.
    fn select_replayed_call(&mut self, call: &str) {
        let Some(replay) = &self.replay else {
            return;
        };
        let position = replay.replay.position();
        let Some(moment) = position
            .checked_sub(1)
            .and_then(|p| replay.replay.moments().get(p))
        else {
            return;
        };
        let index = moment.rollout;
        // The call's rollout as it stands now (its judging on the worker comes after): the
        // one rollout the user asked for, rebuilt here as opening it in replay does.
        let analysis = replay.replay.analysis_at(index);
        self.take_detail(analysis);
        self.list.update(index, &self.rollouts, true);
        if self.view.as_ref().is_some_and(|v| v.index == index) {
            self.view = None;
        }
        let id = self.rollouts[index].rollout_id().to_owned();
        self.go_to_rollout(&id);
        self.select_call(call);
    }

    /// The timeline moved these rollouts: judge them again (within the budget; the rest on
    /// the next ticks, see [`App::judge_pending`]).
    pub(super) fn after_seek(&mut self, rollouts: &[usize]) {
        let Some(replay) = &mut self.replay else {
            return;
        };
        for &rollout in rollouts {
            if !replay.pending.contains(&rollout) {
                replay.pending.push(rollout);
            }
        }
        self.judge_pending();
    }

    /// Ask the replay worker to judge again up to [`SEEK_BUDGET`] of the rollouts the
    /// timeline moved, those looked at first (one request at a time); whether one was asked.
    pub(super) fn judge_pending(&mut self) -> bool {
        let looked_at = self.looked_at();
        let holds_all = self.details.holds_all();
        let Some(replay) = &mut self.replay else {
            return false;
        };
        if replay.pending.is_empty() || replay.in_flight.is_some() {
            return false;
        }
        replay
            .pending
            .sort_by_key(|rollout| (!looked_at.contains(rollout), *rollout));
        let take = replay.pending.len().min(SEEK_BUDGET);
        let batch: Vec<usize> = replay.pending.drain(..take).collect();
        // Only the summaries are kept, and the analyses of the rollouts looked at.
        let rollouts = batch
            .iter()
            .map(|&r| (r, holds_all || looked_at.contains(&r)))
            .collect();
        // Ids go on from the last replay's, so an answer to a request of an earlier
        // replay is never taken for this one's.
        let id = replay.asked.max(self.replay_requests_made) + 1;
        self.replay_requests_made = id;
        replay.asked = id;
        replay.in_flight = Some((id, replay.replay.position(), batch));
        replay.request = Some(JudgeRequest {
            id,
            replay: replay.replay.clone(),
            rollouts,
        });
        true
    }

    /// The request for the replay worker, if one is waiting (the event loop sends it, and
    /// gives the answer back as [`super::Message::Judged`]).
    pub fn take_judge_request(&mut self) -> Option<JudgeRequest> {
        self.replay.as_mut()?.request.take()
    }

    /// The replay worker's answer: applied when the timeline is still where it was asked;
    /// else its rollouts are asked again at the position the timeline moved to.
    pub(super) fn judged(&mut self, results: Vec<Judged>) {
        let Some(replay) = &mut self.replay else {
            return;
        };
        let answers = results.first().map(|r| r.request);
        let Some((id, position, asked)) = replay.in_flight.take() else {
            return;
        };
        if answers.is_some_and(|answers| answers != id) {
            // An answer to another request (an earlier replay's): not this one's.
            replay.in_flight = Some((id, position, asked));
            return;
        }
        if position != replay.replay.position() {
            for rollout in asked {
                if !replay.pending.contains(&rollout) {
                    replay.pending.push(rollout);
                }
            }
            self.judge_pending();
            return;
        }
        let open = self.view.as_ref().map(|v| v.index);
        let mut kept = None;
        for Judged {
            rollout,
            summary,
            analysis,
            ..
        } in results
        {
            if Some(rollout) == open
                && let Some(view) = &self.view
                && let Some(before) = self.details.get(rollout)
            {
                kept = Some(view.keep(before));
            }
            match analysis {
                Some(analysis) => {
                    self.take_detail(analysis);
                }
                None => {
                    // Its analysis is made again if it is selected.
                    self.take_summary(summary);
                    self.details.remove(rollout);
                }
            }
            self.live.recent.insert(rollout, self.now);
        }
        self.after_change(kept);
        self.judge_pending();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Vec<Analysis> {
        tokscope_testkit::demo_analyses()
    }

    #[test]
    fn play_starts_at_1x_and_jumps_over_idle_gaps_saying_so() {
        let analyses = demo();
        let make = || {
            ReplayState::start(
                &analyses.iter().collect::<Vec<_>>(),
                VerdictOptions::default(),
            )
        };
        let replay = make();
        assert_eq!(replay.speed, 1.0, "Space plays at 1×");
        // A call followed by a gap of more than IDLE_WALL seconds.
        let times: Vec<f64> = replay.replay.moments().iter().map(|m| m.time).collect();
        let gap = (1..times.len())
            .find(|&i| times[i] - times[i - 1] > 2.0 * IDLE_WALL)
            .expect("the demo has idle gaps between rollouts");
        for skip in [true, false] {
            let mut replay = make();
            replay.skip_idle = skip;
            replay.jump(&JumpTarget::Call(gap), Instant::now());
            let now = Instant::now();
            replay.play(1.0, now);
            let (due, _) = replay.advance(now + std::time::Duration::from_millis(50));
            if skip {
                assert!(due.is_some(), "the next call is applied at once");
                assert_eq!(replay.replay.position(), gap + 1);
                let skipped = replay.skipped.take().expect("and it says it skipped");
                assert!(skipped > IDLE_WALL, "{skipped}");
            } else {
                assert!(due.is_none() && replay.skipped.is_none());
                assert_eq!(replay.replay.position(), gap);
            }
        }
    }

    #[test]
    fn jump_targets_parse() {
        assert_eq!(JumpTarget::parse(" 5 "), Some(JumpTarget::Call(5)));
        assert_eq!(JumpTarget::parse("+2.5"), Some(JumpTarget::Relative(2.5)));
        assert_eq!(JumpTarget::parse("-10"), Some(JumpTarget::Relative(-10.0)));
        assert_eq!(JumpTarget::parse("@ 30"), Some(JumpTarget::At(30.0)));
        assert_eq!(JumpTarget::parse("+x"), None);
        assert_eq!(JumpTarget::parse("@inf"), None);
        assert_eq!(
            JumpTarget::parse("demo-clean-c1"),
            Some(JumpTarget::CallId("demo-clean-c1".into()))
        );
        assert_eq!(JumpTarget::parse(""), None);
    }

    #[test]
    fn steps_play_and_jumps_move_the_timeline() {
        let analyses = demo();
        let mut replay = ReplayState::start(
            &analyses.iter().collect::<Vec<_>>(),
            VerdictOptions::default(),
        );
        let end = replay.replay.len();
        assert!(end > 3);
        assert_eq!(replay.replay.position(), end, "starts at the present");
        assert!(!replay.step(-1).is_empty());
        assert_eq!(replay.replay.position(), end - 1);
        replay.step(isize::MIN);
        assert_eq!(replay.replay.position(), 0);
        assert!(replay.jump(&JumpTarget::Call(3), Instant::now()).is_some());
        assert_eq!(replay.replay.position(), 3);
        // `+N` / `-N` count from where the clock is, `@N` from the first call.
        let times: Vec<f64> = replay.replay.moments().iter().map(|m| m.time).collect();
        let at = |replay: &ReplayState| replay.replay.time().unwrap();
        let here = at(&replay);
        replay.jump(&JumpTarget::Relative(0.5), Instant::now());
        assert_eq!(
            replay.replay.position(),
            replay.replay.position_at(here + 0.5)
        );
        assert!(at(&replay) >= here, "forward from here, not from the start");
        let ahead = at(&replay);
        replay.jump(&JumpTarget::Relative(-0.5), Instant::now());
        assert_eq!(
            replay.replay.position(),
            replay.replay.position_at(ahead - 0.5)
        );
        replay.jump(&JumpTarget::At(0.0), Instant::now());
        assert_eq!(at(&replay), times[0], "@0 is the first call");
        replay.jump(&JumpTarget::Call(3), Instant::now());
        assert!(
            replay
                .jump(&JumpTarget::CallId("no-such-call".into()), Instant::now())
                .is_none()
        );
        // Playing far ahead of the store clock reaches the end and stops.
        let now = Instant::now();
        replay.play(100.0, now);
        assert_eq!(replay.playing, Some(100.0));
        let (due, ended) = replay.advance(now + std::time::Duration::from_secs(100_000));
        assert!(due.is_some() && ended);
        assert_eq!(replay.playing, None);
        assert_eq!(replay.replay.position(), end);
        // Play from the end starts over.
        replay.toggle_play(now);
        assert_eq!(replay.replay.position(), 0);
        replay.toggle_play(now);
        assert_eq!(replay.playing, None);
    }
}
