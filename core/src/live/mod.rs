//! Live monitoring: following a store while it is written, and replaying a recorded one.
//!
//! [`LiveStore`] keeps, per rollout, what identifies the version of each file it read
//! (inode, size, times), and the digests of its calls. Only the rollouts that changed
//! recently are kept *hot* — their parsed lines (no bytes: an append is read from where
//! parsing must resume) — so an append to one of them costs the new bytes plus one rebuild;
//! the others are read whole again, from the page cache, when they change or are looked at.
//! The [`watch`] thread drives it from file-system events (or polling) and sends each changed
//! rollout's [`Summary`](crate::verdict::Summary) to the UI, and the full analysis of the
//! rollouts the UI looks at; the UI thread never reads a file.
//!
//! - [`rollout`]: one rollout followed ([`LiveRollout`]), its files' tails;
//! - [`event`]: what the watcher tells the UI ([`StoreEvent`]);
//! - [`hot`]: which rollouts are kept hot, within bounds;
//! - [`rows`]: the rollout rows followed beside the store;
//! - [`scan`]: the first scan, on all cores, what the UI looks at first.

pub mod demo;
pub mod event;
pub mod hot;
#[cfg(target_os = "linux")]
mod inotify;
mod line_pool;
pub mod replay;
pub mod rollout;
pub mod rows;
pub mod scan;
pub mod tail;
pub mod watch;

use crate::hash::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::observe::Rows;
use crate::store::layout::{FileKind, classify};
use crate::store::{RolloutLocation, StoreDirError};
use crate::verdict::{Analysis, VerdictOptions};

pub use event::StoreEvent;
pub use hot::{HOT_BYTES, HOT_ROLLOUTS};
pub use rollout::LiveRollout;
pub use rollout::RECENTLY_WRITTEN;
use rows::RowsFileStamp;
pub use scan::FIRST_SCAN_BATCH;

/// Every rollout of some store directories, followed incrementally.
#[derive(Debug)]
pub struct LiveStore {
    dirs: Vec<PathBuf>,
    rollouts: HashMap<RolloutLocation, LiveRollout>,
    /// The hot rollouts, least recently changed first.
    /// With the bytes each held when it was last warmed (its bytes change only when it is
    /// read, which warms it again), so keeping the bound costs no lookup per hot rollout.
    hot: std::collections::VecDeque<(RolloutLocation, usize)>,
    /// The rollouts the UI looks at: their full analyses are sent.
    focus: Vec<RolloutLocation>,
    options: VerdictOptions,
    row_paths: Vec<PathBuf>,
    /// Rows of one store each: `(store, path)`.
    store_row_paths: Vec<(PathBuf, PathBuf)>,
    /// Shared with the first scan's workers and with replay timelines.
    rows: Arc<Rows>,
    /// The rows files' stamp when they were last read.
    rows_stamp: Vec<RowsFileStamp>,
    /// Changes will be followed (not `--no-watch`): the first scan keeps the rollouts
    /// being written hot.
    following: bool,
    /// Each directory's modification time when it was last listed (see [`LiveStore::poll`]).
    listed: Vec<Option<std::time::SystemTime>>,
    /// Rollouts refreshed so far (what a poll costs, counted).
    refreshes: usize,
    /// When the store was last listed whole.
    last_listing: Option<std::time::Instant>,
    /// Followed directories that exist and cannot be listed (permissions, I/O errors).
    unlistable: std::collections::BTreeSet<PathBuf>,
    /// What listing found to report (a directory unlistable, or listable again).
    listing_events: Vec<StoreEvent>,
    /// Rollouts whose digests wait to be hashed ahead: those that changed since the digests
    /// were last hashed ([`LiveStore::hash_ahead`]; a set: a store nobody hashes ahead for
    /// keeps one entry a rollout, not one an append).
    changed: std::collections::BTreeSet<RolloutLocation>,
    /// The digests in `changed` waited at the last call to hash them ahead: the next one
    /// hashes them, however few (but for a part-hashed tail, when enough to fill the lanes
    /// ran: see [`LiveStore::hash_ahead`]).
    waited: bool,
}

