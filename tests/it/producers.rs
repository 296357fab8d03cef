//! Rows shaped as NeMo Gym's real producers write them (`tests/fixtures/producers`, made by
//! `examples/make_producer_rows.rs` after reading the agents and rollout collection): no false
//! masks, trajectory-less rows attached, gaps counted once, every compaction drawn, re-runs
//! reported, and every summary count equal to a count made independently from the row.

use crate::common;
use crate::common::{analyze_with_rows, find, graph_text, key, screen};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use crossterm::event::KeyCode;
use serde_json::Value;
use tokscope::app::{App, Pane};
use tokscope_core::gaps::GapKind;
use tokscope_core::graph::summary;
use tokscope_core::observe::Rows;
use tokscope_core::verdict::{Analysis, VerdictOptions, analyze};

const STORE: &str = "tests/fixtures/producers/store";
const ROWS: &str = "tests/fixtures/producers/rollouts.jsonl";

fn load() -> (Rows, Vec<Analysis>) {
    let rows = Rows::read(&[PathBuf::from(ROWS)]);
    let analyses = analyze_with_rows(&[PathBuf::from(STORE)], &rows);
    (rows, analyses)
}

/// The rows file's lines as JSON (the last row of each rollout wins, as in the reader).
fn raw_rows() -> Vec<(usize, Value)> {
    std::fs::read_to_string(ROWS)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, serde_json::from_str(l).unwrap()))
        .collect()
}

#[test]
fn every_row_attaches_and_nothing_is_dropped_without_a_message() {
    let (rows, analyses) = load();
    let ids: BTreeSet<&str> = analyses.iter().map(|a| a.rollout_id()).collect();
    let keys: BTreeSet<&str> = rows.by_rollout.keys().map(String::as_str).collect();
    assert_eq!(
        ids, keys,
        "every stored rollout has its row, and only those"
    );
    // Identified without `ng_trajectory`: by the capture, the attempt, the explicit id.
    for id in ["7-0", "8-0", "9-0-a1", "sweep.7"] {
        assert!(keys.contains(id), "{id}");
    }
    for analysis in &analyses {
        let gaps = tokscope_core::graph::rollout_gaps(analysis);
        assert!(
            !gaps
                .iter()
                .any(|g| g.fact.to_string().contains("no rollout row")),
            "{}: {gaps:?}",
            analysis.rollout_id()
        );
    }
    // Every line of the file is used or reported: 12 rollouts, one re-run, one bare row.
    let lines = raw_rows().len();
    let messages: Vec<String> = rows
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.source, p.message))
        .collect();
    assert_eq!(lines, 14);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].contains(":13: a second row for rollout 3-0")
            && messages[0].contains("rollouts.jsonl:5"),
        "both rows are named: {messages:?}"
    );
    assert!(
        messages[1].contains(":14: 1 row(s) carry no observations"),
        "{messages:?}"
    );
    // The explorer's status line says so too.
    let message = rows.message(&ids.iter().copied().collect()).unwrap();
    assert!(
        message.contains("a second row for rollout 3-0") && message.ends_with("(+1 more)"),
        "{message}"
    );
}

#[test]
fn rows_never_mask_what_the_reference_would_not() {
    // The reference consumer never takes a declaration from a row: the verdict with the row
    // is the verdict without it. Only 1-1 (a subagent with its own root) is truly masked.
    let (_, analyses) = load();
    for analysis in &analyses {
        let bare = analyze(
            tokscope_core::store::read_capture(&analysis.capture.location),
            &VerdictOptions::default(),
        );
        assert_eq!(
            (analysis.mask_sample, &analysis.reasons),
            (bare.mask_sample, &bare.reasons),
            "{}",
            analysis.rollout_id()
        );
    }
    let masked: Vec<&str> = analyses
        .iter()
        .filter(|a| a.mask_sample)
        .map(|a| a.rollout_id())
        .collect();
    assert_eq!(masked, vec!["1-1"]);
    assert_eq!(
        find(&analyses, "1-1").first_reason().unwrap().code(),
        "roots_not_one"
    );
}

/// A model call's identity as the producer joins it: the id, else model ref + response id.
fn ref_key(reference: &Value, by_response: &HashMap<(String, String), Vec<String>>) -> String {
    if let Some(id) = reference["model_call_id"].as_str() {
        return id.to_owned();
    }
    let key = (
        reference["model_ref"].to_string(),
        reference["response_id"].as_str().unwrap_or("").to_owned(),
    );
    match by_response.get(&key).map(Vec::as_slice) {
        Some([id]) => id.clone(),
        _ => format!("{}|{}", key.0, key.1),
    }
}

