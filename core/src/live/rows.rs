//! The rollout rows followed beside the store: read again when their files change, and the
//! rollouts whose rows changed judged again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::event::StoreEvent;
use super::{LiveStore, same_dir};
use crate::observe::Rows;
use crate::store::RolloutLocation;

/// A rows file's path, size and modification time.
pub(super) type RowsFileStamp = (PathBuf, u64, Option<std::time::SystemTime>);

/// `file` with its size and modification time now.
fn stamp_of(file: PathBuf) -> RowsFileStamp {
    let meta = std::fs::metadata(&file).ok();
    let len = meta.as_ref().map_or(0, |m| m.len());
    (file, len, meta.and_then(|m| m.modified().ok()))
}

impl LiveStore {
    /// Read the rollout rows again. Their stamp is taken first, so that a change made while
    /// (or right after) they are read is seen by the next [`LiveStore::rows_moved`].
    pub(crate) fn reload_rows(&mut self) {
        self.rows_stamp = self.rows_stamp();
        let mut rows = Rows::read(&self.row_paths);
        for (store, path) in &self.store_row_paths {
            rows.read_for_store(store, std::slice::from_ref(path));
        }
        rows.discover(&self.dirs);
        self.rows = Arc::new(rows);
    }

    /// Whether a rows file changed on disk since the rows were last read (polling).
    ///
    /// While no file of the store directories was created, deleted or renamed since they
    /// were last listed, the rows files are the ones stamped: only they are looked at (no
    /// listing of the directories at every poll).
    pub(crate) fn rows_moved(&self) -> bool {
        if self.listing_holds() {
            return self
                .rows_stamp
                .iter()
                .any(|stamped| stamp_of(stamped.0.clone()) != *stamped);
        }
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
            let analysis = rollout.analyze_now(&options).clone();
            if was_cold {
                rollout.cool();
            }
            self.emit(analysis, &mut events);
        }
        events
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
        files.into_iter().map(stamp_of).collect()
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
}