/// A directory time this recent may hide a later change in the same tick of a coarse clock.
pub const COARSE_TIME: std::time::Duration = std::time::Duration::from_secs(2);
/// A poll lists the whole store at least this often, whatever the directory times say.
pub const FULL_LISTING: std::time::Duration = std::time::Duration::from_secs(5);

impl LiveStore {
    /// Follow `dirs` (nothing is read yet).
    pub fn new(dirs: Vec<PathBuf>, options: VerdictOptions) -> LiveStore {
        LiveStore::with_rows(dirs, options, Vec::new())
    }

    /// Follow `dirs`, with rollout rows from `row_paths` and the rows files in `dirs`.
    pub(crate) fn with_rows(
        dirs: Vec<PathBuf>,
        options: VerdictOptions,
        row_paths: Vec<PathBuf>,
    ) -> LiveStore {
        let mut store = LiveStore {
            dirs,
            rollouts: HashMap::default(),
            hot: Default::default(),
            focus: Vec::new(),
            options,
            row_paths,
            store_row_paths: Vec::new(),
            rows: Arc::default(),
            rows_stamp: Vec::new(),
            following: true,
            listed: Vec::new(),
            refreshes: 0,
            last_listing: None,
            unlistable: Default::default(),
            listing_events: Vec::new(),
            changed: Default::default(),
            waited: false,
        };
        store.reload_rows();
        store
    }

    /// Also rows of one store each, `(store, path)` (read now, and again with the others).
    pub(crate) fn with_store_rows(mut self, paths: Vec<(PathBuf, PathBuf)>) -> LiveStore {
        if !paths.is_empty() {
            self.store_row_paths = paths;
            self.reload_rows();
        }
        self
    }

    /// Whether changes will be followed after the first scan (`false`: it keeps nothing hot).
    pub(crate) fn set_following(&mut self, following: bool) {
        self.following = following;
    }

    /// The events of a changed rollout: its summary, and its analysis when looked at.
    fn emit(&self, analysis: Analysis, events: &mut Vec<StoreEvent>) {
        events.push(StoreEvent::updated(&analysis));
        if self.focus.contains(&analysis.capture.location) {
            events.push(StoreEvent::Detail(Box::new(analysis)));
        }
    }

    /// The UI now looks at `focus`: their full analyses (the UI asks only when what it looks
    /// at changed, and may have dropped one it looked at before).
    pub fn set_focus(&mut self, focus: Vec<RolloutLocation>) -> Vec<StoreEvent> {
        let new = focus.clone();
        self.focus = focus;
        new.iter()
            .flat_map(|location| self.detail_of(location))
            .collect()
    }

    /// The full analysis of `location`, which the UI looks at (none when it is not known).
    fn detail_of(&mut self, location: &RolloutLocation) -> Option<StoreEvent> {
        let options = crate::load::options_for(&self.options, &self.rows, location);
        let rollout = self.rollouts.get_mut(location)?;
        let analysis = rollout.analyze_now(&options).clone();
        self.warm(location);
        Some(StoreEvent::Detail(Box::new(analysis)))
    }

    /// A replay timeline over `locations` (in the order given), each read once for its
    /// records' times (see [`replay::Replay::from_store`]).
    pub fn timeline(&self, locations: Vec<RolloutLocation>) -> replay::Replay {
        replay::Replay::from_store(locations, self.options.clone())
            .with_rows(Arc::clone(&self.rows))
    }

