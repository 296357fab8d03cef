//! Regenerate `tests/fixtures/producers/`: a token store and the rollout rows NeMo Gym's real
//! producers would write for it, shaped after reading their code (not copied from their tests):
//!
//! - the agents' `ng_agent_observations` bundles — claude_code, hermes, openclaw, opencode, pi,
//!   pinchbench — and simple_agent's own `ng_trajectory`, with references written as the
//!   agents write them (`{"model_call_id": null, "model_ref": …, "response_id": …}`), their
//!   own `response.id` (`resp_<uuid4 hex>`; pinchbench: the task id; simple_agent: the last
//!   served response id), their compactions and gap codes;
//! - what rollout collection adds: `ng_model_call_capture` (the model server's calls, payloads
//!   stripped), the join of the bundle's references to those calls (canonical references, join
//!   and ownership gaps), and the projected `ng_trajectory` (bundle and capture gaps copied in,
//!   de-duplicated on code + invocation + detail, tool calls merged by invocation + tool call);
//! - the failure shapes: a row whose projection failed (no `ng_trajectory`, a
//!   `trajectory_projection_failed` gap in the capture), a row with only the capture, a re-run
//!   appended for the same rollout, an attempt-qualified id and an explicit `_ng_rollout_id`.
//!
//! `cargo run --example make_producer_rows`

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};
use tokscope_testkit::{Rng, Rollout, linear_rollout};

/// One captured model call of a rollout.
#[derive(Clone)]
struct Captured {
    id: String,
    response_id: String,
    prompt: usize,
    generation: usize,
    started_at: f64,
}

fn hex(rng: &mut Rng) -> String {
    format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64())
}

const MODEL: &str = "policy_model";

fn model_ref() -> Value {
    json!({"type": "responses_api_models", "name": MODEL})
}

/// A reference as an agent writes it: model ref + the served response id, no call id.
fn agent_ref(call: &Captured) -> Value {
    json!({"model_call_id": null, "model_ref": model_ref(), "response_id": call.response_id})
}

/// Write `chains` linear chains (each its own root) as one frozen rollout; return its calls.
fn write_rollout(
    dir: &Path,
    rid: &str,
    chains: &[usize],
    rng: &mut Rng,
    response_prefix: &str,
) -> Vec<Captured> {
    let mut rollout = Rollout {
        id: rid.to_owned(),
        frozen: true,
        ..Rollout::default()
    };
    let mut captured = Vec::new();
    for (chain, &calls) in chains.iter().enumerate() {
        let mut part = linear_rollout(&format!("{rid}-{chain}"), calls, rng, 12, false, true);
        let ids: Vec<String> = part.calls.iter().map(|_| hex(rng)).collect();
        for (index, call) in part.calls.iter_mut().enumerate() {
            call.id = ids[index].clone();
            call.parent = index.checked_sub(1).map(|p| ids[p].clone());
            call.created_at += chain as f64 * 0.5;
            captured.push(Captured {
                id: call.id.clone(),
                response_id: format!("{response_prefix}{}", &hex(rng)[..24]),
                prompt: call.prompt.len(),
                generation: call.generation.len(),
                started_at: call.created_at - 0.8,
            });
        }
        rollout.calls.extend(part.calls);
    }
    rollout.write(dir).expect("write the rollout");
    captured
}

/// `ng_model_call_capture.calls[i]`: a `ModelCallRecord`, payloads stripped after projection.
fn capture_call(call: &Captured, index: usize) -> Value {
    json!({
        "model_call_id": call.id, "response_id": call.response_id, "call_index": index,
        "model_ref": model_ref(), "model": "nemotron", "dialect": "responses",
        "status_code": 200, "response_status": "completed", "finish_reason": "stop",
        "started_at": call.started_at, "completed_at": call.started_at + 0.8,
        "tokens_in": call.prompt, "tokens_out": call.generation, "tokens_reasoning": null,
        "tokens_total": call.prompt + call.generation, "tool_calls": [], "reasoning_content": null,
        "cache_hit": null, "cached_tokens": null, "cache_creation_tokens": null,
        "error_category": null, "latency_total_ms": 800.0, "latency_ttft_ms": 95.5,
    })
}

