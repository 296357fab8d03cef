//! Rows files: which rollout each row belongs to, the way rollout collection names it, and
//! everything a file holds that is not used — reported, never dropped in silence.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::reader::OBSERVATION_KEYS;
use super::record::{Observations, RowSource, text};

/// A row that could not be used, or a record inside it.
#[derive(Clone, Debug, PartialEq)]
pub struct RowProblem {
    /// Where.
    pub source: RowSource,
    /// Why.
    pub message: String,
}

/// Rows read from files, by the rollout they belong to.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    /// Observations by rollout id (the token store's rollout id); the last row wins.
    pub by_rollout: BTreeMap<String, Observations>,
    /// Lines that could not be used, rows replaced by a later one, rows skipped.
    pub problems: Vec<RowProblem>,
    /// Files read (those of [`Rows::of_store`] too).
    pub files: Vec<PathBuf>,
    /// Rows that belong to one store: found in its directory, or given for it
    /// (`--rollouts-a`): its rollouts take them before those of [`Rows::by_rollout`], and two
    /// stores' rollouts of one id keep their own (two runs of the same tasks).
    pub of_store: BTreeMap<PathBuf, Rows>,
}

/// What reading one line gave.
enum Line {
    /// A line (without its newline) is in the buffer.
    Read,
    /// The line was longer than the limit (its length): skipped to its end, nothing kept.
    TooLong(usize),
    /// The end of the file.
    End,
}

/// Read one line into `line` (without its newline), keeping at most `limit` bytes of it.
fn read_line_capped(
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Line> {
    let mut length = 0usize;
    let mut any = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            break;
        }
        any = true;
        let (chunk, done) = match memchr::memchr(b'\n', available) {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        length += chunk.len();
        if length <= limit {
            line.extend_from_slice(chunk);
        } else {
            // Over the limit: nothing more of it is kept.
            line.clear();
            line.shrink_to(1 << 16);
        }
        let consumed = done.unwrap_or(chunk.len());
        reader.consume(consumed);
        if done.is_some() {
            break;
        }
    }
    Ok(if !any {
        Line::End
    } else if length > limit {
        Line::TooLong(length)
    } else {
        Line::Read
    })
}

/// A row whose explicit rollout id cannot name a capture (rollout collection rejects it too).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "malformed _ng_rollout_id {0}: letters, digits, '.', '_' and '-' only, starting with a \
     letter or digit"
)]
pub struct MalformedRolloutId(pub String);

/// Whether `id` can name a token-store rollout (and a capture path segment).
fn valid_rollout_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The capture key rollout collection derives from a run body: `_ng_rollout_id`, else
/// `<_ng_task_index>-<_ng_rollout_index>`, then `-a<n>` for a re-dispatch attempt n > 0.
fn run_body_key(row: &Value) -> Result<Option<String>, MalformedRolloutId> {
    let base = match row.get("_ng_rollout_id") {
        None | Some(Value::Null) => {
            match (text(row, "_ng_task_index"), text(row, "_ng_rollout_index")) {
                (Some(task), Some(rollout)) => format!("{task}-{rollout}"),
                _ => return Ok(None),
            }
        }
        Some(Value::String(id)) if valid_rollout_id(id) => id.clone(),
        Some(other) => return Err(MalformedRolloutId(other.to_string())),
    };
    let attempt = match row.get("_ng_attempt_index") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
        Some(_) => 0,
    };
    Ok(Some(if attempt > 0 {
        format!("{base}-a{attempt}")
    } else {
        base
    }))
}

/// The rollout a row belongs to, in the producer's order: the trajectory's `capture_key`
/// (schema 2.0), its `rollout_id`, the capture's `rollout_id`, then the key derived from the
/// run body (`_ng_rollout_id` or the task and rollout indices, with the attempt), then a
/// top-level `rollout_id`. `Err` when the row's explicit id is malformed.
pub fn row_key(row: &Value) -> Result<Option<String>, MalformedRolloutId> {
    let part = |key: &str| row.get(key).filter(|p| p.is_object());
    let named = part("ng_trajectory")
        .and_then(|t| text(t, "capture_key").or_else(|| text(t, "rollout_id")))
        .or_else(|| part("ng_model_call_capture").and_then(|c| text(c, "rollout_id")));
    if named.is_some() {
        return Ok(named);
    }
    Ok(run_body_key(row)?.or_else(|| text(row, "rollout_id")))
}

