//! Live monitoring: following a store while it is written, and replaying a recorded one.
//!
//! [`LiveStore`] keeps, per rollout, what identifies the version of each file it read
//! (inode, size, times), and the digests of its calls. Only the rollouts that changed
//! recently are kept *hot* — their parsed lines (no bytes: an append is read from where
//! parsing must resume) — so an append to one of them costs the new bytes plus one rebuild;
//! the others are read whole again, from the page cache, when they change or are looked at. The [`watch`] thread drives it from file-system
//! events (or polling) and sends each changed rollout's [`Summary`] to the UI, and the full
//! analysis of the rollouts the UI looks at; the UI thread never reads a file.

pub mod demo;
pub mod replay;
pub mod tail;
pub mod watch;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::observe::Rows;
use crate::store::layout::{FileKind, classify, natural_cmp};
use crate::store::read::{FileBytes, LineCache, capture_from, io_issue};
use crate::store::{RolloutLocation, StoreDirError};
use crate::verdict::{Analysis, Summary, VerdictOptions, analyze};
use tail::{Change, FileTail};

/// One rollout followed incrementally.
#[derive(Debug)]
pub struct LiveRollout {
    location: RolloutLocation,
    records: FileTail,
    intents: FileTail,
    sentinel: FileTail,
    state: FileTail,
    cache: LineCache,
    memo: std::sync::Arc<crate::rebuild::memo::DigestMemo>,
    /// The state said frozen (or retired) when last read: no call will be appended, so its
    /// digests are not kept once it is cooled.
    frozen: bool,
}

impl LiveRollout {
    /// Follow the rollout at `location`.
    pub fn new(location: RolloutLocation) -> LiveRollout {
        LiveRollout {
            records: FileTail::records(location.path(FileKind::Records)),
            intents: FileTail::new(location.path(FileKind::Intents), true),
            sentinel: FileTail::new(location.path(FileKind::Incomplete), true),
            state: FileTail::new(location.path(FileKind::State), false),
            cache: LineCache::kept(),
            memo: Default::default(),
            frozen: false,
            location,
        }
    }

    /// Drop the bytes, parsed lines and digests: the rollout is no longer followed closely
    /// (the files' stamps are kept, so an unchanged rollout is still not read).
    pub(crate) fn cool(&mut self) {
        for tail in self.tails_mut() {
            tail.forget();
        }
        self.cache = LineCache::kept();
        if self.frozen {
            self.memo.clear();
        } else {
            self.memo.cool();
        }
    }

    /// A rollout not read before: read it, and its analysis even when it has no file to read.
    fn read_new(&mut self, options: &VerdictOptions) -> Analysis {
        match self.refresh(options) {
            Some(analysis) => analysis,
            None => self.analyze(options),
        }
    }

