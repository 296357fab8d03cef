//! Key sequences for what users of the best TUIs expect: the `:` command line, `/` search in
//! every pane with `n` / `N`, yank payloads (OSC 52), the divergence from the token pane and
//! from a gap, and the token mark.

use crate::common;
use crate::common::{key, keys, screen};

use std::path::PathBuf;

use crossterm::event::KeyCode;
use tokscope::app::{App, Notice, Pane, Tab};
use tokscope_core::verdict::VerdictOptions;

fn app(store: &str) -> App {
    let stores = vec![PathBuf::from(store)];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    App::new(stores, analyses, options, common::viewport(120, 40))
}

fn fixture() -> App {
    app("tests/fixtures/conformance/store-1-0")
}

/// The fixture store with its rollout rows joined (observations, gaps, the graph).
fn observed() -> App {
    let stores = vec![PathBuf::from("tests/fixtures/conformance/store-1-0")];
    let mut rows = tokscope_core::observe::Rows::read(&[PathBuf::from(
        "tests/fixtures/rows/store-1-0.rows.jsonl",
    )]);
    rows.discover(&stores);
    let analyses = common::analyze_with_rows(&stores, &rows);
    App::new(
        stores,
        analyses,
        VerdictOptions::default(),
        common::viewport(120, 40),
    )
}

fn demo() -> App {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let detok = tokscope_core::detok::Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
    app("assets/demo-store").with_tokenizer(detok)
}

/// Type `:` and a command line, then Enter.
fn command(app: &mut App, line: &str) {
    keys(app, ":");
    keys(app, line);
    key(app, KeyCode::Enter);
}

/// Type `/` and a query, then Enter.
fn search(app: &mut App, query: &str) {
    keys(app, "/");
    keys(app, query);
    key(app, KeyCode::Enter);
}

fn selected_call(app: &App) -> String {
    app.shown().unwrap().capture.records[app.selected_record().unwrap()]
        .model_call_id
        .clone()
}

/// The ids of the chain the token pane shows.
fn chain_values(app: &App) -> Vec<i128> {
    let view = app.view.as_ref().expect("a rollout open");
    let provenance = view.tokens.provenance.as_ref().expect("a chain shown");
    provenance.tokens.values().collect()
}

fn cursor(app: &App) -> usize {
    app.view.as_ref().unwrap().tokens.cursor
}

#[test]
fn command_line_goes_to_rollouts_calls_positions_and_chains() {
    let mut app = fixture();
    // Filtered out of the list: the command still finds it (the filter gives way).
    keys(&mut app, "m");
    command(&mut app, "rollout 0-0-a0");
    assert_eq!(app.shown().unwrap().rollout_id(), "0-0-a0");
    assert!(!app.list.masked_only);
    assert_eq!(app.message, Some(Notice::FiltersCleared));
    command(&mut app, "rollout 0-3-a1");
    assert_eq!(app.shown().unwrap().rollout_id(), "0-3-a1");
    // A call by its short id, as the tree shows it.
    let full = app.shown().unwrap().capture.records[2]
        .model_call_id
        .clone();
    let short = full.strip_prefix("0-3-a1-").unwrap().to_owned();
    command(&mut app, &format!("call {short}"));
    assert_eq!(selected_call(&app), full);
    assert_eq!(app.focus, Pane::Tree);
    command(&mut app, "pos 7");
    assert_eq!((app.focus, cursor(&app)), (Pane::Tokens, 7));
    command(&mut app, "chain 2");
    assert_eq!(app.view.as_ref().unwrap().tokens.chain, Some(1));
    command(&mut app, "chain 9");
    assert_eq!(app.message, Some(Notice::NoSuchChain(9)));
    command(&mut app, "rollout nope");
    assert_eq!(app.message, Some(Notice::NoSuchRollout("nope".into())));
    command(&mut app, "frobnicate now");
    assert!(matches!(app.message, Some(Notice::BadCommand(_))));
    assert!(
        screen(&app).contains(":rollout ID"),
        "the commands are named"
    );
    // Outside replay a bare number is a replay jump, and says so.
    command(&mut app, "5");
    assert_eq!(app.message, Some(Notice::ReplayOnly));
}