fn capture(rid: &str, calls: &[Captured], gaps: Vec<Value>) -> Value {
    let mut capture = json!({
        "rollout_id": rid,
        "metrics": {"n_calls": calls.len()},
        "calls": calls.iter().enumerate().map(|(i, c)| capture_call(c, i)).collect::<Vec<_>>(),
    });
    if !gaps.is_empty() {
        capture["gaps"] = json!(gaps);
    }
    capture
}

fn gap(code: &str, invocation: Option<&str>, detail: Option<&str>) -> Value {
    let mut gap = json!({"code": code, "invocation_id": invocation, "detail": detail});
    // Bundles are dumped with nulls kept; capture gaps without them: both shapes occur.
    if invocation.is_none() && detail.is_none() {
        gap.as_object_mut().unwrap().retain(|k, _| k == "code");
    }
    gap
}

/// Resolve a reference against the captured calls as the join does: by call id, else by
/// model ref + response id; `None` when none (or several) match.
fn matches<'a>(reference: &Value, calls: &'a [Captured]) -> Option<&'a Captured> {
    if let Some(id) = reference["model_call_id"].as_str() {
        return calls.iter().find(|c| c.id == id);
    }
    let response = reference["response_id"].as_str()?;
    let found: Vec<&Captured> = calls.iter().filter(|c| c.response_id == response).collect();
    (found.len() == 1).then(|| found[0])
}

fn canonical(call: &Captured) -> Value {
    json!({"model_call_id": call.id, "model_ref": model_ref(), "response_id": call.response_id})
}

