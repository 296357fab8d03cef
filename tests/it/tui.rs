//! The explorer: every pane rendered into ratatui's `TestBackend` and snapshot-tested at
//! 120×40 and 80×24 on the conformance fixtures, and key sequences on the app state.

use crate::common;
use crate::common::{key, keys, mouse, screen};

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use tokscope::app::{App, Message, Pane};
use tokscope::ui::{Theme, draw};
use tokscope_core::verdict::VerdictOptions;

const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

fn app(store: &str, size: (u16, u16)) -> App {
    // A relative path keeps the header (and so the snapshots) machine-independent.
    let stores = vec![PathBuf::from(format!("tests/fixtures/conformance/{store}"))];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    App::new(stores, analyses, options, common::viewport(size.0, size.1))
}

/// Type a filter and open the single matching rollout.
fn open(app: &mut App, rollout: &str) {
    keys(app, "/");
    keys(app, rollout);
    key(app, KeyCode::Enter);
    assert_eq!(app.shown().unwrap().rollout_id(), rollout);
}

fn selected_call(app: &App) -> String {
    let analysis = app.shown().unwrap();
    analysis.capture.records[app.selected_record().unwrap()]
        .model_call_id
        .clone()
}

fn snapshot(name: &str, make: impl Fn((u16, u16)) -> App) {
    for size in SIZES {
        let app = make(size);
        insta::assert_snapshot!(format!("{name}_{}x{}", size.0, size.1), screen(&app));
    }
}

#[test]
fn snapshot_opening_screen() {
    snapshot("opening", |size| app("store-1-0", size));
}

#[test]
fn snapshot_divergence_of_a_masked_rollout() {
    snapshot("divergence", |size| {
        let mut app = app("store-1-0", size);
        open(&mut app, "0-5-a0");
        key(&mut app, KeyCode::Tab);
        // Walk the tree to the call whose parent link failed.
        while app.selected_node().is_none_or(|n| {
            app.shown().unwrap().build.as_ref().unwrap().nodes[n]
                .note
                .is_none()
        }) {
            key(&mut app, KeyCode::Down);
        }
        keys(&mut app, "d");
        app
    });
}

#[test]
fn snapshot_gaps_of_a_dangling_rollout() {
    snapshot("gaps", |size| {
        let mut app = app("store-1-0", size);
        open(&mut app, "0-13-a2");
        for _ in 0..4 {
            key(&mut app, KeyCode::Tab);
        }
        assert_eq!(app.focus, Pane::Gaps);
        app
    });
}

#[test]
fn snapshot_unreadable_rollout() {
    snapshot("unreadable", |size| {
        let mut app = app("store-1-0", size);
        open(&mut app, "0-18-a0");
        app
    });
}

#[test]
fn snapshot_tokens_with_branches_and_retries() {
    snapshot("tokens", |size| {
        let mut app = app("store-1-0", size);
        open(&mut app, "0-22-a2");
        keys(&mut app, "c");
        // c shows the next chain without moving the focus: go to the token pane.
        while app.focus != tokscope::app::Pane::Tokens {
            common::key(&mut app, crossterm::event::KeyCode::Tab);
        }
        keys(&mut app, "]]]");
        app
    });
}

#[test]
fn snapshot_help_overlay() {
    snapshot("help", |size| {
        let mut app = app("store-1-0", size);
        keys(&mut app, "?");
        app
    });
}

#[test]
fn snapshot_what_if_pinned_terminal() {
    snapshot("what_if", |size| {
        let mut app = app("store-1-0", size);
        open(&mut app, "0-4-a2");
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "G");
        keys(&mut app, "t");
        app
    });
}

