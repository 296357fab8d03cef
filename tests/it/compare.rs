//! `tokscope diff`: two runs written through the reference lifecycle that differ in known
//! ways (a rollout fixed, three broken — one of them matched by task under another id —, one
//! gone, one new, a cause group that appears and one that grows), in every format.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use tokscope_testkit::{Call, Rng, RunWriter};

/// What a rollout of a test run is.
#[derive(Clone, Copy)]
enum Fate {
    /// Every call recorded.
    Ok,
    /// Its last call dispatched and never recorded (capture incomplete).
    Lost,
    /// Its second call does not continue the first (a broken link).
    Broken,
}

fn write_rollout(writer: &RunWriter, id: &str, fate: Fate, retire: bool) {
    match fate {
        Fate::Ok => writer.rollout(id, 3, false, retire).unwrap(),
        Fate::Lost => writer.rollout(id, 3, true, false).unwrap(),
        Fate::Broken => {
            writer.clear(id).unwrap();
            let mut rng = Rng::new(7);
            let root = Call::root(&format!("{id}-c1"), rng.tokens(40), rng.tokens(10), 1.0e9);
            // The history re-rendered: the parent's generation is not the child's prefix.
            let child = Call::child(
                &format!("{id}-c2"),
                &root.id,
                rng.tokens(60),
                rng.tokens(5),
                1.0e9 + 1.0,
            );
            for call in [&root, &child] {
                writer.begin_call(id, &call.id).unwrap();
                writer.append(id, call).unwrap();
            }
            writer.freeze(id).unwrap();
        }
    }
}

/// A run: `(id, fate, retired, agent, reward, task, sample)` for each rollout, its rows
/// written to `rows.jsonl` beside (not inside) the store.
type Plan<'a> = &'a [(&'a str, Fate, bool, &'a str, f64, u32, u32)];

fn write_run(dir: &Path, plan: Plan) -> std::path::PathBuf {
    let store = dir.join("store");
    let writer = RunWriter::new(&store);
    let mut rows = String::new();
    for &(id, fate, retire, agent, reward, task, sample) in plan {
        write_rollout(&writer, id, fate, retire);
        rows.push_str(
            &json!({"_ng_rollout_id": id, "reward": reward, "agent_ref": {"name": agent},
                     "_ng_task_index": task, "_ng_rollout_index": sample})
            .to_string(),
        );
        rows.push('\n');
    }
    std::fs::write(dir.join("rows.jsonl"), rows).unwrap();
    store
}

/// Runs A and B, and what tells them apart.
pub(crate) fn runs(dir: &Path) -> (String, String, String, String) {
    use Fate::*;
    let a = write_run(
        &dir.join("a"),
        &[
            ("r1", Ok, false, "swe", 1.0, 1, 0),
            ("r2", Lost, false, "swe", 1.0, 2, 0),
            ("r3", Lost, false, "math", 0.0, 3, 0),
            ("r4", Ok, false, "math", 1.0, 4, 0),
            ("r5", Ok, false, "math", 0.0, 5, 0),
            ("r6", Ok, false, "swe", 1.0, 6, 0),
            ("x-t7", Ok, false, "swe", 1.0, 7, 0),
            ("gone-1", Ok, false, "swe", 1.0, 8, 0),
        ],
    );
    let b = write_run(
        &dir.join("b"),
        &[
            ("r1", Ok, false, "swe", 1.0, 1, 0),
            ("r2", Ok, true, "swe", 1.0, 2, 0), // fixed (and retired: still delivered)
            ("r3", Lost, false, "math", 0.0, 3, 0),
            ("r4", Lost, false, "math", 1.0, 4, 0), // broke
            ("r5", Ok, true, "math", 0.0, 5, 0),
            ("r6", Broken, false, "swe", 1.0, 6, 0), // broke, a new cause
            ("y-t7", Lost, false, "swe", 1.0, 7, 0), // broke, matched by task
            ("new-1", Lost, false, "math", 0.5, 9, 0),
        ],
    );
    let rows = |side: &str| dir.join(side).join("rows.jsonl").display().to_string();
    (
        a.display().to_string(),
        b.display().to_string(),
        rows("a"),
        rows("b"),
    )
}

