//! Transitions of the whole app, driven by messages only: no terminal, no drawing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;
use tokscope_core::live::StoreEvent;

fn viewport() -> Viewport {
    Viewport {
        width: 120,
        height: 40,
        list_rows: 6,
        tree_rows: 8,
        detail_rows: 10,
        graph_rows: 7,
        token_rows: 6,
        tokens_per_row: 10,
        text_tokens_per_row: 10,
    }
}

fn demo_store() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store")
}

fn demo() -> App {
    let store = demo_store();
    let locations =
        tokscope_core::load::locate(std::slice::from_ref(&store), &[]).unwrap_or_default();
    let analyses = tokscope_core::load::analyze_all(&locations, &VerdictOptions::default());
    App::new(vec![store], analyses, VerdictOptions::default(), viewport())
}

fn act(app: &mut App, action: Action) {
    app.update(Message::Action(action));
    settle(app);
}

/// What the event loop does with a replay step: the worker's judging, here on this thread.
fn settle(app: &mut App) {
    while let Some(request) = app.take_judge_request() {
        let results = tokscope_core::live::replay::judge(&request);
        app.update(Message::Judged(results));
    }
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.update(Message::Text(TextKey::Char(c)));
    }
}

fn open_id(app: &App) -> Option<&str> {
    app.view
        .as_ref()
        .map(|v| app.rollouts[v.index].rollout_id())
}

#[test]
fn the_list_selection_opens_its_rollout() {
    let mut app = demo();
    assert_eq!(app.list.scroll.selected(), 0);
    let first = open_id(&app).map(str::to_owned);
    act(&mut app, Action::Down);
    assert_ne!(open_id(&app).map(str::to_owned), first);
    act(&mut app, Action::Bottom);
    assert_eq!(app.list.scroll.selected(), app.list.rows.len() - 1);
    act(&mut app, Action::PageUp);
    assert_eq!(
        app.list.scroll.selected(),
        app.list.rows.len() - 1 - viewport().list_rows
    );
    act(&mut app, Action::Top);
    assert_eq!(app.list.scroll.selected(), 0);
}

#[test]
fn the_filter_prompt_edits_and_filters() {
    let mut app = demo();
    act(&mut app, Action::Filter);
    assert_eq!(app.mode, Mode::Filter);
    type_text(&mut app, "mismatch");
    assert!(app.list.rows.iter().all(|&i| {
        app.rollouts[i].rollout_id().contains("mismatch")
            || app.rollouts[i]
                .reasons
                .iter()
                .any(|r| r.to_string().contains("mismatch"))
    }));
    app.update(Message::Text(TextKey::ClearLine));
    assert_eq!(app.list.filter, "");
    type_text(&mut app, "zzz");
    assert!(app.view.is_none(), "nothing matches, nothing open");
    app.update(Message::Text(TextKey::Cancel));
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.list.filter, "", "Esc clears the filter");
    assert!(app.view.is_some());
}

#[test]
fn panes_cycle_and_detail_tabs_follow_focus() {
    let mut app = demo();
    let mut seen = Vec::new();
    for _ in 0..Pane::iter().count() {
        act(&mut app, Action::NextPane);
        seen.push(app.focus);
    }
    assert_eq!(seen.last(), Some(&Pane::List));
    assert_eq!(
        app.detail,
        Tab::Graph,
        "the last detail tab focused stays shown"
    );
    act(&mut app, Action::PrevPane);
    assert_eq!(app.focus, Pane::Graph);
}

#[test]
fn the_inspector_ends_at_the_bottom_and_scrolls_back_at_once() {
    let mut app = demo();
    app.focus = Pane::Inspector;
    app.update(Message::InspectorMeasured(60));
    act(&mut app, Action::Bottom);
    let top = app.view.as_ref().map(|v| v.inspector.top());
    assert_eq!(top, Some(60 - viewport().detail_rows));
    act(&mut app, Action::Up);
    assert_eq!(
        app.view.as_ref().map(|v| v.inspector.top()),
        top.map(|t| t - 1)
    );
    act(&mut app, Action::PageUp);
    act(&mut app, Action::PageUp);
    act(&mut app, Action::PageUp);
    act(&mut app, Action::PageUp);
    act(&mut app, Action::PageUp);
    assert_eq!(app.view.as_ref().map(|v| v.inspector.top()), Some(0));
}

