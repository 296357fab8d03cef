//! The explorer's second round at every size a user works at (80×24, 120×40, 160×45,
//! 200×50): replay that moves the way you mean, wall-clock times, ages that agree, words that
//! name what they count, nothing internal on screen.

use crate::common::{self, key, keys, screen};

use std::path::PathBuf;

use crossterm::event::KeyCode;
use tokscope::app::{App, Message, Pane};
use tokscope_core::text::{Zone, moment};
use tokscope_core::verdict::VerdictOptions;

const SIZES: [(u16, u16); 4] = [(80, 24), (120, 40), (160, 45), (200, 50)];

fn app(store: &str, rows: Option<&str>, (width, height): (u16, u16)) -> App {
    let stores = vec![PathBuf::from(store)];
    let rows = tokscope_core::observe::Rows::read(
        &rows.map(PathBuf::from).into_iter().collect::<Vec<_>>(),
    );
    let analyses = common::analyze_with_rows(&stores, &rows);
    App::new(
        stores,
        analyses,
        VerdictOptions::default(),
        common::viewport(width, height),
    )
}

fn command(app: &mut App, line: &str) {
    keys(app, ":");
    keys(app, line);
    key(app, KeyCode::Enter);
}

/// The focused pane zoomed (its lines whole), as text; zoomed back after.
fn zoomed(app: &mut App) -> String {
    key(app, KeyCode::Char('f'));
    let shown = screen(app);
    key(app, KeyCode::Char('f'));
    shown
}

#[test]
fn replay_jumps_times_and_keys_at_every_size() {
    for size in SIZES {
        let mut app = app("assets/demo-store", None, size);
        app.start_replay();
        let replay = |app: &App| app.replay.as_ref().unwrap().replay.time().unwrap();
        command(&mut app, "8");
        let here = replay(&app);
        command(&mut app, "+2");
        assert!(
            replay(&app) >= here && replay(&app) <= here + 2.0,
            "{size:?}"
        );
        let ahead = replay(&app);
        command(&mut app, "-2");
        assert!(replay(&app) <= ahead - 2.0, "{size:?}");
        assert_eq!(app.message, None, "{size:?}: {:?}", app.message);
        command(&mut app, "demo-mismatch-c003");
        let selected = app.list.selected_rollout().unwrap();
        assert_eq!(
            app.rollouts[selected].rollout_id(),
            "demo-mismatch",
            "{size:?}"
        );
        assert_eq!(app.focus, Pane::Tree, "{size:?}");
        // The status bar shows replay's keys (the play key whatever the width).
        let status = screen(&app).lines().last().unwrap().to_owned();
        assert!(status.contains("Space play/pause"), "{size:?}: {status}");
        if size.0 >= 120 {
            assert!(status.contains(", . step"), "{size:?}: {status}");
        }
        // Space plays at 1×; an idle gap is skipped, and the status line says so.
        let times: Vec<f64> = {
            let replay = &app.replay.as_ref().unwrap().replay;
            replay.moments().iter().map(|m| m.time).collect()
        };
        let gap = (1..times.len())
            .find(|&i| times[i] - times[i - 1] > 10.0)
            .expect("the demo has idle gaps between rollouts");
        command(&mut app, &gap.to_string());
        key(&mut app, KeyCode::Char(' '));
        assert_eq!(app.replay.as_ref().unwrap().playing, Some(1.0), "{size:?}");
        app.update(Message::Tick(
            std::time::Instant::now() + std::time::Duration::from_millis(50),
        ));
        assert!(
            matches!(app.message, Some(tokscope::app::Notice::SkippedIdle(_))),
            "{size:?}: {:?}",
            app.message
        );
        assert!(
            screen(&app).lines().last().unwrap().contains("skipped"),
            "{size:?}"
        );
        key(&mut app, KeyCode::Char(' '));
        command(&mut app, "demo-mismatch-c003");
        // The header gives the store's time, UTC, then local with `Z`.
        if size.0 >= 120 {
            let time = replay(&app);
            let header = screen(&app).lines().next().unwrap().to_owned();
            assert!(
                header.contains(&moment(time, Zone::Utc).unwrap()),
                "{size:?}: {header}"
            );
            key(&mut app, KeyCode::Char('Z'));
            let header = screen(&app).lines().next().unwrap().to_owned();
            assert!(
                header.contains(&moment(time, Zone::Local).unwrap()),
                "{size:?}: {header}"
            );
            key(&mut app, KeyCode::Char('Z'));
        }
    }
}