fn diff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .arg("diff")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn two_runs_differing_in_known_ways_diff_to_exactly_those_ways() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, rows_a, rows_b) = runs(dir.path());
    let with_rows = ["--rollouts-a", &rows_a, "--rollouts-b", &rows_b];
    let json_out = stdout(&diff(
        &[&[a.as_str(), &b, "--format", "json"], &with_rows[..]].concat(),
    ));
    let value: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(
        value["flips"],
        json!({"masked_to_ok": ["r2"], "ok_to_masked": ["r4", "r6", "x-t7"],
               "only_a": ["gone-1"], "only_b": ["new-1"]})
    );
    assert_eq!(
        value["matched"],
        json!({"by_id": 6, "by_task_sample": 1, "by_task": 0})
    );
    let by_task = value["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["a"] == "x-t7")
        .unwrap();
    assert_eq!(
        (&by_task["b"], &by_task["by"], &by_task["b_outcome"]),
        (&json!("y-t7"), &json!("task_sample"), &json!("masked"))
    );
    assert_eq!(
        (&value["a"]["rollouts"], &value["a"]["masked"]),
        (&json!(8), &json!(2))
    );
    assert_eq!(
        (&value["b"]["rollouts"], &value["b"]["masked"]),
        (&json!(8), &json!(5))
    );
    assert_eq!(value["a"]["delivered_fraction"], json!(0.75));
    assert_eq!(value["b"]["delivered_fraction"], json!(3.0 / 8.0));
    // A: 6 of 8 rewards are 1.0; B: r3 0, r5 0, new-1 0.5, the rest 1.
    assert_eq!(value["a"]["mean_reward"], json!(0.75));
    assert_eq!(value["b"]["mean_reward"], json!(5.5 / 8.0));
    let groups: Vec<(&str, u64, u64, &str)> = value["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["reason"].as_str().unwrap(),
                g["a"].as_u64().unwrap(),
                g["b"].as_u64().unwrap(),
                g["change"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert_eq!(groups[0].1..=groups[0].2, 2..=4, "{groups:?}");
    assert_eq!(groups[0].3, "grew");
    assert_eq!((groups[1].1, groups[1].2, groups[1].3), (0, 1, "appeared"));
    assert!(
        groups[1].0.contains("link") || groups[1].0.contains("parent"),
        "{groups:?}"
    );
    let agents: Vec<(&str, u64, u64)> = value["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["agent"].as_str().unwrap(),
                r["a"]["masked"].as_u64().unwrap(),
                r["b"]["masked"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(agents, [("math", 1, 3), ("swe", 1, 2)]);

    let text = stdout(&diff(&[&[a.as_str(), &b], &with_rows[..]].concat()));
    for line in [
        "masked → ok           1  r2",
        "ok → masked           3  r4, r6, x-t7 ↔ y-t7",
        "only in A (gone)      1  gone-1",
        "only in B (new)       1  new-1",
        "matched 6 by id, 1 by task and sample, 0 by task; 1 only in A, 1 only in B",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert!(text.contains("appeared") && text.contains("grew"), "{text}");
    assert!(
        text.contains("  math             rollouts 3 → 4, masked 1 → 3, delivered 66.7% → 25.0%, mean reward 0.333 → 0.375"),
        "{text}"
    );

    let markdown = stdout(&diff(
        &[&[a.as_str(), &b, "--format", "markdown"], &with_rows[..]].concat(),
    ));
    assert!(
        markdown.contains("| ok → masked | 3 | r4, r6, x-t7 ↔ y-t7 |"),
        "{markdown}"
    );
    assert!(markdown.contains("| appeared |"), "{markdown}");
    assert!(markdown.contains("| swe | B | 4 | 2 |"), "{markdown}");
}

#[test]
fn without_rows_rollouts_match_by_id_only_and_the_text_says_nothing_of_reward() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _, _) = runs(dir.path());
    let value: Value = serde_json::from_str(&stdout(&diff(&[&a, &b, "--format", "json"]))).unwrap();
    assert_eq!(value["flips"]["only_a"], json!(["gone-1", "x-t7"]));
    assert_eq!(value["flips"]["only_b"], json!(["new-1", "y-t7"]));
    assert_eq!(value["a"]["mean_reward"], Value::Null);
    let text = stdout(&diff(&[&a, &b]));
    assert!(!text.contains("reward"), "{text}");
}

#[test]
fn a_store_diffed_with_itself_has_no_flips() {
    let store = crate::common::fixture("causes/store");
    let store = store.to_str().unwrap();
    let value: Value =
        serde_json::from_str(&stdout(&diff(&[store, store, "--format", "json"]))).unwrap();
    for flip in ["masked_to_ok", "ok_to_masked", "only_a", "only_b"] {
        assert_eq!(value["flips"][flip], json!([]), "{flip}");
    }
    for group in value["groups"].as_array().unwrap() {
        assert_eq!(group["a"], group["b"]);
        assert_eq!(group["change"], "same");
    }
}

#[test]
fn one_rows_file_for_both_sides_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, rows_a, _) = runs(dir.path());
    let output = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["diff", &a, &b, "--rollouts", &rows_a])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--rollouts-a"), "{stderr}");
    let missing = diff(&[&a, "/nonexistent/b"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/b"));
}

/// The explorer in compare mode on runs A and B (without rows: the rollouts of task 7 are
/// matched by nothing, so one is gone and one new).
fn compare_app(dir: &Path, width: u16, height: u16) -> tokscope::app::App {
    let (a, b, _, _) = runs(dir);
    let stores = vec![std::path::PathBuf::from(a), std::path::PathBuf::from(b)];
    let mut app = crate::common::explorer_on(stores, width, height);
    app.compare_stores();
    app
}

/// The list's line of rollout `id`.
fn row_of<'a>(screen: &'a str, id: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.trim_start_matches('│').starts_with(&format!("{id} ")))
        .unwrap_or_else(|| panic!("no row {id} in\n{screen}"))
}

