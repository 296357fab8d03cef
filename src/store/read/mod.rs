//! Reading one rollout's files into a [`Capture`], read-only.
//!
//! The reference consumer freezes a rollout and reads it under the writers' lock; this reader
//! never locks, never writes and never truncates. It reproduces what that freeze would see:
//! the state file, the records (with the writer's rule for a torn final line), the intents.
//! It also keeps everything the freeze would throw away — records after a refused line, the
//! position of every bad line — so a corrupt rollout can still be triaged.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use super::layout::{FileKind, RolloutLocation};
use super::record::{ArraySpans, EarlierArrays, RecordError, TokenRecord};
use super::state::RolloutState;

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
        }
    }

    /// The first issue that makes the reference consumer fail the read, if any.
    pub(crate) fn fatal(&self) -> Option<&ReadIssue> {
        self.issues.iter().find(|issue| issue.fatal)
    }

    /// Intents with no record: in flight while live, dangling once frozen.
    pub(crate) fn open_intents(&self) -> Vec<&str> {
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
            records: self.records.as_deref(),
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
    /// `<rid>.tokens.jsonl`.
    pub records: Option<&'a [u8]>,
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
        records: files.records,
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
    let data = bytes.records.unwrap_or_default();
    let parsed = parse_records(data, &state, &mut issues, cache, line_limit());

    let mut intents = Vec::new();
    if let Some(bytes) = intents_bytes {
        match decode_lines(bytes) {
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
    }
}

fn read_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    super::open::read_regular(path)
}

/// Python's `bytes.strip()` whitespace.
fn is_py_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn strip(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !is_py_space(*b));
    let Some(start) = start else { return &[] };
    let end = bytes
        .iter()
        .rposition(|b| !is_py_space(*b))
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// Split `data[from..to]` at `\n` into (start, end) ranges without the newline.
fn split_lines(newlines: &[usize], from: usize, to: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut position = from;
    let first = newlines.partition_point(|&n| n < from);
    for &newline in &newlines[first..] {
        if newline >= to {
            break;
        }
        out.push((position, newline));
        position = newline + 1;
    }
    if position < to {
        out.push((position, to));
    }
    out
}

/// Lines split like Python's `bytes.splitlines()`, stripped, empty ones dropped, as UTF-8.
fn decode_lines(bytes: &[u8]) -> Result<Vec<String>, LinePos> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (index, raw) in bytes.split(|b| *b == b'\n' || *b == b'\r').enumerate() {
        let at = LinePos {
            line: index + 1,
            offset: offset as u64,
        };
        offset += raw.len() + 1;
        let line = strip(raw);
        if line.is_empty() {
            continue;
        }
        out.push(std::str::from_utf8(line).map_err(|_| at)?.to_owned());
    }
    Ok(out)
}

/// The parse of one line: `None` for a blank line.
type ParsedLine = Option<Result<Arc<TokenRecord>, RecordError>>;

/// Parsed lines of a records file by byte range, reusable while the file only grows
/// (an appended line never changes the bytes of an earlier one).
#[derive(Clone, Debug, Default)]
pub(crate) struct LineCache {
    lines: HashMap<(usize, usize), ParsedLine>,
    /// Where the kept lines' token arrays sit, so the lines appended after them can share
    /// their tokens ([`EarlierArrays::offer`]).
    spans: HashMap<(usize, usize), ArraySpans>,
    /// Offsets of the newlines in the first `scanned` bytes (the file only grows while the
    /// cache lives, so a read scans only the new bytes for them).
    newlines: Vec<usize>,
    scanned: usize,
    /// Keep results for the next read (live reading) instead of moving them out.
    keep: bool,
}

impl LineCache {
    /// A cache that keeps its results between reads.
    pub fn kept() -> LineCache {
        LineCache {
            keep: true,
            ..LineCache::default()
        }
    }

    /// Forget everything (the file was truncated or replaced).
    pub fn clear(&mut self) {
        self.lines.clear();
        self.spans.clear();
        self.newlines.clear();
        self.scanned = 0;
    }

    /// The offsets of every newline of `data`, scanning only the bytes not scanned before.
    fn newlines(&mut self, data: &[u8]) -> Vec<usize> {
        if data.len() < self.scanned {
            // Not the same bytes (a cache used on another read): start over.
            self.newlines.clear();
            self.scanned = 0;
        }
        let from = self.scanned;
        self.newlines
            .extend(memchr::memchr_iter(b'\n', &data[from..]).map(|i| from + i));
        self.scanned = data.len();
        if self.keep {
            self.newlines.clone()
        } else {
            std::mem::take(&mut self.newlines)
        }
    }
}

