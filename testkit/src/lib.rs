//! Writing synthetic token records and stores the way the reference writer lays them out.
//!
//! A workspace member used only as a dev-dependency: by the tests, the benchmarks and the
//! fixture generators (`examples/`). The explorer never writes into a store, so none of this
//! ships in `tokscope-core`.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use tokscope_core::rebuild::digest::digest;

/// One model call to write.
#[derive(Clone, Debug)]
pub struct Call {
    /// `model_call_id`.
    pub id: String,
    /// Prompt tokens as stored: the full prompt, or only the suffix for a delta record.
    pub prompt: Vec<u64>,
    /// Generated tokens.
    pub generation: Vec<u64>,
    /// `parent_resolution` (`None` writes null).
    pub resolution: Option<&'static str>,
    /// `parent_call_id`.
    pub parent: Option<String>,
    /// `created_at`.
    pub created_at: f64,
    /// `prompt` is only the suffix after the parent's cumulative sequence.
    pub delta: bool,
    /// `cum_len` and `digest`.
    pub lineage: Lineage,
    /// Output items (defaults to one assistant message).
    pub output_items: Option<Vec<Value>>,
    /// Extra or overriding keys.
    pub overrides: Map<String, Value>,
}

impl Call {
    /// A root call.
    pub fn root(id: &str, prompt: Vec<u64>, generation: Vec<u64>, created_at: f64) -> Call {
        Call {
            id: id.to_owned(),
            prompt,
            generation,
            resolution: Some("root"),
            parent: None,
            created_at,
            delta: false,
            lineage: Lineage::Computed,
            output_items: None,
            overrides: Map::new(),
        }
    }

    /// A call continuing `parent`.
    pub fn child(
        id: &str,
        parent: &str,
        prompt: Vec<u64>,
        generation: Vec<u64>,
        created_at: f64,
    ) -> Call {
        Call {
            resolution: Some("resolved"),
            parent: Some(parent.to_owned()),
            ..Call::root(id, prompt, generation, created_at)
        }
    }

    /// The record as one JSON line (keys sorted, no newline).
    pub fn to_line(&self, rollout_id: &str) -> String {
        let (cum_len, cum_digest) = match &self.lineage {
            Lineage::Computed => {
                assert!(!self.delta, "a delta record needs its lineage given");
                let mut cumulative = self.prompt.clone();
                cumulative.extend_from_slice(&self.generation);
                (json!(cumulative.len()), json!(digest(&cumulative)))
            }
            Lineage::Given(len, digest) => (json!(len), json!(digest)),
            Lineage::Omitted => (Value::Null, Value::Null),
        };
        let log_probs: Vec<f64> = self
            .generation
            .iter()
            .map(|t| {
                // Mostly confident, sometimes not (about one token in nine below p = 0.1).
                let t = *t as u32; // the same log probs as when ids were 32 bits
                let x = f64::from(t.wrapping_mul(2_654_435_761) % 1000) / 1000.0;
                -6.0 * x.powi(8) - 0.001 * f64::from(t % 7)
            })
            .collect();
        let items = self.output_items.clone().unwrap_or_else(|| {
            vec![
                json!({"type": "message", "role": "assistant", "id": format!("msg_{}", self.id),
                        "content": [{"type": "output_text", "text": format!("turn {}", self.id)}]}),
            ]
        });
        let mut record = json!({
            "schema_version": 5,
            "rollout_id": rollout_id,
            "model_call_id": self.id,
            "model": "policy",
            "prompt_token_ids": self.prompt,
            "generation_token_ids": self.generation,
            "generation_log_probs": log_probs,
            "routed_experts": null,
            "output_items": items,
            "token_item_index": 0,
            "created_at": self.created_at,
            "parent_resolution": self.resolution,
            "parent_call_id": self.parent,
            "parent_resolution_reason": "",
            "cum_len": cum_len,
            "digest": cum_digest,
            "prompt_is_delta": self.delta,
            "prefix_requested": false,
            "prefix_supplied": false,
            "continuation_fingerprint": "",
            "continuation_context_len": 0,
            "continuation_context_digest": "",
            "fingerprint_version": null,
        });
        let map = record.as_object_mut().unwrap();
        for (key, value) in &self.overrides {
            map.insert(key.clone(), value.clone());
        }
        if map.get("token_item_index") == Some(&json!(0)) && items_len(map) == 0 {
            map.insert("token_item_index".into(), Value::Null);
        }
        let sorted: std::collections::BTreeMap<_, _> = map.iter().collect();
        serde_json::to_string(&sorted).unwrap()
    }
}

