//! Reading one rollout's files into a [`Capture`], read-only.
//!
//! The reference consumer freezes a rollout and reads it under the writers' lock; this reader
//! never locks, never writes and never truncates. It reproduces what that freeze would see:
//! the state file, the records (with the writer's rule for a torn final line), the intents.
//! It also keeps everything the freeze would throw away — records after a refused line, the
//! position of every bad line — so a corrupt rollout can still be triaged.

mod intents;
mod records;

use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::layout::{FileKind, RolloutLocation};
use super::record::TokenRecord;
use super::state::RolloutState;
use records::parse_records;
pub(crate) use records::{LineCache, RecordsBytes};

/// Where a record line sits in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinePos {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line's first byte.
    pub offset: u64,
}

/// What is wrong with a line or a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IssueKind {
    /// A malformed final line: a write in progress (or a crash before the ack); ignored.
    TornTail,
    /// A well-formed final line without its newline; accepted, as the reference does.
    Unterminated,
    /// A malformed line followed by more content: corruption.
    Corrupt,
    /// A line that is JSON but not a valid record.
    Refused,
    /// A second record for a call id with different bytes.
    Conflict,
    /// The state file cannot be used.
    BadState,
    /// The intents file cannot be decoded.
    BadIntents,
    /// A file disappeared while it was being read.
    Vanished,
    /// Any other I/O failure.
    Io,
    /// The incomplete sentinel exists while the state is not flagged incomplete.
    SentinelWithoutFlag,
    /// A record line over the line limit ([`set_line_limit`]): not parsed.
    TooLong,
}

impl IssueKind {
    /// Its name in cause signatures: `torn_tail`, `corrupt`, `refused`, …
    pub fn name(self) -> &'static str {
        match self {
            IssueKind::TornTail => "torn_tail",
            IssueKind::Unterminated => "unterminated",
            IssueKind::Corrupt => "corrupt_line",
            IssueKind::Refused => "refused_record",
            IssueKind::Conflict => "conflicting_duplicate",
            IssueKind::BadState => "bad_state_file",
            IssueKind::BadIntents => "bad_intents_file",
            IssueKind::Vanished => "file_vanished",
            IssueKind::Io => "io_error",
            IssueKind::SentinelWithoutFlag => "sentinel_without_flag",
            IssueKind::TooLong => "line_too_long",
        }
    }
}

/// The default longest record line parsed: far beyond any real record. The file's bytes are
/// held either way; the cap bounds what parsing one runaway line would allocate on top.
pub const DEFAULT_LINE_LIMIT: usize = 256 << 20;

static LINE_LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_LINE_LIMIT);

/// Set the longest record line parsed (bytes), for the whole process. Set once at start-up
/// from `--max-line-mib`; a process-wide setting because every reader must apply the same one.
pub fn set_line_limit(bytes: usize) {
    LINE_LIMIT.store(bytes.max(1), Ordering::Relaxed);
}

/// The longest record line parsed (bytes).
pub(crate) fn line_limit() -> usize {
    LINE_LIMIT.load(Ordering::Relaxed)
}

/// One problem found while reading, located to file, line and byte.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadIssue {
    /// What kind of problem.
    pub kind: IssueKind,
    /// Which file.
    pub file: FileKind,
    /// Where in it (`None` for whole-file problems).
    pub at: Option<LinePos>,
    /// Human-readable reason.
    pub message: String,
    /// Whether the reference consumer fails the whole read on it.
    pub fatal: bool,
}

