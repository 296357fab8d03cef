//! Live monitoring: a store written progressively while the watcher runs — a torn line
//! completed later, a truncated file, a deleted and recreated rollout, a retired one — must
//! converge to exactly the reports of a cold read. And the app keeps its selection through
//! updates, pauses, and replays.

use crate::common;
use crate::common::key;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossterm::event::KeyCode;

use serde_json::Value;
use tokscope::app::{App, Message};
use tokscope_core::live::StoreEvent;
use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
use tokscope_core::store::RolloutLocation;
use tokscope_core::verdict::{Summary, VerdictOptions, analyze};
use tokscope_testkit::{Rng, linear_rollout};

fn append(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
    file.sync_data().unwrap();
}

fn state(dir: &Path, id: &str, frozen: bool, retired: bool, version: u64) {
    let temporary = dir.join(format!(".tokens-state-{id}-{version}"));
    let body = serde_json::json!({"entry_digests": {}, "frozen": frozen, "incomplete": false,
        "indexed_size": 0, "retired": retired, "snapshot_id": if frozen { "s" } else { "" }, "version": version});
    std::fs::write(&temporary, body.to_string()).unwrap();
    std::fs::rename(&temporary, dir.join(format!("{id}.tokens.state.json"))).unwrap();
}

fn lines(id: &str, calls: usize, seed: u64) -> Vec<String> {
    linear_rollout(
        id,
        calls,
        &mut Rng::new(seed),
        6,
        seed.is_multiple_of(2),
        true,
    )
    .calls
    .iter()
    .map(|c| c.to_line(id))
    .collect()
}

/// Write every situation the watcher must follow, with pauses so events interleave.
fn write_store(dir: &Path) {
    let pause = || std::thread::sleep(Duration::from_millis(15));
    let records = |id: &str| dir.join(format!("{id}.tokens.jsonl"));
    let intents = |id: &str| dir.join(format!("{id}.tokens.intents"));
    // Progressive appends, intent first.
    for (index, line) in lines("grow", 6, 1).iter().enumerate() {
        append(&intents("grow"), format!("grow-c{index:05}\n").as_bytes());
        pause();
        append(&records("grow"), format!("{line}\n").as_bytes());
        state(dir, "grow", false, false, index as u64 + 1);
        pause();
    }
    // A torn line, completed later.
    let torn = lines("torn", 3, 3);
    append(
        &records("torn"),
        format!("{}\n{}\n", torn[0], torn[1]).as_bytes(),
    );
    let (head, tail) = torn[2].split_at(torn[2].len() / 2);
    append(&records("torn"), head.as_bytes());
    pause();
    pause();
    append(&records("torn"), format!("{tail}\n").as_bytes());
    // A file truncated and rewritten with other records.
    for line in lines("trunc", 4, 5) {
        append(&records("trunc"), format!("{line}\n").as_bytes());
        pause();
    }
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(records("trunc"))
        .unwrap();
    pause();
    for line in lines("trunc", 2, 7) {
        append(&records("trunc"), format!("{line}\n").as_bytes());
    }
    // A rollout deleted (cleared for a new attempt) and recreated under the same id.
    for line in lines("again", 3, 9) {
        append(&records("again"), format!("{line}\n").as_bytes());
    }
    append(
        &intents("again"),
        b"again-c00000\nagain-c00001\nagain-c00002\nagain-lost\n",
    );
    state(dir, "again", false, false, 1);
    pause();
    for suffix in ["jsonl", "intents", "state.json"] {
        std::fs::remove_file(dir.join(format!("again.tokens.{suffix}"))).unwrap();
    }
    pause();
    for line in lines("again", 2, 11) {
        append(&records("again"), format!("{line}\n").as_bytes());
    }
    state(dir, "again", true, false, 1);
    // A rollout frozen, then retired: payload deleted, tombstone left.
    for line in lines("gone", 2, 13) {
        append(&records("gone"), format!("{line}\n").as_bytes());
    }
    state(dir, "gone", true, false, 3);
    pause();
    std::fs::remove_file(records("gone")).unwrap();
    state(dir, "gone", true, true, 4);
    // A rollout cleared for good.
    for line in lines("cleared", 2, 15) {
        append(&records("cleared"), format!("{line}\n").as_bytes());
    }
    // Long enough for a poller (20 ms) to see it before it goes.
    std::thread::sleep(Duration::from_millis(100));
    std::fs::remove_file(records("cleared")).unwrap();
}

fn report(analysis: &tokscope_core::verdict::Analysis) -> Value {
    serde_json::to_value(analysis.report()).unwrap()
}