#[test]
fn compare_mode_lists_the_flips_with_both_verdicts_and_enter_sets_the_runs_side_by_side() {
    use crate::common::{key, screen};
    use crossterm::event::KeyCode;
    for (width, height) in [(80, 24), (120, 40), (160, 45), (200, 50)] {
        let dir = tempfile::tempdir().unwrap();
        let mut app = compare_app(dir.path(), width, height);
        let mut flips = crate::common::listed(&app);
        flips.sort();
        assert_eq!(
            flips,
            ["gone-1", "new-1", "r2", "r4", "r6", "x-t7", "y-t7"],
            "{width}x{height}"
        );
        let shown = screen(&app);
        assert!(shown.contains("in B"), "{shown}");
        // The flips stay in the header at every width (their short form at the least).
        let header = shown.lines().next().unwrap();
        assert!(
            header.contains("2 ok → masked, 2 gone, 2 new")
                || header.contains("2 →masked 2 gone 2 new"),
            "{width}x{height}: {header}"
        );
        assert!(row_of(&shown, "r2").contains("→ok"), "{shown}");
        assert!(row_of(&shown, "r4").contains("→MASKED"), "{shown}");
        assert!(row_of(&shown, "gone-1").contains("gone"), "{shown}");
        assert!(row_of(&shown, "new-1").contains("new (B)"), "{shown}");
        // F: every rollout of A (the unchanged ones too), and B's new ones.
        key(&mut app, KeyCode::Char('F'));
        assert_eq!(
            crate::common::listed(&app).len(),
            10,
            "{:?}",
            crate::common::listed(&app)
        );
        assert!(
            row_of(&screen(&app), "r1").contains(" ok "),
            "{}",
            screen(&app)
        );
        key(&mut app, KeyCode::Char('F'));
        // Enter on r6 (broken in B): its link's first difference, B's call beside A's chain.
        let at = app
            .list
            .rows
            .iter()
            .position(|&i| app.rollouts[i].rollout_id() == "r6")
            .unwrap();
        app.list.scroll.select(at);
        key(&mut app, KeyCode::Enter);
        let view = app.beside.expect("Enter opens A beside B");
        assert_eq!(app.rollouts[view.a].rollout_id(), "r6");
        let shown = screen(&app);
        assert!(
            shown.contains("B's call r6-c2 stops agreeing with what it claims at token"),
            "{width}x{height}\n{shown}"
        );
        assert!(shown.contains("A: the delivered chain"), "{shown}");
        assert!(shown.contains('▸'), "{shown}");
        if (width, height) == (120, 40) {
            // The tokens differ from the position on (the child's prompt is other tokens).
            let marked: Vec<&str> = shown.lines().filter(|l| l.contains('≠')).collect();
            assert!(!marked.is_empty(), "{shown}");
        }
        // The list does not move under it.
        key(&mut app, KeyCode::Down);
        assert_eq!(app.list.scroll.selected(), at);
        key(&mut app, KeyCode::Esc);
        assert!(app.beside.is_none());
    }
}

