//! Regression guards for training scale: what is held and what is done must not grow with the
//! store. They count bytes and rows, never time (the figures live in `benches/scale.rs`).

use crate::common;

use std::io::Write;

use tokscope::app::{App, Message};
use tokscope_core::live::{HOT_ROLLOUTS, LiveStore, StoreEvent};
use tokscope_core::verdict::{Summary, VerdictOptions};
use tokscope_testkit::{Rng, linear_rollout};

const ROLLOUTS: usize = 150;

/// More rollouts than are ever kept hot, small enough for a debug build: three calls each,
/// every fourth frozen, every third stored as deltas.
fn store() -> tempfile::TempDir {
    store_of(ROLLOUTS)
}

/// [`store`] with `rollouts` rollouts.
fn store_of(rollouts: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for index in 0..rollouts {
        let id = format!("r{index:04}");
        let mut rollout =
            linear_rollout(&id, 3, &mut Rng::new(index as u64), 6, index % 3 == 0, true);
        rollout.frozen = index % 4 == 0;
        rollout.write(dir.path()).unwrap();
    }
    dir
}

/// Every rollout of `stores`, analyzed.
fn analyses_of(stores: &[std::path::PathBuf]) -> Vec<tokscope_core::verdict::Analysis> {
    tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(stores, &[]).unwrap(),
        &VerdictOptions::default(),
    )
}

/// Answer the app's requests for analyses as the watcher would.
fn answer_requests(app: &mut App, analyses: &[tokscope_core::verdict::Analysis]) {
    if let Some(wanted) = app.detail_requests() {
        let details = wanted
            .iter()
            .filter_map(|l| analyses.iter().find(|a| &a.capture.location == l))
            .map(|a| StoreEvent::Detail(Box::new(a.clone())))
            .collect();
        app.update(Message::Store(details));
    }
}

fn first_scan(store: &mut LiveStore) -> Vec<StoreEvent> {
    let mut events = Vec::new();
    store
        .first_scan(
            &mut |event| {
                events.push(event);
                true
            },
            &mut || None,
        )
        .unwrap();
    events
}

/// Make every records file of `dir` look written `age` ago.
fn age_records(dir: &std::path::Path, age: std::time::Duration) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".tokens.jsonl") {
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.set_modified(std::time::SystemTime::now() - age)
                .unwrap();
        }
    }
}

#[test]
fn the_first_scan_holds_nothing_of_a_store_not_being_written_and_reports_progress() {
    let dir = store();
    age_records(dir.path(), tokscope_core::live::RECENTLY_WRITTEN * 2);
    let mut store = LiveStore::new(vec![dir.path().to_path_buf()], VerdictOptions::default());
    let events = first_scan(&mut store);
    let summaries = events
        .iter()
        .filter(|e| matches!(e, StoreEvent::Updated(_)))
        .count();
    assert_eq!(summaries, ROLLOUTS, "a summary for every rollout");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StoreEvent::Progress { read, total } if *read == ROLLOUTS && *total == ROLLOUTS))
    );
    assert_eq!(
        store.resident_bytes(),
        0,
        "nothing is kept of a rollout read once"
    );
    assert_eq!(store.hot_rollouts(), 0);
}

/// A first scan of `rollouts` rollouts where, after the first batch, the UI looks at every
/// rollout: the events sent, how many the first batch read, and the analyses made on this
/// thread.
fn scan_looking_at_everything(
    rollouts: usize,
) -> (Vec<StoreEvent>, usize, tokscope_core::work::Work) {
    let dir = store_of(rollouts);
    let everything = tokscope_core::load::locate(&[dir.path().to_path_buf()], &[]).unwrap();
    let mut store = LiveStore::new(vec![dir.path().to_path_buf()], VerdictOptions::default());
    let (mut events, mut read_first, mut asked) = (Vec::new(), None, 0);
    tokscope_core::work::take();
    store
        .first_scan(
            &mut |event| {
                if let StoreEvent::Progress { read, .. } = event {
                    read_first.get_or_insert(read);
                }
                events.push(event);
                true
            },
            // After the first batch the UI looks at every rollout: the first batch's are read
            // already, and while it makes up its mind the workers finish more, which saw
            // nothing looked at (their analyses are made again here); any left are queued.
            &mut || {
                // (The first call is before anything is read, the second after the first batch.)
                asked += 1;
                (asked == 2).then(|| {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    everything.clone()
                })
            },
        )
        .unwrap();
    let read_first = read_first.expect("a first batch");
    (events, read_first, tokscope_core::work::take())
}

