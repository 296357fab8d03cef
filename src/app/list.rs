//! The rollout list: filters, sort, and the selection that drives every other pane.

use super::scroll::ScrollList;
use tokscope_core::store::layout::natural_cmp;
use tokscope_core::verdict::{Lifecycle, LiveStatus, Standing, Summary, Verdict};

/// Columns the rollout list can be sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Rollout id (natural order).
    Id,
    /// Live / frozen / retired.
    State,
    /// Number of records.
    Calls,
    /// Number of chains.
    Chains,
    /// Delivered fraction.
    Delivered,
    /// Verdict.
    Verdict,
    /// First mask reason.
    Reason,
    /// The row's reward (rollouts without one last).
    Reward,
    /// The agent the row names.
    Agent,
}

const SORT_KEYS: [SortKey; 9] = [
    SortKey::Id,
    SortKey::State,
    SortKey::Calls,
    SortKey::Chains,
    SortKey::Delivered,
    SortKey::Verdict,
    SortKey::Reason,
    SortKey::Reward,
    SortKey::Agent,
];

/// The fields a filter term may name.
const FILTER_FIELDS: [&str; 5] = ["agent", "task", "store", "cause", "ended"];

/// What is wrong with a filter line, if a word looks like a field test and is not one.
pub fn filter_problem(filter: &str) -> Option<String> {
    filter.split_whitespace().find_map(|word| {
        let lower = word.to_lowercase();
        let compares = lower.contains(['<', '>', '=']);
        if compares {
            return match FilterTerm::parse(&lower).first() {
                Some(FilterTerm::Reward(..)) => None,
                _ if lower.starts_with("reward") => Some(format!(
                    "{word}: reward compares with a number (reward>0, reward<=0.5)"
                )),
                _ => Some(format!(
                    "{word}: only reward compares (reward>0); the others are field:value ({})",
                    FILTER_FIELDS.join(", ")
                )),
            };
        }
        let (field, _) = lower.split_once(':')?;
        (!field.is_empty()
            && field.chars().all(|c| c.is_ascii_alphabetic())
            && !FILTER_FIELDS.contains(&field))
        .then(|| {
            format!(
                "{word}: no field {field} (fields: {})",
                FILTER_FIELDS.join(", ")
            )
        })
    })
}

/// One word of the list's filter: a field test, or text anywhere.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterTerm {
    /// `reward>0.5`, `reward<=0`, `reward=1`: the row's reward compared (none: fails).
    Reward(std::cmp::Ordering, bool, f64),
    /// `agent:NAME`: the row's agent contains it.
    Agent(String),
    /// `task:ID`: the row's task is it.
    Task(String),
    /// `store:TEXT`: the store's path contains it.
    Store(String),
    /// `cause:KEY`: the cause signature's key starts with it.
    Cause(String),
    /// `ended:START+SECONDS`: the last record's time (UNIX seconds) is in that window (the
    /// timeline's bucket).
    Ended(f64, f64),
    /// Anything else: the id, a mask reason, the agent or the cause's title contains it.
    Text(String),
}

impl FilterTerm {
    /// The terms of a filter line (lowercased), separated by whitespace.
    pub fn parse(filter: &str) -> Vec<FilterTerm> {
        filter
            .split_whitespace()
            .map(|word| {
                let word = word.to_lowercase();
                if let Some(rest) = word.strip_prefix("reward") {
                    let (ordering, or_equal, number) = match rest.as_bytes() {
                        [b'>', b'=', ..] => (std::cmp::Ordering::Greater, true, &rest[2..]),
                        [b'<', b'=', ..] => (std::cmp::Ordering::Less, true, &rest[2..]),
                        [b'>', ..] => (std::cmp::Ordering::Greater, false, &rest[1..]),
                        [b'<', ..] => (std::cmp::Ordering::Less, false, &rest[1..]),
                        [b'=', ..] => (std::cmp::Ordering::Equal, true, &rest[1..]),
                        _ => return FilterTerm::Text(word.clone()),
                    };
                    if let Ok(value) = number.parse::<f64>() {
                        return FilterTerm::Reward(ordering, or_equal, value);
                    }
                }
                let field = |prefix: &str| word.strip_prefix(prefix).map(str::to_owned);
                field("agent:")
                    .map(FilterTerm::Agent)
                    .or_else(|| field("task:").map(FilterTerm::Task))
                    .or_else(|| field("store:").map(FilterTerm::Store))
                    .or_else(|| field("cause:").map(FilterTerm::Cause))
                    .or_else(|| {
                        let text = field("ended:")?;
                        let (start, seconds) = text.split_once('+')?;
                        Some(FilterTerm::Ended(
                            start.parse().ok()?,
                            seconds.parse().ok()?,
                        ))
                    })
                    .unwrap_or(FilterTerm::Text(word.clone()))
            })
            .collect()
    }