    /// List the directories and refresh every rollout; returns the changes.
    pub fn rescan(&mut self) -> Result<Vec<StoreEvent>, StoreDirError> {
        // Taken before listing: a change made meanwhile makes the next poll list again; a
        // listing that fails leaves nothing taken, so the next poll lists again too.
        let times = self.dir_times();
        self.listed.clear();
        let found = self.discover()?;
        if self.unlistable.is_empty() {
            self.listed = times;
        }
        self.last_listing = Some(std::time::Instant::now());
        let mut changes = self.take_listing_events();
        for location in found {
            changes.extend(self.refresh(&location));
        }
        // Rollouts whose files all vanished since the last scan.
        let known: Vec<RolloutLocation> = self.rollouts.keys().cloned().collect();
        for location in known {
            if !location.path(FileKind::Records).exists() {
                changes.extend(self.refresh(&location));
            }
        }
        Ok(changes)
    }

    pub(super) fn dir_times(&self) -> Vec<Option<std::time::SystemTime>> {
        self.dirs
            .iter()
            .map(|d| std::fs::metadata(d).and_then(|m| m.modified()).ok())
            .collect()
    }

    /// One poll. A directory whose modification time is the one seen when it was last
    /// listed had no file created, deleted or renamed in it — and that is the only way a
    /// frozen, retired or cleared rollout changes (the writer replaces a state by rename and
    /// appends to no file of a frozen rollout) — so then only the rollouts still being
    /// written are looked at; otherwise the store is listed and every rollout refreshed.
    ///
    /// The directory's time is trusted only once it is older than [`COARSE_TIME`] (a file
    /// system may keep whole seconds), and the store is listed at least every
    /// [`FULL_LISTING`] whatever the times say (a state rewritten in place, not by rename).
    pub fn poll(&mut self) -> Result<Vec<StoreEvent>, StoreDirError> {
        if !self.listing_holds() {
            return self.rescan();
        }
        let growing: Vec<RolloutLocation> = self
            .rollouts
            .iter()
            .filter(|(_, rollout)| rollout.may_grow())
            .map(|(location, _)| location.clone())
            .collect();
        Ok(growing
            .iter()
            .flat_map(|location| self.refresh(location))
            .collect())
    }

    /// Whether the last listing still holds: the directories' times are those seen then,
    /// old enough to be trusted, and the listing is not older than [`FULL_LISTING`].
    pub(super) fn listing_holds(&self) -> bool {
        let times = self.dir_times();
        let recent = times.iter().any(|t| {
            t.and_then(|t| t.elapsed().ok())
                .is_none_or(|age| age < COARSE_TIME)
        });
        let stale = self
            .last_listing
            .is_none_or(|at| at.elapsed() >= FULL_LISTING);
        !self.listed.is_empty() && times == self.listed && !recent && !stale
    }

    /// What the last listings found to report.
    pub(super) fn take_listing_events(&mut self) -> Vec<StoreEvent> {
        std::mem::take(&mut self.listing_events)
    }

    /// Rollouts refreshed so far (each refresh looks at its four files).
    pub fn refreshes(&self) -> usize {
        self.refreshes
    }

    /// Refresh one rollout (following it from now on): its events when it changed. What a
    /// change event for one of its files does (benchmarks time it alone).
    pub fn refresh(&mut self, location: &RolloutLocation) -> Vec<StoreEvent> {
        self.refreshes += 1;
        crate::work::count(|work| work.refreshes += 1);
        let options = crate::load::options_for(&self.options, &self.rows, location);
        let (rollout, changed) = match self.rollouts.entry(location.clone()) {
            std::collections::hash_map::Entry::Occupied(known) => {
                let rollout = known.into_mut();
                let changed = rollout.refresh(&options).is_some();
                (rollout, changed)
            }
            std::collections::hash_map::Entry::Vacant(new) => {
                // A new rollout is always reported, even with no file to read (a lock only).
                let rollout = new.insert(LiveRollout::new(location.clone()));
                rollout.read_new(&options);
                (rollout, true)
            }
        };
        let mut events = Vec::new();
        if let Some(summary) = changed.then(|| rollout.summary()).flatten() {
            // Its summary; the whole analysis only to a UI looking at it (a copy).
            events.push(StoreEvent::Updated(Box::new(summary)));
            if self.focus.contains(location)
                && let Some(analysis) = rollout.last_analysis()
            {
                events.push(StoreEvent::Detail(Box::new(analysis.clone())));
            }
            self.warm(location);
            if !self.changed.contains(location) {
                self.changed.insert(location.clone());
            }
        }
        events
    }

