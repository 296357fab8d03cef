//! The causes view and the paths into a masked rollout's failing call, by key sequences on
//! the capture-path store (`tests/fixtures/causes`, Qwen3's tokenizer) and the conformance
//! stores; and `tokscope why` in each format.

use crate::causes::tokenizer;
use crate::common::{self, fixture, key, keys, screen};

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use serde_json::Value;
use tokscope::app::{App, CauseRow, Pane};
use tokscope_core::detok::Detokenizer;
use tokscope_core::load::{analyze_in_order, locate};
use tokscope_core::observe::Rows;
use tokscope_core::verdict::VerdictOptions;
use tokscope_core::verdict::cause::Evidence;

/// The capture-path store with its rows, judged and shown with Qwen3's tokenizer.
fn causes_app(width: u16, height: u16) -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let detok = Arc::new(Detokenizer::load(&tokenizer(dir.path(), "qwen3")).unwrap());
    // Relative, as the header shows the store: a snapshot must not name the checkout.
    let stores = vec![PathBuf::from("tests/fixtures/causes/store")];
    let rows = Rows::read(&[fixture("causes/rollouts.jsonl")]);
    let options = VerdictOptions {
        detokenizer: Some(detok.clone()),
        ..VerdictOptions::default()
    };
    let mut analyses = Vec::new();
    analyze_in_order(
        &locate(&stores, &[]).unwrap(),
        &options,
        &rows,
        |a| a,
        |a| analyses.push(a),
    );
    let app = App::new(stores, analyses, options, common::viewport(width, height))
        .with_shared_tokenizer(detok);
    (app, dir)
}

/// The selected rollout's id.
fn selected(app: &App) -> &str {
    app.rollouts[app.list.selected_rollout().unwrap()].rollout_id()
}

#[test]
fn the_causes_view_lists_the_groups_and_enter_filters_the_list_to_one() {
    for (width, height) in [(80, 24), (120, 40), (160, 45), (200, 50)] {
        let (mut app, _dir) = causes_app(width, height);
        key(&mut app, KeyCode::Char('C'));
        assert!(app.causes.is_some(), "C opens the causes view");
        let shown = screen(&app);
        assert!(shown.contains("causes · 9 group(s)"), "{shown}");
        insta::assert_snapshot!(format!("causes_view_{width}x{height}"), shown);
        // Down to the group of the reasoning blocks stripped from history.
        let rows = app.cause_rows();
        let think = rows
            .iter()
            .position(
                |row| matches!(row, CauseRow::Group(key) if key.ends_with("reasoning_removed")),
            )
            .expect("a group for reasoning removed");
        for _ in 0..think {
            key(&mut app, KeyCode::Down);
        }
        key(&mut app, KeyCode::Enter);
        assert!(app.causes.is_none(), "Enter closes the view");
        assert!(app.list.filter.starts_with("cause:"), "{}", app.list.filter);
        assert_eq!(app.focus, Pane::List);
        let listed: Vec<&str> = app
            .list
            .rows
            .iter()
            .map(|&i| app.rollouts[i].rollout_id())
            .collect();
        assert_eq!(listed, ["think-0", "think-1", "think-2"]);
        // Enter on the rollout: its failing call, the token cursor on the first difference
        // (the generator's own count: token 30).
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.focus, Pane::Tree);
        let view = app.view.as_ref().unwrap();
        let divergence = view.divergence.as_ref().expect("the divergence is shown");
        assert_eq!(divergence.position, 30);
        assert_eq!(view.tokens.cursor, 30);
        let cause = app.rollouts[view.index].cause.clone().unwrap();
        let shown_call =
            &app.shown().unwrap().capture.records[app.selected_record().unwrap()].model_call_id;
        assert_eq!(Some(shown_call), cause.call.as_ref());
    }
}

#[test]
fn the_thinned_tasks_filter_the_list_to_the_task() {
    let (mut app, _dir) = causes_app(120, 40);
    keys(&mut app, ":causes");
    key(&mut app, KeyCode::Enter);
    assert!(app.causes.is_some(), ":causes opens it");
    let rows = app.cause_rows();
    let seven = rows
        .iter()
        .position(|row| *row == CauseRow::Thinned("7".into()))
        .expect("task 7 is thinned");
    key(&mut app, KeyCode::Char('G'));
    for _ in seven..rows.len() - 1 {
        key(&mut app, KeyCode::Up);
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.list.filter, "task:7");
    assert_eq!(app.list.rows.len(), 4, "task 7's four rollouts");
}

#[test]
fn a_click_on_the_health_strip_opens_the_causes_and_esc_closes_them() {
    let (mut app, _dir) = causes_app(120, 40);
    let health_row = 1;
    let message = tokscope::ui::mouse::message_for(
        &app,
        MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 60,
            row: health_row,
            modifiers: KeyModifiers::NONE,
        },
    )
    .expect("the health strip answers a click");
    app.update(message);
    assert!(app.causes.is_some());
    key(&mut app, KeyCode::Esc);
    assert!(app.causes.is_none());
    assert!(
        !screen(&app).contains("causes ·"),
        "the overlay is gone from the screen"
    );
}