impl fmt::Display for ReadIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.suffix().trim_start_matches('.'))?;
        if let Some(at) = self.at {
            write!(f, " line {} (byte {})", at.line, at.offset)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Everything read from one rollout's files.
#[derive(Clone, Debug)]
pub struct Capture {
    /// Which rollout.
    pub location: RolloutLocation,
    /// The state file (defaults when absent).
    pub state: RolloutState,
    /// Whether a records file exists.
    pub has_records_file: bool,
    /// Every readable record in file order (including those after a refused line).
    pub records: Vec<Arc<TokenRecord>>,
    /// Position of each record, parallel to `records`.
    pub record_lines: Vec<LinePos>,
    /// Problems, in file order.
    pub issues: Vec<ReadIssue>,
    /// Call ids from the intents file, in order.
    pub intents: Vec<String>,
    /// Lines of the incomplete sentinel, `None` when the file does not exist.
    pub sentinel: Option<Vec<String>>,
    /// Bytes of the records file that hold acknowledged lines.
    pub records_bytes: u64,
    /// Whether any of the rollout's files exists (a cleared rollout has none).
    pub files_present: bool,
    /// How many leading intents are known to be the leading records' ids, in order (0:
    /// none known): what [`Capture::open_intents`] need not compare again. Code of this
    /// crate that changes `records` or `intents` sets it back to 0 (a replay's partial
    /// capture); nothing outside it changes them.
    pub(crate) intents_in_order: usize,
}

impl Capture {
    /// A rollout none of whose files exists yet (replay, before its first call).
    pub fn unborn(location: RolloutLocation) -> Capture {
        Capture {
            location,
            state: RolloutState::absent(),
            has_records_file: false,
            records: Vec::new(),
            record_lines: Vec::new(),
            issues: Vec::new(),
            intents: Vec::new(),
            sentinel: None,
            records_bytes: 0,
            files_present: false,
            intents_in_order: 0,
        }
    }

    /// The first issue that makes the reference consumer fail the read, if any.
    pub(crate) fn fatal(&self) -> Option<&ReadIssue> {
        self.issues.iter().find(|issue| issue.fatal)
    }

    /// Intents with no record: in flight while live, dangling once frozen.
    pub(crate) fn open_intents(&self) -> Vec<&str> {
        if self.intents.is_empty() {
            return Vec::new();
        }
        // The writer most often records calls in the order it registered them: while the
        // records' ids are the intents' in order, those intents are recorded, and when only a
        // few intents remain past them they are looked up among the records one by one (no
        // set of every id made).
        let in_order = intents_in_order_from(self.intents_in_order, &self.intents, &self.records);
        let rest = &self.intents[in_order..];
        if rest.len() <= 4 {
            let recorded = |id: &str| self.records.iter().any(|r| r.model_call_id == id);
            return rest
                .iter()
                .map(String::as_str)
                .filter(|id| !recorded(id))
                .collect();
        }
        let recorded: HashSet<&str> = self
            .records
            .iter()
            .map(|r| r.model_call_id.as_str())
            .collect();
        self.intents
            .iter()
            .map(String::as_str)
            .filter(|id| !recorded.contains(id))
            .collect()
    }

    /// Whether a freeze now would call the capture incomplete (state flag or open intents).
    pub fn incomplete(&self) -> bool {
        self.state.incomplete || !self.open_intents().is_empty()
    }
}

/// How many leading `intents` are the ids of the leading `records`, in order, the first
/// `known` of them known to be (compared from there on).
pub(super) fn intents_in_order_from(
    known: usize,
    intents: &[String],
    records: &[Arc<TokenRecord>],
) -> usize {
    let known = known.min(intents.len()).min(records.len());
    known
        + intents[known..]
            .iter()
            .zip(&records[known..])
            .take_while(|(intent, record)| **intent == record.model_call_id)
            .count()
}

/// The bytes of a rollout's files (`None`: the file does not exist).
#[derive(Clone, Debug, Default)]
pub(crate) struct RolloutBytes {
    /// `<rid>.tokens.state.json`.
    pub state: Option<Vec<u8>>,
    /// `<rid>.tokens.jsonl`.
    pub records: Option<Vec<u8>>,
    /// `<rid>.tokens.intents`.
    pub intents: Option<Vec<u8>>,
    /// `<rid>.tokens.incomplete`.
    pub sentinel: Option<Vec<u8>>,
    /// Files that exist but could not be read.
    pub io_issues: Vec<ReadIssue>,
}

impl RolloutBytes {
    /// A borrowed view.
    pub fn view(&self) -> FileBytes<'_> {
        FileBytes {
            state: self.state.as_deref(),
            records: self.records.as_deref().map(RecordsBytes::whole),
            intents: self.intents.as_deref(),
            sentinel: self.sentinel.as_deref(),
            io_issues: &self.io_issues,
        }
    }
}

/// Borrowed bytes of a rollout's files (`None`: the file does not exist).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FileBytes<'a> {
    /// `<rid>.tokens.state.json`.
    pub state: Option<&'a [u8]>,
    /// `<rid>.tokens.jsonl` (all its bytes, or those a followed file grew by).
    pub records: Option<RecordsBytes<'a>>,
    /// `<rid>.tokens.intents`.
    pub intents: Option<&'a [u8]>,
    /// `<rid>.tokens.incomplete`.
    pub sentinel: Option<&'a [u8]>,
    /// Files that exist but could not be read.
    pub io_issues: &'a [ReadIssue],
}

impl FileBytes<'_> {
    /// Whether any of the rollout's files exists (readable or not: an unreadable file is
    /// a broken rollout, not a cleared one).
    pub fn any(&self) -> bool {
        self.state.is_some()
            || self.records.is_some()
            || self.intents.is_some()
            || self.sentinel.is_some()
            || !self.io_issues.is_empty()
    }
}

/// Read one rollout. Never fails: problems become [`ReadIssue`]s.
pub fn read_capture(location: &RolloutLocation) -> Capture {
    let mut bytes = read_bytes(location);
    let capture = capture_from(location, bytes.view(), &mut LineCache::default());
    if let Some(records) = bytes.records.take() {
        super::open::recycle(records);
    }
    capture
}