    /// Compute ahead the digests that the next appends to the rollouts changed since the
    /// last call will ask for, those of the rollouts together (see
    /// [`hash_ahead`](crate::rebuild::memo::hash_ahead)). The watcher calls it once a burst's
    /// or a poll's changes are sent; a frozen rollout gets no more calls and is skipped.
    ///
    /// Where sixteen lanes hash faster than the SHA extensions, the digests wait for enough
    /// of them to fill the lanes ([`hash_ahead_batch`](crate::rebuild::memo::hash_ahead_batch)),
    /// or one from each rollout being written when there are fewer, and for one more burst at
    /// most; those left once fewer remain than filled the lanes stop where they are and go on
    /// with the next batch (so one may span several bursts). A rollout appended to again
    /// while its digest waits, or is part-hashed, has its link check hash it, or the rest of
    /// it (alone, on the way to the screen, as before digests were hashed ahead); the others
    /// wait on.
    pub fn hash_ahead(&mut self) {
        self.hash_ahead_in(
            crate::rebuild::memo::hash_ahead_batch(),
            crate::rebuild::memo::wide_from(),
        );
    }

    /// [`LiveStore::hash_ahead`], with `batch` digests filling the lanes, sixteen at a time
    /// from `wide_from` on (`None`: never).
    fn hash_ahead_in(&mut self, batch: usize, wide_from: Option<usize>) {
        // No more can come than one from each rollout being written (hot and not frozen);
        // counted only as far as the batch (each is a lookup by path).
        let writing = self
            .hot
            .iter()
            .filter(|(location, _)| self.rollouts.get(location).is_some_and(|r| !r.frozen()))
            .take(batch)
            .count();
        let at_least = if self.waited {
            1
        } else {
            batch.min(writing).max(1)
        };
        self.waited = self.hash_changed(at_least, wide_from);
    }

    /// Hash ahead the changed rollouts' digests if there are at least `at_least` to hash;
    /// else keep the rollouts whose digests wait, and say so.
    fn hash_changed(&mut self, at_least: usize, wide_from: Option<usize>) -> bool {
        let changed: Vec<RolloutLocation> = std::mem::take(&mut self.changed)
            .into_iter()
            .filter(|location| {
                self.rollouts
                    .get(location)
                    .is_some_and(|rollout| !rollout.frozen())
            })
            .collect();
        let memos: Vec<&crate::rebuild::memo::DigestMemo> = changed
            .iter()
            .map(|location| &*self.rollouts[location].memo)
            .collect();
        if memos.is_empty() {
            return false;
        }
        use crate::rebuild::memo::HashedAhead;
        // The rollouts kept for the next call, and whether they waited (those left
        // part-hashed go on with the next full batch).
        let (kept, waited) =
            match crate::rebuild::memo::hash_ahead_from(&memos, at_least, wide_from) {
                HashedAhead::Waiting(waiting) => (waiting, true),
                HashedAhead::Carried(carried) => (carried, false),
                HashedAhead::Hashed => (Vec::new(), false),
            };
        self.changed = kept.into_iter().map(|at| changed[at].clone()).collect();
        waited
    }

    /// Whether `path` is one of the followed directories itself.
    pub(crate) fn is_followed_dir(&self, path: &Path) -> bool {
        self.dirs.iter().any(|dir| dir == path)
    }