#[test]
fn the_list_filters_masked_rollouts_that_carried_reward_and_sorts_by_reward() {
    let (mut app, _dir) = causes_app(160, 45);
    key(&mut app, KeyCode::Char('m'));
    keys(&mut app, "/reward>0");
    key(&mut app, KeyCode::Enter);
    let listed: Vec<usize> = app.list.rows.clone();
    assert!(!listed.is_empty());
    for &i in &listed {
        let s = &app.rollouts[i];
        assert!(
            s.problem() && s.reward().unwrap() > 0.0,
            "{}",
            s.rollout_id()
        );
    }
    let lost: usize = app
        .health
        .causes
        .groups()
        .iter()
        .map(|g| g.reward().masked_with_reward)
        .sum();
    assert_eq!(
        listed.len(),
        lost,
        "the training signal lost, counted alike"
    );
    let shown = screen(&app);
    assert!(
        shown.contains("reward") && shown.contains("agent"),
        "{shown}"
    );
    assert!(shown.contains("swe_agent") || shown.contains("math_agent"));
    // agent: and task: terms combine.
    keys(&mut app, "/");
    key(&mut app, KeyCode::Backspace);
    for _ in 0.."reward>0".len() {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "agent:research task:9");
    key(&mut app, KeyCode::Enter);
    assert!(
        app.list
            .rows
            .iter()
            .all(|&i| app.rollouts[i].agent() == Some("research_agent")),
        "{}",
        app.list.filter
    );
}

#[test]
fn d_or_enter_on_a_two_root_rollout_lands_on_the_failing_call_not_the_first_root() {
    // The rollout of the issue: 1-27-a1, whose first root explains nothing.
    let stores = vec![fixture("conformance/store-1-1")];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(&locate(&stores, &[]).unwrap(), &options);
    for first in [KeyCode::Char('d'), KeyCode::Enter] {
        let mut app = App::new(
            stores.clone(),
            analyses.clone(),
            options.clone(),
            common::viewport(120, 40),
        );
        keys(&mut app, ":rollout 1-27-a1");
        key(&mut app, KeyCode::Enter);
        assert_eq!(selected(&app), "1-27-a1");
        app.focus = Pane::List;
        key(&mut app, first);
        let cause = app.rollouts[app.list.selected_rollout().unwrap()]
            .cause
            .clone()
            .unwrap();
        let Evidence::Link(link) = &cause.evidence else {
            panic!("{cause:?}");
        };
        let view = app.view.as_ref().unwrap();
        let divergence = view
            .divergence
            .as_ref()
            .expect("no 'no divergence to show'");
        assert_eq!(Some(divergence.position), link.position);
        assert_eq!(view.tokens.cursor, divergence.position, "{first:?}");
        assert_eq!(app.message, None, "{:?}", app.message);
    }
}

/// `tokscope why` with `args`, its standard output.
fn why(args: &[&str]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .arg("why")
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn why_prints_the_groups_as_text_markdown_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let qwen = tokenizer(dir.path(), "qwen3");
    let store = fixture("causes/store");
    let rows = fixture("causes/rollouts.jsonl");
    let base = [
        store.to_str().unwrap(),
        "--rollouts",
        rows.to_str().unwrap(),
        "--tokenizer",
        qwen.to_str().unwrap(),
    ];
    let with = |format: &str| {
        let mut args = base.to_vec();
        args.extend(["--format", format]);
        why(&args)
    };
    let json: Value = serde_json::from_str(&with("json")).unwrap();
    assert_eq!(json["rollouts"], 31);
    assert_eq!(json["masked"], 24);
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 9);
    let counted: u64 = groups
        .iter()
        .map(|g| g["rollouts"].as_array().unwrap().len() as u64)
        .sum();
    assert_eq!(counted, 24, "every masked rollout in one group");
    for group in groups {
        for field in [
            "title",
            "reason",
            "signature",
            "rollouts",
            "agents",
            "reward",
        ] {
            assert!(!group[field].is_null(), "{field}: {group}");
        }
        assert!(group["reward"]["mean"].is_number());
        assert!(group["reward"]["masked_with_reward"].is_number());
        assert_eq!(group["signature"]["reason"], group["reason"]);
    }
    let thinned = json["thinned_groups"].as_array().unwrap();
    assert!(
        thinned
            .iter()
            .any(|t| t["task"] == "7" && t["delivered"] == 1 && t["masked"] == 3),
        "{thinned:?}"
    );
    let text = with("text");
    assert!(
        text.starts_with("31 rollouts (0 live): 24 masked, 0 at risk"),
        "{text}"
    );
    assert!(!text.contains("pass --rollouts"), "rows were given");
    assert!(text.contains("reasoning block removed") && text.contains("e.g. think-0"));
    assert!(text.contains("task 7: 1 delivered, 3 masked"));
    let markdown = with("markdown");
    assert!(
        markdown.contains("| rollouts | share | cause |"),
        "{markdown}"
    );
    assert_eq!(
        markdown
            .lines()
            .filter(|l| l.starts_with("| ") && l.contains('%'))
            .count(),
        9,
        "one table row a group"
    );
    // The demo store works without arguments (its own tokenizer).
    assert!(why(&[]).contains("13 rollouts (1 live): 6 masked, 0 at risk"));
    // Without rows it says what they would add; the live store's at-risk rollouts count.
    let conformance = fixture("conformance/store-1-1");
    let bare = why(&[conformance.to_str().unwrap()]);
    assert!(
        bare.starts_with("30 rollouts (30 live): 0 masked, 18 at risk"),
        "{bare}"
    );
    assert!(bare.contains("pass --rollouts PATH"), "{bare}");
    assert!(
        !bare.contains("does not explain"),
        "no row blamed when none was given"
    );
    // One tokenizer for a store of two models' rollouts: said, once.
    let stderr = std::process::Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .arg("why")
        .args(base)
        .output()
        .unwrap()
        .stderr;
    let stderr = String::from_utf8(stderr).unwrap();
    assert_eq!(
        stderr.matches("the records name 2 models").count(),
        1,
        "{stderr}"
    );
    // A tag in a markdown cell is escaped (a renderer would take it for HTML).
    assert!(markdown.contains("&lt;think&gt;") && !markdown.contains("<think>"));
    // Text from a store is sanitized: no escape reaches the terminal.
    assert!(!text.contains('\u{1b}') && !markdown.contains('\u{1b}'));
}