fn converge(mode: WatchMode) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().to_path_buf();
    let handle = watch(
        vec![dir.clone()],
        WatchOptions {
            mode,
            ..WatchOptions::default()
        },
    );
    // Wait for the initial (empty) scan.
    loop {
        match handle
            .events
            .recv_timeout(Duration::from_secs(5))
            .expect("watcher answers")
        {
            StoreEvent::Ready => break,
            StoreEvent::Error(e) => panic!("{e}"),
            StoreEvent::StoreGone(dir) => panic!("{} gone", dir.display()),
            _ => {}
        }
    }
    write_store(&dir);
    let mut summaries: HashMap<RolloutLocation, Summary> = HashMap::new();
    let mut latest: HashMap<RolloutLocation, tokscope_core::verdict::Analysis> = HashMap::new();
    let quiet = Duration::from_millis(600);
    let collect =
        |handle: &tokscope_core::live::watch::Watch,
         summaries: &mut HashMap<RolloutLocation, Summary>,
         latest: &mut HashMap<RolloutLocation, tokscope_core::verdict::Analysis>| {
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                match handle.events.recv_timeout(quiet) {
                    Ok(StoreEvent::Updated(summary)) => {
                        summaries.insert(summary.location.clone(), *summary);
                    }
                    Ok(StoreEvent::Detail(analysis)) => {
                        latest.insert(analysis.capture.location.clone(), *analysis);
                    }
                    Ok(StoreEvent::Error(e)) => panic!("{e}"),
                    Ok(StoreEvent::StoreGone(dir)) => panic!("{} gone", dir.display()),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        };
    collect(&handle, &mut summaries, &mut latest);
    let all = summaries.keys().cloned().collect();
    // Every rollout's full analysis, as the UI asks for the ones it looks at (the watcher
    // holds nothing of most of them by now).
    handle.focus(all);
    collect(&handle, &mut summaries, &mut latest);
    drop(handle);
    let cold: Vec<_> = tokscope_core::load::locate(std::slice::from_ref(&dir), &[]).unwrap();
    let options = VerdictOptions::default();
    for location in &cold {
        let live = latest
            .get(location)
            .unwrap_or_else(|| panic!("{} never reported", location.id));
        let cold = analyze(tokscope_core::store::read_capture(location), &options);
        assert_eq!(
            report(live),
            report(&cold),
            "{} diverged from a cold read",
            location.id
        );
        assert_eq!(summaries.get(location), Some(&Summary::of(&cold)));
    }
    let ids = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut seen: Vec<String> = cold.iter().map(|l| l.id.clone()).collect();
    seen.sort();
    assert_eq!(seen, ids(&["again", "gone", "grow", "torn", "trunc"]));
    // The rollout whose files all vanished is reported as cleared.
    let cleared = latest
        .values()
        .find(|a| a.capture.location.id == "cleared")
        .expect("cleared reported");
    assert_eq!(
        cleared.lifecycle,
        tokscope_core::verdict::Lifecycle::Cleared
    );
    let gone = &latest
        .values()
        .find(|a| a.capture.location.id == "gone")
        .unwrap();
    assert_eq!(gone.lifecycle, tokscope_core::verdict::Lifecycle::Retired);
    let again = &latest
        .values()
        .find(|a| a.capture.location.id == "again")
        .unwrap();
    assert_eq!(again.capture.records.len(), 2, "the recreated attempt only");
    assert!(
        again.capture.intents.is_empty(),
        "the old attempt's intents are gone"
    );
}

#[test]
fn events_converge_to_a_cold_read() {
    converge(WatchMode::Events);
}

#[test]
fn polling_converges_to_a_cold_read() {
    converge(WatchMode::Poll(Duration::from_millis(20)));
}

#[test]
fn only_new_bytes_are_read() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().to_path_buf();
    let mut store =
        tokscope_core::live::LiveStore::new(vec![dir.clone()], VerdictOptions::default());
    let path = dir.join("r.tokens.jsonl");
    let all = lines("r", 20, 21);
    let mut written = 0;
    for line in &all {
        append(&path, format!("{line}\n").as_bytes());
        written += line.len() as u64 + 1;
        let changes = store.rescan().unwrap();
        assert_eq!(changes.len(), 1);
    }
    assert_eq!(
        store.records_bytes_read(),
        written,
        "every byte read exactly once"
    );
    assert!(
        store.rescan().unwrap().is_empty(),
        "nothing new, nothing rebuilt"
    );
}

