//! Trajectory and observation records (SPEC §7): reading rollout rows leniently, joining them
//! to token records by identifiers only, and the gaps of everything that does not join.

pub mod graph;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Where a row came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSource {
    /// The rows file.
    pub file: PathBuf,
    /// 1-based line number.
    pub line: usize,
}

/// A row that could not be used, or a record inside it.
#[derive(Clone, Debug, PartialEq)]
pub struct RowProblem {
    /// Where.
    pub source: RowSource,
    /// Why.
    pub message: String,
}

/// Identifiers of one model call as an integration saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallRef {
    /// `model_call_id`, when known.
    pub model_call_id: Option<String>,
    /// The served response id, when known.
    pub response_id: Option<String>,
}

/// An agent invocation (root agent or subagent).
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// `invocation_id`.
    pub id: String,
    /// Parent invocation.
    pub parent: Option<String>,
    /// The tool call that spawned it.
    pub spawned_by_tool_call: Option<String>,
    /// `completed`, `failed`, …
    pub status: String,
    /// Why it stopped.
    pub stop_reason: Option<String>,
    /// Agent instance name.
    pub agent_instance: Option<String>,
    /// Its model calls, in the order given.
    pub model_calls: Vec<CallRef>,
    /// Duration.
    pub duration_ms: Option<f64>,
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// A model call as the trajectory recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCall {
    /// `model_call_id`.
    pub model_call_id: Option<String>,
    /// `response_metadata.response_id`.
    pub response_id: Option<String>,
    /// Start time.
    pub started_at: Option<f64>,
    /// Duration.
    pub duration_ms: Option<f64>,
    /// `response_metadata.finish_reason`.
    pub finish_reason: Option<String>,
    /// `response_metadata.response_status` (or the status code).
    pub status: Option<String>,
    /// Prompt / completion tokens from `token_stats`.
    pub tokens: (Option<i64>, Option<i64>),
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// A tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// `tool_call_id`.
    pub id: String,
    /// Span and parent span.
    pub span_id: Option<String>,
    /// Parent span (nesting).
    pub parent_span_id: Option<String>,
    /// Owning invocation.
    pub invocation_id: Option<String>,
    /// Tool name.
    pub name: Option<String>,
    /// `completed`, `failed`, `timeout`, …
    pub status: String,
    /// Duration.
    pub duration_ms: Option<f64>,
    /// Sandbox used.
    pub sandbox_id: Option<String>,
    /// The model call that requested it.
    pub model_call_id: Option<String>,
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// A context compaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    /// Owning invocation.
    pub invocation_id: Option<String>,
    /// The model call before it.
    pub before: Option<CallRef>,
    /// The model call after it.
    pub after: Option<CallRef>,
    /// Tokens before / after.
    pub tokens: (Option<i64>, Option<i64>),
    /// What triggered it.
    pub trigger: Option<String>,
    /// Outcome.
    pub outcome: String,
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// A verifier invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Verifier {
    /// `invocation_id`.
    pub id: String,
    /// Outcome.
    pub status: String,
    /// Judge model calls.
    pub model_calls: Vec<CallRef>,
    /// Grading operations: (kind, outcome).
    pub operations: Vec<(String, String)>,
    /// Grading record: (verifier, score, verdict).
    pub grading: Option<(String, f64, String)>,
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// A sandbox's outcome and resource use.
#[derive(Clone, Debug, PartialEq)]
pub struct Sandbox {
    /// `sandbox_id`.
    pub id: Option<String>,
    /// `agent`, `verifier`, `environment`.
    pub role: String,
    /// Outcome.
    pub outcome: String,
    /// Wall time, peak memory, CPU time.
    pub usage: (Option<f64>, Option<f64>, Option<f64>),
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// An `ObservationGap`.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservationGap {
    /// Gap code.
    pub code: String,
    /// Detail.
    pub detail: Option<String>,
    /// Invocation concerned.
    pub invocation_id: Option<String>,
    /// Span concerned.
    pub span_id: Option<String>,
    /// Agent instance concerned.
    pub agent_instance: Option<String>,
}

