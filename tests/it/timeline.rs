//! The run over time (`why --by-time`): a store written through the reference lifecycle, one
//! rollout a minute, every other one from the third masked, read back bucket by bucket.

use std::process::Command;

use serde_json::Value;
use tokscope_testkit::{Rng, RunWriter, linear_rollout};

/// Rollouts `r0`..`r5`, rollout n's three calls at minute n, seconds 20–22 (the writer's
/// clock); `r2` and `r4` lose a fourth call (dispatched, never recorded).
fn write_store(dir: &std::path::Path) {
    let writer = RunWriter::new(dir);
    for n in 0..6 {
        let id = format!("r{n}");
        writer.clear(&id).unwrap();
        let mut rollout = linear_rollout(&id, 3, &mut Rng::new(n + 1), 5, false, true);
        for call in &mut rollout.calls {
            call.created_at += 60.0 * n as f64;
            writer.begin_call(&id, &call.id).unwrap();
            writer.append(&id, call).unwrap();
        }
        if n == 2 || n == 4 {
            writer.begin_call(&id, &format!("{id}-lost")).unwrap();
        }
        writer.freeze(&id).unwrap();
    }
}

fn series(dir: &std::path::Path, bucket: &str) -> Vec<Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["why", dir.to_str().unwrap(), "--by-time", bucket])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn each_minute_holds_the_rollout_that_finished_in_it() {
    let dir = tempfile::tempdir().unwrap();
    write_store(dir.path());
    let minutes = series(dir.path(), "1m");
    assert_eq!(minutes.len(), 6);
    for (n, bucket) in minutes.iter().enumerate() {
        let masked = n == 2 || n == 4;
        assert_eq!(bucket["finished"], 1, "minute {n}: {bucket}");
        assert_eq!(bucket["masked"], u64::from(masked), "minute {n}: {bucket}");
        assert_eq!(bucket["calls"], 3, "minute {n}");
        // Calls 2 and 3 were in flight a second each after their parents.
        assert_eq!(bucket["in_flight"].as_f64(), Some(2.0 / 60.0), "minute {n}");
        let causes = bucket["causes"].as_array().unwrap();
        assert_eq!(causes.len(), usize::from(masked), "minute {n}: {bucket}");
        if masked {
            assert_eq!(causes[0]["count"], 1);
            assert!(
                causes[0]["title"]
                    .as_str()
                    .unwrap()
                    .contains("never recorded")
            );
        }
        assert_eq!(bucket["seconds"], 60.0);
        assert!(
            bucket["start_utc"].as_str().unwrap().ends_with(":00.000Z"),
            "{bucket}"
        );
    }
    // Wider buckets hold the same rollouts, wherever the minutes fall.
    let halves = series(dir.path(), "3m");
    let counts: Vec<(u64, u64)> = halves
        .iter()
        .map(|b| {
            (
                b["finished"].as_u64().unwrap(),
                b["masked"].as_u64().unwrap(),
            )
        })
        .collect();
    let total: (u64, u64) = counts.iter().fold((0, 0), |t, c| (t.0 + c.0, t.1 + c.1));
    assert_eq!(total, (6, 2), "{counts:?}");
    // Seconds buckets: the empty ones between are there, so the x axis is even.
    let seconds = series(dir.path(), "10s");
    assert_eq!(seconds.len(), 31, "5 minutes and a bucket");
    assert_eq!(seconds.iter().filter(|b| b["calls"] != 0).count(), 6);
}

#[test]
fn a_bucket_that_is_not_one_is_refused_with_its_units() {
    let output = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["why", "--by-time", "5 weeks"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("s, m, h or d"), "{stderr}");
}

/// The explorer on the store of [`write_store`] (the header names the store, so the
/// snapshots use the demo store instead).
fn explorer(dir: &std::path::Path, width: u16, height: u16) -> tokscope::app::App {
    crate::common::explorer_on(vec![dir.to_path_buf()], width, height)
}