#[test]
fn every_rollout_looked_at_during_the_first_scan_gets_its_full_analysis() {
    // The first batch must read only part of the store. A debug build on two cores reads
    // about a third of 150 rollouts in its 25 ms; an optimized build reads them all, so the
    // store grows until the first batch leaves some unread.
    let (rollouts, (events, read_first, work)) = [ROLLOUTS, ROLLOUTS * 4, ROLLOUTS * 16]
        .into_iter()
        .map(|rollouts| (rollouts, scan_looking_at_everything(rollouts)))
        .find(|(rollouts, (_, read_first, _))| read_first < rollouts)
        .expect("the first batch read only part of a store of 2,400 rollouts");
    // Analyses on this thread: the first batch's, answered when looked at, and those the
    // workers finished without knowing.
    let made_again = ((work.full_builds + work.extended_builds) as usize)
        .checked_sub(read_first)
        .expect("the first batch's rollouts were analyzed again when looked at");
    assert!(
        made_again > 0,
        "some analyses were dropped by workers and made again"
    );
    let mut detailed: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            StoreEvent::Detail(analysis) => Some(analysis.capture.location.clone()),
            _ => None,
        })
        .collect();
    detailed.sort();
    detailed.dedup();
    assert_eq!(detailed.len(), rollouts, "a full analysis of each");
}

#[test]
fn the_first_scan_keeps_a_bounded_number_of_rollouts_being_written_hot() {
    let dir = store();
    let mut store = LiveStore::new(vec![dir.path().to_path_buf()], VerdictOptions::default());
    first_scan(&mut store);
    // All were just written; three in four are live (the frozen ones are cooled).
    assert_eq!(store.hot_rollouts(), HOT_ROLLOUTS.min(ROLLOUTS * 3 / 4));
    let bytes: usize = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len() as usize)
        .sum();
    assert!(
        store.resident_bytes() < bytes,
        "held {} bytes for a {bytes}-byte store",
        store.resident_bytes()
    );
}

#[test]
fn appends_to_every_rollout_keep_a_bounded_number_hot() {
    let dir = store();
    let mut store = LiveStore::new(vec![dir.path().to_path_buf()], VerdictOptions::default());
    first_scan(&mut store);
    let mut largest = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".tokens.jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            let last = text.lines().last().unwrap().to_owned();
            let line = last.replace("\"model_call_id\":\"", "\"model_call_id\":\"again-");
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            writeln!(file, "{line}").unwrap();
            largest = largest.max(text.len() + line.len() + 1);
        }
    }
    let changes = store.rescan().unwrap();
    assert_eq!(
        changes
            .iter()
            .filter(|e| matches!(e, StoreEvent::Updated(_)))
            .count(),
        ROLLOUTS
    );
    assert!(store.hot_rollouts() <= HOT_ROLLOUTS);
    assert!(
        // Each: its parsed records (at most its file) and its last line's bytes, kept for
        // the next append's parent (at most its file again).
        store.resident_bytes() <= HOT_ROLLOUTS * (2 * largest + 4_096),
        "held {} bytes for {ROLLOUTS} rollouts",
        store.resident_bytes()
    );
}

#[test]
fn the_app_holds_few_analyses_whatever_is_browsed() {
    let dir = store();
    let stores = vec![dir.path().to_path_buf()];
    let mut app = App::new_live(
        stores.clone(),
        VerdictOptions::default(),
        common::viewport(120, 40),
    );
    let analyses = analyses_of(&stores);
    app.update(Message::Store(
        analyses.iter().map(StoreEvent::updated).collect(),
    ));
    // Browse the whole list, answering every request as the watcher would.
    for _ in 0..ROLLOUTS {
        answer_requests(&mut app, &analyses);
        assert!(app.view.is_some(), "the selected rollout is open");
        assert!(app.details.len() <= tokscope::app::details::DETAIL_CACHE);
        common::key(&mut app, crossterm::event::KeyCode::Down);
    }
    // Health by difference equals health counted afresh.
    let summaries: Vec<Summary> = analyses.iter().map(Summary::of).collect();
    assert_eq!(app.health, tokscope_core::health::Health::of(&summaries));
}

#[test]
fn a_changed_rollout_moves_its_row_with_a_logarithmic_number_of_comparisons() {
    let analyses = analyses_of(&[store().path().to_path_buf()]);
    // Many rollouts (the same summaries under new ids), one changing at a time.
    let mut summaries: Vec<Summary> = Vec::new();
    for copy in 0..20 {
        for analysis in &analyses {
            let mut summary = Summary::of(analysis);
            summary.location.id = format!("{copy}-{}", summary.location.id);
            summaries.push(summary);
        }
    }
    let mut list = tokscope::app::RolloutList::new(40);
    list.sort = tokscope::app::SortKey::Verdict;
    list.refresh(&summaries, false);
    let n = summaries.len();
    for index in (0..n).step_by(97) {
        summaries[index].mask_sample = !summaries[index].mask_sample;
        let before = list.comparisons();
        list.update(index, &summaries, false);
        let spent = list.comparisons() - before;
        let bound = 2 * (usize::BITS - n.leading_zeros()) as usize + 2;
        assert!(
            spent <= bound,
            "{spent} comparisons for one change among {n}"
        );
    }
}