fn array<'a>(v: &'a Value, path: &[&str]) -> Vec<&'a Value> {
    let mut at = v;
    for p in path {
        at = &at[*p];
    }
    at.as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// Counts made from the raw row alone.
fn independent_counts(row: &Value, token_ids: &HashSet<String>) -> Value {
    let trajectory = &row["ng_trajectory"];
    let bundle = &row["ng_agent_observations"];
    let capture = &row["ng_model_call_capture"];
    let records = array(bundle, &["records"]);
    let of_kind = |kind: &str| -> Vec<&Value> {
        records
            .iter()
            .copied()
            .filter(|r| r["kind"] == kind)
            .collect()
    };
    let invocations: BTreeSet<String> = array(trajectory, &["invocations"])
        .into_iter()
        .chain(of_kind("agent_invocation"))
        .map(|i| i["invocation_id"].to_string())
        .collect();
    let mut tools: BTreeMap<(String, String), String> = BTreeMap::new();
    for tool in array(trajectory, &["tool_calls"])
        .into_iter()
        .chain(of_kind("tool_call"))
    {
        tools
            .entry((
                tool["invocation_id"].to_string(),
                tool["tool_call_id"].to_string(),
            ))
            .or_insert_with(|| tool["status"].as_str().unwrap_or("unknown").to_owned());
    }
    let mut tool_counts: BTreeMap<String, usize> = BTreeMap::new();
    for status in tools.values() {
        *tool_counts.entry(status.clone()).or_default() += 1;
    }
    let field = |g: &Value, k: &str| g.get(k).cloned().unwrap_or(Value::Null).to_string();
    let gaps: BTreeSet<(String, String, String, String)> = array(trajectory, &["gaps"])
        .into_iter()
        .chain(array(bundle, &["gaps"]))
        .chain(array(capture, &["gaps"]))
        .map(|g| {
            (
                g["code"].as_str().unwrap().to_owned(),
                field(g, "invocation_id"),
                field(g, "span_id"),
                field(g, "detail"),
            )
        })
        .collect();
    let mut gap_counts: BTreeMap<String, usize> = BTreeMap::new();
    for (code, ..) in &gaps {
        *gap_counts.entry(code.clone()).or_default() += 1;
    }
    // Model calls: the trajectory's and the capture's, plus every reference.
    let mut by_response: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut observed = BTreeSet::new();
    let mut calls = Vec::new();
    for call in array(trajectory, &["model_calls"]) {
        let meta = &call["response_metadata"];
        calls.push((
            call["model_call_id"].clone(),
            meta["model_ref"].clone(),
            meta["response_id"].clone(),
        ));
    }
    for call in array(capture, &["calls"]) {
        calls.push((
            call["model_call_id"].clone(),
            call["model_ref"].clone(),
            call["response_id"].clone(),
        ));
    }
    for (id, model_ref, response) in &calls {
        if let (Some(id), Some(response)) = (id.as_str(), response.as_str()) {
            let ids = by_response
                .entry((model_ref.to_string(), response.to_owned()))
                .or_default();
            if !ids.contains(&id.to_owned()) {
                ids.push(id.to_owned());
            }
        }
        if let Some(id) = id.as_str() {
            observed.insert(id.to_owned());
        }
    }
    let mut references: Vec<&Value> = Vec::new();
    for invocation in array(trajectory, &["invocations"])
        .into_iter()
        .chain(of_kind("agent_invocation"))
    {
        references.extend(array(invocation, &["model_calls"]));
    }
    for turn in array(trajectory, &["turns"]) {
        references.extend(array(turn, &["model_calls"]));
    }
    for compaction in of_kind("context_compaction") {
        references.extend(array(compaction, &["model_calls"]));
        for side in ["before_model_call", "after_model_call"] {
            if compaction[side].is_object() {
                references.push(&compaction[side]);
            }
        }
    }
    for reference in references {
        observed.insert(ref_key(reference, &by_response));
    }
    let joined = observed.iter().filter(|c| token_ids.contains(*c)).count();
    serde_json::json!({
        "invocations": invocations.len(),
        "model_calls": {"observed": observed.len(), "joined": joined, "unjoined": observed.len() - joined},
        "tool_calls": tool_counts,
        "compactions": of_kind("context_compaction").len(),
        "gaps": gap_counts,
    })
}