/// How a record states its cumulative length and digest.
#[derive(Clone, Debug)]
pub enum Lineage {
    /// Computed from `prompt` + `generation` (full-prompt records only).
    Computed,
    /// Given explicitly (delta records, or deliberately wrong values).
    Given(usize, String),
    /// Written as null.
    Omitted,
}

fn items_len(map: &Map<String, Value>) -> usize {
    map.get("output_items")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// A rollout to write into a store directory.
#[derive(Clone, Debug, Default)]
pub struct Rollout {
    /// Rollout id.
    pub id: String,
    /// Calls in file order.
    pub calls: Vec<Call>,
    /// Extra intents (calls dispatched without a record).
    pub extra_intents: Vec<String>,
    /// Mark the state incomplete and write the sentinel.
    pub incomplete: bool,
    /// Mark the state frozen.
    pub frozen: bool,
    /// Raw bytes appended after the records (a torn tail, garbage…).
    pub trailing: Vec<u8>,
}

impl Rollout {
    /// Write the rollout's files into `dir` following the writer's layout.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let base = dir.join(&self.id);
        let path = |suffix: &str| base.with_file_name(format!("{}{suffix}", self.id));
        let mut records = std::io::BufWriter::new(std::fs::File::create(path(".tokens.jsonl"))?);
        let mut intents = String::new();
        for call in &self.calls {
            intents.push_str(&call.id);
            intents.push('\n');
            records.write_all(call.to_line(&self.id).as_bytes())?;
            records.write_all(b"\n")?;
        }
        records.write_all(&self.trailing)?;
        records.flush()?;
        for id in &self.extra_intents {
            intents.push_str(id);
            intents.push('\n');
        }
        std::fs::write(path(".tokens.intents"), intents)?;
        if self.incomplete {
            std::fs::write(path(".tokens.incomplete"), "\n")?;
        }
        let state = json!({"entry_digests": {}, "frozen": self.frozen, "incomplete": self.incomplete,
                           "indexed_size": 0, "retired": false,
                           "snapshot_id": if self.frozen { "snap" } else { "" },
                           "version": self.calls.len()});
        std::fs::write(path(".tokens.state.json"), state.to_string())?;
        Ok(())
    }
}

/// A small deterministic pseudo-random generator (xorshift), so fixtures need no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `[low, high)`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low).max(1)
    }

    /// `n` token ids below 150,000.
    pub fn tokens(&mut self, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.range(0, 150_000)).collect()
    }
}