    /// Read a rollout for the first scan. One being written (its records file changed in
    /// the last [`RECENTLY_WRITTEN`], its state not frozen) is kept hot, its next append
    /// likely; the others are parsed as `build` parses them and cooled, nothing kept for a
    /// next read that may never come.
    fn read_first(
        location: RolloutLocation,
        options: &VerdictOptions,
        following: bool,
    ) -> (Self, Analysis) {
        let mut rollout = LiveRollout::new(location);
        let written = following
            && std::fs::metadata(rollout.location.path(FileKind::Records))
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age < RECENTLY_WRITTEN);
        if !written {
            rollout.cache = LineCache::default();
        }
        let analysis = rollout.read_new(options);
        if !written || rollout.frozen {
            rollout.cool();
        }
        (rollout, analysis)
    }

    /// Memory held for the next read: the small files' bytes, the records file's unfinished
    /// last line, and (an estimate) the parsed records (0 once cooled).
    pub fn resident_bytes(&self) -> usize {
        [&self.state, &self.intents, &self.records, &self.sentinel]
            .iter()
            .map(|tail| tail.held_bytes())
            .sum::<usize>()
            + self.cache.held_bytes()
    }

    /// Whether any of its files' bytes were dropped.
    fn is_cold(&self) -> bool {
        [&self.state, &self.intents, &self.records, &self.sentinel]
            .iter()
            .any(|tail| tail.is_cold())
    }

    fn tails_mut(&mut self) -> [&mut FileTail; 4] {
        [
            &mut self.state,
            &mut self.intents,
            &mut self.records,
            &mut self.sentinel,
        ]
    }

    /// The analysis now, reading the files of a cooled rollout again.
    pub(crate) fn analyze_now(&mut self, options: &VerdictOptions) -> Analysis {
        let mut reread = false;
        for tail in self.tails_mut() {
            if tail.is_cold() {
                tail.reload();
                reread = true;
            }
        }
        if reread {
            self.cache.clear();
            self.forget_digests_unless_continued();
        }
        self.analyze(options)
    }

    /// Read what changed; `Some(analysis)` when anything did.
    pub(crate) fn refresh(&mut self, options: &VerdictOptions) -> Option<Analysis> {
        // A cooled rollout read again must be read whole: its parsed lines are gone too (any
        // of its files may have been cooled: one that did not exist then holds nothing).
        let cold = self.is_cold();
        let mut changed = false;
        // State first: the records file then holds at least what the state's index covers,
        // so a writer caught between its two writes never looks like a bad index.
        for (kind, tail) in [
            (FileKind::State, &mut self.state),
            (FileKind::Intents, &mut self.intents),
            (FileKind::Records, &mut self.records),
            (FileKind::Incomplete, &mut self.sentinel),
        ] {
            let change = tail.refresh();
            changed |= change != Change::None;
            if kind == FileKind::Records && matches!(change, Change::Reread | Change::Removed) {
                // Earlier lines may have changed: forget their parses (and digests, unless
                // the file is the one read before, grown).
                self.cache.clear();
                if !tail.continued() {
                    self.memo.clear();
                }
            }
        }
        if !changed {
            return None;
        }
        Some(if cold {
            self.analyze_now(options)
        } else {
            self.analyze(options)
        })
    }

    /// The records file was read whole: its digests hold only if it is the file read
    /// before, not shorter (a cooled rollout warmed again).
    fn forget_digests_unless_continued(&mut self) {
        if !self.records.continued() {
            self.memo.clear();
        }
    }

    /// Files of the rollout that cannot be read, as read issues.
    fn io_issues(&self) -> Vec<crate::store::ReadIssue> {
        [
            (FileKind::State, &self.state),
            (FileKind::Intents, &self.intents),
            (FileKind::Records, &self.records),
            (FileKind::Incomplete, &self.sentinel),
        ]
        .into_iter()
        .filter_map(|(kind, tail)| tail.error().map(|error| io_issue(kind, error)))
        .collect()
    }

    /// The analysis of the bytes known now.
    pub fn analyze(&mut self, options: &VerdictOptions) -> Analysis {
        let io_issues = self.io_issues();
        let bytes = FileBytes {
            state: self.state.bytes(),
            records: self.records.view(),
            intents: self.intents.bytes(),
            sentinel: self.sentinel.bytes(),
            io_issues: &io_issues,
        };
        let capture = capture_from(&self.location, bytes, &mut self.cache);
        self.frozen = capture.state.frozen || capture.state.retired;
        // The lines read are parsed and kept: their bytes are not.
        self.records.settle(self.cache.resume() as u64);
        let options = VerdictOptions {
            digest_memo: Some(std::sync::Arc::clone(&self.memo)),
            ..options.clone()
        };
        analyze(capture, &options)
    }

    /// Bytes read from the records file so far.
    pub fn records_bytes_read(&self) -> u64 {
        self.records.bytes_read
    }
}

/// What changed in a store.
#[derive(Clone, Debug)]
pub enum StoreEvent {
    /// A rollout appeared or changed: its new summary.
    Updated(Box<Summary>),
    /// The full analysis of a rollout the UI looks at (asked for, or changed).
    Detail(Box<Analysis>),
    /// A replay timeline over the rollouts asked for (with [`watch::Watch::replay`]).
    Timeline(Box<replay::Replay>),
    /// The first scan: rollouts read so far, of how many.
    Progress {
        /// Rollouts read.
        read: usize,
        /// Rollouts found.
        total: usize,
    },
    /// A store directory could not be read.
    Error(String),
    /// The initial scan is complete.
    Ready,
    /// A followed directory was deleted or renamed away.
    StoreGone(PathBuf),
    /// A followed directory is there again (recreated or renamed back): followed anew.
    StoreBack(PathBuf),
}

