//! The records file of one rollout, read the way the reference's freeze reads it
//! ([`parse_records`]): from all its bytes, or — a followed file — from the bytes it grew by,
//! its earlier lines kept parsed ([`LineCache`]) and read again by offset only when a new
//! line needs them.

use crate::hash::{HashMap, HashSet};
use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::intents::IntentsCache;
use super::{IssueKind, LinePos, ReadIssue, is_py_space, strip};
use crate::store::layout::FileKind;
use crate::store::record::{ArraySpans, EarlierArrays, RecordError, TokenRecord};
use crate::store::state::RolloutState;

/// The bytes of a records file a read has at hand: all of them, or those from `base` on. The
/// lines before `base` are then parsed already (a [`LineCache`] that kept them); their bytes
/// are read again by offset from `file` when a check needs them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordsBytes<'a> {
    /// The file's bytes from `base` to its end (as read).
    pub fresh: &'a [u8],
    /// Offset of `fresh` in the file: the start of a line.
    pub base: usize,
    /// A line before `base` at hand: its offset and bytes (the last complete line a followed
    /// file keeps aside).
    pub kept: Option<(usize, &'a [u8])>,
    /// The file, to read bytes before `base` again.
    pub file: Option<&'a File>,
}

impl<'a> RecordsBytes<'a> {
    /// All of a file's bytes.
    pub(crate) fn whole(data: &'a [u8]) -> Self {
        RecordsBytes {
            fresh: data,
            base: 0,
            kept: None,
            file: None,
        }
    }

    /// The file's length as read.
    pub(crate) fn len(&self) -> usize {
        self.base + self.fresh.len()
    }

    /// The bytes at `start..end`: at hand, or read again from the file.
    fn bytes(&self, start: usize, end: usize) -> std::io::Result<Cow<'a, [u8]>> {
        if start >= self.base {
            return Ok(Cow::Borrowed(
                &self.fresh[start - self.base..end - self.base],
            ));
        }
        if let Some((at, kept)) = self.kept
            && start >= at
            && end <= at + kept.len()
        {
            return Ok(Cow::Borrowed(&kept[start - at..end - at]));
        }
        let file = self.file.ok_or_else(|| {
            std::io::Error::other("the line's bytes were dropped and the file is not open")
        })?;
        let mut bytes = vec![0; end - start];
        file.read_exact_at(&mut bytes, start as u64)?;
        crate::work::count(|work| work.bytes_reread += bytes.len() as u64);
        Ok(Cow::Owned(bytes))
    }
}