#[test]
fn search_in_the_tree_the_gaps_and_the_graph() {
    let mut app = observed();
    command(&mut app, "rollout 0-3-a1");
    key(&mut app, KeyCode::Tab);
    let ids: Vec<String> = app
        .shown()
        .unwrap()
        .capture
        .records
        .iter()
        .map(|r| r.model_call_id.clone())
        .collect();
    // c00 matches every call: n walks forward, N back, and wraps.
    search(&mut app, "C00");
    assert_eq!(
        app.message,
        Some(Notice::NotFound("C00".into())),
        "smart case"
    );
    search(&mut app, "c00");
    let first = selected_call(&app);
    keys(&mut app, "n");
    let second = selected_call(&app);
    assert_ne!(first, second);
    keys(&mut app, "N");
    assert_eq!(selected_call(&app), first);
    search(&mut app, &ids[4][ids[4].len() - 4..]);
    assert_eq!(selected_call(&app), ids[4]);
    // The gaps: by their text.
    keys(&mut app, "p");
    let gaps = app.view.as_ref().unwrap().gaps.len();
    assert!(gaps > 1);
    // A word of the last gap as the pane shows it.
    let last = app.view.as_ref().unwrap().gaps[gaps - 1].fact.to_string();
    let word: String = last
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(':')
        .to_lowercase();
    search(&mut app, &word);
    let view = app.view.as_ref().unwrap();
    let at = view.gap_list.selected();
    assert!(
        format!("{:?}", view.gaps[at].fact)
            .to_lowercase()
            .contains(&word),
        "{word} in {:?}",
        view.gaps[at].fact
    );
    keys(&mut app, "n");
    assert!(app.message.is_none() || matches!(app.message, Some(Notice::SearchWrapped(true))));
    // Nothing there: said, and nothing moves.
    search(&mut app, "no such thing at all");
    assert_eq!(
        app.message,
        Some(Notice::NotFound("no such thing at all".into()))
    );
    assert_eq!(app.view.as_ref().unwrap().gap_list.selected(), at);
    // The graph: a call id in it.
    keys(&mut app, "o");
    let view = app.view.as_ref().unwrap();
    let (index, call) = view
        .graph
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, l)| l.call.clone().map(|c| (i, c)))
        .expect("a joined call in the graph");
    search(&mut app, &call);
    assert_eq!(app.focus, Pane::Graph);
    let selected = app.view.as_ref().unwrap().graph_list.selected();
    assert!(
        selected == index
            || app.view.as_ref().unwrap().graph[selected].call.as_deref() == Some(call.as_str()),
        "{selected} vs {index}"
    );
}

#[test]
fn search_tokens_by_ids_and_by_decoded_text() {
    let mut app = demo();
    command(&mut app, "rollout demo-mismatch");
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Tokens);
    let values = chain_values(&app);
    // An id sequence, found where it first occurs after the cursor.
    let wanted = &values[40..43];
    let line: Vec<String> = wanted.iter().map(ToString::to_string).collect();
    search(&mut app, &line.join(" "));
    let at = cursor(&app);
    assert_eq!(&values[at..at + 3], wanted);
    assert!(at <= 40);
    // Decoded text, across tokens.
    search(&mut app, "parser.rs");
    let at = cursor(&app);
    let detok = app.detok.clone().unwrap();
    let text = detok.decode(&values[at..(at + 8).min(values.len())]);
    assert!(text.contains("parser.rs"), "{text:?} at {at}");
    // The low-probability jump moved to > and <.
    keys(&mut app, ">");
    assert_ne!(cursor(&app), at);
}

