//! Regenerate `tests/fixtures/rows/store-1-0.rows.jsonl`: rollout rows for the conformance
//! store `store-1-0`, with every situation the observation graph must show: a plain agent, a
//! subagent spawned through a tool call, a compaction, a verifier calling a judge model, a
//! failed and a timed-out tool, an invocation cycle, a model call with no token record, an
//! `ObservationGap`, a schema-1.0 row without `capture_key`, a row whose own `response.id`
//! matches nothing (never a declaration), a record of unknown kind, a malformed line and a row for no rollout.
//!
//! `cargo run --example make_fixture_rows`

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

fn find<'a>(rows: &'a mut [Value], rid: &str) -> &'a mut Value {
    rows.iter_mut()
        .find(|r| r["ng_trajectory"]["rollout_id"] == rid)
        .unwrap_or_else(|| panic!("no row for {rid}"))
}

fn main() {
    let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut rows =
        tokscope_testkit::rows_for_store(&root.join("tests/fixtures/conformance/store-1-0"));
    // Failed and timed-out tools.
    let tools = find(&mut rows, "0-0-a0")["ng_trajectory"]["tool_calls"]
        .as_array_mut()
        .unwrap();
    tools[0]["status"] = json!("failed");
    tools[0]["error_type"] = json!("NonZeroExit");
    tools[1]["status"] = json!("timeout");
    // An invocation cycle: the root names its own subagent as parent.
    let records = find(&mut rows, "0-3-a1")["ng_agent_observations"]["records"]
        .as_array_mut()
        .unwrap();
    let sub = records
        .iter()
        .find(|r| r["parent_invocation_id"].is_string())
        .unwrap()["invocation_id"]
        .clone();
    records[0]["parent_invocation_id"] = sub;
    // A model call the harness saw that was never captured.
    let records = find(&mut rows, "0-1-a1")["ng_agent_observations"]["records"]
        .as_array_mut()
        .unwrap();
    records[0]["model_calls"]
        .as_array_mut()
        .unwrap()
        .push(json!({"model_call_id": "0-1-a1-ghost"}));
    // An observation gap.
    find(&mut rows, "0-2-a1")["ng_agent_observations"]["gaps"] = json!([{"code": "tool_output_unavailable",
        "detail": "the harness dropped the tool output", "invocation_id": "inv-0-2-a1", "span_id": "span-x"}]);
    // A schema-1.0 row: no capture_key, the rollout id names the rollout.
    let row = find(&mut rows, "0-7-a0");
    row["ng_trajectory"]["schema_version"] = json!("1.0");
    row["ng_trajectory"]
        .as_object_mut()
        .unwrap()
        .remove("capture_key");
    // The row's own response id matches no model call: it must not count as a declaration.
    find(&mut rows, "0-9-a1")["response"] = json!({"id": "resp-that-does-not-exist"});
    // A record of a kind this reader does not know (kept and shown).
    find(&mut rows, "0-10-a1")["ng_agent_observations"]["records"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kind": "budget_event", "invocation_id": "inv-0-10-a1", "tokens": 12}));
    let path = root.join("tests/fixtures/rows/store-1-0.rows.jsonl");
    let mut out = std::fs::File::create(&path).expect("create the rows file");
    for row in &rows {
        writeln!(out, "{row}").unwrap();
    }
    // A row for a rollout that is in no store, and a malformed line.
    writeln!(out, "{}", json!({"ng_trajectory": {"schema_version": "2.0", "task_id": "t", "rollout_id": "9-9-a9", "capture_key": "9-9-a9"}})).unwrap();
    writeln!(out, "{{\"ng_trajectory\": {{\"rollout_id\": ").unwrap();
    println!("wrote {} rows to {}", rows.len() + 2, path.display());
}