/// A linear agent rollout: each call extends the previous one by environment tokens.
///
/// `grow` is the mean number of environment tokens between calls. With `delta`, every call
/// after the first stores only its suffix; with `lineage`, records carry `cum_len`/`digest`
/// (hashing every cumulative sequence, so leave it off for very long delta chains).
pub fn linear_rollout(
    id: &str,
    calls: usize,
    rng: &mut Rng,
    grow: usize,
    delta: bool,
    lineage: bool,
) -> Rollout {
    let mut out = Rollout {
        id: id.to_owned(),
        ..Rollout::default()
    };
    let mut cumulative: Vec<u64> = Vec::new();
    let mut suffix = rng.tokens(grow.max(1));
    let mut parent: Option<String> = None;
    for index in 0..calls {
        let generation_len = rng.range(8, 64) as usize;
        let generation = rng.tokens(generation_len);
        let call_id = format!("{id}-c{index:05}");
        let created = 1_790_000_000.0 + index as f64;
        let full_prompt_len = cumulative.len() + suffix.len();
        let stored = if delta && parent.is_some() {
            std::mem::take(&mut suffix)
        } else {
            let mut full = cumulative.clone();
            full.append(&mut suffix);
            full
        };
        cumulative
            .extend_from_slice(&stored[stored.len() - (full_prompt_len - cumulative.len())..]);
        let mut call = match &parent {
            None => Call::root(&call_id, stored, generation.clone(), created),
            Some(p) => Call::child(&call_id, p, stored, generation.clone(), created),
        };
        cumulative.extend_from_slice(&generation);
        call.delta = delta && parent.is_some();
        call.lineage = match (lineage, call.delta) {
            (false, _) => Lineage::Omitted,
            (true, false) => Lineage::Computed,
            (true, true) => Lineage::Given(cumulative.len(), digest(&cumulative)),
        };
        let environment = rng.range(1, (2 * grow as u64).max(2)) as usize;
        suffix = rng.tokens(environment);
        parent = Some(call_id);
        out.calls.push(call);
    }
    out
}

/// The benchmark store: 24 rollouts of 30–60 calls, prompts growing to ~100k tokens in every
/// sixth rollout (5k–40k in the others), every third rollout stored as delta records. All
/// frozen and clean. Returns the number of calls written.
pub fn write_bench_store(dir: &Path) -> std::io::Result<usize> {
    write_bench_store_scaled(dir, 1)
}

/// [`write_bench_store`] with every prompt `scale` times as long (the store grows about
/// as much: `scale` 5 writes 228 MB).
pub fn write_bench_store_scaled(dir: &Path, scale: usize) -> std::io::Result<usize> {
    let mut rng = Rng::new(2026);
    let mut total_calls = 0;
    for index in 0..24 {
        let calls = rng.range(30, 61) as usize;
        let final_prompt = scale
            * if index % 6 == 0 {
                100_000
            } else {
                rng.range(5_000, 40_000) as usize
            };
        let grow = final_prompt / calls / 2;
        let delta = index % 3 == 2;
        let mut rollout = linear_rollout(
            &format!("bench-{index}"),
            calls,
            &mut rng,
            grow,
            delta,
            true,
        );
        rollout.frozen = true;
        rollout.write(dir)?;
        total_calls += calls;
    }
    Ok(total_calls)
}

/// Rollout rows for every rollout of a store, as a harness would record them: one root agent
/// invocation owning the main tree's calls, a subagent (spawned by a tool call) for each other
/// root, the tool calls of each call's `function_call` items, a compaction before each call
/// the resolver could not link, a verifier with a judge call (never captured), a sandbox, and
/// a `response.id` (the main chain's last served response id; never read as a declaration). Every third model call is referenced by response id
/// only, so the join through the trajectory's model calls is exercised.
pub fn rows_for_store(dir: &Path) -> Vec<Value> {
    let locations = tokscope_core::load::locate(&[dir.to_path_buf()], &[]).unwrap_or_default();
    let analyses = tokscope_core::load::analyze_all(
        &locations,
        &tokscope_core::verdict::VerdictOptions::default(),
    );
    analyses.iter().map(row_for).collect()
}

