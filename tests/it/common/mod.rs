//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// Path of a fixture under `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Reports of a store as JSON values, via the library.
pub fn reports(store: &std::path::Path) -> Vec<Value> {
    let locations = tokscope_core::load::locate(&[store.to_path_buf()], &[]).unwrap();
    tokscope_core::load::analyze_all(&locations, &Default::default())
        .iter()
        .map(|a| serde_json::to_value(a.report()).unwrap())
        .collect()
}

fn chain_key(chain: &Value) -> String {
    format!(
        "{}|{}|{}",
        chain["call_ids"], chain["interstitial_lens"], chain["root_prompt_len"]
    )
}

fn sorted_strings(value: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = value
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Value::to_string).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn notes_equal(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return false;
    };
    if a.keys().collect::<std::collections::BTreeSet<_>>() != b.keys().collect() {
        return false;
    }
    a.iter().all(|(key, value)| match value {
        Value::Array(_) => sorted_strings(Some(value)) == sorted_strings(b.get(key)),
        _ => json_eq(value, &b[key]),
    })
}

/// JSON equality with numbers compared by value (as Python compares ints and floats).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // Integers exactly (token ids reach 2^64-1), other numbers by value.
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_u64(), y.as_u64(), x.as_i64(), y.as_i64()) {
                (Some(a), Some(b), _, _) => a == b,
                (_, _, Some(a), Some(b)) => a == b,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The comparison rules of `compare.py`; returns the problems found.
pub fn compare(expected: &Value, actual: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let truthy = |v: Option<&Value>| v.is_some_and(tokscope_core::store::state::truthy);
    if truthy(expected.get("mask_sample")) != truthy(actual.get("mask_sample")) {
        problems.push(format!(
            "mask_sample {} != {}",
            actual["mask_sample"], expected["mask_sample"]
        ));
    }
    let (expected_error, actual_error) =
        (truthy(expected.get("error")), truthy(actual.get("error")));
    if expected_error != actual_error {
        problems.push(format!(
            "error {:?} vs expected {:?}",
            actual.get("error"),
            expected.get("error")
        ));
    }
    if !expected_error && !actual_error {
        if !json_eq(&expected["metrics"], &actual["metrics"]) {
            problems.push(format!(
                "metrics {} != {}",
                actual["metrics"], expected["metrics"]
            ));
        }
        if !json_eq(&expected["rebuilt_response"], &actual["rebuilt_response"]) {
            problems.push("rebuilt_response differs".into());
        }
        for key in ["unresolved_retries", "unresolved_parent_calls"] {
            if sorted_strings(expected.get(key)) != sorted_strings(actual.get(key)) {
                problems.push(format!(
                    "{key} {:?} != {:?}",
                    actual.get(key),
                    expected.get(key)
                ));
            }
        }
    }
    let (eb, ab) = (
        &expected["build"],
        actual.get("build").unwrap_or(&Value::Null),
    );
    if !eb.is_null() && !ab.is_null() {
        let chains = |b: &Value, main: bool| {
            let mut keys: Vec<String> = b["chains"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| (c["chain_id"] == "main") == main)
                .map(chain_key)
                .collect();
            keys.sort();
            keys
        };
        if chains(eb, true) != chains(ab, true) {
            problems.push("main chain differs".into());
        }
        if chains(eb, false) != chains(ab, false) {
            problems.push("branch chains differ".into());
        }
        if sorted_strings(eb.get("quarantined")) != sorted_strings(ab.get("quarantined")) {
            problems.push(format!(
                "quarantined {} != {}",
                ab["quarantined"], eb["quarantined"]
            ));
        }
        if !notes_equal(&eb["notes"], &ab["notes"]) {
            problems.push(format!("notes {} != {}", ab["notes"], eb["notes"]));
        }
    }
    problems
}

/// Compare every expected report with the actual reports; returns (passed, failures).
pub fn compare_all(expected: &[Value], actual: &[Value]) -> (usize, Vec<String>) {
    let mut passed = 0;
    let mut failures = Vec::new();
    for report in expected {
        let id = &report["rollout_id"];
        let found: Vec<&Value> = actual.iter().filter(|a| &a["rollout_id"] == id).collect();
        let problems = match found.len() {
            0 => vec!["no report".to_string()],
            1 => compare(report, found[0]),
            _ => vec!["several reports".to_string()],
        };
        if problems.is_empty() {
            passed += 1;
        } else {
            failures.push(format!("{id} {}: {}", report["tags"], problems.join("; ")));
        }
    }
    (passed, failures)
}

/// Expected reports of a fixture store.
pub fn expected(store: &str) -> Vec<Value> {
    std::fs::read_to_string(fixture(&format!("conformance/{store}.expected.jsonl")))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The screen of a terminal of `width` × `height`, as the app knows it.
pub fn viewport(width: u16, height: u16) -> tokscope::app::Viewport {
    tokscope::ui::layout::viewport(ratatui::layout::Rect::new(0, 0, width, height))
}

/// Render the app into a `TestBackend` of its size, without colors; one string a row.
pub fn screen(app: &tokscope::app::App) -> String {
    render(app).0
}

/// Render, and what drawing measured.
fn render(app: &tokscope::app::App) -> (String, tokscope::ui::Drawn) {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(
        app.viewport.width,
        app.viewport.height,
    ))
    .unwrap();
    let mut drawn = tokscope::ui::Drawn::default();
    terminal
        .draw(|frame| drawn = tokscope::ui::draw(frame, app, tokscope::ui::Theme { color: false }))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let line: String = (0..buffer.area.width)
            .map(|x| buffer[(x, y)].symbol())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    (out, drawn)
}

/// Send a message as the terminal loop does: update, draw, report what drawing measured.
pub fn send(app: &mut tokscope::app::App, message: tokscope::app::Message) {
    app.update(message);
    settle(app);
    let (_, drawn) = render(app);
    for message in drawn.messages() {
        app.update(message);
    }
}

/// What the event loop does with a replay step: the replay worker's judging (here on the
/// test's thread), answered as `Message::Judged`.
pub fn settle(app: &mut tokscope::app::App) {
    while let Some(request) = app.take_judge_request() {
        let results = tokscope_core::live::replay::judge(&request);
        app.update(tokscope::app::Message::Judged(results));
    }
}

/// Press one key, through the key bindings.
pub fn key(app: &mut tokscope::app::App, code: crossterm::event::KeyCode) {
    key_event(
        app,
        crossterm::event::KeyEvent::new(code, crossterm::event::KeyModifiers::NONE),
    );
}

/// Press one key with its modifiers, through the key bindings.
pub fn key_event(app: &mut tokscope::app::App, event: crossterm::event::KeyEvent) {
    if let Some(message) = tokscope::ui::keys::message_for(app, event) {
        send(app, message);
    }
}

/// A mouse event, through the hit-testing.
pub fn mouse(app: &mut tokscope::app::App, event: crossterm::event::MouseEvent) {
    if let Some(message) = tokscope::ui::mouse::message_for(app, event) {
        send(app, message);
    }
}

/// Type characters as keys.
pub fn keys(app: &mut tokscope::app::App, text: &str) {
    for c in text.chars() {
        key(app, crossterm::event::KeyCode::Char(c));
    }
}

/// Every rollout of `stores`, analyzed in order with `rows` joined.
pub fn analyze_with_rows(
    stores: &[PathBuf],
    rows: &tokscope_core::observe::Rows,
) -> Vec<tokscope_core::verdict::Analysis> {
    let locations = tokscope_core::load::locate(stores, &[]).unwrap();
    let mut analyses = Vec::new();
    tokscope_core::load::analyze_in_order(
        &locations,
        &tokscope_core::verdict::VerdictOptions::default(),
        rows,
        |a| a,
        |a| analyses.push(a),
    );
    analyses
}

/// The analysis of rollout `id`.
pub fn find<'a>(
    analyses: &'a [tokscope_core::verdict::Analysis],
    id: &str,
) -> &'a tokscope_core::verdict::Analysis {
    analyses.iter().find(|a| a.rollout_id() == id).unwrap()
}