#[test]
fn clicks_select_what_is_under_them() {
    let mut app = demo();
    app.update(Message::Click {
        pane: Pane::List,
        row: Some(2),
    });
    assert_eq!(app.list.scroll.selected(), 2);
    assert_eq!(app.view.as_ref().map(|v| v.index), Some(app.list.rows[2]));
    app.update(Message::Click {
        pane: Pane::Tree,
        row: Some(1),
    });
    assert_eq!(app.focus, Pane::Tree);
    assert_eq!(app.view.as_ref().map(|v| v.tree.selected()), Some(1));
    // Past the last item: nothing changes.
    app.update(Message::Click {
        pane: Pane::List,
        row: Some(1000),
    });
    assert_eq!(app.list.scroll.selected(), 2);
    app.update(Message::Scroll {
        pane: Pane::List,
        delta: 100,
    });
    assert!(app.list.scroll.top() > 0);
    // The selection was pushed along, and the rollout under it is the one open.
    assert!(
        app.list
            .scroll
            .visible()
            .contains(&app.list.scroll.selected())
    );
    assert_eq!(
        app.view.as_ref().map(|v| v.index),
        app.list.selected_rollout()
    );
}

#[test]
fn a_resize_keeps_selections_on_screen() {
    let mut app = demo();
    act(&mut app, Action::Bottom);
    let mut small = viewport();
    small.list_rows = 2;
    app.update(Message::Resize(small));
    let scroll = app.list.scroll;
    assert!(scroll.visible().contains(&scroll.selected()));
}

#[test]
fn export_prompt_writes_and_reports() {
    let mut app = demo();
    let dir = tempfile::tempdir().expect("temp dir");
    act(&mut app, Action::ExportReport);
    assert!(matches!(app.mode, Mode::Export { .. }));
    app.update(Message::Text(TextKey::ClearLine));
    type_text(&mut app, &dir.path().join("r.json").display().to_string());
    app.update(Message::Text(TextKey::Submit));
    assert!(
        matches!(app.message, Some(Notice::Exported(_))),
        "{:?}",
        app.message
    );
    // Into the store: refused.
    act(&mut app, Action::ExportReport);
    app.update(Message::Text(TextKey::ClearLine));
    type_text(&mut app, &demo_store().join("x.json").display().to_string());
    app.update(Message::Text(TextKey::Submit));
    assert_eq!(
        app.message,
        Some(Notice::ExportFailed(ExportError::InsideStore))
    );
}

#[test]
fn live_changes_wait_while_paused() {
    let store = demo_store();
    let locations =
        tokscope_core::load::locate(std::slice::from_ref(&store), &[]).unwrap_or_default();
    let mut analyses = tokscope_core::load::analyze_all(&locations, &VerdictOptions::default());
    let mut app = App::new_live(vec![store], VerdictOptions::default(), viewport());
    assert!(app.view.is_none());
    let last = analyses.pop().expect("a rollout");
    app.update(Message::Store(
        analyses.iter().map(StoreEvent::updated).collect(),
    ));
    let count = app.rollouts.len();
    // A waiting rollout on screen shows the age of its calls in flight: the clock redraws.
    assert!(app.animating(), "waiting rows on screen age with the clock");
    // Summaries only: the selected rollout's analysis is asked of the watcher, once.
    assert!(app.view.is_none() && app.loading());
    let wanted = app.detail_requests().expect("the selection is asked for");
    assert_eq!(wanted[0], analyses[0].capture.location);
    assert_eq!(wanted.len(), 2, "the selected rollout and the one after it");
    assert_eq!(app.detail_requests(), None, "asked once");
    app.update(Message::Store(vec![StoreEvent::Detail(Box::new(
        analyses[0].clone(),
    ))]));
    assert!(
        app.view.is_some(),
        "the rollout opens when its analysis arrives"
    );
    assert!(app.details.len() <= super::details::DETAIL_CACHE);
    act(&mut app, Action::Pause);
    assert!(app.live.paused);
    app.update(Message::Store(vec![StoreEvent::updated(&last)]));
    assert_eq!(app.rollouts.len(), count, "held back");
    assert_eq!(app.live.pending.len(), 1);
    act(&mut app, Action::Pause);
    assert_eq!(app.rollouts.len(), count + 1);
    let now = app.now;
    assert!(!app.live.recent.is_empty());
    assert!(app.update(Message::Tick(now + Duration::from_secs(10))));
    assert!(app.live.recent.is_empty());
}

