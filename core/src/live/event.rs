//! What the watcher tells the UI about a store.

use std::path::PathBuf;

use super::replay;
use crate::verdict::{Analysis, Summary};

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
    /// A followed directory exists and cannot be listed (permissions, an I/O error): its
    /// rollouts cannot be seen until it can ([`StoreEvent::StoreBack`] then).
    Unlistable {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// Change events cannot be had for a followed directory (the watch or instance limit,
    /// a file system without them): it is polled instead, every [`super::watch::FALLBACK_POLL`].
    Polling {
        /// The directory.
        dir: PathBuf,
        /// Why its events cannot be had.
        reason: String,
    },
}

impl StoreEvent {
    /// The summary event of `analysis`.
    pub fn updated(analysis: &Analysis) -> StoreEvent {
        StoreEvent::Updated(Box::new(Summary::of(analysis)))
    }
}