/// The observation graph of a rollout a row joined, one line of text per graph line.
pub fn graph_text(analysis: &tokscope_core::verdict::Analysis) -> String {
    let obs = analysis
        .options
        .observations
        .as_ref()
        .expect("a row joined this rollout");
    tokscope_core::graph::lines(obs, analysis)
        .iter()
        .map(|l| format!("{}\n", tokscope_core::graph::text::line_text(l)))
        .collect()
}

/// The inspector words a set-aside record's fate: no `RecordFate` variant name reaches the
/// screen.
pub fn assert_no_fate_names(text: &str, what: &str) {
    for name in ["DeltaBroken", "Duplicate(", "Conflict(", "EmptyGeneration"] {
        assert!(!text.contains(name), "{what}: {name} on screen: {text}");
    }
}

/// The explorer on `stores` as `App::new` opens it (every rollout analyzed up front, no
/// rows given), on a `width` × `height` screen.
pub fn explorer_on(stores: Vec<PathBuf>, width: u16, height: u16) -> tokscope::app::App {
    let analyses = analyze_with_rows(&stores, &Default::default());
    tokscope::app::App::new(
        stores,
        analyses,
        tokscope_core::verdict::VerdictOptions::default(),
        viewport(width, height),
    )
}

/// The ids the rollout list shows, in its order.
pub fn listed(app: &tokscope::app::App) -> Vec<String> {
    app.list
        .rows
        .iter()
        .map(|&i| app.rollouts[i].rollout_id().to_owned())
        .collect()
}