#[test]
fn search_in_the_inspector_scrolls_to_the_line() {
    let mut app = fixture();
    command(&mut app, "rollout 0-3-a1");
    keys(&mut app, "i");
    search(&mut app, "digest");
    let found = app.search.as_ref().expect("a search");
    let matches = found.inspector_matches.clone().expect("measured");
    assert!(!matches.is_empty());
    let top = app.view.as_ref().unwrap().inspector.top();
    assert!(matches.contains(&top), "{top} in {matches:?}");
    assert!(screen(&app).contains("digest"));
    // n visits every match, even those below the last scrollable top, then wraps.
    search(&mut app, "prefix");
    let matches = app
        .search
        .as_ref()
        .unwrap()
        .inspector_matches
        .clone()
        .unwrap();
    assert!(matches.len() >= 2, "{matches:?}");
    let mut visited = vec![app.search.as_ref().unwrap().inspector_at];
    for _ in 0..matches.len() {
        keys(&mut app, "n");
        visited.push(app.search.as_ref().unwrap().inspector_at);
    }
    assert_eq!(
        visited.first(),
        visited.last(),
        "back to the first: {visited:?}"
    );
    let distinct: std::collections::HashSet<_> = visited.iter().collect();
    assert_eq!(distinct.len(), matches.len(), "{visited:?}");
    assert_eq!(app.message, Some(Notice::SearchWrapped(true)));
    // Another rollout: the current match starts again from the top.
    keys(&mut app, "n");
    command(&mut app, "rollout 0-21-a2");
    keys(&mut app, "i");
    let found = app.search.as_ref().unwrap();
    let top = app.view.as_ref().unwrap().inspector.top();
    let first = found
        .inspector_matches
        .as_ref()
        .and_then(|m| m.iter().position(|&l| l >= top));
    assert_eq!(found.inspector_at, first);
}