#[test]
fn enter_before_the_analysis_arrives_still_lands_on_the_failing_call() {
    use tokscope_core::live::StoreEvent;
    use tokscope_core::verdict::Summary;
    // A live explorer: summaries first, the analysis of what is looked at later.
    let stores = vec![fixture("conformance/store-1-1")];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(&locate(&stores, &[]).unwrap(), &options);
    let mut app = App::new_live(stores, options, common::viewport(120, 40));
    let summaries = analyses
        .iter()
        .map(|a| StoreEvent::Updated(Box::new(Summary::of(a))))
        .collect();
    app.update(tokscope::app::Message::Store(summaries));
    keys(&mut app, ":rollout 1-27-a1");
    key(&mut app, KeyCode::Enter);
    app.focus = Pane::List;
    key(&mut app, KeyCode::Char('d'));
    assert!(app.view.is_none(), "not read yet");
    let analysis = analyses
        .iter()
        .find(|a| a.rollout_id() == "1-27-a1")
        .unwrap();
    app.update(tokscope::app::Message::Store(vec![StoreEvent::Detail(
        Box::new(analysis.clone()),
    )]));
    let view = app
        .view
        .as_ref()
        .expect("the view opened as the analysis came");
    let divergence = view
        .divergence
        .as_ref()
        .expect("and went to the divergence");
    assert_eq!(view.tokens.cursor, divergence.position);
    assert_eq!(app.focus, Pane::Tree);
}

#[test]
fn build_reports_carry_the_row_and_the_cause() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["build", "--format", "jsonl", "--rollouts"])
        .arg(fixture("causes/rollouts.jsonl"))
        .arg(fixture("causes/store"))
        .output()
        .unwrap();
    assert!(output.status.success());
    let reports: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let think = reports
        .iter()
        .find(|r| r["rollout_id"] == "think-0")
        .unwrap();
    assert_eq!(think["row"]["reward"], 1.0);
    assert_eq!(think["row"]["agent"], "math_agent");
    assert_eq!(think["row"]["task"], "7");
    assert_eq!(think["cause"]["reason"], "unresolved_parent_calls");
    assert_eq!(think["cause"]["evidence"]["position"], 30);
    assert!(
        think["cause"]["key"]
            .as_str()
            .unwrap()
            .starts_with("unresolved_parent_calls/")
    );
    let ok = reports.iter().find(|r| r["rollout_id"] == "ok-0").unwrap();
    assert!(ok["cause"].is_null() && ok["row"]["reward"].is_number());
}

#[test]
fn why_counts_each_store_when_several_are_given() {
    let a = fixture("conformance/store-1-0");
    let b = fixture("conformance/store-1-1");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let text = why(&[a, b]);
    assert!(text.starts_with("60 rollouts"), "{text}");
    for store in [a, b] {
        assert!(
            text.contains(&format!("  {store}: 30 rollouts (30 live)")),
            "{text}"
        );
    }
    let json: Value = serde_json::from_str(&why(&[a, b, "--format", "json"])).unwrap();
    let stores = json["stores"].as_array().unwrap();
    assert_eq!(stores.len(), 2);
    let at_risk: u64 = stores.iter().map(|s| s["at_risk"].as_u64().unwrap()).sum();
    assert_eq!(
        Some(at_risk),
        json["at_risk"].as_u64(),
        "the stores add up to the run"
    );
    let markdown = why(&[a, b, "--format", "markdown"]);
    assert!(markdown.contains("| store | rollouts | live | masked | at risk |"));
}