/// Whether a row is worth attaching: it carries observations, or says what the rollout was
/// worth (a reward or the agent), which the run-level questions need even without a trajectory.
fn has_observations(row: &Map<String, Value>) -> bool {
    OBSERVATION_KEYS
        .iter()
        .chain(&["reward", "agent_ref"])
        .any(|k| row.contains_key(*k))
}

impl Rows {
    /// Read rows files: each path a JSONL file or a directory of them.
    pub fn read(paths: &[PathBuf]) -> Rows {
        let mut rows = Rows::default();
        for path in paths {
            if path.is_dir() {
                for file in row_files(path) {
                    rows.read_file(&file);
                }
            } else {
                rows.read_file(path);
            }
        }
        rows
    }

    /// Also read the rows files found in store directories (`*.jsonl` that are not token
    /// files and whose rows carry observations).
    pub fn discover(&mut self, store_dirs: &[PathBuf]) {
        for dir in store_dirs {
            let files = row_files(dir);
            self.read_for_store(dir, &files);
        }
    }

    /// Read rows files (each a JSONL file or a directory of them) as `store`'s: they apply
    /// to its rollouts only.
    pub fn read_for_store(&mut self, store: &Path, paths: &[PathBuf]) {
        let mut own = self.of_store.remove(store).unwrap_or_default();
        for path in paths {
            let files = if path.is_dir() {
                row_files(path)
            } else {
                vec![path.clone()]
            };
            for file in files {
                // A file given for every store as well is read once, as everyone's.
                if !self.already_read(&file) {
                    own.read_file(&file);
                }
            }
        }
        self.files.extend(own.files.iter().cloned());
        self.problems.append(&mut own.problems);
        if !own.by_rollout.is_empty() || !own.files.is_empty() {
            self.of_store.insert(store.to_path_buf(), own);
        }
    }

    /// The observations of the rollout at `location`: its store's rows first, then those
    /// given for every store.
    pub fn for_rollout(&self, location: &crate::store::RolloutLocation) -> Option<&Observations> {
        self.of_store
            .get(&location.dir)
            .and_then(|own| own.by_rollout.get(&location.id))
            .or_else(|| self.by_rollout.get(&location.id))
    }

    /// Whether `file` was read already, under this or another spelling of its path.
    fn already_read(&self, file: &Path) -> bool {
        let canonical = file.canonicalize().ok();
        self.files.iter().any(|known| {
            known == file || (canonical.is_some() && known.canonicalize().ok() == canonical)
        })
    }

    fn problem(&mut self, source: RowSource, message: String) {
        self.problems.push(RowProblem { source, message });
    }

    /// Take in the rows of one file's contents (named `file` in messages), as if read.
    pub fn read_bytes(&mut self, file: &Path, bytes: &[u8]) {
        self.files.push(file.to_path_buf());
        self.parse(file, bytes);
    }

    fn read_file(&mut self, file: &Path) {
        if self.already_read(file) {
            return;
        }
        let cannot = |rows: &mut Rows, error: std::io::Error| {
            let source = RowSource {
                file: file.to_path_buf(),
                line: 0,
            };
            rows.problem(source, format!("cannot read: {error}"));
        };
        // Opened as every store file is (a regular file, never blocking), then streamed a
        // line at a time: memory holds one line, at most the line limit (`--max-line-mib`).
        let handle = match crate::store::open::open_regular(file) {
            Ok(Some((handle, _))) => handle,
            Ok(None) => {
                self.files.push(file.to_path_buf());
                return;
            }
            Err(error) => return cannot(self, error),
        };
        self.files.push(file.to_path_buf());
        let limit = crate::store::read::line_limit();
        let mut reader = std::io::BufReader::with_capacity(1 << 16, handle);
        let mut bare_lines = Vec::new();
        let mut line = Vec::new();
        for number in 1.. {
            line.clear();
            match read_line_capped(&mut reader, &mut line, limit) {
                Ok(Line::End) => break,
                Ok(Line::Read) => self.parse_line(file, number, &line, &mut bare_lines),
                Ok(Line::TooLong(length)) => self.problem(
                    RowSource {
                        file: file.to_path_buf(),
                        line: number,
                    },
                    format!(
                        "row skipped: {} MiB, over the line limit of {} MiB (--max-line-mib)",
                        length >> 20,
                        limit >> 20
                    ),
                ),
                Err(error) => return cannot(self, error),
            }
        }
        self.report_bare(file, &bare_lines);
    }