fn row_for(analysis: &tokscope_core::verdict::Analysis) -> Value {
    let rid = analysis.rollout_id();
    let records = &analysis.capture.records;
    let mut model_calls = Vec::new();
    let mut tool_calls = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let tools: Vec<&Map<String, Value>> = record
            .output_items
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
            .collect();
        model_calls.push(json!({
            "model_call_id": record.model_call_id,
            "started_at": record.created_at - 0.4,
            "completed_at": record.created_at,
            "duration_ms": 400.0 + (index % 5) as f64 * 35.0,
            "response_metadata": {"response_id": format!("resp-{}", record.model_call_id),
                "finish_reason": if tools.is_empty() { "stop" } else { "tool_calls" },
                "response_status": "completed", "model": record.model},
            "token_stats": {"prompt_tokens": record.prompt_token_ids.len(),
                "completion_tokens": record.generation_token_ids.len()},
        }));
        for item in tools {
            let id = item
                .get("call_id")
                .and_then(Value::as_str)
                .unwrap_or("tool")
                .to_owned();
            tool_calls.push(json!({
                "tool_call_id": id, "span_id": format!("span-{id}"), "invocation_id": format!("inv-{rid}"),
                "tool_name": item.get("name"), "status": "completed", "duration_ms": 120.0,
                "model_call_id": record.model_call_id, "sandbox_id": format!("sb-{rid}"),
            }));
        }
    }
    let reference = |index: usize, call: &str| {
        if index % 3 == 2 {
            json!({"response_id": format!("resp-{call}")})
        } else {
            json!({"model_call_id": call})
        }
    };
    let mut invocations = Vec::new();
    let mut records_kinds = Vec::new();
    let main_root = analysis
        .build
        .as_ref()
        .and_then(|b| b.main_chain().map(|c| c.links[0].node));
    if let Some(build) = &analysis.build {
        let roots: Vec<usize> = (0..build.nodes.len())
            .filter(|&n| build.nodes[n].parent.is_none())
            .collect();
        let under = |root: usize| {
            let mut members = vec![root];
            let mut at = 0;
            while at < members.len() {
                members.extend_from_slice(&build.nodes[members[at]].children);
                at += 1;
            }
            members
        };
        // A compaction continues the same agent: its unlinked call stays in that invocation.
        let compacted: Vec<usize> = roots
            .iter()
            .copied()
            .filter(|&r| {
                build.nodes[r].note == Some(tokscope_core::rebuild::LinkNote::ParentUnresolved)
            })
            .collect();
        for (k, &root) in roots
            .iter()
            .enumerate()
            .filter(|(_, r)| !compacted.contains(r))
        {
            // Every call under this root (and, for the main agent, after its compactions).
            let is_main = Some(root) == main_root || (main_root.is_none() && k == 0);
            let mut members = under(root);
            if is_main {
                for &c in &compacted {
                    members.extend(under(c));
                }
            }
            members.sort_by(|&a, &b| {
                records[build.nodes[a].record]
                    .created_at
                    .total_cmp(&records[build.nodes[b].record].created_at)
            });
            let calls: Vec<Value> = members
                .iter()
                .enumerate()
                .map(|(i, &n)| reference(i, &records[build.nodes[n].record].model_call_id))
                .collect();
            let id = if is_main {
                format!("inv-{rid}")
            } else {
                format!("inv-{rid}-sub{k}")
            };
            let mut invocation = json!({"kind": "agent_invocation", "invocation_id": id,
                "status": "completed", "stop_reason": "end_turn", "agent_instance": if is_main { "main" } else { "helper" },
                "model_calls": calls, "duration_ms": 1000.0 * members.len() as f64});
            if !is_main {
                let spawn = format!("spawn-{rid}-{k}");
                invocation["parent_invocation_id"] = json!(format!("inv-{rid}"));
                invocation["spawned_by_tool_call_id"] = json!(spawn);
                tool_calls.push(json!({"tool_call_id": spawn, "span_id": format!("span-{spawn}"),
                    "invocation_id": format!("inv-{rid}"), "tool_name": "spawn_subagent", "status": "completed",
                    "duration_ms": 2500.0}));
            }
            // A compaction before each call whose parent link the resolver could not make.
            for (position, &n) in members.iter().enumerate() {
                if build.nodes[n].note == Some(tokscope_core::rebuild::LinkNote::ParentUnresolved) {
                    let call = &records[build.nodes[n].record].model_call_id;
                    let before = position.checked_sub(1).map(|p| {
                        records[build.nodes[members[p]].record]
                            .model_call_id
                            .clone()
                    });
                    records_kinds.push(json!({"kind": "context_compaction", "invocation_id": id,
                        "before_model_call": before.map(|b| json!({"model_call_id": b})),
                        "after_model_call": {"model_call_id": call}, "tokens_before": 8000, "tokens_after": 1200,
                        "trigger": "auto", "outcome": "completed", "model_calls": [], "source_message_ids": []}));
                }
            }
            invocations.push(invocation);
        }
    }
    records_kinds.push(json!({"kind": "sandbox", "sandbox_id": format!("sb-{rid}"), "role": "agent",
        "outcome": "completed", "wall_time_s": 12.5, "peak_memory_mib": 512.0, "cpu_time_s": 3.2, "cleanup_errors": []}));
    let terminal = analysis.build.as_ref().and_then(|b| {
        b.main_chain().map(|c| {
            records[b.nodes[c.links.last().unwrap().node].record]
                .model_call_id
                .clone()
        })
    });
    let judge = format!("judge-{rid}");
    model_calls.push(json!({"model_call_id": judge, "duration_ms": 300.0,
        "response_metadata": {"response_id": format!("resp-{judge}"), "finish_reason": "stop", "response_status": "completed"}}));
    let mut row = json!({
        "responses_create_params": {"input": []},
        "reward": 1.0,
        "ng_trajectory": {"schema_version": "2.0", "task_id": format!("task-{rid}"), "rollout_id": rid,
            "capture_key": rid, "invocations": [], "turns": [], "model_calls": model_calls,
            "tool_calls": tool_calls, "verifier_invocations": [{"kind": "verifier_invocation",
                "invocation_id": format!("verify-{rid}"), "status": "completed",
                "model_calls": [{"model_call_id": judge}],
                "grading_operations": [{"kind": "llm_judge", "operation_id": "op-1", "outcome": "completed"}],
                "grading_record": {"verifier": "judge_server", "score": 1.0, "verdict": "scored",
                    "result_binding_sha256": "0".repeat(64)}}],
            "gaps": [], "failure_events": {}},
        "ng_agent_observations": {"schema_version": "2.0", "source": "demo_agent",
            "records": invocations.into_iter().chain(records_kinds).collect::<Vec<_>>(), "gaps": []},
    });
    if let Some(terminal) = terminal {
        row["response"] = json!({"id": format!("resp-{terminal}"), "object": "response"});
    }
    row
}

