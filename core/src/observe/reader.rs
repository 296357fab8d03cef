//! Reading one row's parts into [`Observations`], leniently and de-duplicating on the
//! producer's keys: the trajectory first (rollout collection already merged the bundle and the
//! capture into it), then the agent's bundle, the capture, the verifier invocations.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::record::{
    CallRef, Compaction, GapKey, Invocation, ModelCall, ModelRef, ObservationGap, Observations,
    RowSource, Sandbox, ToolCall, Verifier, clip, text,
};

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

fn model_ref(v: &Value, key: &str) -> Option<ModelRef> {
    let r = v.get(key).filter(|r| r.is_object())?;
    Some(ModelRef {
        kind: text(r, "type").unwrap_or_default(),
        name: text(r, "name").unwrap_or_default(),
    })
}

fn call_ref(v: &Value) -> CallRef {
    CallRef {
        model_call_id: text(v, "model_call_id"),
        model_ref: model_ref(v, "model_ref"),
        response_id: text(v, "response_id"),
    }
}

fn call_refs(v: &Value, key: &str) -> Vec<CallRef> {
    list(v, key).iter().map(call_ref).collect()
}

/// The parts of a row that carry observations.
pub(crate) const OBSERVATION_KEYS: [&str; 4] = [
    "ng_trajectory",
    "ng_agent_observations",
    "ng_model_call_capture",
    "ng_verifier_invocations",
];

/// Reads one row into [`Observations`], de-duplicating as it goes.
#[derive(Default)]
struct RowReader {
    obs: Observations,
    invocations: HashSet<String>,
    /// The last tool call of each (invocation, tool call id): where a bundle's observation
    /// of it merges.
    tools: HashMap<(Option<String>, String), usize>,
    gaps: HashSet<GapKey>,
}

impl RowReader {
    fn invocation(&mut self, v: &Value) {
        let Some(id) = text(v, "invocation_id") else {
            self.problem("agent invocation without invocation_id", v);
            return;
        };
        if self.invocations.insert(id.clone()) {
            self.obs.invocations.push(Invocation {
                id,
                parent: text(v, "parent_invocation_id"),
                spawned_by_tool_call: text(v, "spawned_by_tool_call_id"),
                status: text(v, "status").unwrap_or_else(|| "unknown".into()),
                stop_reason: text(v, "stop_reason"),
                agent_instance: text(v, "agent_instance"),
                model_calls: call_refs(v, "model_calls"),
                duration_ms: number(v, "duration_ms"),
                raw: v.clone(),
            });
        }
    }

    /// A tool call of the trajectory: each kept (a harness may repeat a tool call id within
    /// an invocation; the producer keeps both).
    fn trajectory_tool(&mut self, v: &Value) {
        if let Some(tool) = self.read_tool(v) {
            let key = (tool.invocation_id.clone(), tool.id.clone());
            self.tools.insert(key, self.obs.tool_calls.len());
            self.obs.tool_calls.push(tool);
        }
    }

    /// A tool call of the agent's bundle: merged into the last one with the same (invocation,
    /// tool call id), as rollout collection merges it (an `unknown` status never replaces a
    /// known one); else a new tool call.
    fn bundle_tool(&mut self, v: &Value) {
        let Some(tool) = self.read_tool(v) else {
            return;
        };
        let key = (tool.invocation_id.clone(), tool.id.clone());
        match self.tools.get(&key) {
            Some(&at) => {
                let known = &mut self.obs.tool_calls[at];
                if tool.status != "unknown" {
                    known.status = tool.status;
                }
                known.name = tool.name.or(known.name.take());
                known.duration_ms = tool.duration_ms.or(known.duration_ms);
                known.sandbox_id = tool.sandbox_id.or(known.sandbox_id.take());
                known.span_id = tool.span_id.or(known.span_id.take());
                known.parent_span_id = tool.parent_span_id.or(known.parent_span_id.take());
                known.model_call_id = tool.model_call_id.or(known.model_call_id.take());
            }
            None => {
                self.tools.insert(key, self.obs.tool_calls.len());
                self.obs.tool_calls.push(tool);
            }
        }
    }

    fn read_tool(&mut self, v: &Value) -> Option<ToolCall> {
        let Some(id) = text(v, "tool_call_id") else {
            self.problem("tool call without tool_call_id", v);
            return None;
        };
        Some(ToolCall {
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
        })
    }

    /// A trajectory model call (`TrajectoryModelCall`).
    fn trajectory_model_call(&mut self, v: &Value) {
        let meta = v.get("response_metadata").unwrap_or(&Value::Null);
        let stats = v.get("token_stats").unwrap_or(&Value::Null);
        self.model_call(ModelCall {
            model_call_id: text(v, "model_call_id"),
            response_id: text(meta, "response_id"),
            model_ref: model_ref(meta, "model_ref"),
            started_at: number(v, "started_at"),
            duration_ms: number(v, "duration_ms"),
            finish_reason: text(meta, "finish_reason"),
            status: text(meta, "response_status").or_else(|| text(meta, "status_code")),
            tokens: (
                integer(stats, "prompt_tokens"),
                integer(stats, "completion_tokens"),
            ),
            raw: v.clone(),
        });
    }