#[test]
fn navigate_to_a_masked_rollout_and_see_why() {
    let mut app = app("store-1-0", (120, 40));
    keys(&mut app, "m");
    // The problems: masked for good, or (live) at risk — not the ones merely waiting.
    assert!(app.list.rows.iter().all(|&i| app.rollouts[i].problem()));
    assert_eq!(
        app.list.rows.len(),
        app.health.tally.masked + app.health.tally.at_risk
    );
    assert_eq!(app.list.rows.len(), 17);
    // Cycle to the reason "unresolved_parent_calls" and open the first such rollout.
    while app.list.reason != Some("unresolved_parent_calls") {
        keys(&mut app, "r");
    }
    let analysis = app.shown().unwrap();
    assert!(
        analysis
            .reasons
            .iter()
            .any(|r| r.code() == "unresolved_parent_calls")
    );
    let text = screen(&app);
    assert!(text.contains("unresolved parent"), "{text}");
}

#[test]
fn divergence_names_the_first_differing_position() {
    let mut app = app("store-1-0", (120, 40));
    open(&mut app, "0-5-a0");
    key(&mut app, KeyCode::Tab);
    let mut guard = 0;
    while app.selected_node().is_none_or(|n| {
        app.shown().unwrap().build.as_ref().unwrap().nodes[n]
            .note
            .is_none()
    }) {
        key(&mut app, KeyCode::Down);
        guard += 1;
        assert!(guard < 50, "no unresolved call found");
    }
    keys(&mut app, "d");
    let divergence = app
        .view
        .as_ref()
        .unwrap()
        .divergence
        .clone()
        .expect("a divergence");
    assert!(divergence.position <= divergence.prompt_len);
    assert!(screen(&app).contains(&format!(
        "first difference at position {}",
        divergence.position
    )));
    // Esc closes it.
    key(&mut app, KeyCode::Esc);
    assert!(app.view.as_ref().unwrap().divergence.is_none());
}

#[test]
fn pinning_a_terminal_rebuilds_and_shows_the_difference() {
    let mut app = app("store-1-0", (120, 40));
    open(&mut app, "0-4-a2");
    let before = app
        .shown()
        .unwrap()
        .build
        .as_ref()
        .unwrap()
        .main_chain()
        .unwrap()
        .links
        .len();
    key(&mut app, KeyCode::Tab);
    keys(&mut app, "G");
    let pinned = selected_call(&app);
    keys(&mut app, "t");
    let what_if = app
        .view
        .as_ref()
        .unwrap()
        .what_if
        .as_ref()
        .expect("a what-if");
    assert_eq!(
        what_if.options.terminal_call_id.as_deref(),
        Some(pinned.as_str())
    );
    let build = what_if.analysis.build.as_ref().unwrap();
    assert_eq!(
        build.notes.terminal_chain,
        Some(tokscope_core::rebuild::ChainId::Main)
    );
    assert_ne!(
        build.main_chain().unwrap().links.len(),
        before,
        "the anchor moved main"
    );
    assert!(
        what_if
            .changes
            .iter()
            .any(|c| matches!(c, tokscope::app::WhatIfChange::MainChain { .. })),
        "{:?}",
        what_if.changes
    );
    assert_eq!(
        selected_call(&app),
        pinned,
        "the pinned call stays selected"
    );
    keys(&mut app, "a");
    assert!(
        !app.view
            .as_ref()
            .unwrap()
            .what_if
            .as_ref()
            .unwrap()
            .options
            .mask_incomplete_when_attributed
    );
    keys(&mut app, "x");
    assert!(app.view.as_ref().unwrap().what_if.is_none());
}

#[test]
fn token_cursor_moves_by_boundary_and_low_probability() {
    let mut app = app("store-1-0", (120, 40));
    open(&mut app, "0-0-a0");
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Tokens);
    keys(&mut app, "]");
    let view = app.view.as_ref().unwrap();
    let provenance = view.tokens.provenance.as_ref().unwrap();
    assert_eq!(view.tokens.cursor, provenance.segments[1].range.0);
    keys(&mut app, ">");
    let cursor = app.view.as_ref().unwrap().tokens.cursor;
    let analysis = app.shown().unwrap();
    let lp = provenance_log_prob(&app, cursor);
    assert!(
        lp.is_some_and(|lp| lp < 0.1f64.ln()),
        "{lp:?} at {cursor} of {}",
        analysis.rollout_id()
    );
    key(&mut app, KeyCode::Right);
    assert_eq!(app.view.as_ref().unwrap().tokens.cursor, cursor + 1);
}