#[test]
fn the_list_follows_the_timelines_cursor_and_esc_puts_the_filter_back() {
    use crate::common::{key, keys, screen};
    use crossterm::event::KeyCode;
    let dir = tempfile::tempdir().unwrap();
    write_store(dir.path());
    // A rollout still being written in the last minute: no bucket counts it, so the list
    // does not show it either.
    let writer = RunWriter::new(dir.path());
    let mut live = linear_rollout("r9-live", 2, &mut Rng::new(99), 5, false, true);
    for call in &mut live.calls {
        call.created_at += 300.0;
        writer.begin_call("r9-live", &call.id).unwrap();
        writer.append("r9-live", call).unwrap();
    }
    for (width, height) in [(80, 24), (120, 40), (160, 45), (200, 50)] {
        let mut app = explorer(dir.path(), width, height);
        keys(&mut app, "/r");
        key(&mut app, KeyCode::Enter);
        key(&mut app, KeyCode::Char('W'));
        let view = app.timeline.as_ref().expect("W opens the timeline");
        // Five minutes and two seconds of records: 5-second buckets lay them out in ~60.
        assert_eq!(view.timeline.bucket_seconds(), 5.0);
        assert_eq!(
            crate::common::listed(&app),
            ["r5"],
            "{width}x{height}: the last bucket"
        );
        let shown = screen(&app);
        assert!(shown.contains("timeline · 5 s buckets"), "{shown}");
        assert!(shown.contains("1 finished, 0 masked (0%)"), "{shown}");
        // Wider buckets, down to minutes: `]` three times (10 s, 30 s, 1 min).
        keys(&mut app, "]]]");
        assert_eq!(
            app.timeline.as_ref().unwrap().timeline.bucket_seconds(),
            60.0
        );
        assert_eq!(
            crate::common::listed(&app),
            ["r5"],
            "the cursor kept its moment"
        );
        key(&mut app, KeyCode::Left);
        assert_eq!(crate::common::listed(&app), ["r4"]);
        // Up to a week and back: the cursor comes back to the moment it was moved to.
        keys(&mut app, "]]]]]]]]");
        assert_eq!(
            app.timeline.as_ref().unwrap().timeline.bucket_seconds(),
            7.0 * 86_400.0
        );
        keys(&mut app, "[[[[[[[");
        assert_eq!(
            app.timeline.as_ref().unwrap().timeline.bucket_seconds(),
            60.0
        );
        assert_eq!(crate::common::listed(&app), ["r4"], "{width}x{height}");
        // Narrower, the moment (the minute's middle) falls where r4 wrote nothing: the
        // cursor goes to the part of the minute that holds it.
        keys(&mut app, "[");
        assert_eq!(
            app.timeline.as_ref().unwrap().timeline.bucket_seconds(),
            30.0
        );
        assert_eq!(crate::common::listed(&app), ["r4"], "{width}x{height}");
        keys(&mut app, "]");
        let shown = screen(&app);
        assert!(
            shown.contains("1 finished, 1 masked (100%)"),
            "{width}x{height}\n{shown}"
        );
        assert!(
            shown.contains("never recorded"),
            "{width}x{height}\n{shown}"
        );
        key(&mut app, KeyCode::Home);
        assert_eq!(crate::common::listed(&app), ["r0"]);
        assert!(app.list.filter.starts_with("ended:"), "{}", app.list.filter);
        // Esc closes it and the list is as it was.
        key(&mut app, KeyCode::Esc);
        assert!(app.timeline.is_none());
        assert_eq!(app.list.filter, "r");
        assert_eq!(crate::common::listed(&app).len(), 7);
        // Enter keeps the bucket's filter.
        key(&mut app, KeyCode::Char('W'));
        key(&mut app, KeyCode::Enter);
        assert!(app.timeline.is_none());
        assert_eq!(crate::common::listed(&app), ["r5"]);
    }
}

#[test]
fn the_timeline_view_at_every_size() {
    use crate::common::{key, screen};
    use crossterm::event::KeyCode;
    for (width, height) in [(80, 24), (120, 40), (160, 45), (200, 50)] {
        let stores = vec![std::path::PathBuf::from("assets/demo-store")];
        let mut app = crate::common::explorer_on(stores, width, height);
        key(&mut app, KeyCode::Char('W'));
        key(&mut app, KeyCode::Left);
        insta::assert_snapshot!(format!("timeline_{width}x{height}"), screen(&app));
    }
}

#[test]
fn in_replay_the_timeline_holds_what_had_finished_by_the_clock() {
    use crate::common::{key, keys};
    use crossterm::event::KeyCode;
    let dir = tempfile::tempdir().unwrap();
    write_store(dir.path());
    let mut app = explorer(dir.path(), 120, 40);
    app.start_replay();
    crate::common::settle(&mut app);
    let finished = |app: &tokscope::app::App| -> usize {
        let view = app.timeline.as_ref().unwrap();
        view.timeline
            .series()
            .unwrap()
            .iter()
            .map(|b| b.finished)
            .sum()
    };
    // Two and a half minutes in: r0, r1 and r2 have their last records.
    keys(&mut app, ":@150");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Char('W'));
    assert_eq!(finished(&app), 3, "{:?}", app.message);
    // The clock moves on with the view open: its series follows.
    key(&mut app, KeyCode::Esc);
    keys(&mut app, ":@400");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Char('W'));
    assert_eq!(finished(&app), 6);
}