impl StoreEvent {
    /// The summary event of `analysis`.
    pub fn updated(analysis: &Analysis) -> StoreEvent {
        StoreEvent::Updated(Box::new(Summary::of(analysis)))
    }
}

/// How many rollouts are kept hot (parsed lines held, so an append costs only itself), and
/// how many bytes they may hold together ([`LiveRollout::resident_bytes`]): whichever bound
/// comes first.
pub const HOT_ROLLOUTS: usize = 64;
/// How long the first scan gathers finished rollouts before sending them (one list update
/// per batch, not per rollout).
pub const FIRST_SCAN_BATCH: Duration = Duration::from_millis(25);
/// See [`HOT_ROLLOUTS`].
pub const HOT_BYTES: usize = 160 << 20;
/// A rollout whose records file changed this recently when the first scan reads it is being
/// written: it is kept hot (see [`HOT_ROLLOUTS`]).
pub const RECENTLY_WRITTEN: Duration = Duration::from_secs(60);

/// Move the rollouts of `focus` still in `queue` to its front, in `focus`'s order.
fn to_front(queue: &mut VecDeque<(usize, RolloutLocation)>, focus: &[RolloutLocation]) {
    for location in focus.iter().rev() {
        if let Some(at) = queue.iter().position(|(_, l)| l == location)
            && let Some(wanted) = queue.remove(at)
        {
            queue.push_front(wanted);
        }
    }
}

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
    /// Shared with the first scan's workers and with replay timelines.
    rows: Arc<Rows>,
    /// The rows files' stamp when they were last read.
    rows_stamp: Vec<RowsFileStamp>,
    /// Changes will be followed (not `--no-watch`): the first scan keeps the rollouts
    /// being written hot.
    following: bool,
}