fn analysis_with(dir: &Path, id: &str, calls: usize) -> tokscope_core::verdict::Analysis {
    let mut rollout = linear_rollout(id, calls, &mut Rng::new(31), 5, false, true);
    rollout.calls.truncate(calls);
    rollout.write(dir).unwrap();
    let location = RolloutLocation {
        dir: dir.to_path_buf(),
        id: id.into(),
    };
    analyze(
        tokscope_core::store::read_capture(&location),
        &VerdictOptions::default(),
    )
}

#[test]
fn updates_keep_the_selection_and_pause_holds_them() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().to_path_buf();
    let mut app = App::new_live(
        vec![dir.clone()],
        VerdictOptions::default(),
        common::viewport(120, 40),
    );
    let first = analysis_with(&dir, "a", 3);
    app.update(Message::Store(vec![
        StoreEvent::Updated(Box::new(Summary::of(&first))),
        StoreEvent::Detail(Box::new(first)),
        StoreEvent::Detail(Box::new(analysis_with(&dir, "b", 2))),
        StoreEvent::Ready,
    ]));
    assert_eq!(app.list.rows.len(), 2);
    // Select rollout b, its second call, and a token.
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Down);
    let call = app.shown().unwrap().capture.records[app.selected_record().unwrap()]
        .model_call_id
        .clone();
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Right);
    let cursor = app.view.as_ref().unwrap().tokens.cursor;
    // b grows by one call: the selection and the cursor stay.
    let grown = analysis_with(&dir, "b", 4);
    app.update(Message::Store(vec![
        StoreEvent::updated(&grown),
        StoreEvent::Detail(Box::new(grown)),
    ]));
    assert_eq!(app.shown().unwrap().rollout_id(), "b");
    assert_eq!(app.shown().unwrap().capture.records.len(), 4);
    let now = app.shown().unwrap().capture.records[app.selected_record().unwrap()]
        .model_call_id
        .clone();
    assert_eq!(now, call);
    assert_eq!(app.view.as_ref().unwrap().tokens.cursor, cursor);
    assert!(
        app.live.recent.contains_key(&1),
        "the changed rollout is highlighted"
    );
    // Paused: changes wait, counted; resuming catches up.
    key(&mut app, KeyCode::Char(' '));
    app.update(Message::Store(vec![StoreEvent::updated(&analysis_with(
        &dir, "c", 1,
    ))]));
    assert_eq!(app.live.pending.len(), 1);
    assert_eq!(app.rollouts.len(), 2);
    key(&mut app, KeyCode::Char(' '));
    assert_eq!(app.rollouts.len(), 3);
    assert!(app.live.pending.is_empty());
}

#[test]
fn replay_steps_jumps_plays_and_restores() {
    let stores = vec![
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/store-1-0"),
    ];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    let before: Vec<Value> = analyses.iter().map(report).collect();
    let mut app = App::new(stores, analyses, options, common::viewport(120, 40));
    app.start_replay();
    common::settle(&mut app);
    let position = |app: &App| app.replay.as_ref().unwrap().replay.position();
    assert_eq!(position(&app), 1);
    assert_eq!(
        app.list.rows.len(),
        1,
        "only the rollout whose first call happened is listed"
    );
    key(&mut app, KeyCode::Char('.'));
    key(&mut app, KeyCode::Char('.'));
    assert_eq!(position(&app), 3);
    key(&mut app, KeyCode::Char(','));
    assert_eq!(position(&app), 2);
    let calls: usize = app.rollouts.iter().map(|a| a.records).sum();
    assert_eq!(calls, 2, "the store as it stood after two calls");
    // Jump by call number.
    key(&mut app, KeyCode::Char(':'));
    for c in "100".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(position(&app), 100);
    // Play at 100×: the clock moves the timeline.
    key(&mut app, KeyCode::Char('3'));
    let start = app.now;
    app.update(Message::Tick(start + Duration::from_secs(30)));
    common::settle(&mut app);
    assert!(position(&app) > 100);
    // Leaving replay restores the store as it is.
    key(&mut app, KeyCode::Char('R'));
    assert!(app.replay.is_none());
    let after: Vec<Value> = (0..app.rollouts.len())
        .map(|index| report(app.details.get(index).expect("held")))
        .collect();
    assert_eq!(after, before);
}

