//! What one rollout row observed: its invocations, model calls, tool calls, compactions,
//! verifiers, sandboxes and gaps, read leniently from the shapes NeMo Gym's producers write,
//! and the joins to token records by identifier.
//!
//! A row carries up to four parts, each read when present:
//! - `ng_trajectory`: the `TrajectoryRecord` rollout collection projects (it already holds the
//!   agent's invocations, the merged tool calls, the captured model calls and every gap);
//! - `ng_agent_observations`: the agent's own bundle (invocations, tool calls, compactions,
//!   sandboxes, gaps) — compactions live only here;
//! - `ng_model_call_capture`: the model server's capture (`calls` with their ids, response ids
//!   and model refs, and its `gaps`) — the only call list of a row whose projection failed;
//! - `ng_verifier_invocations`: verify executions (schema 2.0).
//!
//! The same fact reaches a row through several parts (rollout collection copies the bundle's
//! and the capture's gaps into the trajectory), so every list is de-duplicated on the key the
//! producer uses.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use serde_json::Value;

/// Where a row came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSource {
    /// The rows file.
    pub file: PathBuf,
    /// 1-based line number.
    pub line: usize,
}

impl std::fmt::Display for RowSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// A model server reference (`model_ref`): `{"type", "name"}`. Part of the response-id join
/// key, because two model servers may mint the same response id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelRef {
    /// `type` (`responses_api_models`).
    pub kind: String,
    /// `name` of the model server.
    pub name: String,
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind, self.name)
    }
}

/// Identifiers of one model call as an integration saw it (`ModelCallRef`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallRef {
    /// `model_call_id`, when known.
    pub model_call_id: Option<String>,
    /// The model server that served it.
    pub model_ref: Option<ModelRef>,
    /// The served response id, when known.
    pub response_id: Option<String>,
}

/// An observed model call, identified for counting: by its id when the row knows it, else by
/// the producer's response-id join key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObservedCall {
    /// A `model_call_id` (the token store's key).
    Id(String),
    /// A model call of the row's list that carries no `model_call_id` (its position).
    Unidentified(usize),
    /// A reference that no model call of the row resolves: model ref and response id.
    Response {
        /// The model server, when named.
        model_ref: Option<ModelRef>,
        /// The served response id.
        response_id: String,
    },
}

impl std::fmt::Display for ObservedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObservedCall::Id(id) => f.write_str(id),
            ObservedCall::Response {
                model_ref: Some(model_ref),
                response_id,
            } => write!(f, "response {response_id} of {model_ref}"),
            ObservedCall::Response { response_id, .. } => write!(f, "response {response_id}"),
            ObservedCall::Unidentified(index) => {
                write!(f, "unidentified model call #{}", index + 1)
            }
        }
    }
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

/// A model call as the trajectory or the model server's capture recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCall {
    /// `model_call_id`.
    pub model_call_id: Option<String>,
    /// `response_metadata.response_id` (capture: `response_id`).
    pub response_id: Option<String>,
    /// `response_metadata.model_ref` (capture: `model_ref`).
    pub model_ref: Option<ModelRef>,
    /// Start time.
    pub started_at: Option<f64>,
    /// Duration (capture: `latency_total_ms`).
    pub duration_ms: Option<f64>,
    /// `response_metadata.finish_reason`.
    pub finish_reason: Option<String>,
    /// `response_metadata.response_status` (or the status code).
    pub status: Option<String>,
    /// Prompt / completion tokens from `token_stats` (capture: `tokens_in` / `tokens_out`).
    pub tokens: (Option<i64>, Option<i64>),
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// A tool call; identified by (invocation, `tool_call_id`) as the producer does.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// `tool_call_id`.
    pub id: String,
    /// Span (schema 2.0).
    pub span_id: Option<String>,
    /// Parent span (nesting, schema 2.0).
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
    /// The model call that requested it (schema 2.0).
    pub model_call_id: Option<String>,
    /// The record as written (every field, known or not).
    pub raw: Value,
}

/// A context compaction (`ContextCompactionObservation`).
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    /// Owning invocation.
    pub invocation_id: Option<String>,
    /// The last model call before it; `None` when the producer could not tell.
    pub before: Option<CallRef>,
    /// The first model call after it.
    pub after: Option<CallRef>,
    /// The model calls that produced the summary.
    pub model_calls: Vec<CallRef>,
    /// Tokens before / after.
    pub tokens: (Option<i64>, Option<i64>),
    /// What triggered it.
    pub trigger: Option<String>,
    /// Outcome.
    pub outcome: String,
    /// The summary that replaced the context.
    pub summary: Option<String>,
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
    /// Span concerned (schema 2.0).
    pub span_id: Option<String>,
    /// Agent instance concerned (schema 2.0).
    pub agent_instance: Option<String>,
}

