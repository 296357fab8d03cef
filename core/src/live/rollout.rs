//! One rollout followed incrementally: what identifies the version of each file read, and,
//! while hot, its parsed lines.

use std::time::Duration;

use super::tail::{Change, FileTail};
use crate::store::RolloutLocation;
use crate::store::layout::FileKind;
use crate::store::read::{FileBytes, LineCache, capture_from, io_issue};
use crate::verdict::{Analysis, RecordTally, Summary, VerdictOptions, analyze_continuing};

/// A rollout whose records file changed this recently when the first scan reads it is being
/// written: it is kept hot (see [`HOT_ROLLOUTS`]).
pub const RECENTLY_WRITTEN: Duration = Duration::from_secs(60);

/// The longest last line whose bytes a hot rollout keeps at hand (see
/// [`LineCache::keep_from`]): a training run's lines are ~100 KB; one far longer is read again
/// by offset when a child needs it, not held.
pub const KEPT_LAST_LINE: usize = 4 << 20;

/// One rollout followed incrementally.
#[derive(Debug)]
pub struct LiveRollout {
    pub(super) location: RolloutLocation,
    pub(super) records: FileTail,
    intents: FileTail,
    sentinel: FileTail,
    state: FileTail,
    cache: LineCache,
    pub(super) memo: std::sync::Arc<crate::rebuild::memo::DigestMemo>,
    /// The state said frozen (or retired) when last read: no call will be appended, so its
    /// digests are not kept once it is cooled.
    frozen: bool,
    /// The last analysis, while hot: an append extends its build instead of building again,
    /// and the watcher sends a copy only of the rollouts the UI looks at.
    last: Option<Analysis>,
    /// What its summaries read of its records, while hot: an append's summary takes in its
    /// own record alone.
    tally: RecordTally,
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
            last: None,
            tally: RecordTally::default(),
            location,
        }
    }

    /// The last analysis, while hot.
    pub(super) fn last_analysis(&self) -> Option<&Analysis> {
        self.last.as_ref()
    }

    /// The summary of the last analysis (`None` before one), its records' part kept up to
    /// date from the summary before.
    pub(super) fn summary(&mut self) -> Option<Summary> {
        let analysis = self.last.as_ref()?;
        Some(Summary::of_tallied(analysis, &mut self.tally))
    }

    /// Drop the bytes, parsed lines and digests: the rollout is no longer followed closely
    /// (the files' stamps are kept, so an unchanged rollout is still not read).
    pub(crate) fn cool(&mut self) {
        for tail in self.tails_mut() {
            tail.forget();
        }
        self.cache = LineCache::kept();
        self.last = None;
        self.tally = RecordTally::default();
        if self.frozen {
            self.memo.clear();
        } else {
            self.memo.cool();
        }
    }

    /// A rollout not read before: read it, and its analysis even when it has no file to read.
    pub(super) fn read_new(&mut self, options: &VerdictOptions) -> &Analysis {
        if self.refresh(options).is_none() {
            self.analyze(options);
        }
        self.last.as_ref().expect("just analyzed")
    }

    /// Read a rollout for the first scan. One being written (its records file changed in
    /// the last [`RECENTLY_WRITTEN`], its state not frozen) is kept hot, its next append
    /// likely; the others are parsed as `build` parses them and cooled, nothing kept for a
    /// next read that may never come.
    pub(super) fn read_first(
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
        rollout.read_new(options);
        let analysis = if !written || rollout.frozen {
            let analysis = rollout.last.take().expect("just analyzed");
            rollout.cool();
            analysis
        } else {
            rollout.last.clone().expect("just analyzed")
        };
        (rollout, analysis)
    }

    /// Memory held for the next read: the small files' bytes, the records file's last
    /// complete line and an unfinished one after it, (an estimate) the parsed records, and the
    /// contiguous copy of the newest call's sequence (0 once cooled).
    pub fn resident_bytes(&self) -> usize {
        [&self.state, &self.intents, &self.records, &self.sentinel]
            .iter()
            .map(|tail| tail.held_bytes())
            .sum::<usize>()
            + self.cache.held_bytes()
            + self.memo.held_bytes()
    }

    /// Whether the state said frozen (or retired) when last read: no call will be appended.
    pub(super) fn frozen(&self) -> bool {
        self.frozen
    }

    /// Whether a later write may append to it: not frozen (the writer appends to no file of
    /// a frozen rollout; its state is replaced by rename) and some file of it there.
    pub(super) fn may_grow(&self) -> bool {
        !self.frozen
            && [&self.records, &self.intents, &self.state, &self.sentinel]
                .iter()
                .any(|tail| tail.present())
    }

    /// Whether any of its files' bytes were dropped.
    pub(super) fn is_cold(&self) -> bool {
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
    pub(crate) fn analyze_now(&mut self, options: &VerdictOptions) -> &Analysis {
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
    pub(crate) fn refresh(&mut self, options: &VerdictOptions) -> Option<&Analysis> {
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

    /// The analysis of the bytes known now (kept: the next append extends its build).
    pub fn analyze(&mut self, options: &VerdictOptions) -> &Analysis {
        let io_issues = self.io_issues();
        let bytes = FileBytes {
            state: self.state.bytes(),
            records: self.records.view(),
            intents: self.intents.bytes(),
            sentinel: self.sentinel.bytes(),
            io_issues: &io_issues,
        };
        // The previous capture's records are lent to the read, which carries them over.
        if let Some(last) = self.last.as_mut() {
            let records = std::mem::take(&mut last.capture.records);
            let lines = std::mem::take(&mut last.capture.record_lines);
            self.cache.lend(records, lines);
            self.cache
                .lend_intents(std::mem::take(&mut last.capture.intents));
        }
        let capture = capture_from(&self.location, bytes, &mut self.cache);
        self.frozen = capture.state.frozen || capture.state.retired;
        // The lines read are parsed and kept: their bytes are not, but for the last one's.
        self.records.settle(
            self.cache.keep_from(KEPT_LAST_LINE) as u64,
            self.cache.resume() as u64,
        );
        let options = VerdictOptions {
            digest_memo: Some(std::sync::Arc::clone(&self.memo)),
            ..options.clone()
        };
        let analysis =
            analyze_continuing(capture, &options, self.last.take(), self.cache.carried());
        self.last.insert(analysis)
    }

    /// Bytes read from the records file so far.
    pub fn records_bytes_read(&self) -> u64 {
        self.records.bytes_read
    }
}