#[test]
fn every_summary_count_equals_a_count_made_from_the_row() {
    let (_, analyses) = load();
    let mut last_row: HashMap<String, Value> = HashMap::new();
    for (_, row) in raw_rows() {
        let key = tokscope_core::observe::row_key(&row).unwrap();
        if let Some(key) = key {
            last_row.insert(key, row);
        }
    }
    for analysis in &analyses {
        let id = analysis.rollout_id();
        let token_ids: HashSet<String> = analysis
            .capture
            .records
            .iter()
            .map(|r| r.model_call_id.clone())
            .collect();
        let expected = independent_counts(&last_row[id], &token_ids);
        let actual = summary(analysis.options.observations.as_ref().unwrap(), analysis);
        for key in [
            "invocations",
            "model_calls",
            "tool_calls",
            "compactions",
            "gaps",
        ] {
            assert_eq!(actual[key], expected[key], "{id}: {key}");
        }
    }
    // A few by hand, so the independent count cannot drift along with the reader.
    let counts = |id: &str| {
        let a = find(&analyses, id);
        summary(a.options.observations.as_ref().unwrap(), a)
    };
    let hermes = counts("2-0");
    assert_eq!(
        hermes["model_calls"],
        serde_json::json!({"observed": 5, "joined": 4, "unjoined": 1}),
        "the unmatched response-id reference is observed, as the graph shows it"
    );
    assert_eq!(
        hermes["tool_calls"],
        serde_json::json!({"completed": 1, "timeout": 1}),
        "the same tool call id in two invocations is two tool calls"
    );
    assert_eq!(hermes["join_gaps"], 1);
    assert_eq!(counts("1-0")["compactions"], 3);
    assert_eq!(counts("1-0")["gaps"]["no_sandbox_runtime"], 1);
    assert_eq!(counts("4-0")["gaps"]["model_call_ownership_unavailable"], 4);
    assert_eq!(
        counts("4-0")["join_gaps"],
        3,
        "three records no invocation owns"
    );
    assert_eq!(counts("0-0")["join_gaps"], 0, "no spurious join gap");
    assert_eq!(counts("0-0")["model_calls"]["joined"], 4);
}

#[test]
fn bundle_gaps_copied_into_the_trajectory_are_listed_once() {
    let (_, analyses) = load();
    let row = &raw_rows()[1].1;
    let copies = |part: &Value| {
        array(part, &["gaps"])
            .iter()
            .filter(|g| g["code"] == "no_sandbox_runtime")
            .count()
    };
    assert_eq!(copies(&row["ng_trajectory"]), 1);
    assert_eq!(copies(&row["ng_agent_observations"]), 1);
    let gaps = tokscope_core::graph::rollout_gaps(find(&analyses, "1-0"));
    let listed = gaps
        .iter()
        .filter(|g| {
            g.kind() == GapKind::Observation && g.fact.to_string().starts_with("no_sandbox_runtime")
        })
        .count();
    assert_eq!(listed, 1, "{gaps:?}");
}

#[test]
fn every_compaction_is_drawn_under_its_invocation() {
    let (_, analyses) = load();
    for analysis in &analyses {
        let obs = analysis.options.observations.as_ref().unwrap();
        let text = graph_text(analysis);
        let drawn = text.matches("⇣ compaction").count();
        assert_eq!(
            drawn,
            obs.compactions.len(),
            "{}:\n{text}",
            analysis.rollout_id()
        );
        let unknown = obs
            .compactions
            .iter()
            .filter(|c| c.before.as_ref().and_then(|b| obs.resolve(b)).is_none())
            .count();
        assert_eq!(text.matches("position unknown").count(), unknown);
    }
    let claude = graph_text(find(&analyses, "1-0"));
    insta::assert_snapshot!("producers_claude_code_graph", claude);
    let opencode = graph_text(find(&analyses, "4-0"));
    assert!(
        opencode.contains("⇣ compaction (completed, position unknown) tokens ?→? trigger=overflow"),
        "{opencode}"
    );
    assert!(opencode.contains("“Compacted: tests pass except parser.”"));
}

#[test]
fn the_graph_pane_shows_compactions_without_a_position() {
    let (_, analyses) = load();
    let mut app = App::new(
        vec![PathBuf::from(STORE)],
        analyses,
        VerdictOptions::default(),
        common::viewport(120, 48),
    );
    for c in "/1-0".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    for _ in 0..5 {
        key(&mut app, KeyCode::Tab);
    }
    assert_eq!(app.focus, Pane::Graph);
    insta::assert_snapshot!("producers_graph_pane_120x48", screen(&app));
}

