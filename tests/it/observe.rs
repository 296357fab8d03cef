//! The observation graph: rollout rows joined to the token capture by identifiers only, every
//! observation gap and join gap listed, the declared terminal, the graph pane and its links
//! to the chain tree and the token pane.

use crate::common;
use crate::common::{analyze_with_rows, find, graph_text, key, screen};

use std::path::PathBuf;

use crossterm::event::KeyCode;
use tokscope::app::{App, Pane};
use tokscope_core::gaps::GapKind;
use tokscope_core::graph::{CallState, call_state, lines};
use tokscope_core::observe::Rows;
use tokscope_core::verdict::{Analysis, VerdictOptions};

const STORE: &str = "tests/fixtures/conformance/store-1-0";
const ROWS: &str = "tests/fixtures/rows/store-1-0.rows.jsonl";

fn load() -> (Rows, Vec<Analysis>) {
    let stores = vec![PathBuf::from(STORE)];
    let mut rows = Rows::read(&[PathBuf::from(ROWS)]);
    rows.discover(&stores);
    let analyses = analyze_with_rows(&stores, &rows);
    (rows, analyses)
}

fn gap_texts(analysis: &Analysis) -> Vec<String> {
    tokscope_core::graph::rollout_gaps(analysis)
        .iter()
        .filter(|g| matches!(g.kind(), GapKind::Observation | GapKind::Join))
        .map(|g| format!("{} {}", g.call.clone().unwrap_or_default(), g.fact))
        .collect()
}

#[test]
fn rows_are_read_leniently_with_problems_located() {
    let (rows, analyses) = load();
    assert_eq!(
        rows.by_rollout.len(),
        31,
        "30 rollouts and one row for no rollout"
    );
    // The malformed line, and the record of unknown kind (kept, and said so).
    let problems: Vec<(usize, &str)> = rows
        .problems
        .iter()
        .map(|p| (p.source.line, p.message.as_str()))
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|(line, m)| *line == 32 && m.contains("malformed"))
    );
    assert!(problems.iter().any(|(_, m)| m.contains("budget_event")));
    let ids = analyses.iter().map(|a| a.rollout_id()).collect();
    assert_eq!(rows.unmatched(&ids), vec!["9-9-a9"]);
    // Schema 1.0 without capture_key joins by rollout_id.
    assert!(find(&analyses, "0-7-a0").options.observations.is_some());
}

#[test]
fn subagent_cycle_verifier_and_judge_call() {
    let (_, analyses) = load();
    let text = graph_text(find(&analyses, "0-3-a1"));
    assert!(
        text.contains("spawned by tool call spawn-0-3-a1-"),
        "{text}"
    );
    assert!(text.contains("⟲ parent cycle"), "{text}");
    assert!(
        text.contains("✓ verifier verify-0-3-a1 (completed) judge_server: score 1 scored"),
        "{text}"
    );
    // The judge's call is the verifier's, not the policy's: shown as such, not as a gap.
    assert!(
        text.contains("● judge judge-0-3-a1 [the verifier's (not a policy call)]"),
        "{text}"
    );
    assert!(text.contains("∑ grading llm_judge (completed)"), "{text}");
    assert!(
        text.contains("□ sandbox sb-0-3-a1 agent (completed) wall 12.5s peak 512MiB cpu 3.2s"),
        "{text}"
    );
    let gaps = gap_texts(find(&analyses, "0-3-a1"));
    assert!(
        gaps.iter().any(|g| g.contains("is on a parent cycle")),
        "{gaps:?}"
    );
    assert!(!gaps.iter().any(|g| g.contains("judge-0-3-a1")), "{gaps:?}");
}