fn rows_follow(mode: WatchMode) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().to_path_buf();
    let handle = watch(
        vec![dir.clone()],
        WatchOptions {
            mode,
            ..WatchOptions::default()
        },
    );
    let mut rollout = linear_rollout("r", 3, &mut Rng::new(41), 5, false, true);
    rollout.frozen = true;
    rollout.write(&dir).unwrap();
    let wait_for = |pred: &dyn Fn(&tokscope_core::verdict::Analysis) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(StoreEvent::Detail(a)) =
                handle.events.recv_timeout(Duration::from_millis(200))
                && pred(&a)
            {
                return *a;
            }
        }
        panic!("no such update");
    };
    // The rollout is looked at: its full analysis comes with every change.
    handle.focus(vec![RolloutLocation {
        dir: dir.clone(),
        id: "r".into(),
    }]);
    wait_for(&|a| a.capture.records.len() == 3);
    let rows = tokscope_testkit::rows_for_store(&dir);
    std::fs::write(dir.join("rollouts.jsonl"), format!("{}\n", rows[0])).unwrap();
    let joined = wait_for(&|a| a.options.observations.is_some());
    let report = serde_json::to_value(joined.report()).unwrap();
    assert_eq!(report["observations"]["invocations"], 1);
}

#[test]
fn rows_in_the_store_are_followed_with_events() {
    rows_follow(WatchMode::Events);
}

#[test]
fn rows_in_the_store_are_followed_when_polling() {
    rows_follow(WatchMode::Poll(Duration::from_millis(20)));
}

fn store_deleted_and_recreated(mode: WatchMode) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("store");
    std::fs::create_dir(&dir).unwrap();
    let handle = watch(
        vec![dir.clone()],
        WatchOptions {
            mode,
            ..WatchOptions::default()
        },
    );
    let mut rollout = linear_rollout("r", 2, &mut Rng::new(7), 5, false, true);
    rollout.frozen = true;
    rollout.write(&dir).unwrap();
    let next = |step: &str, wanted: &dyn Fn(&StoreEvent) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            if let Ok(event) = handle.events.recv_timeout(Duration::from_millis(200)) {
                if wanted(&event) {
                    return event;
                }
                seen.push(format!("{event:?}").chars().take(120).collect::<String>());
            }
        }
        panic!("{step}: no such event; saw {seen:#?}");
    };
    next(
        "written",
        &|e| matches!(e, StoreEvent::Updated(a) if a.records == 2),
    );
    // Renamed away: reported, and the rollout is gone with it.
    let aside = temp.path().join("aside");
    std::fs::rename(&dir, &aside).unwrap();
    next(
        "gone",
        &|e| matches!(e, StoreEvent::StoreGone(d) if *d == dir),
    );
    // Back under the same path (a new directory): followed again, new writes seen.
    std::fs::create_dir(&dir).unwrap();
    next(
        "back",
        &|e| matches!(e, StoreEvent::StoreBack(d) if *d == dir),
    );
    let mut again = linear_rollout("s", 3, &mut Rng::new(8), 5, false, true);
    again.frozen = true;
    again.write(&dir).unwrap();
    next(
        "rewritten",
        &|e| matches!(e, StoreEvent::Updated(a) if a.rollout_id() == "s" && a.records == 3),
    );
}

#[test]
fn a_deleted_store_is_reported_and_followed_when_back_with_events() {
    store_deleted_and_recreated(WatchMode::Events);
}

#[test]
fn a_deleted_store_is_reported_and_followed_when_back_when_polling() {
    store_deleted_and_recreated(WatchMode::Poll(Duration::from_millis(50)));
}

/// A store deleted and made again at once, between two looks of the presence check: the
/// directory may come back with its old inode (ext4 reuses it), so only its events say the
/// old one went. Its new rollouts must still be seen with change events.
#[test]
fn a_store_deleted_and_made_again_at_once_is_followed_with_events() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("store");
    std::fs::create_dir(&dir).unwrap();
    let handle = watch(vec![dir.clone()], WatchOptions::default());
    let next = |step: &str, wanted: &dyn Fn(&StoreEvent) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(event) = handle.events.recv_timeout(Duration::from_millis(200))
                && wanted(&event)
            {
                return;
            }
        }
        panic!("{step}: no such event");
    };
    next("scanned", &|e| matches!(e, StoreEvent::Ready));
    std::fs::remove_dir(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    // Long after the presence check looked, so only the events can tell.
    std::thread::sleep(Duration::from_millis(1_200));
    let mut rollout = linear_rollout("t", 2, &mut Rng::new(9), 5, false, true);
    rollout.frozen = true;
    rollout.write(&dir).unwrap();
    next(
        "written into the new directory",
        &|e| matches!(e, StoreEvent::Updated(a) if a.rollout_id() == "t" && a.records == 2),
    );
}