fn provenance_log_prob(app: &App, position: usize) -> Option<f64> {
    let analysis = app.shown()?;
    let provenance = app.view.as_ref()?.tokens.provenance.as_ref()?;
    provenance.log_prob(
        &analysis.capture.records,
        analysis.build.as_ref()?,
        position,
    )
}

#[test]
fn selecting_a_tree_node_moves_the_token_cursor_and_gap_enter_jumps() {
    let mut app = app("store-1-0", (120, 40));
    open(&mut app, "0-3-a1");
    key(&mut app, KeyCode::Tab);
    keys(&mut app, "G");
    let view = app.view.as_ref().unwrap();
    let node = app.selected_node().unwrap();
    let provenance = view.tokens.provenance.as_ref().unwrap();
    let segment = provenance.segment_at(view.tokens.cursor).unwrap();
    assert_eq!(
        segment.origin,
        tokscope_core::rebuild::Origin::Generation { node }
    );
    // Gaps: Enter on a gap with a call selects that call in the tree.
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Gaps);
    let gap_call = app
        .view
        .as_ref()
        .unwrap()
        .gaps
        .iter()
        .position(|g| g.call.is_some())
        .unwrap();
    for _ in 0..gap_call {
        key(&mut app, KeyCode::Down);
    }
    let wanted = app.view.as_ref().unwrap().gaps[gap_call]
        .call
        .clone()
        .unwrap();
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.focus, Pane::Tree);
    assert_eq!(selected_call(&app), wanted);
}

#[test]
fn sorting_filtering_and_mouse() {
    let mut app = app("store-1-0", (120, 40));
    keys(&mut app, "ssss"); // id → state → calls → chains → delivered
    let fractions: Vec<f64> = app
        .list
        .rows
        .iter()
        .map(|&i| app.rollouts[i].delivered.unwrap_or(-1.0))
        .collect();
    assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "{fractions:?}");
    keys(&mut app, "S");
    assert!(app.list.reverse);
    // Clicking the third visible list row selects the rollout shown there.
    let areas = tokscope::ui::layout::areas(Rect::new(0, 0, 120, 40));
    let area = areas.list;
    let third = app.list.scroll.top() + 2;
    let shown = app.rollouts[app.list.rows[third]].rollout_id().to_owned();
    let row_text = screen(&app)
        .lines()
        .nth(usize::from(area.y) + 4)
        .unwrap()
        .to_owned();
    assert!(row_text.contains(&format!("│{shown} ")), "{row_text}");
    mouse(
        &mut app,
        MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: area.x + 3,
            row: area.y + 2 + 2,
            modifiers: KeyModifiers::NONE,
        },
    );
    assert_eq!(app.list.scroll.selected(), third);
    // Wheel over the tree scrolls it without a click (and without moving the focus).
    let tree = areas.tree;
    let focus = app.focus;
    mouse(
        &mut app,
        MouseEvent {
            kind: MouseEventKind::ScrollDown,
            column: tree.x + 3,
            row: tree.y + 3,
            modifiers: KeyModifiers::NONE,
        },
    );
    assert_eq!(app.focus, focus);
    // A filter that matches nothing leaves an empty list, and Esc clears it.
    keys(&mut app, "/zzz");
    assert!(app.list.rows.is_empty());
    assert!(screen(&app).contains("no rollouts match"));
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.list.rows.len(), 30);
}