#[test]
fn tools_compactions_and_call_states() {
    let (_, analyses) = load();
    let clean = find(&analyses, "0-0-a0");
    let text = graph_text(clean);
    // With its tool-call id, so a subagent's "spawned by tool call ID" can be matched.
    assert!(
        text.contains("⚒ tool search [call_0-0-a0-c001-0e83] (failed 120ms) sandbox sb-0-0-a0"),
        "{text}"
    );
    // The integration that observed the agent, from the bundle's `source`.
    assert!(
        text.contains("▸ agent inv-0-0-a0 (demo_agent, completed)"),
        "{text}"
    );
    assert!(text.contains("(timeout 120ms)"), "{text}");
    assert!(text.contains("[in main]"), "{text}");
    let obs = clean.options.observations.as_ref().unwrap();
    let flagged: Vec<_> = lines(obs, clean)
        .into_iter()
        .filter(|l| l.problem)
        .collect();
    assert!(
        flagged.len() >= 2,
        "the failed and the timed-out tool are flagged"
    );
    assert!(
        !flagged.iter().any(|l| matches!(
            l.node,
            tokscope_core::graph::GraphNode::ModelCall { judge: true, .. }
        )),
        "the judge's call is not"
    );
    let compaction = graph_text(find(&analyses, "0-5-a0"));
    assert!(
        compaction.contains("⇣ compaction (completed) tokens 8000→1200 trigger=auto"),
        "{compaction}"
    );
    // A retry sibling the build quarantined.
    let retry = find(&analyses, "0-1-a1");
    let quarantined = &retry.build.as_ref().unwrap().quarantined[0];
    assert_eq!(call_state(retry, quarantined), CallState::Quarantined);
    assert!(graph_text(retry).contains("[quarantined]"));
}

#[test]
fn observation_and_join_gaps_are_listed() {
    let (_, analyses) = load();
    let gaps = gap_texts(find(&analyses, "0-2-a1"));
    assert!(gaps.iter().any(|g| g.contains("tool_output_unavailable: the harness dropped the tool output [invocation inv-0-2-a1] [span span-x]")), "{gaps:?}");
    let ghost = gap_texts(find(&analyses, "0-1-a1"));
    assert!(
        ghost
            .iter()
            .any(|g| g.starts_with("0-1-a1-ghost observed model call with no token record")),
        "{ghost:?}"
    );
    let unowned = gap_texts(find(&analyses, "0-8-a1"));
    assert!(
        unowned
            .iter()
            .any(|g| g.contains("token record that no invocation owns")),
        "{unowned:?}"
    );
    let unknown = graph_text(find(&analyses, "0-10-a1"));
    assert!(
        unknown.contains("record of unknown kind \"budget_event\" (kept)"),
        "{unknown}"
    );
}

#[test]
fn a_rows_response_id_is_never_a_declaration() {
    // 0-9-a1's row carries a `response.id` that matches no model call, as every real agent's
    // row does (`resp_<uuid4>`): it must not mask, and the verdict is the one without rows.
    let (_, analyses) = load();
    let with_row = find(&analyses, "0-9-a1");
    let location = with_row.capture.location.clone();
    let bare = tokscope_core::verdict::analyze(
        tokscope_core::store::read_capture(&location),
        &VerdictOptions::default(),
    );
    assert_eq!(with_row.mask_sample, bare.mask_sample);
    assert_eq!(with_row.reasons, bare.reasons);
    assert!(
        !with_row
            .reasons
            .iter()
            .any(|r| r.code() == "declared_response_unmatched")
    );
    let gaps = gap_texts(with_row);
    assert!(
        !gaps.iter().any(|g| g.contains("declared")),
        "no spurious join gap: {gaps:?}"
    );
}

#[test]
fn an_explicit_declared_response_anchors_or_masks() {
    let (rows, analyses) = load();
    let clean = find(&analyses, "0-0-a0");
    let observations = std::sync::Arc::new(rows.by_rollout["0-0-a0"].clone());
    let judge = |declared: &str| {
        tokscope_core::verdict::analyze(
            tokscope_core::store::read_capture(&clean.capture.location),
            &VerdictOptions {
                declared_response_id: Some(declared.into()),
                observations: Some(observations.clone()),
                ..VerdictOptions::default()
            },
        )
    };
    let unmatched = judge("resp-that-does-not-exist");
    assert!(unmatched.mask_sample);
    assert_eq!(
        unmatched.first_reason().unwrap().code(),
        "declared_response_unmatched"
    );
    // The main chain's last call, joined through its response id: it anchors main.
    let build = clean.build.as_ref().unwrap();
    let last = build.main_chain().unwrap().links.last().unwrap().node;
    let call = &clean.capture.records[build.nodes[last].record].model_call_id;
    let anchored = judge(&format!("resp-{call}"));
    assert_eq!(anchored.mask_sample, clean.mask_sample);
    assert_eq!(
        anchored
            .build
            .as_ref()
            .unwrap()
            .notes
            .terminal_call_id
            .as_deref(),
        Some(call.as_str())
    );
    assert_eq!(
        anchored.build.as_ref().unwrap().notes.terminal_chain,
        Some(tokscope_core::rebuild::ChainId::Main)
    );
}