    /// Whether rollout `a` passes.
    fn passes(&self, a: &Summary) -> bool {
        let lower = |text: &str| text.to_lowercase();
        match self {
            FilterTerm::Reward(ordering, or_equal, value) => a.reward().is_some_and(|r| {
                let order = r.total_cmp(value);
                order == *ordering || (*or_equal && order == std::cmp::Ordering::Equal)
            }),
            FilterTerm::Agent(name) => a.agent().is_some_and(|agent| lower(agent).contains(name)),
            // `task:07` is task 7: numbers compare as numbers.
            FilterTerm::Task(task) => a.task().is_some_and(|t| {
                lower(t) == *task
                    || matches!((t.parse::<u64>(), task.parse::<u64>()), (Ok(x), Ok(y)) if x == y)
            }),
            FilterTerm::Store(text) => lower(&a.location.dir.display().to_string()).contains(text),
            FilterTerm::Cause(key) => a
                .cause
                .as_ref()
                .is_some_and(|c| lower(&c.key()).starts_with(key.as_str())),
            // What the timeline's bucket counts: decided rollouts and those at risk.
            FilterTerm::Ended(start, seconds) => {
                matches!(
                    a.standing(),
                    Standing::Ok | Standing::Masked | Standing::Retired | Standing::AtRisk
                ) && a
                    .last_write
                    .is_some_and(|t| (*start..start + seconds).contains(&t))
            }
            FilterTerm::Text(text) => {
                lower(a.rollout_id()).contains(text)
                    || a.reasons
                        .iter()
                        .any(|r| lower(&r.to_string()).contains(text))
                    || a.agent().is_some_and(|agent| lower(agent).contains(text))
                    || a.cause
                        .as_ref()
                        .is_some_and(|c| lower(&c.title()).contains(text))
            }
        }
    }
}

/// The rollout list's state.
#[derive(Clone, Debug)]
pub struct RolloutList {
    /// Sort column.
    pub sort: SortKey,
    /// Descending.
    pub reverse: bool,
    /// Text filter (id or reason contains it).
    pub filter: String,
    /// Masked (or pending-masked) only.
    pub masked_only: bool,
    /// Only rollouts with this mask reason code.
    pub reason: Option<&'static str>,
    /// Only these rollouts may be shown (compare mode's pairing), if set.
    pub only: Option<std::collections::HashSet<usize>>,
    /// Visible rollouts (indices into the app's analyses), in display order.
    pub rows: Vec<usize>,
    /// Selection and window over `rows`.
    pub scroll: ScrollList,
    /// Rollouts compared while ordering rows, in total (a guard against quadratic work).
    comparisons: std::cell::Cell<usize>,
}

impl RolloutList {
    /// An unfiltered list sorted by id, `height` rows on screen.
    pub fn new(height: usize) -> RolloutList {
        RolloutList {
            sort: SortKey::Id,
            reverse: false,
            filter: String::new(),
            masked_only: false,
            reason: None,
            only: None,
            rows: Vec::new(),
            scroll: ScrollList::new(0, height),
            comparisons: std::cell::Cell::new(0),
        }
    }

    /// The selected rollout (index into the analyses).
    pub fn selected_rollout(&self) -> Option<usize> {
        self.rows.get(self.scroll.selected()).copied()
    }