    fn parse(&mut self, file: &Path, bytes: &[u8]) {
        let mut bare_lines = Vec::new();
        for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
            self.parse_line(file, index + 1, line, &mut bare_lines);
        }
        self.report_bare(file, &bare_lines);
    }

    /// One line of a rows file (numbered from 1); a row without observations is noted in
    /// `bare_lines`.
    fn parse_line(&mut self, file: &Path, number: usize, line: &[u8], bare_lines: &mut Vec<usize>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let source = RowSource {
            file: file.to_path_buf(),
            line: number,
        };
        let row: Value = match serde_json::from_slice(line) {
            Ok(row) => row,
            Err(error) => {
                self.problem(source, format!("malformed row: {error}"));
                return;
            }
        };
        if !row.as_object().is_some_and(has_observations) {
            bare_lines.push(number);
            return;
        }
        match row_key(&row) {
            Ok(Some(key)) => self.insert(key, &row, source),
            Ok(None) => self.problem(
                source,
                "row names no rollout (no ng_trajectory.rollout_id, \
                 ng_model_call_capture.rollout_id, _ng_rollout_id or \
                 _ng_task_index/_ng_rollout_index)"
                    .into(),
            ),
            Err(message) => self.problem(source, format!("row skipped: {message}")),
        }
    }

    /// Say which rows carried no observations and were skipped.
    fn report_bare(&mut self, file: &Path, bare_lines: &[usize]) {
        if let Some(&first) = bare_lines.first() {
            let shown: Vec<String> = bare_lines.iter().take(8).map(|l| l.to_string()).collect();
            let more = if bare_lines.len() > 8 { ", …" } else { "" };
            self.problem(
                RowSource {
                    file: file.to_path_buf(),
                    line: first,
                },
                format!(
                    "{} row(s) carry no observations ({}, reward, agent_ref) and were skipped: \
                     line {}{more}",
                    bare_lines.len(),
                    OBSERVATION_KEYS.join(", "),
                    shown.join(", ")
                ),
            );
        }
    }

    /// A row for rollout `key`. Rollout collection appends to its results file, so a re-run
    /// appends a newer row for the same rollout to the same file: the later row is used. A
    /// failed attempt's row (`_ng_failure_class`, from the failures sidecar, which a re-run does
    /// not clear) never replaces a row without one. Either way both rows are named.
    fn insert(&mut self, key: String, row: &Value, source: RowSource) {
        let mut observations = Observations::from_row(row, Some(source.clone()));
        for problem in &observations.problems {
            self.problem(source.clone(), format!("rollout {key}: {problem}"));
        }
        if !observations.unknown.is_empty() {
            let kinds: Vec<&str> = observations
                .unknown
                .iter()
                .map(|(k, _)| k.as_str())
                .collect();
            self.problem(
                source.clone(),
                format!(
                    "rollout {key}: {} record(s) of a kind this reader does not know ({}), \
                     kept and shown in the graph",
                    kinds.len(),
                    kinds.join(", ")
                ),
            );
        }
        if let Some(previous) = self.by_rollout.get(&key) {
            let earlier = previous.source.clone();
            let same_file = earlier.as_ref().is_some_and(|e| e.file == source.file);
            if !same_file
                && previous.failure_class.is_none()
                && observations.failure_class.is_some()
            {
                let class = observations.failure_class.as_deref().unwrap_or_default();
                let used = earlier.map_or_else(String::new, |e| format!(" at {e}"));
                self.problem(
                    source,
                    format!(
                        "rollout {key}: this failed attempt's row ({class}) is not used; the \
                         row{used} is the rollout's result"
                    ),
                );
                return;
            }
            let Some(previous) = self.by_rollout.remove(&key) else {
                return;
            };
            observations.replaced = previous.replaced;
            observations.replaced.extend(earlier.clone());
            let earlier = earlier.map_or_else(String::new, |e| format!(" at {e}"));
            let message = if same_file {
                format!(
                    "a second row for rollout {key}: it replaces the row{earlier} (a re-run \
                     appended it; the later row is used)"
                )
            } else {
                format!(
                    "another row for rollout {key}: it replaces the row{earlier} (in another \
                     file; the one read last is used)"
                )
            };
            self.problem(source, message);
        }
        self.by_rollout.insert(key, observations);
    }

    /// A line worth the user's attention, if any: rows that name no rollout of `rollout_ids`,
    /// and lines that could not be used or were replaced (the first one named; `build` lists
    /// them all on stderr).
    pub fn message(&self, rollout_ids: &HashSet<&str>) -> Option<String> {
        let unmatched = unmatched_message(self, rollout_ids);
        let problems = self.problems.first().map(|first| {
            let more = match self.problems.len() - 1 {
                0 => String::new(),
                more => format!(" (+{more} more)"),
            };
            format!("rows: {}: {}{more}", first.source, first.message)
        });
        match (unmatched, problems) {
            (Some(a), Some(b)) => Some(format!("{a} · {b}")),
            (a, b) => a.or(b),
        }
    }

    /// Rows whose rollout is not among `rollout_ids`.
    pub fn unmatched<'a>(&'a self, rollout_ids: &HashSet<&str>) -> Vec<&'a str> {
        let mut keys: Vec<&str> = self
            .by_rollout
            .keys()
            .chain(self.of_store.values().flat_map(|own| own.by_rollout.keys()))
            .map(String::as_str)
            .filter(|k| !rollout_ids.contains(k))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