/// The bundle after `join_model_call_observations`: matched references made canonical, join
/// gaps for those that did not match, ownership gaps for captured calls no invocation owns.
fn join(bundle: &mut Value, calls: &[Captured]) {
    let mut owned = std::collections::HashSet::new();
    let mut new_gaps = Vec::new();
    let records = bundle["records"].as_array_mut().unwrap();
    for record in records.iter_mut() {
        let invocation = record["invocation_id"].as_str().unwrap_or("").to_owned();
        match record["kind"].as_str() {
            Some("agent_invocation") => {
                for reference in record["model_calls"].as_array_mut().unwrap() {
                    match matches(reference, calls) {
                        Some(call) if owned.insert(call.id.clone()) => *reference = canonical(call),
                        Some(call) => new_gaps.push(gap(
                            "model_call_reference_conflict",
                            Some(&invocation),
                            Some(&call.id),
                        )),
                        None => new_gaps.push(gap(
                            "model_call_reference_unmatched",
                            Some(&invocation),
                            reference["response_id"].as_str(),
                        )),
                    }
                }
            }
            Some("context_compaction") => {
                for field in ["before_model_call", "after_model_call"] {
                    if record[field].is_object() {
                        match matches(&record[field], calls) {
                            Some(call) => record[field] = canonical(call),
                            None => new_gaps.push(gap(
                                "model_call_reference_unmatched",
                                Some(&invocation),
                                Some(&format!(
                                    "{field}:{}",
                                    record[field]["response_id"].as_str().unwrap_or("")
                                )),
                            )),
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (index, call) in calls.iter().enumerate() {
        if !owned.contains(&call.id) {
            new_gaps.push(gap(
                "model_call_ownership_unavailable",
                None,
                Some(&format!("capture:{}:call_index={index}", call.id)),
            ));
        }
    }
    bundle["gaps"].as_array_mut().unwrap().extend(new_gaps);
}

/// The `TrajectoryRecord` rollout collection projects from a finished row.
fn project(row: &Value, rid: &str) -> Value {
    let task_id = row["_ng_task_index"].to_string();
    let own = row.get("ng_trajectory").filter(|t| t.is_object());
    let field = |key: &str| -> Vec<Value> {
        own.and_then(|t| t[key].as_array().cloned())
            .unwrap_or_default()
    };
    let (mut invocations, turns, mut tools, mut model_calls, mut gaps) = (
        field("invocations"),
        field("turns"),
        field("tool_calls"),
        field("model_calls"),
        field("gaps"),
    );
    if let Some(bundle) = row.get("ng_agent_observations") {
        gaps.extend(bundle["gaps"].as_array().cloned().unwrap_or_default());
        for record in bundle["records"].as_array().unwrap() {
            match record["kind"].as_str() {
                Some("agent_invocation")
                    if !invocations
                        .iter()
                        .any(|i| i["invocation_id"] == record["invocation_id"]) =>
                {
                    invocations.push(record.clone())
                }
                Some("tool_call") => {
                    let same = |t: &&mut Value| {
                        t["invocation_id"] == record["invocation_id"]
                            && t["tool_call_id"] == record["tool_call_id"]
                    };
                    match tools.iter_mut().find(|t| same(t)) {
                        Some(existing) => {
                            for (k, v) in record.as_object().unwrap() {
                                let keeps_status = k == "status" && v == "unknown";
                                if !v.is_null() && !keeps_status {
                                    existing[k] = v.clone();
                                }
                            }
                        }
                        None => {
                            let mut tool = record.clone();
                            tool["output"] = Value::Null;
                            tools.push(tool);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(capture) = row.get("ng_model_call_capture") {
        for call in capture["calls"].as_array().unwrap() {
            let meta: Map<String, Value> = [
                "response_id",
                "model_ref",
                "model",
                "dialect",
                "status_code",
                "response_status",
                "finish_reason",
                "error_category",
                "latency_ttft_ms",
            ]
            .iter()
            .filter(|k| !call[**k].is_null())
            .map(|k| (k.to_string(), call[*k].clone()))
            .collect();
            model_calls.push(json!({
                "model_call_id": call["model_call_id"], "started_at": call["started_at"],
                "completed_at": call["completed_at"], "duration_ms": call["latency_total_ms"],
                "request": {"model": MODEL, "input": "…"}, "response": {"id": call["response_id"], "status": "completed"},
                "response_metadata": meta,
                "token_stats": {"prompt_tokens": call["tokens_in"], "completion_tokens": call["tokens_out"],
                    "reasoning_tokens": null, "total_tokens": call["tokens_total"], "cached_tokens": null},
            }));
        }
        gaps.extend(capture["gaps"].as_array().cloned().unwrap_or_default());
    }
    if model_calls.is_empty() {
        gaps.push(json!({"code": "model_calls_unavailable"}));
    }
    if turns.is_empty() {
        gaps.push(json!({"code": "turns_unavailable"}));
    }
    if !invocations
        .iter()
        .any(|i| i["conversation"].as_array().is_some_and(|c| !c.is_empty()))
    {
        gaps.push(json!({"code": "conversation_unavailable"}));
    }
    let mut seen = std::collections::HashSet::new();
    let gaps: Vec<Value> = gaps
        .into_iter()
        .map(|g| json!({"code": g["code"], "invocation_id": g.get("invocation_id").cloned().unwrap_or(Value::Null), "detail": g.get("detail").cloned().unwrap_or(Value::Null)}))
        .filter(|g| seen.insert((g["code"].to_string(), g["invocation_id"].to_string(), g["detail"].to_string())))
        .collect();
    json!({"schema_version": "1.0", "task_id": task_id, "rollout_id": rid, "invocations": invocations,
        "turns": turns, "model_calls": model_calls, "tool_calls": tools, "gaps": gaps})
}

/// A tool call observation.
fn tool(invocation: &str, id: &str, name: &str, status: &str, timing: &str) -> Value {
    json!({"kind": "tool_call", "invocation_id": invocation, "tool_call_id": id, "sandbox_id": null,
        "tool_name": name, "started_at": 1_790_000_001.0, "completed_at": 1_790_000_001.25,
        "duration_ms": 250.0, "timing_source": timing, "status": status, "error_type": null})
}

fn invocation(
    id: &str,
    parent: Option<&str>,
    spawned_by: Option<&str>,
    status: &str,
    calls: &[&Captured],
) -> Value {
    json!({"kind": "agent_invocation", "invocation_id": id, "parent_invocation_id": parent,
        "spawned_by_tool_call_id": spawned_by, "status": status, "duration_ms": 5200.0, "error_type": null,
        "model_calls": calls.iter().map(|c| agent_ref(c)).collect::<Vec<_>>(), "conversation": []})
}

#[allow(clippy::too_many_arguments)]
fn compaction(
    invocation: &str,
    trigger: Option<&str>,
    tokens: (Option<i64>, Option<i64>),
    outcome: &str,
    summary: Option<&str>,
    before: Option<&Captured>,
    after: Option<&Captured>,
    first_kept: Option<&str>,
) -> Value {
    json!({"kind": "context_compaction", "invocation_id": invocation, "observed_at": 1_790_000_003.5,
        "trigger": trigger, "tokens_before": tokens.0, "tokens_after": tokens.1, "outcome": outcome,
        "summary": summary, "first_kept_item_id": first_kept, "before_model_call": before.map(agent_ref),
        "model_calls": [], "after_model_call": after.map(agent_ref)})
}

fn bundle(source: &str, records: Vec<Value>, gaps: Vec<Value>) -> Value {
    json!({"source": source, "records": records, "gaps": gaps})
}

/// A finished row as rollout collection writes it: the harness's result, the run body's keys,
/// the capture, the join, the projected trajectory.
fn finish(
    mut result: Value,
    task: i64,
    rollout: i64,
    rid: &str,
    calls: &[Captured],
    capture_gaps: Vec<Value>,
) -> Value {
    result["_ng_task_index"] = json!(task);
    result["_ng_rollout_index"] = json!(rollout);
    result["agent_ref"] = json!({"type": "responses_api_agents", "name": "agent"});
    result["ng_model_call_capture"] = capture(rid, calls, capture_gaps);
    if let Some(bundle) = result.get_mut("ng_agent_observations") {
        join(bundle, calls);
    }
    let trajectory = project(&result, rid);
    result["ng_trajectory"] = trajectory;
    result
}

fn resp(rng: &mut Rng) -> String {
    format!("resp_{}", hex(rng))
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/producers");
    let store = root.join("store");
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&store).unwrap();
    let mut rng = Rng::new(8);
    let mut rows: Vec<Value> = Vec::new();
    let reward = |r: Value| json!({"reward": 1.0, "response": r, "turns_used": 3, "finished_naturally": true});

    // simple_agent: its own trajectory; response.id is the last served response id.
    let calls = write_rollout(&store, "0-0", &[4], &mut rng, "chatcmpl-");
    let refs: Vec<Value> = calls.iter().map(agent_ref).collect();
    let turns: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"invocation_id": "root", "task_id": "0", "rollout_id": "0-0", "turn_no": i + 1,
            "timestamp": c.started_at, "question": null, "answer": null, "reasoning_content": null,
            "resolved": null, "step_count": i + 1, "model_calls": [agent_ref(c)]})
        })
        .collect();
    let mut result =
        reward(json!({"id": calls[3].response_id, "object": "response", "output": []}));
    result["ng_trajectory"] = json!({"schema_version": "1.0", "task_id": "0", "rollout_id": "0-0",
        "invocations": [{"kind": "agent_invocation", "invocation_id": "root", "parent_invocation_id": null,
            "spawned_by_tool_call_id": null, "status": "completed", "duration_ms": null, "error_type": null,
            "model_calls": refs, "conversation": [{"type": "message", "role": "user", "content": "hi"}]}],
        "turns": turns, "model_calls": [],
        "tool_calls": [{"kind": "tool_call", "invocation_id": "root", "tool_call_id": "call_a1", "sandbox_id": null,
            "tool_name": "python", "started_at": 1_790_000_001.0, "completed_at": 1_790_000_001.5, "duration_ms": 500.0,
            "timing_source": "executor", "status": "completed", "error_type": null, "output": "42"}],
        "gaps": [{"code": "resolution_unavailable", "invocation_id": "root", "detail": null}]});
    rows.push(finish(result, 0, 0, "0-0", &calls, vec![]));

    // claude_code: a resolved compaction, one whose before call is unknown, a failed
    // compaction in an invocation with no model calls; gaps the bundle and the trajectory share.
    let calls = write_rollout(&store, "1-0", &[6], &mut rng, "msg_");
    let session = hex(&mut rng);
    let status_session = hex(&mut rng);
    let all: Vec<&Captured> = calls.iter().collect();
    let result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    let mut result = result;
    result["ng_agent_observations"] = bundle(
        "claude_code",
        vec![
            invocation(&session, None, None, "completed", &all),
            invocation(&status_session, None, None, "unknown", &[]),
            tool(&session, "toolu_01", "Bash", "completed", "artifact"),
            tool(&session, "toolu_02", "Read", "failed", "artifact"),
            compaction(
                &session,
                Some("auto"),
                (Some(154_000), Some(9_800)),
                "completed",
                Some("The user asked for a refactor of the parser.\nDone so far: lexer split."),
                Some(&calls[2]),
                Some(&calls[3]),
                None,
            ),
            compaction(
                &session,
                Some("manual"),
                (Some(61_000), Some(7_200)),
                "completed",
                Some("Second summary."),
                None,
                Some(&calls[5]),
                None,
            ),
            json!({"kind": "context_compaction", "invocation_id": status_session, "observed_at": null,
                "trigger": null, "tokens_before": null, "tokens_after": null, "outcome": "failed",
                "summary": null, "first_kept_item_id": null, "before_model_call": null, "model_calls": [],
                "after_model_call": null}),
        ],
        vec![
            gap(
                "compaction_model_call_reference_unavailable",
                Some(&session),
                None,
            ),
            gap(
                "compaction_before_model_call_unavailable",
                Some(&session),
                None,
            ),
            gap(
                "compaction_before_model_call_unavailable",
                Some(&status_session),
                None,
            ),
            gap(
                "compaction_after_model_call_unavailable",
                Some(&status_session),
                None,
            ),
            gap(
                "no_sandbox_runtime",
                None,
                Some("claude_code runs on the host"),
            ),
        ],
    );
    rows.push(finish(result, 1, 0, "1-0", &calls, vec![]));

    // claude_code with a subagent of its own conversation: two roots, truly masked.
    let calls = write_rollout(&store, "1-1", &[3, 2], &mut rng, "msg_");
    let session = hex(&mut rng);
    let agent = format!("a{}", &hex(&mut rng)[..7]);
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "claude_code",
        vec![
            invocation(
                &session,
                None,
                None,
                "completed",
                &[&calls[0], &calls[1], &calls[2]],
            ),
            invocation(
                &agent,
                Some(&session),
                Some("toolu_task"),
                "completed",
                &[&calls[3], &calls[4]],
            ),
            tool(&session, "toolu_task", "Task", "completed", "artifact"),
            tool(&agent, "toolu_01", "Grep", "completed", "artifact"),
        ],
        vec![gap("no_sandbox_runtime", None, None)],
    );
    rows.push(finish(result, 1, 1, "1-1", &calls, vec![]));

    // hermes: "root" and a delegated child without model calls; the same tool call id in both
    // invocations; a compaction with no boundary; a reference that matches no captured call.
    let calls = write_rollout(&store, "2-0", &[4], &mut rng, "chatcmpl-");
    let ghost = Captured {
        id: String::new(),
        response_id: "chatcmpl-never-captured".into(),
        prompt: 0,
        generation: 0,
        started_at: 0.0,
    };
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "hermes",
        vec![
            invocation(
                "root",
                None,
                None,
                "completed",
                &[&calls[0], &calls[1], &calls[2], &calls[3], &ghost],
            ),
            invocation(
                "root.child-1",
                Some("root"),
                Some("call_0"),
                "completed",
                &[],
            ),
            tool("root", "call_0", "delegate_task", "completed", "harness"),
            tool("root.child-1", "call_0", "terminal", "timeout", "executor"),
            compaction(
                "root",
                Some("context_pressure"),
                (Some(98_304), None),
                "completed",
                None,
                None,
                None,
                None,
            ),
        ],
        vec![
            gap(
                "compaction_model_call_boundary_unavailable",
                Some("root"),
                None,
            ),
            gap("compaction_summary_unavailable", Some("root"), None),
            gap("compaction_tokens_after_unavailable", Some("root"), None),
            gap(
                "model_call_ownership_unavailable",
                Some("root.child-1"),
                None,
            ),
            gap(
                "sandbox_observation_unavailable",
                None,
                Some("terminal_backend=docker"),
            ),
        ],
    );
    rows.push(finish(result, 2, 0, "2-0", &calls, vec![]));

    // openclaw (tree mode): compaction with a summary and no boundary.
    let calls = write_rollout(&store, "3-0", &[3], &mut rng, "resp-");
    let all: Vec<&Captured> = calls.iter().collect();
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "openclaw",
        vec![
            invocation("agent:main:main", None, None, "unknown", &all),
            tool(
                "agent:main:main",
                "call_x1",
                "exec",
                "completed",
                "artifact",
            ),
            compaction(
                "agent:main:main",
                Some("threshold"),
                (Some(120_000), Some(4_000)),
                "completed",
                Some("Summary of the earlier session."),
                None,
                None,
                Some("entry-17"),
            ),
        ],
        vec![
            gap(
                "compaction_model_call_boundary_unavailable",
                Some("agent:main:main"),
                None,
            ),
            gap("subagent_spawn_tool_unavailable", None, None),
            gap("no_sandbox_runtime", None, None),
        ],
    );
    rows.push(finish(result, 3, 0, "3-0", &calls, vec![]));

    // opencode: no model call ownership at all; the compaction is in an invocation without calls.
    let calls = write_rollout(&store, "4-0", &[3], &mut rng, "resp-");
    let session = format!("ses_{}", &hex(&mut rng)[..20]);
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "opencode",
        vec![
            invocation(&session, None, None, "completed", &[]),
            tool(&session, "call_oc1", "bash", "completed", "artifact"),
            tool(&session, "call_oc2", "edit", "failed", "artifact"),
            compaction(
                &session,
                Some("overflow"),
                (None, None),
                "completed",
                Some("Compacted: tests pass except parser."),
                None,
                None,
                Some("prt_tail"),
            ),
        ],
        vec![
            gap("model_call_ownership_unavailable", Some(&session), None),
            gap("compaction_token_counts_unavailable", Some(&session), None),
            gap(
                "compaction_model_call_boundary_unavailable",
                Some(&session),
                None,
            ),
        ],
    );
    rows.push(finish(result, 4, 0, "4-0", &calls, vec![]));

    // pi: invocation named by the rollout id; a compaction after a known call, one before
    // which nothing is known (pi writes no gap for it).
    let calls = write_rollout(&store, "5-0", &[4], &mut rng, "resp-");
    let all: Vec<&Captured> = calls.iter().collect();
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "pi",
        vec![
            invocation("5-0", None, None, "completed", &all),
            tool("5-0", "tc_1", "read", "completed", "harness"),
            compaction(
                "5-0",
                Some("threshold"),
                (Some(70_000), Some(3_500)),
                "completed",
                Some("pi summary"),
                Some(&calls[1]),
                None,
                Some("m-9"),
            ),
            compaction(
                "5-0",
                Some("overflow"),
                (Some(71_000), None),
                "aborted",
                None,
                None,
                None,
                None,
            ),
        ],
        vec![gap(
            "compaction_after_model_call_unavailable",
            Some("5-0"),
            None,
        )],
    );
    rows.push(finish(result, 5, 0, "5-0", &calls, vec![]));

    // pinchbench: response.id is the task id.
    let calls = write_rollout(&store, "6-0", &[3], &mut rng, "resp-");
    let all: Vec<&Captured> = calls.iter().collect();
    let run = hex(&mut rng);
    let mut result = json!({"reward": 0.5, "task_id": "task_06_weather",
        "response": {"id": "task_06_weather", "object": "response", "output": []},
        "grading_type": "automated", "status": "success",
        "raw_rollout": {"transcript_event_count": 41, "archived_to": null, "run_id": run}});
    result["ng_agent_observations"] = bundle(
        "openclaw",
        vec![
            invocation(&run, None, None, "unknown", &all),
            tool(&run, "call_pb1", "web_search", "completed", "artifact"),
        ],
        vec![gap("subagent_spawn_tool_unavailable", None, None)],
    );
    rows.push(finish(result, 6, 0, "6-0", &calls, vec![]));

    // Projection failed: no ng_trajectory, the failure gap in the capture.
    let calls = write_rollout(&store, "7-0", &[3], &mut rng, "resp-");
    let all: Vec<&Captured> = calls.iter().collect();
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "pi",
        vec![invocation("7-0", None, None, "completed", &all)],
        vec![],
    );
    let mut row = finish(result, 7, 0, "7-0", &calls, vec![]);
    row.as_object_mut().unwrap().remove("ng_trajectory");
    row["ng_model_call_capture"]["gaps"] =
        json!([{"code": "trajectory_projection_failed", "detail": "ValidationError"}]);
    rows.push(row);

    // Only the capture (an agent without observations whose projection failed).
    let calls = write_rollout(&store, "8-0", &[2], &mut rng, "resp-");
    let row = json!({"reward": 0.0, "response": {"id": resp(&mut rng), "output": []},
        "_ng_task_index": 8, "_ng_rollout_index": 0,
        "ng_model_call_capture": {"rollout_id": "8-0", "metrics": {"n_calls": 2},
            "calls": calls.iter().enumerate().map(|(i, c)| capture_call(c, i)).collect::<Vec<_>>(),
            "gaps": [{"code": "trajectory_projection_failed", "detail": "KeyError"}]}});
    rows.push(row);

    // A re-dispatched attempt (`-a1`) and an explicit `_ng_rollout_id`.
    let calls = write_rollout(&store, "9-0-a1", &[3], &mut rng, "resp-");
    let all: Vec<&Captured> = calls.iter().collect();
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "pi",
        vec![invocation("9-0-a1", None, None, "completed", &all)],
        vec![],
    );
    result["_ng_attempt_index"] = json!(1);
    rows.push(finish(result, 9, 0, "9-0-a1", &calls, vec![]));
    let calls = write_rollout(&store, "sweep.7", &[2], &mut rng, "resp-");
    let all: Vec<&Captured> = calls.iter().collect();
    let mut result = reward(json!({"id": resp(&mut rng), "object": "response", "output": []}));
    result["ng_agent_observations"] = bundle(
        "pi",
        vec![invocation("sweep.7", None, None, "completed", &all)],
        vec![],
    );
    result["_ng_rollout_id"] = json!("sweep.7");
    rows.push(finish(result, 10, 0, "sweep.7", &calls, vec![]));

    let path = root.join("rollouts.jsonl");
    let mut out = std::fs::File::create(&path).expect("create the rows file");
    for row in &rows {
        writeln!(out, "{row}").unwrap();
    }
    // A re-run of 3-0 appended later: one more tool call, the same rollout id.
    let mut rerun = rows[4].clone();
    rerun["ng_agent_observations"]["records"]
        .as_array_mut()
        .unwrap()
        .push(tool(
            "agent:main:main",
            "call_x2",
            "exec",
            "failed",
            "artifact",
        ));
    rerun.as_object_mut().unwrap().remove("ng_trajectory");
    rerun["ng_trajectory"] = project(&rerun, "3-0");
    writeln!(out, "{rerun}").unwrap();
    // An input row without observations (materialized inputs): skipped, with a message.
    writeln!(out, "{}", json!({"_ng_task_index": 11, "_ng_rollout_index": 0, "responses_create_params": {"input": "materialized"}})).unwrap();
    println!("wrote {} rows to {}", rows.len() + 2, path.display());
}