    /// The rollout a changed path belongs to, if it is a rollout file of a followed directory.
    pub(crate) fn location_of(&self, path: &Path) -> Option<RolloutLocation> {
        let dir = path.parent()?;
        let name = path.file_name()?.to_str()?;
        let (id, _) = classify(name)?;
        let dir = self.dirs.iter().find(|d| same_dir(d, dir))?;
        Some(RolloutLocation {
            dir: dir.clone(),
            id: id.to_owned(),
        })
    }

    /// Bytes read from records files so far (to show that only new bytes are read).
    pub fn records_bytes_read(&self) -> u64 {
        self.rollouts
            .values()
            .map(LiveRollout::records_bytes_read)
            .sum()
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || a.canonicalize()
            .ok()
            .zip(b.canonicalize().ok())
            .is_some_and(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebuild::digest::take_digests_computed;

    /// A conversation's records file: each call a full-prompt child of the one before.
    fn conversation(calls: u64) -> String {
        let mut out = String::new();
        let mut sequence: Vec<u64> = Vec::new();
        for call in 0..calls {
            let prompt: Vec<u64> = sequence.iter().copied().chain([call, call + 1]).collect();
            let parent = match call {
                0 => r#""parent_resolution":"root""#.to_owned(),
                _ => format!(
                    r#""parent_call_id":"c{}","parent_resolution":"resolved""#,
                    call - 1
                ),
            };
            let mut cumulative = prompt.clone();
            cumulative.push(900 + call);
            let digest = crate::rebuild::digest::digest(&cumulative);
            out.push_str(&format!(
                r#"{{"cum_len":{},"digest":"{digest}","generation_log_probs":[-0.1],"generation_token_ids":[{}],"model_call_id":"c{call}",{parent},"prompt_token_ids":{prompt:?},"rollout_id":"r"}}"#,
                cumulative.len(),
                900 + call
            ));
            out.push('\n');
            sequence = cumulative;
        }
        out
    }

    /// Rollout `id` in `dir`, its records file holding `records`.
    fn rollout_with(dir: &Path, id: &str, records: &str) -> RolloutLocation {
        let location = RolloutLocation {
            dir: dir.to_path_buf(),
            id: id.into(),
        };
        std::fs::write(location.path(FileKind::Records), records).unwrap();
        location
    }

    /// The open intents of a rollout followed append by append (what is known in order
    /// carried from one read to the next) are those of reading its files afresh: intents
    /// in order, ahead of their records, out of order, never recorded, records without an
    /// intent, and both files written anew.
    #[test]
    fn open_intents_followed_append_by_append_are_those_read_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let location = rollout_with(dir.path(), "r", "");
        let (records, intents) = (
            location.path(FileKind::Records),
            location.path(FileKind::Intents),
        );
        let append = |path: &Path, line: &str| {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .unwrap();
            writeln!(file, "{line}").unwrap();
        };
        let record = |call: usize| {
            format!(
                r#"{{"generation_log_probs":[-0.1],"generation_token_ids":[7],"model_call_id":"c{call}","parent_resolution":"root","prompt_token_ids":[{call}],"rollout_id":"r"}}"#
            )
        };
        let mut rollout = LiveRollout::new(location.clone());
        let options = VerdictOptions::default();
        let mut rng = tokscope_testkit::Rng::new(3);
        let mut next = 0;
        for step in 1..400 {
            // A long run in order first (what is known in order grows with it); then the
            // intents file written anew, its first call never recorded; later the records.
            if step == 100 {
                std::fs::write(&intents, "gone\nc0\n").unwrap();
            } else if step == 300 {
                std::fs::write(&records, record(1) + "\n").unwrap();
            }
            let pick = if step < 100 { 5 } else { 10 };
            match rng.next_u64() % pick {
                // Mostly as the writer goes: the intent, then its record.
                0..=5 => {
                    append(&intents, &format!("c{next}"));
                    append(&records, &record(next));
                    next += 1;
                }
                6 => append(&intents, &format!("c{}", next + 1)),
                7 => {
                    append(&records, &record(next));
                    next += 1;
                }
                8 => append(
                    &intents,
                    &format!("c{}", rng.next_u64() % (next as u64 + 1)),
                ),
                _ => {}
            }
            let Some(analysis) = rollout.refresh(&options) else {
                continue;
            };
            let afresh = crate::store::read_capture(&location);
            assert_eq!(
                analysis.capture.open_intents(),
                afresh.open_intents(),
                "step {step}"
            );
        }
    }

    #[test]
    fn a_cooled_rollout_warmed_by_an_append_digests_only_its_new_links() {
        let dir = tempfile::tempdir().unwrap();
        let location = rollout_with(dir.path(), "r", "");
        let path = location.path(FileKind::Records);
        let lines = conversation(12);
        let (first, rest) = lines.split_at(lines.match_indices('\n').nth(9).unwrap().0 + 1);
        std::fs::write(&path, first).unwrap();
        let options = VerdictOptions::default();
        let mut rollout = LiveRollout::new(location);
        take_digests_computed();
        assert!(rollout.refresh(&options).is_some());
        assert_eq!(take_digests_computed(), 9, "each parent of 10 calls once");
        rollout.cool();
        assert_eq!(rollout.resident_bytes(), 0);
        // Two calls appended while cold: read whole again, only the new links hashed.
        std::fs::write(&path, &lines).unwrap();
        let analysis = rollout.refresh(&options).expect("changed");
        assert_eq!(analysis.capture.records.len(), 12);
        let build = analysis.build.as_ref().expect("built");
        assert!(
            build.notes.parent_link_failures.is_empty(),
            "every link holds"
        );
        assert_eq!(take_digests_computed(), 2);
        assert!(rest.len() > 1);
        // Hot, it holds parsed lines and of its records file only its last line's bytes (the
        // next append's likely parent); an unfinished line is held until it is complete.
        assert!(rollout.refresh(&options).is_none(), "unchanged");
        let last = &lines[lines[..lines.len() - 1].rfind('\n').unwrap() + 1..];
        assert_eq!(rollout.records.kept_line(), Some(last.as_bytes()));
        assert_eq!(rollout.records.bytes(), Some(&b""[..]));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut file, b"{\"model_call_id\":").unwrap();
        rollout.refresh(&options).expect("changed");
        assert_eq!(rollout.records.kept_line(), Some(last.as_bytes()));
        assert_eq!(rollout.records.bytes(), Some(&b"{\"model_call_id\":"[..]));
        assert!(rollout.records.held_bytes() <= 128 << 10);
        drop(file);
        // Replaced by another file: nothing known of it holds.
        let other = dir.path().join("other");
        std::fs::write(&other, &lines).unwrap();
        std::fs::rename(&other, &path).unwrap();
        rollout.refresh(&options).expect("changed");
        assert_eq!(take_digests_computed(), 11);
    }