#[test]
fn outside_compare_mode_f_says_how_to_get_there() {
    let mut app =
        crate::common::explorer_on(vec![std::path::PathBuf::from("assets/demo-store")], 120, 40);
    crate::common::key(&mut app, crossterm::event::KeyCode::Char('F'));
    let status = crate::common::screen(&app);
    assert!(status.contains("--compare STORE_A STORE_B"), "{status}");
}

/// Runs A and B with a rows file inside each store directory, the same ids with other
/// rewards (A: 1.0, B: 0.25).
fn runs_with_rows_inside(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (a, b, rows_a, rows_b) = runs(dir);
    let (a, b) = (std::path::PathBuf::from(a), std::path::PathBuf::from(b));
    std::fs::copy(&rows_a, a.join("rows.jsonl")).unwrap();
    let b_rows = std::fs::read_to_string(&rows_b)
        .unwrap()
        .lines()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).unwrap();
            row["reward"] = json!(0.25);
            format!("{row}\n")
        })
        .collect::<String>();
    std::fs::write(b.join("rows.jsonl"), b_rows).unwrap();
    (a, b)
}

#[test]
fn each_store_keeps_its_own_rows_for_rollouts_of_the_same_id() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = runs_with_rows_inside(dir.path());
    let stores = vec![a.clone(), b.clone()];
    let mut rows = tokscope_core::observe::Rows::read(&[]);
    rows.discover(&stores);
    assert!(
        rows.problems.is_empty(),
        "two stores' rows of one id are no conflict: {:?}",
        rows.problems
    );
    let analyses = crate::common::analyze_with_rows(&stores, &rows);
    let reward = |store: &Path, id: &str| {
        let analysis = analyses
            .iter()
            .find(|x| x.capture.location.dir == store && x.rollout_id() == id)
            .unwrap();
        tokscope_core::verdict::Summary::of(analysis).reward()
    };
    assert_eq!(reward(&a, "r1"), Some(1.0));
    assert_eq!(reward(&b, "r1"), Some(0.25));
}

#[test]
fn the_watcher_gives_each_run_the_rows_given_for_it() {
    use tokscope_core::live::StoreEvent;
    use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
    let dir = tempfile::tempdir().unwrap();
    let (a, b, rows_a, rows_b) = runs(dir.path());
    let (a, b) = (std::path::PathBuf::from(a), std::path::PathBuf::from(b));
    let handle = watch(
        vec![a.clone(), b.clone()],
        WatchOptions {
            mode: WatchMode::Once,
            store_rows: vec![(a.clone(), rows_a.into()), (b.clone(), rows_b.into())],
            ..WatchOptions::default()
        },
    );
    let mut rewards = std::collections::BTreeMap::new();
    while let Ok(event) = handle
        .events
        .recv_timeout(std::time::Duration::from_secs(20))
    {
        match event {
            StoreEvent::Updated(summary) => {
                let side = if summary.location.dir == a { "a" } else { "b" };
                rewards.insert((side, summary.rollout_id().to_owned()), summary.reward());
            }
            StoreEvent::Ready => break,
            _ => {}
        }
    }
    // r5's reward is 0 in both; new-1 (B only) has 0.5; r3 0 in both; r1 1.0 in both.
    assert_eq!(rewards[&("b", "new-1".to_owned())], Some(0.5));
    assert_eq!(rewards[&("a", "gone-1".to_owned())], Some(1.0));
    assert_eq!(rewards.get(&("a", "new-1".to_owned())), None);
    // Tasks come with them: x-t7 and y-t7 pair by task and sample in the explorer too.
    let analyses = crate::common::analyze_with_rows(&[a.clone(), b.clone()], &{
        let mut rows = tokscope_core::observe::Rows::default();
        rows.read_for_store(&a, &[dir.path().join("a/rows.jsonl")]);
        rows.read_for_store(&b, &[dir.path().join("b/rows.jsonl")]);
        rows
    });
    let mut app = tokscope::app::App::new(
        vec![a, b],
        analyses,
        tokscope_core::verdict::VerdictOptions::default(),
        crate::common::viewport(120, 40),
    );
    app.compare_stores();
    let comparison = app.comparison.as_ref().unwrap();
    assert!(
        comparison
            .diff
            .pairs
            .iter()
            .any(|p| p.a == "x-t7" && p.b == "y-t7"),
        "{:?}",
        comparison.diff.pairs
    );
    let shown = crate::common::screen(&app);
    assert!(shown.contains("A: 8 rollouts, 2 masked"), "{shown}");
    assert!(shown.contains("B: 5 masked, 0 at risk"), "{shown}");
    assert!(
        shown.contains("1 masked → ok, 3 ok → masked, 1 gone, 1 new"),
        "{shown}"
    );
    // The health strip counts run A (its two lost calls), not both runs.
    assert!(shown.contains("capture_incomplete 2 "), "{shown}");
}