    /// Whether rollout `a` passes the filters (`filter`: the filter line's terms).
    fn admits(&self, index: usize) -> bool {
        self.only.as_ref().is_none_or(|only| only.contains(&index))
    }

    fn shows(&self, a: &Summary, filter: &[FilterTerm], hide_cleared: bool) -> bool {
        (!hide_cleared || a.lifecycle != Lifecycle::Cleared)
            && (!self.masked_only || a.problem())
            && self
                .reason
                .is_none_or(|code| a.reasons.iter().any(|r| r.code() == code))
            && filter.iter().all(|term| term.passes(a))
    }

    /// Rollouts compared so far while ordering rows.
    pub fn comparisons(&self) -> usize {
        self.comparisons.get()
    }

    /// Display order of two rollouts under the current sort.
    fn order(&self, a: &Summary, b: &Summary) -> std::cmp::Ordering {
        self.comparisons.set(self.comparisons.get() + 1);
        let order = match self.sort {
            SortKey::Id => std::cmp::Ordering::Equal,
            SortKey::State => lifecycle_rank(a.lifecycle).cmp(&lifecycle_rank(b.lifecycle)),
            SortKey::Calls => a.records.cmp(&b.records),
            SortKey::Chains => chains(a).cmp(&chains(b)),
            SortKey::Delivered => delivered(a).total_cmp(&delivered(b)),
            SortKey::Verdict => verdict_rank(a).cmp(&verdict_rank(b)),
            SortKey::Reason => first_code(a).cmp(first_code(b)),
            // Without a reward: after every reward (before them, reversed).
            SortKey::Reward => match (a.reward(), b.reward()) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (x, y) => y
                    .is_some()
                    .cmp(&x.is_some())
                    .then(std::cmp::Ordering::Equal),
            },
            SortKey::Agent => a.agent().cmp(&b.agent()),
        }
        .then_with(|| natural_cmp(a.rollout_id(), b.rollout_id()))
        .then_with(|| a.location.dir.cmp(&b.location.dir));
        if self.reverse { order.reverse() } else { order }
    }

    /// Recompute the visible rows from sort and filters, keeping the selected rollout
    /// selected. `hide_cleared` hides rollouts whose files are all gone (replay).
    pub fn refresh(&mut self, summaries: &[Summary], hide_cleared: bool) {
        let keep = self.selected_rollout();
        let filter = FilterTerm::parse(&self.filter);
        let mut rows: Vec<usize> = (0..summaries.len())
            .filter(|&i| self.admits(i) && self.shows(&summaries[i], &filter, hide_cleared))
            .collect();
        rows.sort_by(|&x, &y| self.order(&summaries[x], &summaries[y]));
        self.rows = rows;
        self.reselect(keep);
    }

    /// Rollout `index` appeared or changed: move just its row (a binary search in the
    /// sorted rows), keeping the selected rollout selected. The cost does not grow with the
    /// work of judging the other rollouts: they are not looked at again.
    pub fn update(&mut self, index: usize, summaries: &[Summary], hide_cleared: bool) {
        let summary = &summaries[index];
        let shown = self.admits(index)
            && self.shows(summary, &FilterTerm::parse(&self.filter), hide_cleared);
        let found = self.rows.iter().position(|&r| r == index);
        // Still shown and still between its neighbours (a live append changes its counts, not
        // where it sorts): the rows stand, for two comparisons.
        if let (true, Some(at)) = (shown, found) {
            let after_previous =
                at == 0 || self.order(&summaries[self.rows[at - 1]], summary).is_lt();
            if after_previous
                && self
                    .rows
                    .get(at + 1)
                    .is_none_or(|&next| self.order(summary, &summaries[next]).is_lt())
            {
                return;
            }
        }
        let keep = self.selected_rollout();
        if let Some(at) = found {
            self.rows.remove(at);
        }
        if shown {
            let at = self
                .rows
                .partition_point(|&r| self.order(&summaries[r], summary).is_lt());
            self.rows.insert(at, index);
        }
        self.reselect(keep);
    }

    /// Rollouts `indices` appeared or changed (a batch from the watcher): a few are moved one
    /// by one; many are taken out at once, sorted among themselves and merged back, so a
    /// first scan of a million rollouts costs O(n log n), not a row move each.
    pub fn update_many(&mut self, indices: &[usize], summaries: &[Summary], hide_cleared: bool) {
        /// Below this, one binary search and one move a rollout is cheaper than a merge.
        const ONE_BY_ONE: usize = 32;
        if indices.len() <= ONE_BY_ONE {
            for &index in indices {
                self.update(index, summaries, hide_cleared);
            }
            return;
        }
        let keep = self.selected_rollout();
        let changed: std::collections::HashSet<usize> = indices.iter().copied().collect();
        self.rows.retain(|r| !changed.contains(r));
        let filter = FilterTerm::parse(&self.filter);
        let mut new: Vec<usize> = changed
            .into_iter()
            .filter(|&i| self.admits(i) && self.shows(&summaries[i], &filter, hide_cleared))
            .collect();
        new.sort_by(|&x, &y| self.order(&summaries[x], &summaries[y]));
        let old = std::mem::take(&mut self.rows);
        let mut merged = Vec::with_capacity(old.len() + new.len());
        let (mut a, mut b) = (old.into_iter().peekable(), new.into_iter().peekable());
        while let (Some(&x), Some(&y)) = (a.peek(), b.peek()) {
            if self.order(&summaries[y], &summaries[x]).is_lt() {
                merged.push(y);
                b.next();
            } else {
                merged.push(x);
                a.next();
            }
        }
        merged.extend(a);
        merged.extend(b);
        self.rows = merged;
        self.reselect(keep);
    }

    /// Select `keep` again where it now is (else the first row).
    fn reselect(&mut self, keep: Option<usize>) {
        let selected = keep
            .and_then(|k| self.rows.iter().position(|&r| r == k))
            .unwrap_or(0);
        self.scroll.set_len(self.rows.len());
        self.scroll.select(selected);
    }

    /// Sort by the next column.
    pub(crate) fn sort_next(&mut self) {
        let at = SORT_KEYS.iter().position(|k| *k == self.sort).unwrap_or(0);
        self.sort = SORT_KEYS[(at + 1) % SORT_KEYS.len()];
    }

    /// Show the next mask reason of `codes` only (after the last: all again).
    pub(crate) fn cycle_reason(&mut self, codes: &[&'static str]) {
        self.reason = match self.reason {
            None => codes.first().copied(),
            Some(current) => codes
                .iter()
                .position(|c| *c == current)
                .and_then(|i| codes.get(i + 1))
                .copied(),
        };
    }
}