struct ParsedRecords {
    records: Vec<Arc<TokenRecord>>,
    lines: Vec<LinePos>,
    acknowledged_len: usize,
}

/// Read the records file the way a freeze would, keeping what it would discard.
///
/// The freeze first checks the "tail" (bytes past the state's `indexed_size`): a malformed
/// line followed by more content is corruption; a malformed line with only whitespace after
/// it is a torn write, cut off; a record whose bytes differ from an earlier record of the
/// same call id is a conflict. Then it reads every line up to the cut.
fn parse_records(
    data: &[u8],
    state: &RolloutState,
    issues: &mut Vec<ReadIssue>,
    cache: &mut LineCache,
    limit: usize,
) -> ParsedRecords {
    let newlines = cache.newlines(data);
    let line_starts = LineIndex::new(&newlines, data.len());
    let legacy = state.legacy_index();
    let indexed = if legacy {
        0
    } else {
        state.indexed_size.unwrap_or(0)
    };
    if indexed < 0 || indexed as usize > data.len() {
        issues.push(ReadIssue {
            kind: IssueKind::BadState,
            file: FileKind::State,
            at: None,
            message: format!(
                "indexed_size {indexed} is outside the records file ({} bytes)",
                data.len()
            ),
            fatal: true,
        });
    }
    let indexed = (indexed.max(0) as usize).min(data.len());
    let mut issue = |kind, at, message: String, fatal| {
        issues.push(ReadIssue {
            kind,
            file: FileKind::Records,
            at: Some(at),
            message,
            fatal,
        });
    };

    // Every line is parsed once, in file order (so a prompt can copy the tokens its parent's
    // line already holds): the tail check and the full read share the results, and a kept
    // cache carries them over to the next read of a growing file.
    // A line kept from an earlier read offers its arrays to the new lines after it.
    // Only the last lines before the first new one are offered: a call's parent is almost
    // always among the calls just before it, and offering every kept line would cost each
    // append work in proportion to the file (an older parent's child is simply read whole).
    let all_lines = split_lines(&newlines, 0, data.len());
    if let Some(first_new) = all_lines
        .iter()
        .position(|key| !cache.lines.contains_key(key))
    {
        let mut earlier = EarlierArrays::default();
        let offered_from = first_new.saturating_sub(OFFERED_KEPT_LINES);
        for (start, end) in all_lines.into_iter().skip(offered_from) {
            match cache.lines.get(&(start, end)) {
                Some(Some(Ok(record))) => {
                    if let Some(spans) = cache.spans.get(&(start, end)) {
                        earlier.offer(record, strip(&data[start..end]), spans);
                    }
                }
                Some(_) => {}
                None => {
                    let (parsed, spans) = parse_line(data, start, end, limit, &mut earlier);
                    if let Some(spans) = spans.filter(|_| cache.keep) {
                        cache.spans.insert((start, end), spans);
                    }
                    cache.lines.insert((start, end), parsed);
                }
            }
        }
    }
    let parse = |start: usize, end: usize| -> ParsedLine {
        parse_line(data, start, end, limit, &mut EarlierArrays::default()).0
    };

    // The tail check.
    let mut cut = data.len();
    let mut reported: HashSet<usize> = HashSet::new();
    if indexed < data.len() || legacy {
        let mut known: HashMap<String, Option<String>> = state
            .entry_digests
            .iter()
            .flatten()
            .map(|(id, digest)| (id.clone(), digest.as_str().map(str::to_owned)))
            .collect();
        let tail = split_lines(&newlines, indexed, data.len());
        // Line digests are needed only for call ids seen more than once.
        for &(start, end) in &tail {
            cache
                .lines
                .entry((start, end))
                .or_insert_with(|| parse(start, end));
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for key in &tail {
            if let Some(Ok(record)) = &cache.lines[key] {
                *seen.entry(record.model_call_id.as_str()).or_default() += 1;
            }
        }
        for &(start, end) in &tail {
            let at = line_starts.pos(start);
            match &cache.lines[&(start, end)] {
                None => {}
                Some(Err(RecordError::Syntax(message))) => {
                    let rest = strip(&data[(end + 1).min(data.len())..]);
                    reported.insert(start);
                    if rest.is_empty() {
                        issue(
                            IssueKind::TornTail,
                            at,
                            format!(
                                "write in progress: {} unacknowledged bytes ignored ({message})",
                                data.len() - start
                            ),
                            false,
                        );
                        cut = start;
                        break;
                    }
                    issue(
                        IssueKind::Corrupt,
                        at,
                        format!("corrupt line: {message}"),
                        true,
                    );
                }
                Some(Err(RecordError::Invalid(message))) => {
                    reported.insert(start);
                    issue(IssueKind::Refused, at, message.to_string(), true);
                }
                Some(Err(error @ RecordError::TooLong { .. })) => {
                    reported.insert(start);
                    let rest = strip(&data[(end + 1).min(data.len())..]);
                    let message = if rest.is_empty() {
                        // Not parsed, so a write still in progress cannot be told apart.
                        format!("{error} (or a write still in progress)")
                    } else {
                        error.to_string()
                    };
                    issue(IssueKind::TooLong, at, message, true);
                }
                Some(Ok(record)) => {
                    let id = &record.model_call_id;
                    if seen[id.as_str()] < 2 && !known.contains_key(id) {
                        continue;
                    }
                    let digest = hex_sha256(strip(&data[start..end]));
                    match known.get(id) {
                        Some(existing) if existing.as_deref() != Some(digest.as_str()) => {
                            reported.insert(start);
                            issue(
                                IssueKind::Conflict,
                                at,
                                format!("model call id {id:?} has a conflicting earlier record"),
                                true,
                            );
                        }
                        Some(_) => {}
                        None => {
                            known.insert(id.clone(), Some(digest));
                        }
                    }
                }
            }
        }
    }

    // The full read up to the cut.
    let mut records = Vec::new();
    let mut lines = Vec::new();
    for (start, end) in split_lines(&newlines, 0, cut) {
        let at = line_starts.pos(start);
        let result = if cache.keep {
            cache
                .lines
                .entry((start, end))
                .or_insert_with(|| parse(start, end))
                .clone()
        } else {
            cache
                .lines
                .remove(&(start, end))
                .unwrap_or_else(|| parse(start, end))
        };
        match result {
            None => {}
            Some(Ok(record)) => {
                records.push(record);
                lines.push(at);
            }
            Some(Err(error)) if !reported.contains(&start) => {
                // Worded as the tail check words them: where a line sits must not change it.
                let (kind, message) = match error {
                    RecordError::Syntax(message) => {
                        (IssueKind::Corrupt, format!("corrupt line: {message}"))
                    }
                    RecordError::Invalid(refusal) => (IssueKind::Refused, refusal.to_string()),
                    error @ RecordError::TooLong { .. } => (IssueKind::TooLong, error.to_string()),
                };
                issue(kind, at, message, true);
            }
            Some(Err(_)) => {}
        }
    }
    if cut == data.len() && !data.is_empty() && data[data.len() - 1] != b'\n' {
        let start = line_starts.last_start();
        if !strip(&data[start..]).is_empty() && !reported.contains(&start) {
            issue(
                IssueKind::Unterminated,
                line_starts.pos(start),
                "final line has no newline yet; accepted, as the reference reader does".into(),
                false,
            );
        }
    }
    ParsedRecords {
        records,
        lines,
        acknowledged_len: cut,
    }
}

/// Kept lines offered to the new lines of a growing file (see `parse_records`).
const OFFERED_KEPT_LINES: usize = 16;

/// Parse the line at `start..end` of `data`, after the lines `earlier` remembers; also where
/// its token arrays sit in it (see [`TokenRecord::parse_after`]).
fn parse_line<'a>(
    data: &'a [u8],
    start: usize,
    end: usize,
    limit: usize,
    earlier: &mut EarlierArrays<'a>,
) -> (ParsedLine, Option<ArraySpans>) {
    let payload = strip(&data[start..end]);
    if payload.len() > limit {
        let too_long = RecordError::TooLong {
            bytes: payload.len(),
            limit,
        };
        return (Some(Err(too_long)), None);
    }
    if payload.is_empty() {
        return (None, None);
    }
    match TokenRecord::parse_after(payload, earlier) {
        Ok((record, spans)) => (Some(Ok(Arc::new(record))), spans),
        Err(error) => (Some(Err(error)), None),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Line numbers for byte offsets.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(newlines: &[usize], len: usize) -> Self {
        let mut starts = Vec::with_capacity(newlines.len() + 1);
        starts.push(0);
        starts.extend(newlines.iter().map(|i| i + 1));
        if starts.len() > 1 && starts.last() == Some(&len) {
            starts.pop();
        }
        LineIndex { starts }
    }

    fn pos(&self, offset: usize) -> LinePos {
        let line = self.starts.partition_point(|&s| s <= offset);
        LinePos {
            line: line.max(1),
            offset: offset as u64,
        }
    }

    fn last_start(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