/// The shape of a training run's store, for the scale benchmarks: `rollouts` rollouts of
/// roughly `bytes_per_rollout` bytes each when stored as full prompts (15–40 calls; the delta
/// ones hold the same conversations in far fewer bytes), made of 100 distinct rollouts
/// replicated under new ids, as the issue that asked for it measured. A quarter are frozen,
/// the rest live; every fourth stores delta records, every seventh has an abandoned retry,
/// every tenth a subagent with its own root. Returns the bytes written.
pub fn write_training_store(
    dir: &Path,
    rollouts: usize,
    bytes_per_rollout: usize,
) -> std::io::Result<u64> {
    const TEMPLATES: usize = 100;
    let templates: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = (0..TEMPLATES.min(rollouts))
        .map(|t| training_template(t, bytes_per_rollout))
        .collect();
    let mut written = 0u64;
    for index in 0..rollouts {
        let template = index % templates.len();
        let (records, intents, state) = &templates[template];
        let from = training_id(template);
        let to = training_id(index);
        let rename = |bytes: &[u8]| -> Vec<u8> {
            String::from_utf8_lossy(bytes)
                .replace(&from, &to)
                .into_bytes()
        };
        let records = if from == to {
            records.clone()
        } else {
            rename(records)
        };
        std::fs::write(dir.join(format!("{to}.tokens.jsonl")), &records)?;
        std::fs::write(dir.join(format!("{to}.tokens.intents")), rename(intents))?;
        std::fs::write(dir.join(format!("{to}.tokens.state.json")), state)?;
        written += records.len() as u64;
    }
    Ok(written)
}

fn training_id(index: usize) -> String {
    format!("train-{index:05}")
}