/// Mask reason codes present in `analyses`, in first-seen order.
pub(crate) fn reason_codes(analyses: &[Summary]) -> Vec<&'static str> {
    let mut codes = Vec::new();
    for analysis in analyses {
        for reason in &analysis.reasons {
            if !codes.contains(&reason.code()) {
                codes.push(reason.code());
            }
        }
    }
    codes
}

fn lifecycle_rank(l: Lifecycle) -> u8 {
    match l {
        Lifecycle::Live => 0,
        Lifecycle::Frozen => 1,
        Lifecycle::Retired => 2,
        Lifecycle::Cleared => 3,
    }
}

fn verdict_rank(a: &Summary) -> u8 {
    match (a.live_status(), a.verdict) {
        (LiveStatus::Final, Verdict::Masked) => 0,
        (LiveStatus::AtRisk, _) => 1,
        (LiveStatus::Pending, _) => 2,
        (LiveStatus::Waiting, _) => 3,
        (LiveStatus::Good, _) => 4,
        (LiveStatus::Final, _) => 5,
    }
}

fn chains(a: &Summary) -> usize {
    a.chains.unwrap_or(0)
}

fn delivered(a: &Summary) -> f64 {
    a.delivered.unwrap_or(-1.0)
}

fn first_code(a: &Summary) -> &'static str {
    a.first_reason().map_or("", |r| r.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Vec<Summary> {
        tokscope_testkit::demo_analyses()
            .iter()
            .map(Summary::of)
            .collect()
    }

    fn ids<'a>(list: &RolloutList, analyses: &'a [Summary]) -> Vec<&'a str> {
        list.rows
            .iter()
            .map(|&i| analyses[i].rollout_id())
            .collect()
    }

    #[test]
    fn a_first_scan_of_many_rollouts_is_merged_not_moved_row_by_row() {
        // 30,000 rollouts arriving in batches of 1,000, as the first scan sends them.
        let demo = demo();
        let summaries: Vec<Summary> = (0..30_000)
            .map(|n| {
                let mut s = demo[n % demo.len()].clone();
                s.location.id = format!("r{}", (n * 7919) % 30_000);
                s
            })
            .collect();
        for sort in [SortKey::Id, SortKey::Verdict] {
            let mut batched = RolloutList::new(20);
            batched.sort = sort;
            for batch in (0..summaries.len()).collect::<Vec<_>>().chunks(1_000) {
                batched.update_many(batch, &summaries, false);
            }
            let mut whole = RolloutList::new(20);
            whole.sort = sort;
            whole.refresh(&summaries, false);
            assert_eq!(batched.rows, whole.rows, "{sort:?}: the same order");
            // O(n log n) comparisons for the whole scan (a row move each was O(n²) moves).
            let n = summaries.len() as f64;
            let bound = (4.0 * n * n.log2()) as usize;
            assert!(
                batched.comparisons() <= bound,
                "{sort:?}: {} comparisons (bound {bound})",
                batched.comparisons()
            );
            // A few changed rollouts move one by one, to the same place.
            batched.update_many(&[5, 77, 29_999], &summaries, false);
            assert_eq!(batched.rows, whole.rows);
        }
    }

    #[test]
    fn a_change_that_keeps_a_rollouts_place_costs_two_comparisons_and_one_that_moves_it_a_move() {
        let mut summaries = demo();
        let orders = [SortKey::Id, SortKey::Calls].into_iter();
        for (sort, reverse) in orders.flat_map(|sort| [(sort, false), (sort, true)]) {
            let mut list = RolloutList::new(5);
            list.sort = sort;
            list.reverse = reverse;
            list.refresh(&summaries, false);
            let middle = list.rows[list.rows.len() / 2];
            // Its counts change, not where it sorts by id; by calls, one more call moves it
            // past the rollouts with as many as it had, if any.
            summaries[middle].records += 1;
            let before = list.comparisons();
            list.update(middle, &summaries, false);
            let mut whole = RolloutList::new(5);
            whole.sort = sort;
            whole.reverse = reverse;
            whole.refresh(&summaries, false);
            assert_eq!(list.rows, whole.rows, "{sort:?}: the order a refresh gives");
            if sort == SortKey::Id {
                assert_eq!(list.comparisons() - before, 2, "the row stands");
            }
            summaries[middle].records -= 1;
        }
        // Pushed past every other: it moves to the end, the selection with it.
        let mut list = RolloutList::new(5);
        list.sort = SortKey::Calls;
        list.refresh(&summaries, false);
        let first = list.rows[0];
        list.scroll.select(0);
        summaries[first].records = usize::MAX;
        list.update(first, &summaries, false);
        assert_eq!(list.rows.last(), Some(&first));
        assert_eq!(list.selected_rollout(), Some(first));
        // Filtered out by its change: its row goes.
        list.filter = summaries[first].rollout_id().to_owned();
        list.refresh(&summaries, false);
        assert_eq!(list.rows, [first]);
        list.filter = "no-such".into();
        list.update(first, &summaries, false);
        assert!(list.rows.is_empty());
    }

    #[test]
    fn filters_sort_and_keep_the_selection() {
        let analyses = demo();
        let mut list = RolloutList::new(5);
        list.refresh(&analyses, false);
        assert_eq!(list.rows.len(), analyses.len());
        // Select the last rollout, then sort by verdict: the same rollout stays selected.
        list.scroll.select(list.rows.len() - 1);
        let chosen = list.selected_rollout();
        list.sort = SortKey::Verdict;
        list.refresh(&analyses, false);
        assert_eq!(list.selected_rollout(), chosen);
        let first = &analyses[list.rows[0]];
        assert!(first.mask_sample, "masked first when sorting by verdict");
        // Masked only, then a reason, then a text filter.
        list.masked_only = true;
        list.refresh(&analyses, false);
        assert!(list.rows.iter().all(|&i| analyses[i].mask_sample));
        let codes = reason_codes(&analyses);
        list.cycle_reason(&codes);
        list.refresh(&analyses, false);
        let code = list.reason.expect("a reason filter");
        assert!(
            list.rows
                .iter()
                .all(|&i| analyses[i].reasons.iter().any(|r| r.code() == code))
        );
        list.filter = "no-such-rollout".into();
        list.refresh(&analyses, false);
        assert!(list.rows.is_empty());
        assert_eq!(list.selected_rollout(), None);
        // Cycling past the last reason shows every reason again.
        for _ in 0..codes.len() {
            list.cycle_reason(&codes);
        }
        assert_eq!(list.reason, None);
    }

    #[test]
    fn filter_terms_read_fields_and_say_what_is_wrong() {
        use std::cmp::Ordering;
        assert_eq!(
            FilterTerm::parse("reward>=0.5 Agent:SWE task:07 masked"),
            [
                FilterTerm::Reward(Ordering::Greater, true, 0.5),
                FilterTerm::Agent("swe".into()),
                FilterTerm::Task("07".into()),
                FilterTerm::Text("masked".into()),
            ]
        );
        assert_eq!(filter_problem("reward>0 agent:a task:3 0-5"), None);
        for bad in ["reward>abc", "rewrd>0", "tsk:3", "calls>3"] {
            assert!(
                filter_problem(bad).is_some_and(|p| p.starts_with(bad)),
                "{bad}"
            );
        }
        let mut summary = demo()[0].clone();
        summary.context = Some(tokscope_core::observe::RowContext {
            task: Some("7".into()),
            reward: Some(0.0),
            ..Default::default()
        });
        let passes = |filter: &str| FilterTerm::parse(filter).iter().all(|t| t.passes(&summary));
        assert!(passes("task:07") && passes("task:7") && !passes("task:8"));
        assert!(passes("reward<=0") && passes("reward=0") && !passes("reward>0"));
        assert!(!passes("agent:x"), "no agent: the term fails");
    }

    #[test]
    fn sort_cycles_and_reverses() {
        let analyses = demo();
        let mut list = RolloutList::new(5);
        list.refresh(&analyses, false);
        let by_id = ids(&list, &analyses);
        list.reverse = true;
        list.refresh(&analyses, false);
        let mut reversed = ids(&list, &analyses);
        reversed.reverse();
        assert_eq!(reversed, by_id);
        for _ in 0..SORT_KEYS.len() {
            list.sort_next();
        }
        assert_eq!(list.sort, SortKey::Id);
    }

    #[test]
    fn moving_one_row_agrees_with_sorting_everything() {
        let mut summaries = demo();
        for (sort, reverse, masked_only) in [
            (SortKey::Verdict, false, false),
            (SortKey::Calls, true, false),
            (SortKey::Delivered, false, true),
        ] {
            let mut incremental = RolloutList::new(5);
            incremental.sort = sort;
            incremental.reverse = reverse;
            incremental.masked_only = masked_only;
            // Rollouts arrive one by one, then change: flip each one's verdict in turn.
            let mut seen = Vec::new();
            for (index, summary) in summaries.iter().enumerate() {
                seen.push(summary.clone());
                incremental.update(index, &seen, false);
            }
            for index in 0..summaries.len() {
                summaries[index].mask_sample = !summaries[index].mask_sample;
                summaries[index].records += index;
                incremental.update(index, &summaries, false);
            }
            let mut full = RolloutList::new(5);
            full.sort = sort;
            full.reverse = reverse;
            full.masked_only = masked_only;
            full.refresh(&summaries, false);
            assert_eq!(incremental.rows, full.rows, "{sort:?} reverse {reverse}");
        }
    }
}