#[test]
fn a_rerun_row_replaces_the_earlier_one() {
    let (rows, analyses) = load();
    let obs = &rows.by_rollout["3-0"];
    assert_eq!(obs.source.as_ref().unwrap().line, 13);
    assert_eq!(obs.replaced.len(), 1);
    assert_eq!(obs.replaced[0].line, 5);
    assert_eq!(obs.tool_calls.len(), 2, "the later row's tools");
    let gaps = tokscope_core::graph::rollout_gaps(find(&analyses, "3-0"));
    assert!(
        gaps.iter()
            .any(|g| g.fact.to_string().contains("rollouts.jsonl:5 was replaced")),
        "{gaps:?}"
    );
}

#[test]
fn rows_without_a_trajectory_join_through_the_capture() {
    let (_, analyses) = load();
    let projection_failed = find(&analyses, "7-0");
    let text = graph_text(projection_failed);
    assert_eq!(text.matches("[in main]").count(), 3, "{text}");
    let gaps = tokscope_core::graph::rollout_gaps(projection_failed);
    assert!(
        gaps.iter().any(|g| g
            .fact
            .to_string()
            .starts_with("trajectory_projection_failed: ValidationError")),
        "{gaps:?}"
    );
    let capture_only = find(&analyses, "8-0");
    let obs = capture_only.options.observations.as_ref().unwrap();
    assert_eq!(obs.model_calls.len(), 2);
    assert!(obs.invocations.is_empty());
}

#[test]
fn headless_build_reports_rows_and_their_problems() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["build", STORE, "--rollouts", ROWS, "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a second row for rollout 3-0"), "{stderr}");
    let reports: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(reports.len(), 12);
    let masked = reports.iter().filter(|r| r["mask_sample"] == true).count();
    assert_eq!(masked, 1);
    assert!(reports.iter().all(|r| r["observations"].is_object()));
}

/// A temp dir with the fixture's rows for 0-0 under `name`, changed by `change`.
fn rows_file(dir: &std::path::Path, name: &str, change: impl FnOnce(&mut Value)) -> PathBuf {
    let mut row = raw_rows()[0].1.clone();
    change(&mut row);
    let path = dir.join(name);
    std::fs::write(&path, format!("{row}\n")).unwrap();
    path
}

fn summary_of(rows: &Rows, id: &str) -> Value {
    let stores = vec![PathBuf::from(STORE)];
    let location = tokscope_core::load::locate(&stores, &[id.to_owned()]).unwrap()[0].clone();
    let options = tokscope_core::load::options_for(&VerdictOptions::default(), rows, &location);
    let analysis = analyze(tokscope_core::store::read_capture(&location), &options);
    summary(analysis.options.observations.as_ref().unwrap(), &analysis)
}

#[test]
fn a_stale_failure_row_never_replaces_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let good = rows_file(dir.path(), "rollouts.jsonl", |_| {});
    rows_file(dir.path(), "rollouts_failures.jsonl", |row| {
        row["_ng_failure_class"] = serde_json::json!("judge_failed");
        row["ng_trajectory"]["invocations"] = serde_json::json!([]);
    });
    let rows = Rows::read(&[dir.path().to_path_buf()]);
    let used = rows.by_rollout["0-0"].source.clone().unwrap();
    assert_eq!(used.file, good);
    assert!(rows.by_rollout["0-0"].replaced.is_empty());
    assert_eq!(rows.problems.len(), 1, "{:?}", rows.problems);
    let message = &rows.problems[0].message;
    assert!(
        message.contains("failed attempt") && message.contains("rollouts.jsonl:1"),
        "{message}"
    );
    assert_eq!(summary_of(&rows, "0-0")["invocations"], 1);
}

#[test]
fn one_file_read_under_two_spellings_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = rows_file(dir.path(), "rollouts.jsonl", |_| {});
    let other = dir.path().join(".").join("rollouts.jsonl");
    let mut rows = Rows::read(&[file.clone(), other, file]);
    rows.discover(&[dir.path().to_path_buf()]);
    assert!(rows.problems.is_empty(), "{:?}", rows.problems);
    assert_eq!(rows.files.len(), 1);
}