/// A line about rows that name no rollout of `rollout_ids`, if any.
fn unmatched_message(rows: &Rows, rollout_ids: &HashSet<&str>) -> Option<String> {
    let unmatched = rows.unmatched(rollout_ids);
    (!unmatched.is_empty()).then(|| {
        format!(
            "{} rollout row(s) name no rollout in these stores: {}",
            unmatched.len(),
            unmatched.join(", ")
        )
    })
}

/// JSONL files of a directory that may hold rollout rows (not token-store files), sorted.
fn row_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".jsonl") && !name.ends_with(".tokens.jsonl")
        })
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rollout_identity_follows_the_producer() {
        let key = |row: Value| row_key(&row);
        assert_eq!(
            key(json!({"ng_trajectory": {"rollout_id": "3-1", "capture_key": "3-1-a2"}})),
            Ok(Some("3-1-a2".into()))
        );
        assert_eq!(
            key(json!({"ng_trajectory": {"rollout_id": "3-1"}, "_ng_task_index": 9})),
            Ok(Some("3-1".into()))
        );
        // Projection failed: the capture names it, else the run body does.
        assert_eq!(
            key(json!({"ng_model_call_capture": {"rollout_id": "4-0"}})),
            Ok(Some("4-0".into()))
        );
        assert_eq!(
            key(json!({"_ng_task_index": 4, "_ng_rollout_index": 2})),
            Ok(Some("4-2".into()))
        );
        assert_eq!(
            key(json!({"_ng_task_index": 4, "_ng_rollout_index": 2, "_ng_attempt_index": 1})),
            Ok(Some("4-2-a1".into()))
        );
        assert_eq!(
            key(json!({"_ng_task_index": 4, "_ng_rollout_index": 2, "_ng_attempt_index": 0})),
            Ok(Some("4-2".into()))
        );
        assert_eq!(
            key(
                json!({"_ng_rollout_id": "run.7", "_ng_task_index": 4, "_ng_rollout_index": 2,
                "_ng_attempt_index": 3})
            ),
            Ok(Some("run.7-a3".into()))
        );
        assert!(key(json!({"_ng_rollout_id": "../x"})).is_err());
        assert!(key(json!({"_ng_rollout_id": 7})).is_err());
        assert_eq!(key(json!({"response": {"id": "resp_1"}})), Ok(None));
    }
}