#[test]
fn replay_steps_and_returns_to_the_present() {
    let mut app = demo();
    let present: Vec<usize> = app.rollouts.iter().map(|a| a.records).collect();
    app.start_replay();
    settle(&mut app);
    assert!(app.replay.is_some());
    let records: usize = app.rollouts.iter().map(|a| a.records).sum();
    assert_eq!(records, 1, "one call in");
    act(&mut app, Action::StepForward);
    let records: usize = app.rollouts.iter().map(|a| a.records).sum();
    assert_eq!(records, 2);
    act(&mut app, Action::Command);
    type_text(&mut app, "no-such-call");
    app.update(Message::Text(TextKey::Submit));
    assert_eq!(app.message, Some(Notice::NoSuchCall("no-such-call".into())));
    act(&mut app, Action::Speed100);
    assert!(
        app.animating(),
        "a replay playing moves its clock between calls"
    );
    app.update(Message::Tick(
        Instant::now() + Duration::from_secs(1_000_000),
    ));
    settle(&mut app);
    assert_eq!(app.replay.as_ref().and_then(|r| r.playing), None, "ended");
    act(&mut app, Action::ToggleReplay);
    assert!(app.replay.is_none());
    let now: Vec<usize> = app.rollouts.iter().map(|a| a.records).collect();
    assert_eq!(now, present);
    act(&mut app, Action::StepBack);
    assert_eq!(app.message, Some(Notice::ReplayOnly));
}

/// The demo, with the subagent rollout open and the tree focused.
fn demo_with_subagent_tree() -> App {
    let mut app = demo();
    act(&mut app, Action::Filter);
    type_text(&mut app, "demo-subagent");
    app.update(Message::Text(TextKey::Submit));
    act(&mut app, Action::Enter);
    assert_eq!(app.focus, Pane::Tree);
    app
}

#[test]
fn the_tree_drives_the_tokens_and_the_what_if() {
    let mut app = demo_with_subagent_tree();
    act(&mut app, Action::Down);
    let record = app.selected_record().expect("a record");
    act(&mut app, Action::PinTerminal);
    let view = app.view.as_ref().expect("open");
    let what_if = view.what_if.as_ref().expect("a what-if");
    assert_eq!(
        what_if.options.terminal_call_id.as_deref(),
        Some(
            app.details.get(view.index).expect("held").capture.records[record]
                .model_call_id
                .as_str()
        )
    );
    act(&mut app, Action::ClearWhatIf);
    assert_eq!(app.message, Some(Notice::WhatIfCleared));
    act(&mut app, Action::Help);
    assert!(app.show_help);
    act(&mut app, Action::Dismiss);
    assert!(!app.show_help);
}

#[test]
fn export_asks_before_replacing_a_file() {
    let mut app = demo();
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join("r.json");
    std::fs::write(&target, b"keep me").expect("write");
    let export_to = |app: &mut App| {
        act(app, Action::ExportReport);
        app.update(Message::Text(TextKey::ClearLine));
        type_text(app, &target.display().to_string());
        app.update(Message::Text(TextKey::Submit));
    };
    export_to(&mut app);
    assert!(matches!(app.mode, Mode::ConfirmOverwrite { .. }));
    app.update(Message::Text(TextKey::Char('n')));
    assert_eq!(app.mode, Mode::Normal);
    assert!(matches!(app.message, Some(Notice::NotOverwritten(_))));
    assert_eq!(std::fs::read(&target).expect("read"), b"keep me");
    export_to(&mut app);
    app.update(Message::Text(TextKey::Char('y')));
    assert!(
        matches!(app.message, Some(Notice::Exported(_))),
        "{:?}",
        app.message
    );
    assert_ne!(std::fs::read(&target).expect("read"), b"keep me");
}

#[test]
fn replay_from_a_live_app_asks_the_watcher_for_a_timeline() {
    let store = demo_store();
    let locations =
        tokscope_core::load::locate(std::slice::from_ref(&store), &[]).unwrap_or_default();
    let analyses = tokscope_core::load::analyze_all(&locations, &VerdictOptions::default());
    let mut app = App::new_live(vec![store], VerdictOptions::default(), viewport());
    app.update(Message::Store(
        analyses.iter().map(StoreEvent::updated).collect(),
    ));
    act(&mut app, Action::ToggleReplay);
    assert_eq!(app.message, Some(Notice::ReplayReading));
    let wanted = app.replay_request().expect("a timeline is asked for");
    assert_eq!(wanted.len(), app.rollouts.len());
    assert_eq!(app.replay_request(), None, "asked once");
    // The watcher's answer: a timeline read from the files, over the app's rollouts.
    let timeline =
        tokscope_core::live::replay::Replay::from_store(wanted, VerdictOptions::default());
    app.update(Message::Store(vec![StoreEvent::Timeline(Box::new(
        timeline,
    ))]));
    assert!(app.replay.is_some());
    app.start_replay();
    settle(&mut app);
    let records: usize = app.rollouts.iter().map(|s| s.records).sum();
    assert_eq!(records, 1, "one call in");
    assert!(
        app.view.is_some(),
        "the selected rollout opens from the timeline"
    );
    assert!(app.details.len() <= super::details::DETAIL_CACHE);
    act(&mut app, Action::StepForward);
    let records: usize = app.rollouts.iter().map(|s| s.records).sum();
    assert_eq!(records, 2);
    act(&mut app, Action::ToggleReplay);
    assert!(app.replay.is_none());
    let now: Vec<usize> = app.rollouts.iter().map(|s| s.records).collect();
    let present: Vec<usize> = analyses.iter().map(|a| a.capture.records.len()).collect();
    assert_eq!(now, present, "back to the present");
}