    /// A model call of the model server's capture (`ModelCallRecord`).
    fn captured_model_call(&mut self, v: &Value) {
        self.model_call(ModelCall {
            model_call_id: text(v, "model_call_id"),
            response_id: text(v, "response_id"),
            model_ref: model_ref(v, "model_ref"),
            started_at: number(v, "started_at"),
            duration_ms: number(v, "latency_total_ms"),
            finish_reason: text(v, "finish_reason"),
            status: text(v, "response_status").or_else(|| text(v, "status_code")),
            tokens: (integer(v, "tokens_in"), integer(v, "tokens_out")),
            raw: v.clone(),
        });
    }

    /// The trajectory already holds the capture's calls: the same id is one call.
    fn model_call(&mut self, call: ModelCall) {
        let known = call.model_call_id.is_some()
            && self
                .obs
                .model_calls
                .iter()
                .any(|m| m.model_call_id == call.model_call_id);
        if !known {
            self.obs.model_calls.push(call);
        }
    }

    fn compaction(&mut self, v: &Value) {
        let reference = |key: &str| v.get(key).filter(|x| x.is_object()).map(call_ref);
        self.obs.compactions.push(Compaction {
            invocation_id: text(v, "invocation_id"),
            before: reference("before_model_call"),
            after: reference("after_model_call"),
            model_calls: call_refs(v, "model_calls"),
            tokens: (integer(v, "tokens_before"), integer(v, "tokens_after")),
            trigger: text(v, "trigger"),
            outcome: text(v, "outcome").unwrap_or_else(|| "unknown".into()),
            summary: text(v, "summary"),
            raw: v.clone(),
        });
    }

    fn gap(&mut self, v: &Value) {
        let Some(code) = text(v, "code") else {
            self.problem("observation gap without code", v);
            return;
        };
        let gap = ObservationGap {
            code,
            detail: text(v, "detail"),
            invocation_id: text(v, "invocation_id"),
            span_id: text(v, "span_id"),
            agent_instance: text(v, "agent_instance"),
        };
        if self.gaps.insert(gap.key()) {
            self.obs.gaps.push(gap);
        }
    }

    fn sandbox(&mut self, v: &Value) {
        self.obs.sandboxes.push(Sandbox {
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

    fn verifier(&mut self, v: &Value) {
        let Some(id) = text(v, "invocation_id") else {
            self.problem("verifier invocation without invocation_id", v);
            return;
        };
        if self.obs.verifiers.iter().any(|x| x.id == id) {
            return;
        }
        for s in list(v, "sandbox_observations") {
            self.sandbox(s);
        }
        self.obs.verifiers.push(Verifier {
            id,
            status: text(v, "status").unwrap_or_else(|| "unknown".into()),
            model_calls: call_refs(v, "model_calls"),
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

    fn problem(&mut self, what: &str, v: &Value) {
        self.obs.problems.push(format!("{what}: {}", clip(v)));
    }
}

impl Observations {
    /// Read the observation parts of one row.
    pub(crate) fn from_row(row: &Value, source: Option<RowSource>) -> Observations {
        let mut reader = RowReader::default();
        reader.obs.source = source;
        reader.obs.failure_class = text(row, "_ng_failure_class");
        reader.obs.context = super::record::RowContext::of(row);
        let part = |key: &str| row.get(key).filter(|t| t.is_object());
        if let Some(t) = part("ng_trajectory") {
            for v in list(t, "invocations") {
                reader.invocation(v);
            }
            for v in list(t, "model_calls") {
                reader.trajectory_model_call(v);
            }
            for turn in list(t, "turns") {
                reader.obs.turn_calls.extend(call_refs(turn, "model_calls"));
            }
            for v in list(t, "tool_calls") {
                reader.trajectory_tool(v);
            }
            for v in list(t, "verifier_invocations") {
                reader.verifier(v);
            }
            for v in list(t, "gaps") {
                reader.gap(v);
            }
        }
        if let Some(b) = part("ng_agent_observations") {
            reader.obs.integration = text(b, "source");
            for v in list(b, "records") {
                match v.get("kind").and_then(Value::as_str) {
                    Some("agent_invocation") => reader.invocation(v),
                    Some("tool_call") => reader.bundle_tool(v),
                    Some("context_compaction") => reader.compaction(v),
                    Some("sandbox") => reader.sandbox(v),
                    Some(kind) => reader.obs.unknown.push((kind.to_owned(), v.clone())),
                    None => reader.problem("observation record without kind", v),
                }
            }
            for v in list(b, "gaps") {
                reader.gap(v);
            }
        }
        // Without a trajectory (its projection failed), the capture is the only call list.
        if let Some(c) = part("ng_model_call_capture") {
            for v in list(c, "calls") {
                reader.captured_model_call(v);
            }
            for v in list(c, "gaps") {
                reader.gap(v);
            }
        }
        for v in row
            .get("ng_verifier_invocations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            reader.verifier(v);
        }
        reader.obs
    }
}