/// The bytes of a rollout's files, each `None` when the file does not exist.
#[derive(Clone, Copy, Debug, Default)]
pub struct RolloutFiles<'a> {
    /// `<rid>.tokens.state.json`.
    pub state: Option<&'a [u8]>,
    /// `<rid>.tokens.jsonl`.
    pub records: Option<&'a [u8]>,
    /// `<rid>.tokens.intents`.
    pub intents: Option<&'a [u8]>,
    /// `<rid>.tokens.incomplete`.
    pub sentinel: Option<&'a [u8]>,
}

/// Interpret a rollout's file contents without reading any file (tools, fuzzing). Never
/// fails: problems become [`ReadIssue`]s.
pub fn capture_of_bytes(location: &RolloutLocation, files: RolloutFiles<'_>) -> Capture {
    let bytes = FileBytes {
        state: files.state,
        records: files.records.map(RecordsBytes::whole),
        intents: files.intents,
        sentinel: files.sentinel,
        io_issues: &[],
    };
    capture_from(location, bytes, &mut LineCache::default())
}

/// Read the bytes of every file of a rollout.
pub(crate) fn read_bytes(location: &RolloutLocation) -> RolloutBytes {
    let mut bytes = RolloutBytes::default();
    // State first: the records file then holds at least what the state's index covers, even
    // next to a running writer.
    for kind in [
        FileKind::State,
        FileKind::Intents,
        FileKind::Records,
        FileKind::Incomplete,
    ] {
        match read_file(&location.path(kind)) {
            Ok(content) => match kind {
                FileKind::State => bytes.state = content,
                FileKind::Records => bytes.records = content,
                FileKind::Intents => bytes.intents = content,
                FileKind::Incomplete => bytes.sentinel = content,
            },
            Err(error) => bytes.io_issues.push(io_issue(kind, &error)),
        }
    }
    bytes
}

/// An unreadable file.
pub(crate) fn io_issue(kind: FileKind, error: impl std::fmt::Display) -> ReadIssue {
    ReadIssue {
        kind: IssueKind::Io,
        file: kind,
        at: None,
        message: format!("cannot read: {error}"),
        fatal: true,
    }
}

/// Interpret a rollout's bytes, reusing (and filling) `cache` for the records' lines.
pub(crate) fn capture_from(
    location: &RolloutLocation,
    bytes: FileBytes<'_>,
    cache: &mut LineCache,
) -> Capture {
    let mut issues = bytes.io_issues.to_vec();
    let state_bytes = bytes.state;
    let intents_bytes = bytes.intents;
    let sentinel_bytes = bytes.sentinel;
    let state = state_bytes.map_or_else(RolloutState::absent, RolloutState::parse);
    if let Some(error) = &state.error {
        issues.push(ReadIssue {
            kind: IssueKind::BadState,
            file: FileKind::State,
            at: None,
            message: error.clone(),
            fatal: true,
        });
    }
    let has_records_file = bytes.records.is_some();
    let data = bytes.records.unwrap_or(RecordsBytes::whole(&[]));
    let parsed = parse_records(data, &state, &mut issues, cache, line_limit());

    let mut intents = Vec::new();
    if let Some(bytes) = intents_bytes {
        match cache.intents(bytes) {
            Ok(lines) => intents = lines,
            Err(line) => issues.push(ReadIssue {
                kind: IssueKind::BadIntents,
                file: FileKind::Intents,
                at: Some(line),
                message: "not valid UTF-8".into(),
                fatal: true,
            }),
        }
    }
    let sentinel = sentinel_bytes.map(|bytes| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
    });
    if sentinel.is_some() && !state.incomplete {
        issues.push(ReadIssue {
            kind: IssueKind::SentinelWithoutFlag,
            file: FileKind::Incomplete,
            at: None,
            message: "incomplete sentinel exists but the state is not flagged incomplete \
                      (the reference consumer reads only the state flag)"
                .into(),
            fatal: false,
        });
    }
    // Issues are shown in file order; whole-file problems first.
    issues.sort_by_key(|issue| (issue.file, issue.at.map(|at| at.offset)));
    let intents_in_order = cache.intents_in_order(&parsed.records, &intents);
    Capture {
        location: location.clone(),
        state,
        has_records_file,
        records: parsed.records,
        record_lines: parsed.lines,
        issues,
        intents,
        sentinel,
        records_bytes: parsed.acknowledged_len as u64,
        files_present: bytes.any(),
        intents_in_order,
    }
}

/// Python's `bytes.strip()` whitespace.
pub(super) fn is_py_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

pub(super) fn strip(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !is_py_space(*b));
    let Some(start) = start else { return &[] };
    let end = bytes
        .iter()
        .rposition(|b| !is_py_space(*b))
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

fn read_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    super::open::read_regular(path)
}

/// Lines split like Python's `bytes.splitlines()`, stripped, empty ones dropped, as UTF-8.
#[cfg(test)]
fn decode_lines(bytes: &[u8]) -> Result<Vec<String>, LinePos> {
    let mut out = Vec::new();
    intents::decode_lines_into(bytes, 0, 0, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