/// A rows file's path, size and modification time.
type RowsFileStamp = (PathBuf, u64, Option<std::time::SystemTime>);

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
            rollouts: HashMap::new(),
            hot: Default::default(),
            focus: Vec::new(),
            options,
            row_paths,
            rows: Arc::default(),
            rows_stamp: Vec::new(),
            following: true,
        };
        store.reload_rows();
        store
    }

    /// Whether changes will be followed after the first scan (`false`: it keeps nothing hot).
    pub(crate) fn set_following(&mut self, following: bool) {
        self.following = following;
    }

    /// Read the rollout rows again. Their stamp is taken first, so that a change made while
    /// (or right after) they are read is seen by the next [`LiveStore::rows_moved`].
    pub(crate) fn reload_rows(&mut self) {
        self.rows_stamp = self.rows_stamp();
        let mut rows = Rows::read(&self.row_paths);
        rows.discover(&self.dirs);
        self.rows = Arc::new(rows);
    }

    /// Whether a rows file changed on disk since the rows were last read (polling).
    pub(crate) fn rows_moved(&self) -> bool {
        self.rows_stamp() != self.rows_stamp
    }

    /// The rows read.
    pub fn rows(&self) -> &Rows {
        &self.rows
    }

    /// Rows changed: read them again and judge every rollout anew (cooled rollouts are
    /// read again, one at a time, and cooled again).
    pub(crate) fn rows_changed(&mut self) -> Vec<StoreEvent> {
        self.reload_rows();
        let locations: Vec<RolloutLocation> = self.rollouts.keys().cloned().collect();
        let mut events = Vec::new();
        for location in locations {
            let options = crate::load::options_for(&self.options, &self.rows, &location);
            let Some(rollout) = self.rollouts.get_mut(&location) else {
                continue;
            };
            let was_cold = rollout.is_cold();
            let analysis = rollout.analyze_now(&options);
            if was_cold {
                rollout.cool();
            }
            self.emit(analysis, &mut events);
        }
        events
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
        let mut events = Vec::new();
        for location in new {
            let options = crate::load::options_for(&self.options, &self.rows, &location);
            if let Some(rollout) = self.rollouts.get_mut(&location) {
                let analysis = rollout.analyze_now(&options);
                self.warm(&location);
                events.push(StoreEvent::Detail(Box::new(analysis)));
            }
        }
        events
    }

    /// Rollout `location` just changed or is looked at: keep it hot, cooling the least
    /// recently changed beyond [`HOT_ROLLOUTS`] / [`HOT_BYTES`] (never one looked at).
    fn warm(&mut self, location: &RolloutLocation) {
        if let Some(at) = self.hot.iter().position(|(l, _)| l == location) {
            self.hot.remove(at);
        }
        let bytes = self
            .rollouts
            .get(location)
            .map_or(0, LiveRollout::resident_bytes);
        self.hot.push_back((location.clone(), bytes));
        let mut held: usize = self.hot.iter().map(|(_, bytes)| bytes).sum();
        let mut at = 0;
        while (self.hot.len() > HOT_ROLLOUTS || held > HOT_BYTES) && at + 1 < self.hot.len() {
            if self.focus.contains(&self.hot[at].0) {
                at += 1;
                continue;
            }
            let Some((coolest, bytes)) = self.hot.remove(at) else {
                break;
            };
            held = held.saturating_sub(bytes);
            if let Some(rollout) = self.rollouts.get_mut(&coolest) {
                rollout.cool();
            }
        }
    }

    /// Memory held for the next reads by every followed rollout (see
    /// [`LiveRollout::resident_bytes`]; bounded by [`HOT_BYTES`] plus the rollouts looked at,
    /// whatever the store's size).
    pub fn resident_bytes(&self) -> usize {
        self.rollouts
            .values()
            .map(LiveRollout::resident_bytes)
            .sum()
    }

    /// A replay timeline over `locations` (in the order given), each read once for its
    /// records' times (see [`replay::Replay::from_store`]).
    pub fn timeline(&self, locations: Vec<RolloutLocation>) -> replay::Replay {
        replay::Replay::from_store(locations, self.options.clone())
            .with_rows(Arc::clone(&self.rows))
    }

    /// Rollouts kept hot.
    pub fn hot_rollouts(&self) -> usize {
        self.hot.len()
    }

    /// A line about the rows worth the user's attention, if any (see [`Rows::message`]).
    pub fn rows_message(&self) -> Option<String> {
        let ids: std::collections::HashSet<&str> =
            self.rollouts.keys().map(|l| l.id.as_str()).collect();
        self.rows.message(&ids)
    }

    /// Size and modification time of every rows file (to notice changes when polling).
    pub(crate) fn rows_stamp(&self) -> Vec<RowsFileStamp> {
        let mut files: Vec<PathBuf> = self.rows.files.clone();
        for dir in &self.dirs {
            if let Ok(entries) = std::fs::read_dir(dir) {
                files.extend(
                    entries
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| self.is_rows_file(p)),
                );
            }
        }
        files.sort();
        files.dedup();
        files
            .into_iter()
            .map(|f| {
                let meta = std::fs::metadata(&f).ok();
                let stamp = (
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                );
                (f, stamp.0, stamp.1)
            })
            .collect()
    }

    /// Whether `path` is a rows file of a followed directory.
    pub(crate) fn is_rows_file(&self, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name.ends_with(".jsonl")
            && !name.ends_with(".tokens.jsonl")
            && path
                .parent()
                .is_some_and(|dir| self.dirs.iter().any(|d| same_dir(d, dir)))
    }

    /// The rollouts of the followed directories, in store then natural id order.
    fn discover(&self) -> Result<Vec<RolloutLocation>, StoreDirError> {
        let mut found = Vec::new();
        for dir in &self.dirs {
            match crate::store::discover(dir) {
                Ok(locations) => found.extend(locations),
                // A directory that went away is reported by the watch; its rollouts are gone.
                Err(error) if error.source.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        found.sort_by(|a, b| a.dir.cmp(&b.dir).then_with(|| natural_cmp(&a.id, &b.id)));
        Ok(found)
    }

    /// List the directories and refresh every rollout; returns the changes.
    pub fn rescan(&mut self) -> Result<Vec<StoreEvent>, StoreDirError> {
        let found = self.discover()?;
        let mut changes = Vec::new();
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

    /// The first scan: every rollout read on all cores, each summary sent as soon as it is
    /// ready, in batches of [`FIRST_SCAN_BATCH`] with the progress; between batches,
    /// `requests` is asked for the rollouts the UI now looks at, which are read next. Nothing
    /// is kept hot.
    pub fn first_scan(
        &mut self,
        send: &mut dyn FnMut(StoreEvent) -> bool,
        requests: &mut dyn FnMut() -> Option<Vec<RolloutLocation>>,
    ) -> Result<bool, StoreDirError> {
        let pending: Vec<RolloutLocation> = self
            .discover()?
            .into_iter()
            .filter(|l| !self.rollouts.contains_key(l))
            .collect();
        let total = pending.len();
        let queue = crate::pool::Queue::new(pending);
        // What the UI looks at already is read first (later requests come between batches).
        if let Some(focus) = requests() {
            queue.edit(|items| to_front(items, &focus));
            self.focus = focus;
        }
        // The workers read; this thread hands their results on, so no core waits for another
        // to finish a chunk, nor for the events to be sent.
        let (options, rows) = (self.options.clone(), Arc::clone(&self.rows));
        let following = self.following;
        let read = |location: RolloutLocation| {
            let options = crate::load::options_for(&options, &rows, &location);
            LiveRollout::read_first(location, &options, following)
        };
        crate::pool::run(&queue, crate::pool::Order::Done, read, |results| {
            let mut read = 0;
            while let Some(first) = results.next() {
                let deadline = Instant::now() + FIRST_SCAN_BATCH;
                let mut batch = vec![first];
                while let Some(more) = results.next_until(deadline) {
                    batch.push(more);
                }
                read += batch.len();
                let mut events = Vec::new();
                for (rollout, analysis) in batch {
                    let location = rollout.location.clone();
                    let hot = !rollout.is_cold();
                    self.rollouts.insert(location.clone(), rollout);
                    if hot {
                        // (Within the bounds: the least recently read are cooled.)
                        self.warm(&location);
                    }
                    self.emit(analysis, &mut events);
                }
                events.push(StoreEvent::Progress { read, total });
                if let Some(focus) = requests() {
                    // Looked at first: those read already are answered now, the others are
                    // moved to the front of the queue.
                    queue.edit(|items| to_front(items, &focus));
                    events.extend(self.set_focus(focus));
                }
                if !events.into_iter().all(&mut *send) {
                    // Nobody listens: the workers stop after the rollout they are reading.
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    /// Refresh one rollout (following it from now on): its events when it changed.
    /// Refresh one rollout.
    pub(crate) fn refresh(&mut self, location: &RolloutLocation) -> Vec<StoreEvent> {
        let options = crate::load::options_for(&self.options, &self.rows, location);
        let analysis = match self.rollouts.entry(location.clone()) {
            std::collections::hash_map::Entry::Occupied(mut known) => {
                known.get_mut().refresh(&options)
            }
            std::collections::hash_map::Entry::Vacant(new) => {
                // A new rollout is always reported, even with no file to read (a lock only).
                let rollout = new.insert(LiveRollout::new(location.clone()));
                Some(rollout.read_new(&options))
            }
        };
        let mut events = Vec::new();
        if let Some(analysis) = analysis {
            self.warm(location);
            self.emit(analysis, &mut events);
        }
        events
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
        // Hot, it holds parsed lines and no bytes of its records file; an unfinished last
        // line is held until it is complete.
        assert!(rollout.refresh(&options).is_none(), "unchanged");
        assert_eq!(rollout.records.held_bytes(), 0);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut file, b"{\"model_call_id\":").unwrap();
        rollout.refresh(&options).expect("changed");
        assert_eq!(rollout.records.bytes(), Some(&b"{\"model_call_id\":"[..]));
        assert!(rollout.records.held_bytes() <= 64 << 10);
        drop(file);
        // Replaced by another file: nothing known of it holds.
        let other = dir.path().join("other");
        std::fs::write(&other, &lines).unwrap();
        std::fs::rename(&other, &path).unwrap();
        rollout.refresh(&options).expect("changed");
        assert_eq!(take_digests_computed(), 11);
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
}