/// Split the bytes `from..to` at `\n` into (start, end) ranges without the newline.
fn split_lines(newlines: &[usize], from: usize, to: usize) -> Vec<(usize, usize)> {
    let mut position = from;
    let first = newlines.partition_point(|&n| n < from);
    // Room for every line at once: grown one line at a time, this was a visible part of an
    // append's cost.
    let mut out = Vec::with_capacity(newlines.len() - first + 1);
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

/// The parse of one line: `None` for a blank line.
type ParsedLine = Option<Result<Arc<TokenRecord>, RecordError>>;

/// A line's byte range in its file.
type LineKey = (usize, usize);

/// Parsed lines of a records file by byte range, reusable while the file only grows (an
/// appended line never changes the bytes of an earlier one). It holds no bytes of the file.
#[derive(Clone, Debug, Default)]
pub(crate) struct LineCache {
    lines: HashMap<LineKey, ParsedLine>,
    /// Where the kept lines' token arrays sit, so the lines appended after them can share
    /// their tokens ([`EarlierArrays::offer`]).
    spans: HashMap<LineKey, ArraySpans>,
    /// The first kept line of each call id with its spans: a new line's parent, by the id
    /// it names.
    by_id: HashMap<String, LineKey>,
    /// Digests of kept lines' bytes (the tail check's), each computed once.
    digests: HashMap<LineKey, String>,
    /// Offsets of the newlines in the first `scanned` bytes (the file only grows while the
    /// cache lives, so a read scans only the new bytes for them).
    newlines: Vec<usize>,
    scanned: usize,
    /// Offset of the last byte in the first `scanned` that is not whitespace.
    last_content: Option<usize>,
    /// Estimated memory held by the kept lines' records (see [`LineCache::held_bytes`]).
    held: usize,
    /// Keep results for the next read (live reading) instead of moving them out.
    keep: bool,
    /// How far the last read gathered its records from lines that were all records or
    /// blank, each ended by its newline: the offset after them, the records in them, and
    /// the records the read found in all.
    gathered: Option<Gathered>,
    /// The last read's records and their positions, lent back by the caller so that the
    /// next read carries them over (see [`LineCache::lend`]).
    lent: Option<(Vec<Arc<TokenRecord>>, Vec<LinePos>)>,
    /// Leading records the last read has in common with those lent (the same ones).
    carried: usize,
    /// The intents file's lines decoded by the last read (see [`LineCache::intents`]).
    intents: IntentsCache,
    /// Leading intents the last read found to be its records' ids, in order (see
    /// [`LineCache::intents_in_order`]).
    intents_in_order: usize,
}

/// What a read of a kept cache gathered cleanly (see [`LineCache::lend`]).
#[derive(Clone, Copy, Debug)]
struct Gathered {
    through: usize,
    records: usize,
    total: usize,
    /// Address of the read's last record: records lent back must end with it.
    last: usize,
}

/// A record's address, to know it again.
fn address(record: Option<&Arc<TokenRecord>>) -> usize {
    record.map_or(0, |record| Arc::as_ptr(record) as usize)
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
        *self = LineCache {
            keep: self.keep,
            ..LineCache::default()
        };
    }

    /// Hand back the records (and positions) the last read of this cache gave: the next
    /// read carries over those of the lines it had read cleanly and gathers the records of
    /// the lines after them alone, instead of gathering every kept line's record again (one
    /// pointer copied and one dropped per call, each cold in memory by the next append).
    /// Records that are not the last read's (another length or last record) are dropped
    /// unused.
    pub(crate) fn lend(&mut self, records: Vec<Arc<TokenRecord>>, lines: Vec<LinePos>) {
        if self.keep {
            self.lent = Some((records, lines));
        }
    }

    /// Hand back the intents the last read of this cache gave: the next read decodes only
    /// the lines after those it had decoded whole, when the file only grew.
    pub(crate) fn lend_intents(&mut self, intents: Vec<String>) {
        if self.keep {
            self.intents.lend(intents);
        }
    }

    /// The intents file's lines (see [`IntentsCache::decode`]; a cache that keeps nothing
    /// decodes them whole).
    pub(crate) fn intents(&mut self, bytes: &[u8]) -> Result<Vec<String>, LinePos> {
        self.intents.decode(bytes, self.keep)
    }

    /// How many leading intents are the ids of the leading records, in order: those known
    /// from the read before (as many as both it and this read carried over unchanged) and
    /// the ones after them compared now. An append compares its own call's, not every
    /// call's (the records' ids are a pointer away each, out of cache by then).
    pub(crate) fn intents_in_order(
        &mut self,
        records: &[Arc<TokenRecord>],
        intents: &[String],
    ) -> usize {
        let known = self
            .intents_in_order
            .min(self.carried)
            .min(self.intents.carried());
        let in_order = super::intents_in_order_from(known, intents, records);
        self.intents_in_order = if self.keep { in_order } else { 0 };
        in_order
    }

    /// Leading records the last read has in common with those lent: the ones carried over
    /// (moved in order, not compared again), and after them those of lines read again
    /// unchanged (a last line still without its newline), compared by address.
    pub(crate) fn carried(&self) -> usize {
        self.carried
    }

    /// Where the next read must start: the first line not known to be complete (every line
    /// before it is parsed and kept).
    pub fn resume(&self) -> usize {
        self.newlines.last().map_or(0, |newline| newline + 1)
    }

    /// Where the bytes a followed file keeps at hand should start: at its last complete line
    /// when that is at most `limit` bytes long (the next append's parent, most often: its
    /// tokens are shared by comparing bytes, which would otherwise be read again by offset),
    /// else where the next read resumes.
    pub fn keep_from(&self, limit: usize) -> usize {
        let resume = self.resume();
        let last_start = match self.newlines.len() {
            0 => return resume,
            1 => 0,
            n => self.newlines[n - 2] + 1,
        };
        if resume - last_start <= limit {
            last_start
        } else {
            resume
        }
    }

    /// Estimated bytes of memory the kept records hold that no other record shares (a
    /// repeated prompt costs only its new tail).
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// Take in the newlines and the last content of the bytes not scanned before.
    fn scan(&mut self, view: &RecordsBytes<'_>) {
        let len = view.len();
        if len < self.scanned || view.base > self.scanned {
            // Not the bytes scanned before (a cache used on another read, or one whose
            // lines were dropped): start over from what is at hand.
            debug_assert!(view.base == 0, "a read that does not continue its cache");
            let keep = self.keep;
            self.clear();
            self.keep = keep;
            self.scanned = view.base;
        }
        // A last line read without its newline is read again whole: forget its parse.
        let resume = self.resume();
        if resume < self.scanned && len > self.scanned {
            self.forget_line((resume, self.scanned));
        }
        let from = self.scanned;
        let new = &view.fresh[from - view.base..];
        self.newlines
            .extend(memchr::memchr_iter(b'\n', new).map(|i| from + i));
        if let Some(last) = new.iter().rposition(|b| !is_py_space(*b)) {
            self.last_content = Some(from + last);
        }
        self.scanned = len;
    }

    /// Forget one line's parse (and what it was counted to hold).
    fn forget_line(&mut self, key: LineKey) {
        let spans = self.spans.remove(&key);
        let held = match (self.lines.remove(&key), &spans) {
            (Some(Some(Ok(record))), Some(spans)) => {
                if self.by_id.get(&record.model_call_id) == Some(&key) {
                    self.by_id.remove(&record.model_call_id);
                }
                held_by(&record, spans, key.1 - key.0)
            }
            (Some(_), _) => key.1 - key.0,
            (None, _) => 0,
        };
        if self.keep {
            self.held = self.held.saturating_sub(held);
        }
        self.digests.remove(&key);
    }

    /// Whether nothing but whitespace follows offset `at`.
    fn blank_from(&self, at: usize) -> bool {
        self.last_content.is_none_or(|last| last < at)
    }

    /// Keep a new line's parse.
    fn keep_line(&mut self, key: LineKey, parsed: ParsedLine, spans: Option<ArraySpans>) {
        if self.keep {
            if let (Some(Ok(record)), Some(spans)) = (&parsed, spans) {
                self.held += held_by(record, &spans, key.1 - key.0);
                self.by_id
                    .entry(record.model_call_id.clone())
                    .or_insert(key);
                self.spans.insert(key, spans);
            } else {
                self.held += key.1 - key.0;
            }
        }
        self.lines.insert(key, parsed);
    }

    /// The digest of a line's stripped bytes (the tail check compares records by it).
    fn digest(&mut self, view: &RecordsBytes<'_>, key: LineKey) -> std::io::Result<String> {
        if let Some(digest) = self.digests.get(&key) {
            return Ok(digest.clone());
        }
        let digest = hex_sha256(strip(&view.bytes(key.0, key.1)?));
        if self.keep {
            self.digests.insert(key, digest.clone());
        }
        Ok(digest)
    }
}