/// Everything a row observed about one rollout.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observations {
    /// Where the row is.
    pub source: Option<RowSource>,
    /// Invocations (trajectory and agent observations, deduplicated by id).
    pub invocations: Vec<Invocation>,
    /// Model calls of the trajectory.
    pub model_calls: Vec<ModelCall>,
    /// Tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Compactions.
    pub compactions: Vec<Compaction>,
    /// Verifier invocations.
    pub verifiers: Vec<Verifier>,
    /// Sandboxes.
    pub sandboxes: Vec<Sandbox>,
    /// Observation gaps as recorded.
    pub gaps: Vec<ObservationGap>,
    /// Records of kinds this reader does not know: (kind, record).
    pub unknown: Vec<(String, Value)>,
    /// Records that could not be read.
    pub problems: Vec<String>,
    /// The response id the harness kept (the row's final response).
    pub declared_response_id: Option<String>,
    /// Rows were given, but none names this rollout.
    pub missing_row: bool,
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn number(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn integer(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn call_ref(v: &Value) -> CallRef {
    CallRef {
        model_call_id: text(v, "model_call_id"),
        response_id: text(v, "response_id"),
    }
}

impl Observations {
    /// Read the observation parts of one row.
    pub fn from_row(row: &Value, source: Option<RowSource>) -> Observations {
        let mut obs = Observations {
            source,
            declared_response_id: row.get("response").and_then(|r| text(r, "id")),
            ..Observations::default()
        };
        let trajectory = row.get("ng_trajectory").filter(|t| t.is_object());
        let bundle = row.get("ng_agent_observations").filter(|b| b.is_object());
        let mut seen_invocations = HashSet::new();
        let mut seen_tools = HashSet::new();
        let mut add_invocation = |obs: &mut Observations, v: &Value| {
            let Some(id) = text(v, "invocation_id") else {
                obs.problems.push(format!(
                    "agent invocation without invocation_id: {}",
                    clip(v)
                ));
                return;
            };
            if seen_invocations.insert(id.clone()) {
                obs.invocations.push(Invocation {
                    id,
                    parent: text(v, "parent_invocation_id"),
                    spawned_by_tool_call: text(v, "spawned_by_tool_call_id"),
                    status: text(v, "status").unwrap_or_else(|| "unknown".into()),
                    stop_reason: text(v, "stop_reason"),
                    agent_instance: text(v, "agent_instance"),
                    model_calls: list(v, "model_calls").iter().map(call_ref).collect(),
                    duration_ms: number(v, "duration_ms"),
                    raw: v.clone(),
                });
            }
        };
        let mut add_tool = |obs: &mut Observations, v: &Value| {
            let Some(id) = text(v, "tool_call_id") else {
                obs.problems
                    .push(format!("tool call without tool_call_id: {}", clip(v)));
                return;
            };
            if seen_tools.insert(id.clone()) {
                obs.tool_calls.push(ToolCall {
                    id,
                    span_id: text(v, "span_id"),
                    parent_span_id: text(v, "parent_span_id"),
                    invocation_id: text(v, "invocation_id"),
                    name: text(v, "tool_name"),
                    status: text(v, "status").unwrap_or_else(|| "unknown".into()),
                    duration_ms: number(v, "duration_ms"),
                    sandbox_id: text(v, "sandbox_id"),
                    model_call_id: text(v, "model_call_id").or_else(|| {
                        v.get("model_call_ref")
                            .and_then(|r| text(r, "model_call_id"))
                    }),
                    raw: v.clone(),
                });
            }
        };
        if let Some(t) = trajectory {
            for v in list(t, "invocations") {
                add_invocation(&mut obs, v);
            }
            for v in list(t, "model_calls") {
                let meta = v.get("response_metadata").cloned().unwrap_or(Value::Null);
                let stats = v.get("token_stats").cloned().unwrap_or(Value::Null);
                obs.model_calls.push(ModelCall {
                    model_call_id: text(v, "model_call_id"),
                    response_id: text(&meta, "response_id"),
                    started_at: number(v, "started_at"),
                    duration_ms: number(v, "duration_ms"),
                    finish_reason: text(&meta, "finish_reason"),
                    status: text(&meta, "response_status").or_else(|| text(&meta, "status_code")),
                    tokens: (
                        integer(&stats, "prompt_tokens"),
                        integer(&stats, "completion_tokens"),
                    ),
                    raw: v.clone(),
                });
            }
            for v in list(t, "tool_calls") {
                add_tool(&mut obs, v);
            }
            for v in list(t, "verifier_invocations") {
                obs.add_verifier(v);
            }
            for v in list(t, "gaps") {
                obs.add_gap(v);
            }
        }
        if let Some(b) = bundle {
            for v in list(b, "records") {
                match v.get("kind").and_then(Value::as_str) {
                    Some("agent_invocation") => add_invocation(&mut obs, v),
                    Some("tool_call") => add_tool(&mut obs, v),
                    Some("context_compaction") => obs.compactions.push(Compaction {
                        invocation_id: text(v, "invocation_id"),
                        before: v
                            .get("before_model_call")
                            .filter(|x| x.is_object())
                            .map(call_ref),
                        after: v
                            .get("after_model_call")
                            .filter(|x| x.is_object())
                            .map(call_ref),
                        tokens: (integer(v, "tokens_before"), integer(v, "tokens_after")),
                        trigger: text(v, "trigger"),
                        outcome: text(v, "outcome").unwrap_or_else(|| "unknown".into()),
                        raw: v.clone(),
                    }),
                    Some("sandbox") => obs.add_sandbox(v),
                    Some(kind) => obs.unknown.push((kind.to_owned(), v.clone())),
                    None => obs
                        .problems
                        .push(format!("observation record without kind: {}", clip(v))),
                }
            }
            for v in list(b, "gaps") {
                obs.add_gap(v);
            }
        }
        for v in row
            .get("ng_verifier_invocations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            obs.add_verifier(v);
        }
        obs
    }

    fn add_gap(&mut self, v: &Value) {
        match text(v, "code") {
            Some(code) => self.gaps.push(ObservationGap {
                code,
                detail: text(v, "detail"),
                invocation_id: text(v, "invocation_id"),
                span_id: text(v, "span_id"),
                agent_instance: text(v, "agent_instance"),
            }),
            None => self
                .problems
                .push(format!("observation gap without code: {}", clip(v))),
        }
    }

    fn add_sandbox(&mut self, v: &Value) {
        self.sandboxes.push(Sandbox {
            id: text(v, "sandbox_id"),
            role: text(v, "role").unwrap_or_else(|| "unknown".into()),
            outcome: text(v, "outcome").unwrap_or_else(|| "unknown".into()),
            usage: (
                number(v, "wall_time_s"),
                number(v, "peak_memory_mib"),
                number(v, "cpu_time_s"),
            ),
            raw: v.clone(),
        });
    }

    fn add_verifier(&mut self, v: &Value) {
        let Some(id) = text(v, "invocation_id") else {
            self.problems.push(format!(
                "verifier invocation without invocation_id: {}",
                clip(v)
            ));
            return;
        };
        if self.verifiers.iter().any(|x| x.id == id) {
            return;
        }
        for s in list(v, "sandbox_observations") {
            self.add_sandbox(s);
        }
        self.verifiers.push(Verifier {
            id,
            status: text(v, "status").unwrap_or_else(|| "unknown".into()),
            model_calls: list(v, "model_calls").iter().map(call_ref).collect(),
            operations: list(v, "grading_operations")
                .iter()
                .map(|o| {
                    (
                        text(o, "kind").unwrap_or_else(|| "programmatic_calculation".into()),
                        text(o, "outcome").unwrap_or_else(|| "unknown".into()),
                    )
                })
                .collect(),
            grading: v.get("grading_record").filter(|g| g.is_object()).map(|g| {
                (
                    text(g, "verifier").unwrap_or_default(),
                    number(g, "score").unwrap_or(f64::NAN),
                    text(g, "verdict").unwrap_or_default(),
                )
            }),
            raw: v.clone(),
        });
    }

    /// The model call id a reference names: directly, or through the trajectory's model calls'
    /// response ids. Never by timing or content.
    pub fn resolve(&self, reference: &CallRef) -> Option<String> {
        if let Some(id) = &reference.model_call_id {
            return Some(id.clone());
        }
        let response = reference.response_id.as_ref()?;
        self.model_calls
            .iter()
            .find(|m| m.response_id.as_ref() == Some(response))
            .and_then(|m| m.model_call_id.clone())
    }

    /// The model call the harness kept, when the row declares its final response.
    pub fn declared_terminal(&self) -> Option<Result<String, String>> {
        let response = self.declared_response_id.as_ref()?;
        Some(
            self.resolve(&CallRef {
                model_call_id: None,
                response_id: Some(response.clone()),
            })
            .ok_or_else(|| response.clone()),
        )
    }

    /// Every model call id the observations attribute to an owner (invocation, compaction,
    /// verifier) or record directly.
    pub fn referenced_calls(&self) -> HashSet<String> {
        let mut ids = HashSet::new();
        for invocation in &self.invocations {
            ids.extend(
                invocation
                    .model_calls
                    .iter()
                    .filter_map(|r| self.resolve(r)),
            );
        }
        for verifier in &self.verifiers {
            ids.extend(verifier.model_calls.iter().filter_map(|r| self.resolve(r)));
        }
        for compaction in &self.compactions {
            ids.extend(
                compaction
                    .before
                    .iter()
                    .chain(&compaction.after)
                    .filter_map(|r| self.resolve(r)),
            );
        }
        ids
    }

    /// Invocations on a parent cycle (flagged, not followed).
    pub fn invocation_cycles(&self) -> HashSet<String> {
        let parent: HashMap<&str, &str> = self
            .invocations
            .iter()
            .filter_map(|i| i.parent.as_deref().map(|p| (i.id.as_str(), p)))
            .collect();
        cycle_members(&parent)
    }

    /// Tool calls on a parent-span cycle.
    pub fn tool_cycles(&self) -> HashSet<String> {
        let parent: HashMap<&str, &str> = self
            .tool_calls
            .iter()
            .filter_map(|t| Some((t.span_id.as_deref()?, t.parent_span_id.as_deref()?)))
            .collect();
        cycle_members(&parent)
    }
}

/// Members of cycles in a parent relation (iterative: no recursion on hostile input).
fn cycle_members(parent: &HashMap<&str, &str>) -> HashSet<String> {
    let mut members = HashSet::new();
    let mut done: HashSet<&str> = HashSet::new();
    for &start in parent.keys() {
        let mut path: Vec<&str> = Vec::new();
        let mut on_path: HashMap<&str, usize> = HashMap::new();
        let mut current = Some(start);
        while let Some(node) = current {
            if done.contains(node) {
                break;
            }
            if let Some(&at) = on_path.get(node) {
                members.extend(path[at..].iter().map(|s| s.to_string()));
                break;
            }
            on_path.insert(node, path.len());
            path.push(node);
            current = parent.get(node).copied();
        }
        done.extend(path);
    }
    members
}

fn clip(v: &Value) -> String {
    let text = v.to_string();
    if text.len() > 80 {
        format!(
            "{}…",
            &text[..text.char_indices().nth(79).map_or(text.len(), |(i, _)| i)]
        )
    } else {
        text
    }
}

/// Rows read from files, by the rollout they belong to.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    /// Observations by rollout key (`capture_key`, else `rollout_id`).
    pub by_rollout: BTreeMap<String, Observations>,
    /// Lines that could not be used.
    pub problems: Vec<RowProblem>,
    /// Files read.
    pub files: Vec<PathBuf>,
}

/// The rollout a row belongs to: the trajectory's `capture_key`, else its `rollout_id`, else
/// the row's own `rollout_id`.
pub fn row_key(row: &Value) -> Option<String> {
    let trajectory = row.get("ng_trajectory");
    trajectory
        .and_then(|t| text(t, "capture_key"))
        .or_else(|| trajectory.and_then(|t| text(t, "rollout_id")))
        .or_else(|| text(row, "rollout_id"))
}

fn has_observations(row: &Map<String, Value>) -> bool {
    [
        "ng_trajectory",
        "ng_agent_observations",
        "ng_verifier_invocations",
    ]
    .iter()
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
            for file in row_files(dir) {
                if !self.files.contains(&file) {
                    self.read_file(&file);
                }
            }
        }
    }

    fn read_file(&mut self, file: &Path) {
        let bytes = match crate::store::read::open_quiet(file).and_then(|f| {
            let mut data = Vec::new();
            if let Some(mut f) = f {
                std::io::Read::read_to_end(&mut f, &mut data)?;
            }
            Ok(data)
        }) {
            Ok(bytes) => bytes,
            Err(error) => {
                self.problems.push(RowProblem {
                    source: RowSource {
                        file: file.to_path_buf(),
                        line: 0,
                    },
                    message: format!("cannot read: {error}"),
                });
                return;
            }
        };
        self.files.push(file.to_path_buf());
        for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let source = RowSource {
                file: file.to_path_buf(),
                line: index + 1,
            };
            let row: Value = match serde_json::from_slice(line) {
                Ok(row) => row,
                Err(error) => {
                    self.problems.push(RowProblem {
                        source,
                        message: format!("malformed row: {error}"),
                    });
                    continue;
                }
            };
            if !row.as_object().is_some_and(has_observations) {
                continue;
            }
            match row_key(&row) {
                Some(key) => {
                    self.by_rollout
                        .entry(key)
                        .or_insert_with(|| Observations::from_row(&row, Some(source)));
                }
                None => self.problems.push(RowProblem {
                    source,
                    message: "row names no rollout (no capture_key or rollout_id)".into(),
                }),
            }
        }
    }

    /// Rows whose rollout is not among `rollout_ids`.
    pub fn unmatched<'a>(&'a self, rollout_ids: &HashSet<&str>) -> Vec<&'a str> {
        self.by_rollout
            .keys()
            .map(String::as_str)
            .filter(|k| !rollout_ids.contains(k))
            .collect()
    }
}