/// The key rollout collection de-duplicates gaps on: code, invocation, span, detail.
pub(super) type GapKey = (String, Option<String>, Option<String>, Option<String>);

impl ObservationGap {
    /// The key rollout collection de-duplicates gaps on.
    pub(super) fn key(&self) -> GapKey {
        (
            self.code.clone(),
            self.invocation_id.clone(),
            self.span_id.clone(),
            self.detail.clone(),
        )
    }
}

/// How a reference joins the row's model calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A model call id (given, or the one call with the reference's key).
    Id(String),
    /// The one call with the reference's key, which carries no id (its position).
    Call(usize),
    /// Several calls have the reference's key.
    Ambiguous,
    /// No call has it (or the reference names nothing).
    Unmatched,
}

/// Everything a row observed about one rollout.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observations {
    /// Where the row is.
    pub source: Option<RowSource>,
    /// Earlier rows for the same rollout that this one replaced (a re-run appended it).
    pub replaced: Vec<RowSource>,
    /// Invocations (trajectory and agent observations, de-duplicated by id).
    pub invocations: Vec<Invocation>,
    /// Model calls of the trajectory and of the capture (de-duplicated by id).
    pub model_calls: Vec<ModelCall>,
    /// Model calls the trajectory's turns name.
    pub turn_calls: Vec<CallRef>,
    /// `_ng_failure_class` of the row: a failed attempt (rollout collection's sidecar).
    pub failure_class: Option<String>,
    /// Tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Compactions.
    pub compactions: Vec<Compaction>,
    /// Verifier invocations.
    pub verifiers: Vec<Verifier>,
    /// Sandboxes.
    pub sandboxes: Vec<Sandbox>,
    /// Observation gaps as recorded, de-duplicated.
    pub gaps: Vec<ObservationGap>,
    /// Records of kinds this reader does not know: (kind, record).
    pub unknown: Vec<(String, Value)>,
    /// Records that could not be read.
    pub problems: Vec<String>,
    /// Rows were given, but none names this rollout.
    pub missing_row: bool,
    /// What the row says of the rollout as a training sample: reward, agent, task.
    pub context: RowContext,
    /// The agent integration that wrote the observations (the bundle's `source`: `pi`, …).
    pub integration: Option<String>,
}

/// What a row says of its rollout as a training sample (top-level fields of the run body
/// rollout collection writes): the run-level questions group and weigh masked rollouts by it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RowContext {
    /// `reward`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    /// `agent_ref.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// `_ng_task_index`: the task, and the group of rollouts sampled for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// `_ng_rollout_index`: which sample of the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<String>,
    /// The row's own `mask_sample`, where the producer wrote one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mask_sample: Option<bool>,
}

impl RowContext {
    /// The context fields of a row (`None` for those it lacks or writes in another type).
    pub fn of(row: &Value) -> RowContext {
        let reward = match row.get("reward") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::Bool(b)) => Some(f64::from(u8::from(*b))),
            _ => None,
        };
        RowContext {
            reward: reward.filter(|r| r.is_finite()),
            agent: row.get("agent_ref").and_then(|a| text(a, "name")),
            task: text(row, "_ng_task_index"),
            sample: text(row, "_ng_rollout_index"),
            mask_sample: row.get("mask_sample").and_then(Value::as_bool),
        }
    }

    /// Whether the row said anything of the sample.
    pub fn is_empty(&self) -> bool {
        *self == RowContext::default()
    }
}

impl Observations {
    /// The model call id a reference names: directly, or through the row's model calls by the
    /// producer's join key (model ref + response id), when exactly one call has it. Never by
    /// timing or content.
    pub fn resolve(&self, reference: &CallRef) -> Option<String> {
        match self.lookup(reference) {
            Lookup::Id(id) => Some(id),
            _ => None,
        }
    }