#[test]
fn repeats_unknown_records_and_ambiguous_references_are_counted_and_told() {
    let dir = tempfile::tempdir().unwrap();
    rows_file(dir.path(), "rollouts.jsonl", |row| {
        // The harness repeated a tool call id in one invocation: both are tool calls.
        let tools = row["ng_trajectory"]["tool_calls"].as_array_mut().unwrap();
        let mut again = tools[0].clone();
        again["status"] = serde_json::json!("failed");
        tools.push(again);
        // A fifth captured call shares the first one's response key; a reference names it.
        let calls = row["ng_model_call_capture"]["calls"]
            .as_array_mut()
            .unwrap();
        let mut twin = calls[0].clone();
        twin["model_call_id"] = serde_json::json!("twin-call");
        calls.push(twin);
        let model_calls = row["ng_trajectory"]["model_calls"].as_array_mut().unwrap();
        let mut twin = model_calls[0].clone();
        twin["model_call_id"] = serde_json::json!("twin-call");
        model_calls.push(twin);
        // A bundle with a record of unknown kind and an unreadable one.
        row["ng_agent_observations"] = serde_json::json!({"source": "x", "gaps": [],
            "records": [{"kind": "subagent_message", "invocation_id": "root"},
                        {"kind": "tool_call", "invocation_id": "root", "tool_call_id": null}]});
    });
    let rows = Rows::read(&[dir.path().to_path_buf()]);
    let told: Vec<&str> = rows.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        told.iter()
            .any(|m| m.contains("tool call without tool_call_id")),
        "{told:?}"
    );
    assert!(
        told.iter().any(|m| m.contains("subagent_message")),
        "{told:?}"
    );
    let counts = summary_of(&rows, "0-0");
    assert_eq!(
        counts["tool_calls"],
        serde_json::json!({"completed": 1, "failed": 1})
    );
    assert_eq!(counts["unreadable_records"], 1);
    assert_eq!(counts["unknown_records"], 1);
    // The ambiguous reference adds no call: the five captured, the twin without a record.
    assert_eq!(
        counts["model_calls"],
        serde_json::json!({"observed": 5, "joined": 4, "unjoined": 1})
    );
    let analysis = {
        let stores = vec![PathBuf::from(STORE)];
        let location =
            tokscope_core::load::locate(&stores, &["0-0".to_owned()]).unwrap()[0].clone();
        let options =
            tokscope_core::load::options_for(&VerdictOptions::default(), &rows, &location);
        analyze(tokscope_core::store::read_capture(&location), &options)
    };
    let gaps = tokscope_core::graph::rollout_gaps(&analysis);
    assert!(
        gaps.iter()
            .any(|g| matches!(g.fact, tokscope_core::gaps::GapFact::AmbiguousReference(_))),
        "{gaps:?}"
    );
    // Both tool calls of the repeated id are drawn.
    let text = graph_text(&analysis);
    assert_eq!(text.matches("⚒ tool python").count(), 2, "{text}");
}

#[test]
fn replay_joins_each_rollout_with_its_row() {
    let (rows, analyses) = load();
    let locations = tokscope_core::load::locate(&[PathBuf::from(STORE)], &[]).unwrap();
    let mut app = App::new_live(
        vec![PathBuf::from(STORE)],
        VerdictOptions::default(),
        common::viewport(120, 40),
    );
    app.live.watching = false;
    app.update(tokscope::app::Message::Store(
        analyses
            .iter()
            .map(tokscope_core::live::StoreEvent::updated)
            .collect(),
    ));
    let timeline =
        tokscope_core::live::replay::Replay::from_store(locations, VerdictOptions::default())
            .with_rows(std::sync::Arc::new(rows));
    app.replay_on(timeline);
    app.start_replay();
    common::settle(&mut app);
    // At the last call, the open rollout has its row's observations, as when live.
    let end = app.replay.as_ref().unwrap().replay.len();
    key(&mut app, KeyCode::Char(':'));
    for c in end.to_string().chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let shown = app.shown().expect("a rollout open");
    assert!(
        shown.options.observations.is_some(),
        "{} has no observations in replay",
        shown.rollout_id()
    );
    let live = find(&analyses, shown.rollout_id());
    assert_eq!(
        graph_text(shown),
        graph_text(live),
        "the same graph as live"
    );
}

#[test]
fn the_graph_names_the_integration_and_a_status_the_row_did_not_give() {
    let (_, analyses) = load();
    let text = graph_text(find(&analyses, "3-0"));
    assert!(
        text.contains("▸ agent agent:main:main (openclaw, status not recorded)"),
        "{text}"
    );
    assert!(!text.contains("(unknown)"), "{text}");
    assert!(text.contains("⚒ tool exec [call_x1]"), "{text}");
}