#[test]
fn export_refuses_the_store_and_writes_elsewhere() {
    let mut app = app("store-1-0", (120, 40));
    open(&mut app, "0-0-a0");
    let inside = PathBuf::from("tests/fixtures/conformance/store-1-0/x.json");
    let error = app
        .export(tokscope::app::ExportKind::Report, &inside, false)
        .unwrap_err();
    assert!(error.to_string().contains("refusing"), "{error}");
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("r.json");
    let written = app
        .export(tokscope::app::ExportKind::Response, &target, false)
        .unwrap();
    let response: serde_json::Value =
        serde_json::from_slice(&std::fs::read(written).unwrap()).unwrap();
    assert_eq!(response["id"], "proj-0-0-a0");
    // Through the keys: `e`, type a path, Enter.
    keys(&mut app, "e");
    for _ in 0..40 {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, dir.path().join("k.json").to_str().unwrap());
    key(&mut app, KeyCode::Enter);
    assert!(dir.path().join("k.json").exists(), "{:?}", app.message);
}

#[test]
fn resize_and_tiny_terminals_do_not_panic() {
    let mut app = app("store-1-0", (120, 40));
    for (w, h) in [(80, 24), (20, 8), (200, 60), (1, 1)] {
        app.update(Message::Resize(common::viewport(w, h)));
        let _ = screen(&app);
    }
}

#[test]
fn demo_store_decodes_to_conversation_text() {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let detok = tokscope_core::detok::Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
    // Relative, so the header in the snapshot does not depend on where the clone lives.
    let stores = vec![PathBuf::from("assets/demo-store")];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    let clean = analyses
        .iter()
        .find(|a| a.rollout_id() == "demo-clean")
        .unwrap();
    assert_eq!(clean.verdict, tokscope_core::verdict::Verdict::Ok);
    let ids: Vec<i128> = clean.capture.records[0]
        .prompt_token_ids
        .iter()
        .map(i128::from)
        .collect();
    let text = detok.decode(&ids);
    assert!(
        text.starts_with("<|system|>\nYou are a careful coding agent."),
        "{text}"
    );
    // Every situation the demo is for is there.
    for (id, masked) in [
        ("demo-clean", false),
        ("demo-retry", false),
        ("demo-delta", false),
        ("demo-torn", false),
        ("demo-mismatch", true),
        ("demo-subagent", true),
        ("demo-compaction", true),
        ("demo-final-retry", true),
        ("demo-dangling", true),
        ("demo-newer-writer", true),
    ] {
        let a = analyses.iter().find(|a| a.rollout_id() == id).unwrap();
        assert_eq!(a.mask_sample, masked, "{id}: {:?}", a.reasons);
    }
    // With the tokenizer, the token pane and the divergence show text.
    let mut app =
        App::new(stores, analyses, options, common::viewport(120, 40)).with_tokenizer(detok);
    open(&mut app, "demo-mismatch");
    key(&mut app, KeyCode::Tab);
    keys(&mut app, "Gd");
    let text = screen(&app);
    assert!(text.contains("first difference at position"), "{text}");
    assert!(text.contains("text: parser.rs"), "{text}");
    insta::assert_snapshot!("demo_mismatch_with_text_120x40", text);
}

#[test]
fn no_color_uses_no_colors() {
    use ratatui::style::Color;
    let app = app("store-1-0", (120, 40));
    let colors = |color: bool| {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        terminal
            .draw(|frame| {
                draw(frame, &app, Theme { color });
            })
            .unwrap();
        let buffer = terminal.backend().buffer().clone();
        buffer
            .content()
            .iter()
            .filter(|cell| cell.fg != Color::Reset || cell.bg != Color::Reset)
            .count()
    };
    assert_eq!(colors(false), 0);
    assert!(colors(true) > 100);
}

#[test]
fn alarm_when_too_many_frozen_rollouts_are_masked() {
    let stores = vec![PathBuf::from("assets/demo-store")];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    let mut app = App::new(stores, analyses, options, common::viewport(120, 40));
    assert!(!screen(&app).contains("ALARM"), "no limit, no alarm");
    app.max_mask_fraction = Some(0.2);
    let text = screen(&app);
    assert!(text.contains("ALARM masked 50% of frozen > 20%"), "{text}");
    app.max_mask_fraction = Some(0.5);
    assert!(!screen(&app).contains("ALARM"));
}