#[test]
fn cycling_chains_from_the_tree_keeps_the_focus_and_says_which_chain() {
    let mut app = demo_with_subagent_tree();
    act(&mut app, Action::CycleChain);
    assert_eq!(app.focus, Pane::Tree, "c does not move the focus");
    assert!(
        matches!(&app.message, Some(Notice::ChainShown { of: 2, .. })),
        "{:?}",
        app.message
    );
}

#[test]
fn a_jump_while_playing_goes_back_and_the_clock_moves_between_calls() {
    let mut app = demo();
    app.start_replay();
    settle(&mut app);
    for _ in 0..6 {
        act(&mut app, Action::StepForward);
    }
    let start = app.now;
    act(&mut app, Action::Speed10);
    assert!(app.replay.as_ref().is_some_and(|r| r.playing.is_some()));
    // Jump back to call 2 while playing: it stays there (play goes on from it).
    act(&mut app, Action::Command);
    type_text(&mut app, "2");
    app.update(Message::Text(TextKey::Submit));
    let position = |app: &App| app.replay.as_ref().map_or(0, |r| r.replay.position());
    assert_eq!(position(&app), 2);
    app.update(Message::Tick(start + Duration::from_millis(10)));
    assert!(position(&app) <= 3, "not back to where the clock was");
    // The clock shown moves with the wall clock, not only when a call lands.
    let replay = app.replay.as_ref().expect("replaying");
    let a = replay
        .clock(start + Duration::from_millis(20))
        .expect("a clock");
    let b = replay
        .clock(start + Duration::from_millis(120))
        .expect("a clock");
    assert!(b > a, "{a} then {b}");
}

#[test]
fn a_replay_answer_for_a_position_left_is_asked_again_where_the_timeline_is() {
    let mut app = demo();
    app.start_replay();
    settle(&mut app);
    app.update(Message::Action(Action::StepForward));
    let stale = app.take_judge_request().expect("a step asks the worker");
    // The user steps on before the answer comes.
    app.update(Message::Action(Action::StepForward));
    assert_eq!(
        app.take_judge_request().map(|_| ()),
        None,
        "one request in flight"
    );
    let answer = tokscope_core::live::replay::judge(&stale);
    app.update(Message::Judged(answer));
    let again = app
        .take_judge_request()
        .expect("the stale answer is dropped and its rollouts asked again");
    assert_eq!(again.replay.position(), 3, "where the timeline is now");
    app.update(Message::Judged(tokscope_core::live::replay::judge(&again)));
    settle(&mut app);
    // The same as stepping twice with every answer in time.
    let mut in_time = demo();
    in_time.start_replay();
    settle(&mut in_time);
    act(&mut in_time, Action::StepForward);
    act(&mut in_time, Action::StepForward);
    let records = |app: &App| app.rollouts.iter().map(|a| a.records).sum::<usize>();
    assert_eq!(records(&app), 3);
    assert_eq!(records(&app), records(&in_time));
}

#[test]
fn an_answer_to_an_earlier_replays_request_is_not_taken_for_this_ones() {
    let mut app = demo();
    app.start_replay();
    settle(&mut app);
    app.update(Message::Action(Action::StepForward));
    let earlier = app.take_judge_request().expect("asked");
    // Replay left and started again before the answer came.
    app.update(Message::Action(Action::ToggleReplay));
    app.start_replay();
    let now = app.take_judge_request().expect("the new replay asks");
    assert_ne!(earlier.id, now.id, "ids never repeat");
    app.update(Message::Judged(tokscope_core::live::replay::judge(
        &earlier,
    )));
    assert!(
        app.replay.as_ref().unwrap().in_flight.is_some(),
        "the earlier answer is ignored: this replay's request still waits"
    );
    app.update(Message::Judged(tokscope_core::live::replay::judge(&now)));
    settle(&mut app);
    assert!(app.replay.as_ref().unwrap().in_flight.is_none());
    let records: usize = app.rollouts.iter().map(|a| a.records).sum();
    assert_eq!(
        records, 1,
        "one call in: the new replay's answer was applied"
    );
}