fn explorer(size: (u16, u16)) -> App {
    let (_, analyses) = load();
    let mut app = App::new(
        vec![PathBuf::from(STORE)],
        analyses,
        VerdictOptions::default(),
        common::viewport(size.0, size.1),
    );
    for c in "/0-3-a1".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    for _ in 0..5 {
        key(&mut app, KeyCode::Tab);
    }
    assert_eq!(app.focus, Pane::Graph);
    app
}

#[test]
fn graph_pane_walks_to_tokens_and_back() {
    let mut app = explorer((120, 40));
    // Down to the subagent's model call, then Enter: the tree and the token pane follow.
    let view = app.view.as_ref().unwrap();
    let target = view
        .graph
        .iter()
        .position(|l| {
            l.call.is_some()
                && view.graph[..]
                    .iter()
                    .take_while(|x| {
                        !matches!(
                            x.node,
                            tokscope_core::graph::GraphNode::Invocation { subagent: true, .. }
                        )
                    })
                    .count()
                    < view.graph.iter().position(|y| std::ptr::eq(y, l)).unwrap()
        })
        .expect("a subagent model call");
    let call = app.view.as_ref().unwrap().graph[target]
        .call
        .clone()
        .unwrap();
    for _ in 0..target {
        key(&mut app, KeyCode::Down);
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.focus, Pane::Tree);
    let analysis = app.shown().unwrap();
    assert_eq!(
        analysis.capture.records[app.selected_record().unwrap()].model_call_id,
        call
    );
    let view = app.view.as_ref().unwrap();
    let segment = view
        .tokens
        .provenance
        .as_ref()
        .unwrap()
        .segment_at(view.tokens.cursor)
        .unwrap();
    let node = app.selected_node().unwrap();
    assert_eq!(
        segment.origin,
        tokscope_core::rebuild::Origin::Generation { node }
    );
    // And back: moving in the tree moves the graph selection to that call.
    key(&mut app, KeyCode::Char('g'));
    let first = app.shown().unwrap().capture.records[app.selected_record().unwrap()]
        .model_call_id
        .clone();
    let view = app.view.as_ref().unwrap();
    assert_eq!(
        view.graph[view.graph_list.selected()].call.as_deref(),
        Some(first.as_str())
    );
}

#[test]
fn snapshot_graph_pane() {
    for size in [(120, 40), (80, 24)] {
        let app = explorer(size);
        insta::assert_snapshot!(format!("graph_{}x{}", size.0, size.1), screen(&app));
    }
}

#[test]
fn headless_reports_carry_observations() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["build", STORE, "--rollouts", ROWS, "--format", "jsonl"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("store-1-0.rows.jsonl:32: malformed row"),
        "{stderr}"
    );
    assert!(stderr.contains("9-9-a9, which is in no store"), "{stderr}");
    let reports: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let subagent = reports
        .iter()
        .find(|r| r["rollout_id"] == "0-3-a1")
        .unwrap();
    let obs = &subagent["observations"];
    assert_eq!(obs["invocations"], 2);
    assert_eq!(obs["model_calls"]["unjoined"], 1, "the judge call");
    assert_eq!(obs["verifier_invocations"], 1);
    let clean = reports
        .iter()
        .find(|r| r["rollout_id"] == "0-0-a0")
        .unwrap();
    assert_eq!(clean["observations"]["tool_calls"]["failed"], 1);
    assert_eq!(clean["observations"]["tool_calls"]["timeout"], 1);
}

#[test]
fn a_rollout_without_a_row_is_a_gap() {
    let stores = vec![PathBuf::from(STORE)];
    let mut rows = Rows::read(&[PathBuf::from(ROWS)]);
    rows.by_rollout.remove("0-0-a0");
    let locations = tokscope_core::load::locate(&stores, &["0-0-a0".to_string()]).unwrap();
    let mut analyses = Vec::new();
    tokscope_core::load::analyze_in_order(
        &locations,
        &VerdictOptions::default(),
        &rows,
        |a| a,
        |a| analyses.push(a),
    );
    assert_eq!(
        gap_texts(&analyses[0]),
        vec![" no rollout row names this rollout".to_string()]
    );
}

#[test]
fn the_graph_shows_the_selected_record_as_written() {
    let mut app = explorer((120, 40));
    let text = screen(&app);
    assert!(text.contains("\"kind\":\"agent_invocation\""), "{text}");
    key(&mut app, KeyCode::Down);
    assert!(screen(&app).contains("\"response_metadata\""));
}