#[test]
fn yank_payloads() {
    let mut app = demo();
    command(&mut app, "rollout demo-mismatch");
    keys(&mut app, "y");
    assert_eq!(app.take_clipboard().as_deref(), Some("demo-mismatch"));
    // The tree: the full call id (the tree shows c003).
    command(&mut app, "call c003");
    keys(&mut app, "y");
    assert_eq!(app.take_clipboard().as_deref(), Some("demo-mismatch-c003"));
    assert!(matches!(
        app.message,
        Some(Notice::Yanked {
            what: "call id",
            ..
        })
    ));
    // The inspector: the selected record as JSON.
    keys(&mut app, "i");
    keys(&mut app, "y");
    let json: serde_json::Value = serde_json::from_str(&app.take_clipboard().unwrap()).unwrap();
    assert_eq!(json["model_call_id"], "demo-mismatch-c003");
    assert!(
        json["prompt_token_ids"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
    // Tokens: a marked range as ids, and as text.
    command(&mut app, "pos 3");
    keys(&mut app, "v");
    command(&mut app, "pos 6");
    keys(&mut app, "y");
    let values = chain_values(&app);
    let ids: Vec<String> = values[3..=6].iter().map(ToString::to_string).collect();
    assert_eq!(app.take_clipboard(), Some(ids.join(" ")));
    keys(&mut app, "Y");
    let text = app.take_clipboard().unwrap();
    assert_eq!(text, app.detok.as_ref().unwrap().decode(&values[3..=6]));
    // The mark shows on screen only as a style; clearing it yanks the call under the cursor.
    keys(&mut app, "v");
    keys(&mut app, "y");
    assert!(
        app.take_clipboard()
            .is_some_and(|ids| ids.split(' ').count() > 4)
    );
    assert_eq!(
        tokscope::term::clipboard_sequence("demo-mismatch-c003"),
        "\x1b]52;c;ZGVtby1taXNtYXRjaC1jMDAz\x1b\\"
    );
}

#[test]
fn divergence_from_the_token_pane_and_from_a_gap() {
    let mut app = demo();
    command(&mut app, "rollout demo-mismatch");
    command(&mut app, "call c003");
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Tokens);
    // The cursor on c003's tokens: d shows c003's divergence.
    keys(&mut app, "G");
    keys(&mut app, "d");
    assert!(
        screen(&app).contains("first difference at position"),
        "{}",
        screen(&app)
    );
    assert!(selected_call(&app).ends_with("c003"));
    // From a gap with a call: that call's divergence (or why there is none).
    keys(&mut app, "p");
    let gaps = app.view.as_ref().unwrap().gaps.clone();
    if let Some(at) = gaps.iter().position(|g| g.call.is_some()) {
        for _ in 0..at {
            key(&mut app, KeyCode::Down);
        }
        keys(&mut app, "d");
        assert_eq!(Some(selected_call(&app)), gaps[at].call.clone());
        assert_eq!(app.detail, Tab::Inspector);
    }
    // A rollout without a build: d says why there is nothing to compare.
    let mut app = fixture();
    command(&mut app, "rollout 0-18-a0");
    keys(&mut app, "p");
    keys(&mut app, "d");
    assert_eq!(app.message, Some(Notice::NoBuild));
}

#[test]
fn enter_on_a_read_gap_shows_the_problem_and_the_columns_align() {
    let mut app = fixture();
    command(&mut app, "rollout 0-18-a0");
    keys(&mut app, "p");
    let gaps = app.view.as_ref().unwrap().gaps.clone();
    let at = gaps
        .iter()
        .position(|g| matches!(g.fact, tokscope_core::gaps::GapFact::ReadIssue(_)))
        .expect("a read gap");
    for _ in 0..at {
        key(&mut app, KeyCode::Down);
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.focus, Pane::Inspector);
    let shown = screen(&app);
    let matches = app
        .search
        .as_ref()
        .and_then(|s| s.inspector_matches.clone());
    assert!(matches.is_some_and(|m| !m.is_empty()), "the problem found");
    assert!(shown.contains("! tokens.jsonl line 1"), "{shown}");
    // The facts start in one column whether a gap names a call or not.
    let mut app = observed();
    let mut checked = 0;
    let ids: Vec<String> = app
        .rollouts
        .iter()
        .map(|r| r.rollout_id().to_owned())
        .collect();
    for id in ids {
        command(&mut app, &format!("rollout {id}"));
        keys(&mut app, "p");
        let gaps = app.view.as_ref().unwrap().gaps.clone();
        let with_call = gaps.iter().filter(|g| g.call.is_some()).count();
        if gaps.len() < 2 || with_call == 0 || with_call == gaps.len() || gaps.len() > 30 {
            continue;
        }
        let shown = screen(&app);
        let starts: std::collections::HashSet<usize> = shown
            .lines()
            .flat_map(|l| l.split('│'))
            .filter(|row| {
                [
                    "in flight",
                    "dangling",
                    "incomplete",
                    "sentinel",
                    "parent link",
                    "retry",
                    "empty gen",
                    "dropped",
                    "read",
                    "observed",
                    "join",
                ]
                .iter()
                .any(|label| row.starts_with(label))
            })
            .filter_map(|row| {
                let after_label: Vec<char> = row.chars().skip(12).collect();
                let call_end = after_label.iter().position(|c| *c == ' ')?;
                let gap = after_label[call_end..]
                    .iter()
                    .take_while(|c| **c == ' ')
                    .count();
                Some(12 + call_end + gap)
            })
            .collect();
        assert_eq!(starts.len(), 1, "{id}: {starts:?}\n{shown}");
        checked += 1;
    }
    assert!(checked > 0, "a rollout with gaps with and without calls");
}

#[test]
fn replay_jumps_count_seconds_from_now_and_a_call_id_selects_its_rollout_and_call() {
    let mut app = demo();
    app.start_replay();
    let time = |app: &App| app.replay.as_ref().unwrap().replay.time().unwrap();
    let position = |app: &App| app.replay.as_ref().unwrap().replay.position();
    command(&mut app, "8");
    assert_eq!(position(&app), 8);
    let here = time(&app);
    // The header gives the store's wall-clock time (UTC) beside the offset.
    let header = screen(&app).lines().next().unwrap().to_owned();
    let utc = tokscope_core::text::utc_of_seconds(here)
        .unwrap()
        .replace('T', " ");
    assert!(
        header.contains("REPLAY call 8/") && header.contains(&utc),
        "{header}"
    );
    // `:+N` is from where the clock is, not from the start.
    command(&mut app, "+2");
    assert!(
        time(&app) >= here && time(&app) <= here + 2.0,
        "{here} → {}",
        time(&app)
    );
    assert!(position(&app) >= 8);
    let ahead = time(&app);
    // `:-N` goes back N seconds (it was read as a call id).
    command(&mut app, "-2");
    assert_eq!(app.message, None, "{:?}", app.message);
    // (the clock lands on the last call at or before that moment)
    assert!(time(&app) <= ahead - 2.0, "{ahead} → {}", time(&app));
    assert!(position(&app) < 8 + 3);
    // `:@N` is the absolute form: N seconds after the first call.
    command(&mut app, "@0");
    assert_eq!(position(&app), 1);
    // A call id moves the clock there and selects the call's rollout and the call.
    let call = "demo-mismatch-c003";
    command(&mut app, call);
    assert_eq!(app.message, None, "{:?}", app.message);
    let selected = app.list.selected_rollout().unwrap();
    assert_eq!(app.rollouts[selected].rollout_id(), "demo-mismatch");
    let record = app
        .selected_record()
        .expect("the call is selected in the tree");
    assert_eq!(
        app.shown().unwrap().capture.records[record].model_call_id,
        call
    );
    assert_eq!(app.focus, tokscope::app::Pane::Tree);
    // The status bar shows replay's keys while replaying.
    let status = screen(&app).lines().last().unwrap().to_owned();
    for hint in [
        "Space play/pause",
        ", . step",
        "1/2/3 1×/10×/100×",
        "R live",
    ] {
        assert!(status.contains(hint), "{status}");
    }
    // `I` turns skipping idle gaps off and on, and says so.
    key(&mut app, KeyCode::Char('I'));
    assert!(!app.replay.as_ref().unwrap().skip_idle);
    assert!(screen(&app).contains("replay plays idle gaps in full"));
    key(&mut app, KeyCode::Char('I'));
    assert!(app.replay.as_ref().unwrap().skip_idle);
    // The prompt says what the jumps count in.
    keys(&mut app, ":");
    let shown = screen(&app);
    assert!(shown.contains(":+s/:-s seconds from now"), "{shown}");
    key(&mut app, KeyCode::Esc);
}

#[test]
fn the_inspector_says_what_the_build_did_with_a_record_in_words() {
    use tokscope_core::rebuild::RecordFate;
    for store in [
        "assets/demo-store",
        "tests/fixtures/conformance/store-1-0",
        "tests/fixtures/conformance/store-1-1",
    ] {
        let mut app = app(store);
        let analyses = tokscope_core::load::analyze_all(
            &tokscope_core::load::locate(&[PathBuf::from(store)], &[]).unwrap(),
            &VerdictOptions::default(),
        );
        let found: Vec<(String, String)> = analyses
            .iter()
            .filter_map(|a| {
                let build = a.build.as_ref()?;
                let index = build
                    .fates
                    .iter()
                    .position(|f| !matches!(f, RecordFate::Placed(_)))?;
                Some((
                    a.rollout_id().to_owned(),
                    a.capture.records[index].model_call_id.clone(),
                ))
            })
            .collect();
        assert!(!found.is_empty() || store == "assets/demo-store", "{store}");
        for (rollout, call) in found {
            // Set-aside records come after the placed calls in the tree: the last row.
            command(&mut app, &format!("rollout {rollout}"));
            app.focus = tokscope::app::Pane::Tree;
            key(&mut app, KeyCode::Char('G'));
            let text = tokscope::ui::inspector_text(&app);
            assert!(
                text.contains("build decision: set aside: "),
                "{rollout} {call}: {text}"
            );
            common::assert_no_fate_names(&text, &format!("{rollout} {call}"));
        }
    }
}

#[test]
fn a_call_in_flight_is_as_old_as_the_time_since_its_rollouts_last_record() {
    let mut app = fixture();
    let index = app
        .rollouts
        .iter()
        .position(|s| s.rollout_id() == "0-13-a2")
        .unwrap();
    let last = app.rollouts[index].last_write.expect("records with times");
    // Two hours after the last record (an intent written long ago looks stale).
    app.wall = Some(last + 7_200.0);
    command(&mut app, "rollout 0-13-a2");
    // The list full width (zoomed), so the reason column is whole.
    app.focus = tokscope::app::Pane::List;
    key(&mut app, KeyCode::Char('f'));
    let shown = screen(&app);
    key(&mut app, KeyCode::Char('f'));
    let row = shown
        .lines()
        .find(|l| l.contains("0-13-a2"))
        .expect("the rollout is listed");
    assert!(row.contains("waiting on c009-fa8b (2.0 h)"), "{row}");
    // The gaps pane says it too (zoomed, so its lines are whole).
    key(&mut app, KeyCode::Char('p'));
    key(&mut app, KeyCode::Char('f'));
    let shown = screen(&app);
    assert!(shown.contains("(waiting 2.0 h at least)"), "{shown}");
}