/// A line about rows that name no rollout of `rollout_ids`, if any.
pub fn unmatched_message(rows: &Rows, rollout_ids: &HashSet<&str>) -> Option<String> {
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
    fn cycles_are_found_iteratively() {
        let parent: HashMap<&str, &str> =
            [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a"), ("e", "f")].into();
        let mut members: Vec<String> = cycle_members(&parent).into_iter().collect();
        members.sort();
        assert_eq!(members, vec!["a", "b", "c"]);
        // A long parent chain is walked without recursion.
        let names: Vec<String> = (0..100_000).map(|i| format!("s{i}")).collect();
        let chain: HashMap<&str, &str> = names
            .windows(2)
            .map(|w| (w[1].as_str(), w[0].as_str()))
            .collect();
        assert!(cycle_members(&chain).is_empty());
    }

    #[test]
    fn tool_span_cycles_and_lenient_records() {
        let row = json!({"ng_agent_observations": {"records": [
            {"kind": "tool_call", "tool_call_id": "t1", "span_id": "s1", "parent_span_id": "s2", "invocation_id": "i"},
            {"kind": "tool_call", "tool_call_id": "t2", "span_id": "s2", "parent_span_id": "s1", "invocation_id": "i"},
            {"kind": "tool_call", "span_id": "s3"},
            {"kind": "new_kind", "x": 1},
            "not an object",
            {"kind": "agent_invocation", "invocation_id": "i", "model_calls": [{"response_id": "r1"}]}
        ], "gaps": [{"detail": "no code"}]},
        "ng_trajectory": {"model_calls": [{"model_call_id": "c1", "response_metadata": {"response_id": "r1"}}]}});
        let obs = Observations::from_row(&row, None);
        let mut cycle: Vec<String> = obs.tool_cycles().into_iter().collect();
        cycle.sort();
        assert_eq!(cycle, vec!["s1", "s2"]);
        assert_eq!(obs.unknown.len(), 1);
        assert_eq!(obs.problems.len(), 3, "{:?}", obs.problems);
        // A reference by response id only joins through the trajectory's model calls.
        assert_eq!(
            obs.resolve(&obs.invocations[0].model_calls[0]).as_deref(),
            Some("c1")
        );
        assert_eq!(obs.referenced_calls(), ["c1".to_string()].into());
    }
}