#[test]
fn while_the_stores_are_read_nothing_is_called_gone() {
    use tokscope_core::live::StoreEvent;
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _, _) = runs(dir.path());
    let stores = vec![std::path::PathBuf::from(&a), std::path::PathBuf::from(&b)];
    let analyses = crate::common::analyze_with_rows(&stores, &Default::default());
    let mut app = tokscope::app::App::new_live(
        stores,
        tokscope_core::verdict::VerdictOptions::default(),
        crate::common::viewport(120, 40),
    );
    app.compare_stores();
    // Only run A's rollouts have come: none of them is gone yet.
    let of_a: Vec<StoreEvent> = analyses
        .iter()
        .filter(|x| x.capture.location.dir.to_str() == Some(a.as_str()))
        .map(|x| StoreEvent::Updated(Box::new(tokscope_core::verdict::Summary::of(x))))
        .collect();
    app.update(tokscope::app::Message::Store(of_a));
    assert!(
        crate::common::listed(&app).is_empty(),
        "{:?}",
        crate::common::listed(&app)
    );
    let gone = app
        .rollouts
        .iter()
        .position(|s| s.rollout_id() == "gone-1")
        .unwrap();
    assert_eq!(
        app.counterpart(gone),
        Some(tokscope::app::Counterpart::Unread)
    );
    // B's come, then the first scan ends: now the flips, the gone and the new.
    let mut rest: Vec<StoreEvent> = analyses
        .iter()
        .filter(|x| x.capture.location.dir.to_str() == Some(b.as_str()))
        .map(|x| StoreEvent::Updated(Box::new(tokscope_core::verdict::Summary::of(x))))
        .collect();
    rest.push(StoreEvent::Ready);
    app.update(tokscope::app::Message::Store(rest));
    assert_eq!(
        app.counterpart(gone),
        Some(tokscope::app::Counterpart::Gone)
    );
    assert_eq!(
        crate::common::listed(&app).len(),
        7,
        "{:?}",
        crate::common::listed(&app)
    );
}

#[test]
fn compare_mode_needs_two_stores_and_each_runs_rows_flag() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tokscope"))
            .args(args)
            .output()
            .unwrap()
    };
    let same = run(&["--compare", "assets/demo-store", "./assets/demo-store"]);
    assert_eq!(same.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&same.stderr).contains("given twice"));
    let missing = run(&[
        "--compare",
        "assets/demo-store",
        "tests/fixtures/causes/store",
        "--rollouts-b",
        "/nonexistent/rows.jsonl",
    ]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--rollouts-b /nonexistent"));
    // Without a terminal, compare mode prints what diff prints.
    let piped = run(&[
        "--compare",
        "assets/demo-store",
        "tests/fixtures/causes/store",
    ]);
    assert!(piped.status.success());
    assert!(String::from_utf8_lossy(&piped.stdout).contains("only in B (new)      31"));
}
