//! Live monitoring: following a store while it is written, and replaying a recorded one.
//!
//! [`LiveStore`] keeps, per rollout, the bytes of its files (read incrementally) and the
//! parsed lines, so a change costs the new bytes plus one rebuild of that rollout. The
//! [`watch`] thread drives it from file-system events (or polling) and sends the rebuilt
//! analyses to the UI over a channel; the UI thread never reads a file.

pub mod demo;
pub mod replay;
pub mod tail;
pub mod watch;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::observe::Rows;
use crate::store::layout::{FileKind, classify, natural_cmp};
use crate::store::read::{FileBytes, LineCache, capture_from, io_issue};
use crate::store::{RolloutLocation, StoreDirError};
use crate::verdict::{Analysis, VerdictOptions, analyze};
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
    memo: std::sync::Arc<crate::rebuild::merge::DigestMemo>,
}

impl LiveRollout {
    /// Follow the rollout at `location`.
    pub fn new(location: RolloutLocation) -> LiveRollout {
        LiveRollout {
            records: FileTail::new(location.path(FileKind::Records), true),
            intents: FileTail::new(location.path(FileKind::Intents), true),
            sentinel: FileTail::new(location.path(FileKind::Incomplete), true),
            state: FileTail::new(location.path(FileKind::State), false),
            cache: LineCache::kept(),
            memo: Default::default(),
            location,
        }
    }

    /// Read what changed; `Some(analysis)` when anything did.
    pub(crate) fn refresh(&mut self, options: &VerdictOptions) -> Option<Analysis> {
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
                // Earlier lines may have changed: forget their parses and digests.
                self.cache.clear();
                self.memo.clear();
            }
        }
        changed.then(|| self.analyze(options))
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
            records: self.records.bytes(),
            intents: self.intents.bytes(),
            sentinel: self.sentinel.bytes(),
            io_issues: &io_issues,
        };
        let capture = capture_from(&self.location, bytes, &mut self.cache);
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
    /// A rollout appeared or changed: its new analysis.
    Updated(Box<Analysis>),
    /// A store directory could not be read.
    Error(String),
    /// The initial scan is complete.
    Ready,
    /// A followed directory was deleted or renamed away.
    StoreGone(PathBuf),
    /// A followed directory is there again (recreated or renamed back): followed anew.
    StoreBack(PathBuf),
}

/// Every rollout of some store directories, followed incrementally.
#[derive(Debug)]
pub struct LiveStore {
    dirs: Vec<PathBuf>,
    rollouts: HashMap<RolloutLocation, LiveRollout>,
    options: VerdictOptions,
    row_paths: Vec<PathBuf>,
    rows: Rows,
    /// The rows files' stamp when they were last read.
    rows_stamp: Vec<RowsFileStamp>,
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
            options,
            row_paths,
            rows: Rows::default(),
            rows_stamp: Vec::new(),
        };
        store.reload_rows();
        store
    }

    /// Read the rollout rows again. Their stamp is taken first, so that a change made while
    /// (or right after) they are read is seen by the next [`LiveStore::rows_moved`].
    pub(crate) fn reload_rows(&mut self) {
        self.rows_stamp = self.rows_stamp();
        self.rows = Rows::read(&self.row_paths);
        self.rows.discover(&self.dirs);
    }

    /// Whether a rows file changed on disk since the rows were last read (polling).
    pub(crate) fn rows_moved(&self) -> bool {
        self.rows_stamp() != self.rows_stamp
    }

    /// The rows read.
    pub fn rows(&self) -> &Rows {
        &self.rows
    }

    /// Rows changed: read them again and judge every rollout anew.
    pub(crate) fn rows_changed(&mut self) -> Vec<Analysis> {
        self.reload_rows();
        let mut changes = Vec::new();
        for (location, rollout) in &mut self.rollouts {
            let options = crate::load::options_for(&self.options, &self.rows, location);
            changes.push(rollout.analyze(&options));
        }
        changes
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

    /// List the directories and refresh every rollout; returns the changes.
    pub fn rescan(&mut self) -> Result<Vec<Analysis>, StoreDirError> {
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
        let mut changes = Vec::new();
        for location in found {
            if let Some(analysis) = self.refresh(&location) {
                changes.push(analysis);
            }
        }
        // Rollouts whose files all vanished since the last scan.
        let known: Vec<RolloutLocation> = self.rollouts.keys().cloned().collect();
        for location in known {
            if !location.path(FileKind::Records).exists()
                && let Some(analysis) = self.refresh(&location)
            {
                changes.push(analysis);
            }
        }
        Ok(changes)
    }

    /// Refresh one rollout (following it from now on); `Some` when it changed.
    pub(crate) fn refresh(&mut self, location: &RolloutLocation) -> Option<Analysis> {
        let options = crate::load::options_for(&self.options, &self.rows, location);
        match self.rollouts.entry(location.clone()) {
            std::collections::hash_map::Entry::Occupied(mut known) => {
                known.get_mut().refresh(&options)
            }
            std::collections::hash_map::Entry::Vacant(new) => {
                // A new rollout is always reported, even with no file to read (a lock only).
                let rollout = new.insert(LiveRollout::new(location.clone()));
                Some(match rollout.refresh(&options) {
                    Some(analysis) => analysis,
                    None => rollout.analyze(&options),
                })
            }
        }
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
