//! The timeline view: the run over time, bucket by bucket (rollouts finished, the masked
//! share, the top causes, calls/s and calls in flight). Its cursor moves through time and the
//! list follows: it shows the rollouts that finished in the cursor's bucket.

use tokscope_core::timeline::Timeline;

use super::{Action, App, Pane};

/// The bucket widths the view steps through (seconds).
pub const BUCKET_LADDER: [f64; 12] = [
    1.0,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
    6.0 * 3600.0,
    86_400.0,
    7.0 * 86_400.0,
];

/// How many buckets the first width aims at: about a screen's width of columns.
const AIM_BUCKETS: f64 = 90.0;

/// The timeline view's state.
#[derive(Clone, Debug)]
pub struct TimelineView {
    /// The series, kept counted as summaries change.
    pub timeline: Timeline,
    /// The bucket under the cursor.
    pub cursor: i64,
    /// The moment the cursor was moved to (the middle of its bucket then): other widths put
    /// the cursor on the bucket holding it, so widening and narrowing again comes back.
    pub moment: f64,
    /// The list's filter when the view opened (Esc puts it back).
    pub previous_filter: String,
    /// Compare mode's flips-only when the view opened: the view lists every rollout of a
    /// bucket, as it counts them, and closing puts the choice back.
    pub previous_flips: Option<bool>,
}

/// The filter term of bucket `index` of `timeline`: `ended:START+SECONDS`.
pub fn bucket_filter(timeline: &Timeline, index: i64) -> String {
    format!(
        "ended:{}+{}",
        timeline.start_of(index),
        timeline.bucket_seconds()
    )
}

/// The middle of bucket `index` (UNIX seconds).
fn middle(timeline: &Timeline, index: i64) -> f64 {
    timeline.start_of(index) + timeline.bucket_seconds() / 2.0
}

impl App {
    /// The series of the rollouts the app holds, in buckets of `seconds`.
    fn timeline_of(&self, seconds: f64) -> Timeline {
        let mut timeline = Timeline::new(seconds);
        for (index, summary) in self.rollouts.iter().enumerate() {
            if self.in_run_view(index) {
                timeline.add(summary);
            }
        }
        timeline
    }

    /// The first bucket width: the narrowest of the ladder that lays the run out in about a
    /// screen's width of buckets.
    fn first_bucket(&self) -> f64 {
        let times = self.rollouts.iter().flat_map(|s| {
            let seconds = s.call_seconds.iter().map(|&(t, _)| t as f64);
            seconds.chain(s.last_write)
        });
        let (low, high) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), t| {
            (l.min(t), h.max(t))
        });
        let span = if low.is_finite() { high - low } else { 0.0 };
        BUCKET_LADDER
            .into_iter()
            .find(|&width| span / width <= AIM_BUCKETS)
            .unwrap_or(BUCKET_LADDER[BUCKET_LADDER.len() - 1])
    }

    /// Open or close the timeline view (closing it puts the list's filter back).
    pub(super) fn toggle_timeline(&mut self) {
        if let Some(view) = self.timeline.take() {
            self.list.filter = view.previous_filter;
            if let Some(flips) = view.previous_flips {
                self.show_flips_only(flips);
            }
            self.refresh_list();
            return;
        }
        let previous_flips = self.show_flips_only(false);
        let timeline = self.timeline_of(self.first_bucket());
        let cursor = timeline.span().map_or(0, |(_, last)| last);
        let moment = middle(&timeline, cursor);
        self.timeline = Some(TimelineView {
            timeline,
            cursor,
            moment,
            previous_filter: self.list.filter.clone(),
            previous_flips,
        });
        self.follow_cursor();
    }

    /// Count a summary in or out of the open view's series (beside the health's counts).
    pub(super) fn timeline_count(&mut self, index: usize, add: bool) {
        if !self.in_run_view(index) {
            return;
        }
        if let Some(view) = &mut self.timeline {
            if add {
                view.timeline.add(&self.rollouts[index]);
            } else {
                view.timeline.remove(&self.rollouts[index]);
            }
        }
    }

    /// The list shows the rollouts that finished in the cursor's bucket.
    fn follow_cursor(&mut self) {
        let Some(view) = self
            .timeline
            .as_ref()
            .filter(|v| v.timeline.span().is_some())
        else {
            return;
        };
        self.list.filter = bucket_filter(&view.timeline, view.cursor);
        self.list.masked_only = false;
        self.list.reason = None;
        self.refresh_list();
        self.list.scroll.select(0);
        self.open_selected();
    }

    /// Another bucket width, one step of the ladder `wider` or narrower, the cursor kept on
    /// the same moment.
    fn rebucket(&mut self, wider: bool) {
        let Some(view) = &self.timeline else {
            return;
        };
        let now = view.timeline.bucket_seconds();
        let at = BUCKET_LADDER
            .iter()
            .position(|&w| w >= now)
            .unwrap_or(BUCKET_LADDER.len() - 1);
        let next = if wider {
            (at + 1).min(BUCKET_LADDER.len() - 1)
        } else {
            at.saturating_sub(1)
        };
        let moment = view.moment;
        let (old_start, old_width) = (
            view.timeline.start_of(view.cursor),
            view.timeline.bucket_seconds(),
        );
        let timeline = self.timeline_of(BUCKET_LADDER[next]);
        let (first, last) = timeline.span().unwrap_or((0, 0));
        let mut cursor = timeline.bucket_of(moment).clamp(first, last.max(first));
        if !wider && !timeline.holds(cursor) {
            // Narrower: of the buckets the old one covered, the nearest with something in it
            // (the moment may fall in an empty part of it).
            let (low, high) = (
                timeline.bucket_of(old_start),
                timeline.bucket_of(old_start + old_width - 0.001),
            );
            if let Some(found) = (low..=high)
                .filter(|&i| timeline.holds(i))
                .min_by_key(|&i| (i - cursor).abs())
            {
                cursor = found;
            }
        }
        if let Some(view) = &mut self.timeline {
            (view.timeline, view.cursor) = (timeline, cursor);
        }
        self.follow_cursor();
    }

    /// While the timeline view is open: ←/→ (and the page and end keys) move its cursor, `[`
    /// and `]` change the bucket width, Enter keeps the list's filter and closes it, Esc
    /// closes it and puts the filter back; whether `action` was one of those.
    pub(super) fn timeline_key(&mut self, action: Action) -> bool {
        let Some(view) = &mut self.timeline else {
            return false;
        };
        let (first, last) = view.timeline.span().unwrap_or((view.cursor, view.cursor));
        let moved = |cursor: i64, by: i64| (cursor + by).clamp(first, last.max(first));
        match action {
            Action::Left | Action::Up => view.cursor = moved(view.cursor, -1),
            Action::Right | Action::Down => view.cursor = moved(view.cursor, 1),
            Action::PageUp => view.cursor = moved(view.cursor, -10),
            Action::PageDown => view.cursor = moved(view.cursor, 10),
            Action::Top => view.cursor = first,
            Action::Bottom => view.cursor = last,
            Action::NextBoundary => {
                self.rebucket(true);
                return true;
            }
            Action::PrevBoundary => {
                self.rebucket(false);
                return true;
            }
            Action::Enter => {
                self.timeline = None;
                self.focus_pane(Pane::List);
                return true;
            }
            Action::Dismiss | Action::Timeline => {
                self.toggle_timeline();
                return true;
            }
            _ => return false,
        }
        view.moment = middle(&view.timeline, view.cursor);
        self.follow_cursor();
        true
    }
}