#[test]
fn huge_fields_are_shown_bounded_and_an_idle_screen_is_not_redrawn() {
    use tokscope_testkit::{Call, Rollout};
    let dir = tempfile::tempdir().unwrap();
    let huge = "x".repeat(1 << 20);
    let mut call = Call::root("c1", vec![1, 2, 3], vec![4, 5], 1.0);
    call.output_items = Some(vec![
        serde_json::json!({"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": huge}]}),
    ]);
    call.overrides
        .insert("vendor_blob".into(), serde_json::json!({"data": huge}));
    let rollout = Rollout {
        id: "big".into(),
        calls: vec![call],
        frozen: true,
        ..Rollout::default()
    };
    rollout.write(dir.path()).unwrap();
    let stores = vec![dir.path().to_path_buf()];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    let mut app = App::new(stores, analyses, options, common::viewport(120, 40));
    key(&mut app, KeyCode::Enter);
    // The inspector shows the record: every line clipped, so the text stays short.
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let mut drawn = tokscope::ui::Drawn::default();
    terminal
        .draw(|frame| drawn = draw(frame, &app, Theme { color: false }))
        .unwrap();
    let lines = drawn.inspector_lines.unwrap();
    assert!(lines < 200, "{lines} wrapped lines");
    // To the end of the inspector: the huge fields, clipped.
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Inspector);
    key(&mut app, KeyCode::End);
    let mut seen = String::new();
    for _ in 0..6 {
        seen.push_str(&screen(&app));
        key(&mut app, KeyCode::PageUp);
    }
    assert!(seen.contains("message (assistant):"), "{seen}");
    assert!(seen.contains("vendor_blob (unknown):"), "{seen}");
    assert!(
        seen.contains("xxx… [tokens]"),
        "the message is clipped: {seen}"
    );
    // Nothing in a frozen store moves with the clock.
    assert!(!app.animating());
}

#[test]
fn an_empty_gaps_pane_does_not_claim_joins_without_a_row() {
    let mut app = app("store-1-0", (120, 40));
    // A rollout with no gap at all: without rows, nothing was observed to join.
    let index = (0..app.rollouts.len())
        .find(|&i| {
            app.details
                .get(i)
                .is_some_and(|a| tokscope_core::graph::rollout_gaps(a).is_empty())
        })
        .expect("a rollout without gaps");
    let id = app.rollouts[index].rollout_id().to_owned();
    open(&mut app, &id);
    while app.focus != Pane::Gaps {
        key(&mut app, KeyCode::Tab);
    }
    let text = common::screen(&app);
    assert!(text.contains("No rollout row"), "{text}");
    assert!(!text.contains("everything was observed"), "{text}");
}

#[test]
fn replay_does_not_call_rollouts_not_started_yet_cleared() {
    let analyses = tokscope_testkit::demo_analyses();
    let mut app = tokscope::app::App::new(
        Vec::new(),
        analyses,
        Default::default(),
        common::viewport(160, 45),
    );
    app.start_replay();
    common::settle(&mut app);
    assert!(app.health.tally.cleared > 0, "not started: no files yet");
    let screen = common::screen(&app);
    let header = screen.lines().next().unwrap_or_default();
    assert!(!header.contains("cleared"), "{header}");
}

#[test]
fn the_help_cuts_no_description_at_120_columns_and_wider() {
    for (width, height) in [(120, 40), (160, 45), (200, 50), (80, 24)] {
        let mut app = app("store-1-0", (width, height));
        key(&mut app, KeyCode::Char('?'));
        // Every page of it (j scrolls), with no description cut.
        let mut seen = String::new();
        for _ in 0..40 {
            let shown = screen(&app);
            seen.push_str(&shown);
            key(&mut app, KeyCode::PageDown);
        }
        if width >= 120 {
            assert!(!seen.contains('…'), "{width}x{height}: {seen}");
        }
        for words in ["go to the call", "mask_incomplete_when_attributed", ":@s"] {
            assert!(seen.contains(words), "{width}x{height}: {words} missing");
        }
    }
}