#[test]
fn a_long_replay_jump_judges_a_bounded_number_of_rollouts_a_request() {
    let dir = store();
    let stores = vec![dir.path().to_path_buf()];
    let analyses = analyses_of(&stores);
    let mut app = App::new(
        stores,
        analyses,
        VerdictOptions::default(),
        common::viewport(120, 40),
    );
    app.start_replay();
    common::settle(&mut app);
    let end = app.replay.as_ref().unwrap().replay.len();
    // Jump to the end: all 150 rollouts change; each is judged once, at most SEEK_BUDGET of
    // them in each request to the replay worker, the selected one first. The keys go to the
    // app alone here, so the worker's answers can be counted one by one.
    let press = |app: &mut App, code| {
        let event = crossterm::event::KeyEvent::new(code, crossterm::event::KeyModifiers::NONE);
        let message = tokscope::ui::keys::message_for(app, event).expect("a bound key");
        app.update(message);
    };
    press(&mut app, crossterm::event::KeyCode::Char(':'));
    for c in end.to_string().chars() {
        press(&mut app, crossterm::event::KeyCode::Char(c));
    }
    press(&mut app, crossterm::event::KeyCode::Enter);
    fn replay(app: &App) -> &tokscope::app::ReplayState {
        app.replay.as_ref().unwrap()
    }
    assert_eq!(
        replay(&app).replay.position(),
        end,
        "the position moves at once"
    );
    let budget = tokscope::app::replay::SEEK_BUDGET;
    assert_eq!(
        replay(&app).pending.len(),
        ROLLOUTS - budget,
        "the rest waits"
    );
    let mut answers = 0;
    let mut now = app.now;
    while let Some(request) = app.take_judge_request() {
        assert!(request.rollouts.len() <= budget, "one request, one budget");
        assert_eq!(
            app.take_judge_request().map(|r| r.rollouts.len()),
            None,
            "one at a time"
        );
        let before = replay(&app).pending.len();
        // The clock moving on asks for nothing more while a request is in flight.
        now += std::time::Duration::from_millis(30);
        app.update(Message::Tick(now));
        assert_eq!(replay(&app).pending.len(), before);
        let results = tokscope_core::live::replay::judge(&request);
        app.update(Message::Judged(results));
        assert_eq!(replay(&app).pending.len(), before.saturating_sub(budget));
        answers += 1;
    }
    assert_eq!(answers, ROLLOUTS.div_ceil(budget));
    let records: usize = app.rollouts.iter().map(|s| s.records).sum();
    assert_eq!(records, end, "every call applied");
}

#[test]
fn a_cooled_rollout_whose_records_appear_later_is_read_whole() {
    // Intents first (as the writer does), the records file only after the first scan.
    let dir = tempfile::tempdir().unwrap();
    let mut rollout = linear_rollout("a", 3, &mut Rng::new(3), 5, false, true);
    rollout.extra_intents.push("a-inflight".into());
    rollout.write(dir.path()).unwrap();
    let records = dir.path().join("a.tokens.jsonl");
    let saved = std::fs::read(&records).unwrap();
    std::fs::remove_file(&records).unwrap();
    let mut store = LiveStore::new(vec![dir.path().to_path_buf()], VerdictOptions::default());
    first_scan(&mut store);
    std::fs::write(&records, saved).unwrap();
    let location = tokscope_core::store::RolloutLocation {
        dir: dir.path().to_path_buf(),
        id: "a".into(),
    };
    let events = store.rescan().unwrap();
    let Some(StoreEvent::Updated(live)) = events.first() else {
        panic!("an update: {events:?}");
    };
    let cold = tokscope_core::verdict::analyze(
        tokscope_core::store::read_capture(&location),
        &VerdictOptions::default(),
    );
    assert_eq!(
        **live,
        Summary::of(&cold),
        "the cooled intents were read again"
    );
    assert_eq!(live.open_intents, vec!["a-inflight".to_owned()]);
}

#[test]
fn a_rollout_selected_while_paused_opens() {
    let dir = store();
    let stores = vec![dir.path().to_path_buf()];
    let analyses = analyses_of(&stores);
    let mut app = App::new_live(stores, VerdictOptions::default(), common::viewport(120, 40));
    app.update(Message::Store(
        analyses.iter().map(StoreEvent::updated).collect(),
    ));
    common::key(&mut app, crossterm::event::KeyCode::Char(' '));
    assert!(app.live.paused);
    for _ in 0..3 {
        common::key(&mut app, crossterm::event::KeyCode::Down);
        answer_requests(&mut app, &analyses);
        assert!(!app.loading(), "the answer opens the rollout while paused");
        assert!(app.view.is_some());
    }
}

#[test]
fn record_times_at_the_ends_of_the_range_do_not_break_the_health_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut rollout = linear_rollout("t", 2, &mut Rng::new(1), 5, false, true);
    rollout.calls[0].created_at = -1e19;
    rollout.calls[1].created_at = 1e19;
    rollout.write(dir.path()).unwrap();
    let analyses = analyses_of(&[dir.path().to_path_buf()]);
    let summaries: Vec<Summary> = analyses.iter().map(Summary::of).collect();
    let health = tokscope_core::health::Health::of(&summaries);
    assert_eq!(health.calls, 2);
    let mut only_past = summaries[0].clone();
    only_past.call_seconds = [(i64::MIN, 1)].into_iter().collect();
    tokscope_core::health::Health::of([&only_past]);
}