/// One template of [`write_training_store`]: records, intents and state bytes.
fn training_template(index: usize, bytes: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    const BYTES_PER_ID: usize = 7;
    let mut rng = Rng::new(7_000 + index as u64);
    let id = training_id(index);
    let calls = rng.range(15, 41) as usize;
    let delta = index % 4 == 3;
    let ids = bytes / BYTES_PER_ID;
    // Full-prompt records repeat the prompt: about calls²/2 × (environment + generation) ids.
    // A delta rollout is the same conversation stored as suffixes (a much smaller file).
    let grow = (2 * ids / (calls * calls)).saturating_sub(36).max(8);
    let mut rollout = linear_rollout(&id, calls, &mut rng, grow, delta, true);
    if index % 7 == 1 && calls > 4 {
        // An abandoned attempt: a sibling of call 3, same prompt, never continued.
        let mut retry = rollout.calls[3].clone();
        retry.id = format!("{id}-r00003");
        retry.generation = rng.tokens(20);
        retry.created_at -= 0.5;
        if !retry.delta {
            retry.lineage = Lineage::Computed;
        } else {
            retry.lineage = Lineage::Omitted;
        }
        rollout.calls.insert(3, retry);
    }
    if index % 10 == 5 {
        let sub = linear_rollout(&format!("{id}-sub"), 5, &mut rng, 200, false, true);
        rollout.calls.extend(sub.calls);
    }
    rollout.frozen = index.is_multiple_of(4);
    let mut records = Vec::new();
    let mut intents = String::new();
    for call in &rollout.calls {
        records.extend_from_slice(call.to_line(&id).as_bytes());
        records.push(b'\n');
        intents.push_str(&call.id);
        intents.push('\n');
    }
    let state = json!({"entry_digests": {}, "frozen": rollout.frozen, "incomplete": false,
                       "indexed_size": 0, "retired": false,
                       "snapshot_id": if rollout.frozen { "snap" } else { "" },
                       "version": rollout.calls.len()});
    (
        records,
        intents.into_bytes(),
        state.to_string().into_bytes(),
    )
}

/// CPU seconds (user + system) in a `/proc/.../stat` file (100 clock ticks a second; 0 when
/// it cannot be read).
fn stat_cpu_seconds(path: impl AsRef<Path>) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// Minor page faults this process has taken (Linux: `/proc/self/stat`; 0 elsewhere), for
/// the benchmarks' figures: each is a fresh page touched, zeroed by the kernel.
pub fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    stat.rsplit(')')
        .next()
        .and_then(|fields| fields.split_whitespace().nth(7))
        .and_then(|field| field.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system) this process has spent, in seconds (Linux: `/proc/self/stat`),
/// for the benchmarks' CPU figures.
pub fn cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/self/stat")
}

/// CPU seconds (user + system) each thread of this process has used, by thread name
/// (threads of one name summed; Linux, empty elsewhere). A thread that ended is not counted.
pub fn cpu_seconds_by_thread() -> std::collections::BTreeMap<String, f64> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return by_name;
    };
    for task in tasks.flatten() {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        *by_name.entry(name.trim().to_owned()).or_default() += stat_cpu_seconds(path.join("stat"));
    }
    by_name
}

/// Seconds since the Unix epoch, as the benchmarks' writers stamp their appends.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The bundled demo store (`assets/demo-store`), analyzed with default options: the rollouts
/// the front end's unit tests draw.
pub fn demo_analyses() -> Vec<tokscope_core::verdict::Analysis> {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/demo-store");
    let locations = tokscope_core::load::locate(&[store], &[]).unwrap_or_default();
    tokscope_core::load::analyze_all(
        &locations,
        &tokscope_core::verdict::VerdictOptions::default(),
    )
}

/// Make a FIFO at `path` (a hostile "file" a reader must refuse without blocking).
pub fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo");
}

mod run_writer;
pub use run_writer::{RunPlan, RunWriter, line_digest};