    /// Rollouts of one conversation of `calls` calls, followed by a store: rollout `at`
    /// read with `first[at]` calls, then appended to call by call.
    struct Conversations {
        store: LiveStore,
        locations: Vec<RolloutLocation>,
        whole: String,
        line_ends: Vec<usize>,
    }

    impl Conversations {
        fn new(dir: &Path, calls: u64, first: &[usize]) -> Conversations {
            let whole = conversation(calls);
            let line_ends: Vec<usize> = whole.match_indices('\n').map(|(at, _)| at + 1).collect();
            let locations: Vec<RolloutLocation> = first
                .iter()
                .enumerate()
                .map(|(at, &calls)| {
                    rollout_with(dir, &format!("r{at}"), &whole[..line_ends[calls - 1]])
                })
                .collect();
            let mut store = LiveStore::new(vec![dir.to_path_buf()], Default::default());
            for location in &locations {
                store.refresh(location);
            }
            Conversations {
                store,
                locations,
                whole,
                line_ends,
            }
        }

        /// Rollout `at` grown to `calls` calls, and read.
        fn append(&mut self, at: usize, calls: usize) {
            std::fs::write(
                self.locations[at].path(FileKind::Records),
                &self.whole[..self.line_ends[calls - 1]],
            )
            .unwrap();
            assert!(!self.store.refresh(&self.locations[at]).is_empty());
        }