    /// How a reference joins the row's model calls: by its id, else by the producer's key
    /// (model ref + response id) when exactly one call has it.
    pub(crate) fn lookup(&self, reference: &CallRef) -> Lookup {
        if let Some(id) = &reference.model_call_id {
            return Lookup::Id(id.clone());
        }
        let Some(response) = reference.response_id.as_ref() else {
            return Lookup::Unmatched;
        };
        let mut matches = self.model_calls.iter().enumerate().filter(|(_, m)| {
            m.response_id.as_ref() == Some(response) && m.model_ref == reference.model_ref
        });
        match (matches.next(), matches.next()) {
            (None, _) => Lookup::Unmatched,
            (Some(_), Some(_)) => Lookup::Ambiguous,
            (Some((index, call)), None) => match &call.model_call_id {
                Some(id) => Lookup::Id(id.clone()),
                None => Lookup::Call(index),
            },
        }
    }

    /// What a reference identifies, for counting: the call it resolves to, else its response
    /// key when no call has it; `None` when it names nothing or is ambiguous (it then names
    /// calls the row already counts).
    pub fn observed(&self, reference: &CallRef) -> Option<ObservedCall> {
        match self.lookup(reference) {
            Lookup::Id(id) => Some(ObservedCall::Id(id)),
            Lookup::Call(index) => Some(ObservedCall::Unidentified(index)),
            Lookup::Ambiguous => None,
            Lookup::Unmatched => Some(ObservedCall::Response {
                model_ref: reference.model_ref.clone(),
                response_id: reference.response_id.clone()?,
            }),
        }
    }

    /// References that match several model calls of the row (the producer's
    /// `model_call_reference_ambiguous`): their keys, each once.
    pub fn ambiguous_references(&self) -> BTreeSet<ObservedCall> {
        self.all_refs()
            .filter(|r| self.lookup(r) == Lookup::Ambiguous)
            .filter_map(|r| {
                Some(ObservedCall::Response {
                    model_ref: r.model_ref.clone(),
                    response_id: r.response_id.clone()?,
                })
            })
            .collect()
    }

    /// The model call a served response id names, matched on the response id alone (an
    /// explicit declaration carries no model ref); `None` when none or several do.
    pub fn declared_response(&self, response_id: &str) -> Option<String> {
        let mut matches = self
            .model_calls
            .iter()
            .filter(|m| m.response_id.as_deref() == Some(response_id))
            .filter_map(|m| m.model_call_id.clone());
        match (matches.next(), matches.next()) {
            (Some(call), None) => Some(call),
            _ => None,
        }
    }

    /// Every model call the row observes: the trajectory's and the capture's calls, and every
    /// call an invocation, turn, compaction or verifier names, each counted once.
    pub fn observed_calls(&self) -> BTreeSet<ObservedCall> {
        let mut calls = BTreeSet::new();
        for (index, call) in self.model_calls.iter().enumerate() {
            calls.insert(match &call.model_call_id {
                Some(id) => ObservedCall::Id(id.clone()),
                None => ObservedCall::Unidentified(index),
            });
        }
        calls.extend(self.all_refs().filter_map(|r| self.observed(r)));
        calls
    }

    fn all_refs(&self) -> impl Iterator<Item = &CallRef> {
        self.owning_refs().chain(&self.turn_calls)
    }

    /// References by an owner: invocations, compactions and verifiers.
    fn owning_refs(&self) -> impl Iterator<Item = &CallRef> {
        self.invocations
            .iter()
            .flat_map(|i| &i.model_calls)
            .chain(self.verifiers.iter().flat_map(|v| &v.model_calls))
            .chain(
                self.compactions
                    .iter()
                    .flat_map(|c| c.before.iter().chain(&c.after).chain(&c.model_calls)),
            )
    }

    /// The model calls a verifier names and no agent invocation, turn or compaction does (a
    /// judge's calls; the row's list of all model calls holds them too): not policy calls, so
    /// no token record is expected for them.
    pub fn verifier_calls(&self) -> BTreeSet<ObservedCall> {
        let policy: BTreeSet<ObservedCall> = self
            .invocations
            .iter()
            .flat_map(|i| &i.model_calls)
            .chain(
                self.compactions
                    .iter()
                    .flat_map(|c| c.before.iter().chain(&c.after).chain(&c.model_calls)),
            )
            .chain(&self.turn_calls)
            .filter_map(|r| self.observed(r))
            .collect();
        self.verifiers
            .iter()
            .flat_map(|v| &v.model_calls)
            .filter_map(|r| self.observed(r))
            .filter(|call| !policy.contains(call))
            .collect()
    }