#[test]
fn ages_counts_and_records_in_words_at_every_size() {
    for size in SIZES {
        let mut app = app("tests/fixtures/conformance/store-1-0", None, size);
        let index = app
            .rollouts
            .iter()
            .position(|s| s.rollout_id() == "0-13-a2")
            .unwrap();
        app.wall = Some(app.rollouts[index].last_write.unwrap() + 7_200.0);
        command(&mut app, "rollout 0-13-a2");
        app.focus = Pane::List;
        let list = zoomed(&mut app);
        assert!(
            list.contains("waiting on c009-fa8b (2.0 h)"),
            "{size:?}:\n{list}"
        );
        // One word for each count: the header's generated tokens, the chain's tokens.
        app.focus = Pane::Tokens;
        let tokens = zoomed(&mut app);
        assert!(
            tokens.contains("tokens in the chain"),
            "{size:?}:\n{tokens}"
        );
        if size.0 >= 160 {
            assert!(
                screen(&app).contains("generated tokens captured"),
                "{size:?}"
            );
        }
        // A set-aside record in words, not an enum name.
        command(&mut app, "rollout 0-13-a2");
        app.focus = Pane::Tree;
        key(&mut app, KeyCode::Char('G'));
        key(&mut app, KeyCode::Char('i'));
        let inspector = zoomed(&mut app);
        assert!(
            inspector.contains("build decision: "),
            "{size:?}:\n{inspector}"
        );
        common::assert_no_fate_names(&inspector, &format!("{size:?}"));
    }
}

#[test]
fn the_graph_names_its_integration_and_tool_call_ids_at_every_size() {
    for size in SIZES {
        let mut app = app(
            "tests/fixtures/conformance/store-1-0",
            Some("tests/fixtures/rows/store-1-0.rows.jsonl"),
            size,
        );
        command(&mut app, "rollout 0-3-a1");
        key(&mut app, KeyCode::Char('o'));
        let graph = zoomed(&mut app);
        assert!(
            graph.contains("(demo_agent, completed)"),
            "{size:?}:\n{graph}"
        );
        assert!(
            graph.contains("⚒ tool edit [call_0-3-a1-c001-148a]"),
            "{size:?}:\n{graph}"
        );
        // The spawning call's id is on the tool line a subagent names.
        if size.0 >= 120 {
            assert!(
                graph.contains("spawned by tool call spawn-0"),
                "{size:?}:\n{graph}"
            );
        }
    }
}

#[test]
fn decoded_cells_follow_the_pane() {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    for size in SIZES {
        let detok =
            tokscope_core::detok::Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
        let mut app = app("assets/demo-store", None, size).with_tokenizer(detok);
        app.update(Message::Resize(common::viewport(size.0, size.1)));
        command(&mut app, "rollout demo-clean");
        let view = app.view.as_ref().unwrap();
        let per_row = view.tokens.per_row();
        let wide = app.viewport.text_tokens_per_row < app.viewport.tokens_per_row;
        assert_eq!(
            per_row, app.viewport.text_tokens_per_row,
            "{size:?}: cells mode"
        );
        assert_eq!(wide, size.0 >= 160, "{size:?}: wide cells where six fit");
        // Back to ids: the rows hold ids' worth again.
        key(&mut app, KeyCode::Char('T'));
        key(&mut app, KeyCode::Char('T'));
        assert_eq!(
            app.view.as_ref().unwrap().tokens.per_row(),
            app.viewport.tokens_per_row,
            "{size:?}: ids"
        );
    }
}