        /// Rollout `at`'s summary now.
        fn summary(&mut self, at: usize) -> crate::verdict::Summary {
            let rollout = self.store.rollouts.get_mut(&self.locations[at]).unwrap();
            rollout.summary().unwrap()
        }
    }

    #[test]
    fn a_digest_left_part_hashed_is_finished_by_the_link_check_that_needs_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut rollouts = Conversations::new(dir.path(), 9, &[2, 3, 4, 5, 6]);
        // Newest calls 2 to 6, placed by an append: messages of 2, 3, 3, 3 and 4 blocks.
        for at in 0..5 {
            rollouts.append(at, at + 3);
        }
        take_digests_computed();
        // Sixteen lanes from two messages on: the lanes run only while all five are full,
        // so the first to end is finished and the four others left part-hashed, kept for
        // the next batch without waiting as too few do.
        rollouts.store.hash_ahead_in(16, Some(2));
        assert_eq!(take_digests_computed(), 1);
        let carried: Vec<&RolloutLocation> = rollouts.store.changed.iter().collect();
        let longest: Vec<&RolloutLocation> = rollouts.locations[1..].iter().collect();
        assert_eq!(carried, longest);
        assert!(!rollouts.store.waited);
        // Its child comes first: the link check hashes the rest, and the link holds.
        rollouts.append(4, 8);
        assert_eq!(take_digests_computed(), 1, "the parent's, finished");
        let summary = rollouts.summary(4);
        assert_eq!(summary.records, 8);
        assert!(summary.reasons.is_empty(), "{:?}", summary.reasons);
    }

    #[test]
    fn digests_wait_for_a_full_batch_or_one_more_burst() {
        let dir = tempfile::tempdir().unwrap();
        // Read with two calls, then a third appended to each (an append's build is extended:
        // its newest call is the one whose digest the next append asks for).
        let mut rollouts = Conversations::new(dir.path(), 5, &[2, 2, 2]);
        for at in 0..3 {
            rollouts.append(at, 3);
        }
        take_digests_computed();
        // Three rollouts being written: a batch of sixteen cannot come, one from each is
        // enough.
        rollouts.store.hash_ahead_in(16, None);
        assert_eq!(
            take_digests_computed(),
            3,
            "one from each rollout being written"
        );
        rollouts.append(0, 4);
        rollouts.append(1, 4);
        assert_eq!(take_digests_computed(), 0, "the parents' were hashed ahead");
        rollouts.store.hash_ahead_in(16, None);
        assert_eq!(take_digests_computed(), 0, "two of three: they wait");
        assert_eq!(rollouts.store.changed.len(), 2);
        // An append to a rollout whose digest waits: its link check hashes the parent's.
        rollouts.append(0, 5);
        assert_eq!(
            take_digests_computed(),
            1,
            "the parent's, by the link check"
        );
        // Waited once: the next call hashes them, however few.
        rollouts.store.hash_ahead_in(16, None);
        assert_eq!(take_digests_computed(), 2);
        assert!(rollouts.store.changed.is_empty() && !rollouts.store.waited);
        rollouts.store.hash_ahead_in(16, None);
        assert_eq!(take_digests_computed(), 0, "nothing left");
        let summary = rollouts.summary(0);
        assert_eq!(summary.records, 5);
        assert!(
            summary.reasons.is_empty(),
            "every link holds: {:?}",
            summary.reasons
        );
    }

    #[test]
    fn a_frozen_rollout_keeps_no_digests_once_cooled() {
        let dir = tempfile::tempdir().unwrap();
        let location = rollout_with(dir.path(), "r", &conversation(4));
        let mut rollout = LiveRollout::new(location.clone());
        rollout.refresh(&VerdictOptions::default());
        rollout.cool();
        assert_eq!(
            rollout.memo.len(),
            3,
            "a live rollout may grow: its digests stay"
        );
        std::fs::write(location.path(FileKind::State), br#"{"frozen":true}"#).unwrap();
        rollout.refresh(&VerdictOptions::default());
        rollout.cool();
        assert!(rollout.memo.is_empty(), "frozen: nothing will be appended");
    }

    #[test]
    fn the_first_scan_keeps_rollouts_being_written_hot_only_when_following() {
        let dir = tempfile::tempdir().unwrap();
        for id in ["a", "b", "c"] {
            rollout_with(dir.path(), id, &conversation(3));
        }
        for following in [false, true] {
            let mut store = LiveStore::new(vec![dir.path().to_path_buf()], Default::default());
            store.set_following(following);
            store.first_scan(&mut |_| true, &mut || None).unwrap();
            assert_eq!(store.hot_rollouts(), if following { 3 } else { 0 });
        }
    }

    #[test]
    fn a_poll_looks_only_at_rollouts_still_being_written_until_a_file_comes_or_goes() {
        let dir = tempfile::tempdir().unwrap();
        let writer = tokscope_testkit::RunWriter::new(dir.path());
        for n in 0..20 {
            writer
                .rollout(&format!("done{n}"), 2, false, n % 2 == 0)
                .unwrap();
        }
        writer.clear("cleared").unwrap();
        writer.begin_call("live", "live-c0").unwrap();
        // A directory time an hour old: trusted (a recent one may hide a change in the same
        // tick of a coarse clock, and is listed again).
        let age = |store: &mut LiveStore| {
            let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            std::fs::File::open(dir.path())
                .and_then(|d| d.set_modified(hour_ago))
                .unwrap();
            store.listed = store.dir_times();
        };
        let mut store = LiveStore::new(vec![dir.path().to_path_buf()], Default::default());
        store.first_scan(&mut |_| true, &mut || None).unwrap();
        age(&mut store);
        // Nothing created, deleted or renamed: only the live rollout is looked at.
        let before = store.refreshes();
        assert!(store.poll().unwrap().is_empty());
        assert_eq!(
            store.refreshes() - before,
            1,
            "22 rollouts, 1 being written"
        );
        // An append to it is seen.
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("live.tokens.intents"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"live-c1\n"))
            .unwrap();
        assert!(!store.poll().unwrap().is_empty(), "the append is seen");
        // A frozen rollout retired (a deletion and a rename): the store is listed again.
        let before = store.refreshes();
        writer.retire("done1").unwrap();
        let changes = store.poll().unwrap();
        assert!(store.refreshes() - before >= 22, "listed again");
        assert!(changes.iter().any(|e| matches!(e, StoreEvent::Updated(s)
            if s.rollout_id() == "done1" && s.lifecycle == crate::verdict::Lifecycle::Retired)));
        // A listing that failed is no listing: the next poll lists again.
        age(&mut store);
        store.listed.clear();
        let before = store.refreshes();
        store.poll().unwrap();
        assert!(
            store.refreshes() - before >= 22,
            "listed again after a failed listing"
        );
        // A recent directory time is not trusted (a coarse clock); nor an old listing.
        writer.clear("new").unwrap();
        let before = store.refreshes();
        store.poll().unwrap();
        store.poll().unwrap();
        assert!(
            store.refreshes() - before >= 44,
            "both polls list: the time is recent"
        );
        age(&mut store);
        store.last_listing = Some(std::time::Instant::now() - FULL_LISTING);
        let before = store.refreshes();
        store.poll().unwrap();
        assert!(
            store.refreshes() - before >= 22,
            "listed at least every FULL_LISTING"
        );
    }
}