    /// Every model call id the observations attribute to an owner (invocation, compaction,
    /// verifier).
    pub fn referenced_calls(&self) -> HashSet<String> {
        self.owning_refs().filter_map(|r| self.resolve(r)).collect()
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

pub(super) fn clip(v: &Value) -> String {
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

/// A row's field `key` as text: a string as it is, another value as its JSON, null as none.
pub(super) fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
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

    #[test]
    fn response_joins_use_the_model_ref_and_need_a_unique_match() {
        let server = |name: &str| json!({"type": "responses_api_models", "name": name});
        let row = json!({"ng_model_call_capture": {"rollout_id": "r", "calls": [
            {"model_call_id": "c1", "response_id": "resp-1", "model_ref": server("policy")},
            {"model_call_id": "c2", "response_id": "resp-1", "model_ref": server("judge")},
            {"model_call_id": "c3", "response_id": "resp-3", "model_ref": server("policy")},
            {"model_call_id": "c4", "response_id": "resp-3", "model_ref": server("policy")}
        ]}});
        let obs = Observations::from_row(&row, None);
        let reference = |name: Option<&str>, response: &str| CallRef {
            model_call_id: None,
            model_ref: name.map(|n| ModelRef {
                kind: "responses_api_models".into(),
                name: n.into(),
            }),
            response_id: Some(response.into()),
        };
        assert_eq!(
            obs.resolve(&reference(Some("policy"), "resp-1")).as_deref(),
            Some("c1")
        );
        assert_eq!(
            obs.resolve(&reference(Some("judge"), "resp-1")).as_deref(),
            Some("c2")
        );
        // No model ref: it matches only calls without one; none here.
        assert_eq!(obs.resolve(&reference(None, "resp-1")), None);
        // Two calls with the same key: ambiguous, not joined.
        assert_eq!(obs.resolve(&reference(Some("policy"), "resp-3")), None);
        // Ambiguous: no new call (both are counted already), and reported as such.
        assert_eq!(obs.observed(&reference(Some("policy"), "resp-3")), None);
        assert_eq!(obs.observed_calls().len(), 4);
    }

    #[test]
    fn copies_of_one_fact_count_once() {
        let gap = json!({"code": "no_sandbox_runtime", "invocation_id": null, "detail": null});
        let row = json!({
            "ng_trajectory": {"rollout_id": "r", "gaps": [gap, {"code": "model_calls_unavailable"}],
                "invocations": [{"invocation_id": "root", "model_calls": []}],
                "tool_calls": [{"invocation_id": "root", "tool_call_id": "call_0", "status": "completed"}],
                "model_calls": [{"model_call_id": "c1", "response_metadata": {"response_id": "x"}}]},
            "ng_agent_observations": {"source": "hermes", "gaps": [{"code": "no_sandbox_runtime"},
                    {"code": "no_sandbox_runtime", "detail": "other"}],
                "records": [
                    {"kind": "agent_invocation", "invocation_id": "root"},
                    {"kind": "agent_invocation", "invocation_id": "root.child-1"},
                    {"kind": "tool_call", "invocation_id": "root", "tool_call_id": "call_0", "status": "unknown"},
                    {"kind": "tool_call", "invocation_id": "root.child-1", "tool_call_id": "call_0", "status": "timeout"}
                ]},
            "ng_model_call_capture": {"rollout_id": "r", "calls": [{"model_call_id": "c1"}, {"model_call_id": "c2"}],
                "gaps": [{"code": "model_calls_unavailable"}]}
        });
        let obs = Observations::from_row(&row, None);
        let codes: Vec<(&str, Option<&str>)> = obs
            .gaps
            .iter()
            .map(|g| (g.code.as_str(), g.detail.as_deref()))
            .collect();
        assert_eq!(
            codes,
            vec![
                ("no_sandbox_runtime", None),
                ("model_calls_unavailable", None),
                ("no_sandbox_runtime", Some("other"))
            ]
        );
        assert_eq!(obs.invocations.len(), 2);
        let tools: Vec<(&str, &str)> = obs
            .tool_calls
            .iter()
            .map(|t| (t.invocation_id.as_deref().unwrap(), t.status.as_str()))
            .collect();
        assert_eq!(
            tools,
            vec![("root", "completed"), ("root.child-1", "timeout")],
            "the trajectory's merged tool first; same id in another invocation kept"
        );
        let ids: Vec<_> = obs
            .model_calls
            .iter()
            .map(|m| m.model_call_id.as_deref().unwrap())
            .collect();
        assert_eq!(ids, vec!["c1", "c2"]);
    }
}