/// Estimated memory of a record parsed from a line of `line_len` bytes whose arrays sit at
/// `spans`: the bytes around the arrays, and 8 bytes per id and log probability of its own
/// (a prompt that repeats its parent's arrays shares their tokens).
fn held_by(record: &TokenRecord, spans: &ArraySpans, line_len: usize) -> usize {
    let own = record.prompt_token_ids.last_chunk_len()
        + record.generation_token_ids.len()
        + record.generation_log_probs.len();
    line_len.saturating_sub(spans.text_len()) + 8 * own
}

/// The call id a line names as its parent, found without parsing it (a hint: the line's
/// parse decides; a wrong hint only costs the sharing of its parent's tokens).
pub(super) fn parent_hint(line: &[u8]) -> Option<&str> {
    const KEY: &[u8] = b"\"parent_call_id\"";
    let at = memchr::memmem::find(line, KEY)? + KEY.len();
    let skip = |mut i: usize| {
        while line.get(i).is_some_and(|b| is_py_space(*b)) {
            i += 1;
        }
        i
    };
    let colon = skip(at);
    (line.get(colon) == Some(&b':')).then_some(())?;
    let quote = skip(colon + 1);
    (line.get(quote) == Some(&b'"')).then_some(())?;
    let rest = &line[quote + 1..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"').then_some(())?;
    std::str::from_utf8(&rest[..end]).ok()
}

pub(super) struct ParsedRecords {
    pub(super) records: Vec<Arc<TokenRecord>>,
    pub(super) lines: Vec<LinePos>,
    pub(super) acknowledged_len: usize,
}

/// Read the records file the way a freeze would, keeping what it would discard.
///
/// The freeze first checks the "tail" (bytes past the state's `indexed_size`): a malformed
/// line followed by more content is corruption; a malformed line with only whitespace after
/// it is a torn write, cut off; a record whose bytes differ from an earlier record of the
/// same call id is a conflict. Then it reads every line up to the cut.
pub(super) fn parse_records(
    view: RecordsBytes<'_>,
    state: &RolloutState,
    issues: &mut Vec<ReadIssue>,
    cache: &mut LineCache,
    limit: usize,
) -> ParsedRecords {
    cache.scan(&view);
    let len = view.len();
    // Taken out while the lines are read (and put back when kept).
    let newlines = std::mem::take(&mut cache.newlines);
    let line_starts = LineIndex::new(&newlines, len);
    let legacy = state.legacy_index();
    let indexed = if legacy {
        0
    } else {
        state.indexed_size.unwrap_or(0)
    };
    if indexed < 0 || indexed as usize > len {
        issues.push(ReadIssue {
            kind: IssueKind::BadState,
            file: FileKind::State,
            at: None,
            message: format!("indexed_size {indexed} is outside the records file ({len} bytes)"),
            fatal: true,
        });
    }
    let indexed = (indexed.max(0) as usize).min(len);
    let mut issue = |kind, at, message: String, fatal| {
        issues.push(ReadIssue {
            kind,
            file: FileKind::Records,
            at: Some(at),
            message,
            fatal,
        });
    };
    parse_new_lines(&view, &newlines, cache, limit);
    let parse = |start: usize, end: usize| parse_alone(&view, start, end, limit).0;

    // The tail check.
    let mut cut = len;
    let mut reported: HashSet<usize> = HashSet::default();
    if indexed < len || legacy {
        let tail = split_lines(&newlines, indexed, len);
        for &(start, end) in &tail {
            cache
                .lines
                .entry((start, end))
                .or_insert_with(|| parse(start, end));
        }
        let tail: Vec<(LineKey, ParsedLine)> = tail
            .into_iter()
            .map(|key| (key, cache.lines[&key].clone()))
            .collect();
        let mut seen: HashMap<&str, usize> = HashMap::default();
        for (_, parsed) in &tail {
            if let Some(Ok(record)) = parsed {
                *seen.entry(record.model_call_id.as_str()).or_default() += 1;
            }
        }
        // Line digests are needed only for call ids seen more than once: the index's of the
        // tail's ids (the writer's line comes before its state, so a reader often meets a
        // tail of one line; the index has an entry for every call).
        let index = state
            .entry_digests
            .as_ref()
            .map(|index| index.entries_of(|id| seen.contains_key(id)));
        let mut known: HashMap<&str, Option<Cow<'_, str>>> = index
            .iter()
            .flatten()
            .map(|(id, digest)| (id.as_str(), digest.as_str().map(Cow::Borrowed)))
            .collect();
        for ((start, end), parsed) in &tail {
            let (start, end) = (*start, *end);
            let at = line_starts.pos(start);
            match parsed {
                None => {}
                Some(Err(RecordError::Syntax(message))) => {
                    reported.insert(start);
                    if cache.blank_from(end + 1) {
                        issue(
                            IssueKind::TornTail,
                            at,
                            format!(
                                "write in progress: {} unacknowledged bytes ignored ({message})",
                                len - start
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
                    let message = if cache.blank_from(end + 1) {
                        // Not parsed, so a write still in progress cannot be told apart.
                        format!("{error} (or a write still in progress)")
                    } else {
                        error.to_string()
                    };
                    issue(IssueKind::TooLong, at, message, true);
                }
                Some(Ok(record)) => {
                    let id = record.model_call_id.as_str();
                    if seen[id] < 2 && !known.contains_key(id) {
                        continue;
                    }
                    let digest = match cache.digest(&view, (start, end)) {
                        Ok(digest) => digest,
                        Err(error) => {
                            reported.insert(start);
                            issue(IssueKind::Io, at, reread_failed(&error), true);
                            continue;
                        }
                    };
                    match known.get(id) {
                        Some(existing) if existing.as_deref() != Some(&digest) => {
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
                            known.insert(id, Some(Cow::Owned(digest)));
                        }
                    }
                }
            }
        }
    }

    // The full read up to the cut: from the first line the last read did not gather
    // cleanly, with the records it gathered before it (a file only grows while its cache
    // lives, so those lines are the same).
    let lent = cache.lent.take();
    let (mut records, mut lines, from, rest) = match (cache.gathered, lent) {
        (Some(gathered), Some((mut records, mut lines)))
            if cache.keep
                && gathered.through <= cut
                && records.len() == gathered.total
                && lines.len() == gathered.total
                && address(records.last()) == gathered.last =>
        {
            let rest = records.split_off(gathered.records);
            lines.truncate(gathered.records);
            (records, lines, gathered.through, rest)
        }
        _ => (Vec::new(), Vec::new(), 0, Vec::new()),
    };
    let carried = records.len();
    // Gathered cleanly so far (it stops at the first line that is no record).
    let mut clean = Gathered {
        through: from,
        records: carried,
        total: 0,
        last: 0,
    };
    let mut advancing = true;
    let gather = split_lines(&newlines, from, cut);
    crate::work::count(|work| work.lines_gathered += gather.len() as u64);
    for (start, end) in gather {
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
        advancing &= !matches!(result, Some(Err(_)));
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
        // (A last line without its newline yet is read again whole when it gets one.)
        if advancing && newlines.binary_search(&end).is_ok() {
            clean.through = end + 1;
            clean.records = records.len();
        }
    }
    cache.gathered = cache.keep.then_some(Gathered {
        total: records.len(),
        last: address(records.last()),
        ..clean
    });
    let unchanged = rest
        .iter()
        .zip(&records[carried..])
        .take_while(|(before, now)| Arc::ptr_eq(before, now))
        .count();
    cache.carried = carried + unchanged;
    if cut == len && len > 0 && newlines.last() != Some(&(len - 1)) {
        let start = line_starts.last_start();
        if !cache.blank_from(start) && !reported.contains(&start) {
            issue(
                IssueKind::Unterminated,
                line_starts.pos(start),
                "final line has no newline yet; accepted, as the reference reader does".into(),
                false,
            );
        }
    }
    if cache.keep {
        cache.newlines = newlines;
    }
    ParsedRecords {
        records,
        lines,
        acknowledged_len: cut,
    }
}

/// Parse, in file order, every line not parsed before (so a prompt can share the tokens its
/// parent's line already holds). A new line's parent among the kept lines — found by the
/// id it names — offers its arrays, its bytes read again by offset.
fn parse_new_lines(
    view: &RecordsBytes<'_>,
    newlines: &[usize],
    cache: &mut LineCache,
    limit: usize,
) {
    let all_lines = split_lines(newlines, 0, view.len());
    // The lines parsed are the file's first ones: a read parses every line after the first it
    // has not, and only a last line read without its newline is forgotten. So the new lines
    // are found from the end (one or two lookups an append, not one a line).
    let first_new = all_lines
        .iter()
        .rposition(|key| cache.lines.contains_key(key))
        .map_or(0, |last| last + 1);
    debug_assert!(
        all_lines[..first_new]
            .iter()
            .all(|key| cache.lines.contains_key(key)),
        "the parsed lines are a prefix of the file's"
    );
    if first_new == all_lines.len() {
        return;
    }
    let new_lines = &all_lines[first_new..];
    let mut wanted = HashSet::default();
    let mut parents: Vec<(Arc<TokenRecord>, Cow<'_, [u8]>, ArraySpans)> = Vec::new();
    // (A first read keeps no lines yet: nothing to look up.)
    let kept_any = !cache.by_id.is_empty();
    for &(start, end) in new_lines
        .iter()
        .filter(|(start, _)| kept_any && *start >= view.base)
    {
        let line = &view.fresh[start - view.base..end - view.base];
        let Some(&key) = parent_hint(line).and_then(|id| cache.by_id.get(id)) else {
            continue;
        };
        if !wanted.insert(key) {
            continue;
        }
        if let (Some(Some(Ok(record))), Some(spans), Ok(bytes)) = (
            cache.lines.get(&key),
            cache.spans.get(&key),
            view.bytes(key.0, key.1),
        ) {
            parents.push((Arc::clone(record), bytes, spans.clone()));
        }
    }
    let mut earlier = EarlierArrays::default();
    for (record, bytes, spans) in &parents {
        earlier.offer(record, strip(bytes), spans);
    }
    for &(start, end) in new_lines {
        if cache.lines.contains_key(&(start, end)) {
            continue;
        }
        let (parsed, spans) = if start >= view.base {
            let line = &view.fresh[start - view.base..end - view.base];
            parse_line(line, limit, &mut earlier)
        } else {
            // Not at hand (a read that does not continue its cache).
            parse_alone(view, start, end, limit)
        };
        cache.keep_line((start, end), parsed, spans);
    }
}

/// Parse the line at `start..end` on its own, its bytes read again if they are not at hand.
fn parse_alone(
    view: &RecordsBytes<'_>,
    start: usize,
    end: usize,
    limit: usize,
) -> (ParsedLine, Option<ArraySpans>) {
    match view.bytes(start, end) {
        Ok(line) => parse_line(&line, limit, &mut EarlierArrays::default()),
        Err(error) => (Some(Err(RecordError::Syntax(reread_failed(&error)))), None),
    }
}

/// Why a line's bytes could not be read again.
fn reread_failed(error: &std::io::Error) -> String {
    format!("cannot read the line again: {error}")
}

/// Parse one line (stripped first), after the lines `earlier` remembers; also where its
/// token arrays sit in it (see [`TokenRecord::parse_after`]).
fn parse_line<'a>(
    line: &'a [u8],
    limit: usize,
    earlier: &mut EarlierArrays<'a>,
) -> (ParsedLine, Option<ArraySpans>) {
    let payload = strip(line);
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
    crate::work::count(|work| work.records_parsed += 1);
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
