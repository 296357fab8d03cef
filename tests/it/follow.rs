//! `tokscope check --follow`, the kill switch: run against stores being written.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokscope_testkit::{Rng, linear_rollout};

/// Write one frozen rollout: clean, or masked (an intent that never got its record).
fn write_frozen(dir: &Path, id: &str, masked: bool) {
    let mut rollout = linear_rollout(id, 2, &mut Rng::new(id.len() as u64), 5, false, true);
    rollout.frozen = true;
    if masked {
        rollout.extra_intents.push(format!("{id}-lost"));
    }
    rollout.write(dir).unwrap();
}

fn spawn(dir: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .arg("check")
        .arg("--follow")
        .args(extra)
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait up to `limit` for the process to end.
fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn exits_1_once_the_frozen_masked_fraction_crosses_the_limit_while_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn(
        dir.path(),
        &[
            "--max-mask-fraction",
            "0.3",
            "--min-frozen",
            "4",
            "--format",
            "jsonl",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    // Three clean rollouts, then a masked one: 1 of 4 (25%) is within the limit.
    for (id, masked) in [("a", false), ("b", false), ("c", false), ("d", true)] {
        write_frozen(dir.path(), id, masked);
        std::thread::sleep(Duration::from_millis(150));
    }
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        child.try_wait().unwrap(),
        None,
        "25% masked: still watching"
    );
    // A second masked one: 2 of 5 (40%) is over it.
    write_frozen(dir.path(), "e", true);
    let code = wait(&mut child, Duration::from_secs(10));
    assert_eq!(code, Some(1), "over the limit: status 1");
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        lines.push(serde_json::from_str::<serde_json::Value>(&line.unwrap()).unwrap());
    }
    let verdicts: Vec<&str> = lines
        .iter()
        .filter(|e| e["event"] == "verdict" && e["lifecycle"] == "frozen")
        .map(|e| e["rollout"].as_str().unwrap())
        .collect();
    for id in ["a", "b", "c", "d", "e"] {
        assert!(verdicts.contains(&id), "{id} reported: {lines:?}");
    }
    let alarm = lines.last().unwrap();
    assert_eq!(alarm["event"], "alarm");
    assert_eq!(alarm["frozen"], 5);
    assert_eq!(alarm["frozen_masked"], 2);
}

#[test]
fn keeps_watching_below_the_limit_and_exits_0_on_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    for id in ["a", "b", "c"] {
        write_frozen(dir.path(), id, false);
    }
    write_frozen(dir.path(), "m", true);
    // 1 masked of 4 frozen (25%) is over 20%, but fewer than --min-frozen 5 are frozen; the
    // clean ones written next keep it at 1 of 5, then 1 of 6, never over.
    let mut child = spawn(
        dir.path(),
        &["--max-mask-fraction", "0.2", "--min-frozen", "5"],
    );
    std::thread::sleep(Duration::from_millis(500));
    for id in ["x", "y"] {
        write_frozen(dir.path(), id, false);
        std::thread::sleep(Duration::from_millis(150));
    }
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        child.try_wait().unwrap(),
        None,
        "1 of 6 masked (17%): still watching"
    );
    // SAFETY: signalling a child this test spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    assert_eq!(
        wait(&mut child, Duration::from_secs(5)),
        Some(0),
        "a signal stops it: 0"
    );
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut text).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("  m  frozen  masked  capture incomplete")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.contains("  y  frozen  ok")),
        "{text}"
    );
}

#[test]
fn without_follow_check_is_unchanged_and_follow_options_need_it() {
    let dir = tempfile::tempdir().unwrap();
    write_frozen(dir.path(), "a", false);
    let output = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["check", "--format", "jsonl"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "--format without --follow is refused"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .arg("check")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 rollout: 1 ok"));
}

/// The kill switch of the lifecycle tests: over 20% of at least 5 judged, a heartbeat every
/// 0.2 s, stopped after `idle` seconds without a change, JSON lines.
fn lifecycle_args(idle: &str) -> Vec<&str> {
    vec![
        "--max-mask-fraction",
        "0.2",
        "--min-frozen",
        "5",
        "--until-idle",
        idle,
        "--heartbeat",
        "0.2",
        "--format",
        "jsonl",
    ]
}

/// How `check --follow` notices changes in a lifecycle test.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Events,
    Poll,
    /// Change events refused: the fallback to polling.
    NoEvents,
}

fn spawn_in(mode: Mode, dir: &Path, extra: &[&str]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tokscope"));
    command.arg("check").arg("--follow").args(extra);
    match mode {
        Mode::Events => {}
        Mode::Poll => {
            command.args(["--poll", "100"]);
        }
        Mode::NoEvents => {
            command.env("TOKSCOPE_NO_EVENTS", "1");
        }
    }
    command
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The build table's footer counts: (rollouts, ok, masked, pending, retired, cleared).
fn footer_counts(dir: &Path) -> (String, Option<i32>) {
    let output = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .arg("check")
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let footer = text.lines().last().unwrap_or_default().to_owned();
    (footer, output.status.code())
}

/// The explorer's counts of the store as it is (its header and health strip).
fn explorer_tally(dir: &Path) -> tokscope_core::verdict::Tally {
    let stores = vec![dir.to_path_buf()];
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &Default::default(),
    );
    let app = tokscope::app::App::new(
        stores,
        analyses,
        Default::default(),
        crate::common::viewport(120, 40),
    );
    app.health.tally
}

/// The last heartbeat's tally in a jsonl log.
fn last_heartbeat(log: &str) -> serde_json::Value {
    log.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "heartbeat")
        .map(|e| e["tally"].clone())
        .unwrap_or_else(|| panic!("no heartbeat in {log}"))
}

fn read_all(child: &mut Child) -> (String, String) {
    let mut out = String::new();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (out, err)
}

#[test]
fn a_healthy_run_that_retires_what_it_delivers_is_never_killed() {
    for mode in [Mode::Events, Mode::Poll] {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("store");
        let writer = tokscope_testkit::RunWriter::new(&dir);
        // What an earlier run left: tombstones, and ids cleared down to their lock.
        writer.rollout("old-1", 2, false, true).unwrap();
        writer.clear("old-2").unwrap();
        let mut child = spawn_in(mode, &dir, &lifecycle_args("2"));
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(
            child.try_wait().unwrap(),
            None,
            "{mode:?}: only tombstones and locks: still watching"
        );
        // 15 delivered and retired, then 5 frozen ok not handed off yet.
        let plan = |prefix: &str, retire| tokscope_testkit::RunPlan {
            prefix: prefix.to_owned(),
            rollouts: if retire { 15 } else { 5 },
            masked_every: None,
            calls: 3,
            retire,
            pace: Duration::from_millis(20),
        };
        writer.run(&plan("r", true)).unwrap();
        writer.run(&plan("f", false)).unwrap();
        let code = wait(&mut child, Duration::from_secs(20));
        let (log, err) = read_all(&mut child);
        assert_eq!(
            code,
            Some(0),
            "{mode:?}: a healthy run is not killed\n{err}"
        );
        assert!(!log.contains("\"alarm\""), "{log}");
        // The kill switch, the table and the explorer agree on every count.
        let tally = last_heartbeat(&log);
        let (footer, status) = footer_counts(&dir);
        assert_eq!(status, Some(0), "check passes: {footer}");
        assert_eq!(
            footer,
            "22 rollouts: 5 ok, 0 masked, 0 pending, 16 retired, 1 cleared"
        );
        let explorer = explorer_tally(&dir);
        assert_eq!(tally, serde_json::to_value(explorer).unwrap(), "{mode:?}");
        assert_eq!(
            (explorer.ok, explorer.retired, explorer.cleared),
            (5, 16, 1)
        );
    }
}

#[test]
fn the_kill_switch_trips_iff_the_judged_masked_fraction_crosses_the_limit() {
    let cases = [
        (Mode::Events, Some(10), false),
        (Mode::Events, Some(3), true),
        (Mode::Poll, Some(10), false),
        (Mode::Poll, Some(3), true),
        (Mode::NoEvents, Some(10), false),
        (Mode::NoEvents, Some(3), true),
    ];
    std::thread::scope(|scope| {
        for (mode, masked_every, trips) in cases {
            scope.spawn(move || lifecycle_case(mode, masked_every, trips));
        }
    });
}

/// A run through the whole lifecycle: the store created after the watch starts, stale ids
/// cleared, rollouts written, frozen and retired, the store deleted and recreated, ids reused.
fn lifecycle_case(mode: Mode, masked_every: Option<usize>, trips: bool) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("store");
    let mut child = spawn_in(mode, &dir, &lifecycle_args("2.5"));
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        child.try_wait().unwrap(),
        None,
        "{mode:?}: a store that does not exist yet is waited for"
    );
    let writer = tokscope_testkit::RunWriter::new(&dir);
    let plan = tokscope_testkit::RunPlan {
        prefix: "a".to_owned(),
        rollouts: 9,
        masked_every,
        calls: 3,
        retire: true,
        pace: Duration::from_millis(30),
    };
    writer.run(&plan).unwrap();
    // The store deleted and made again: the same ids are written anew.
    std::thread::sleep(Duration::from_millis(700));
    std::fs::remove_dir_all(&dir).unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let again = tokscope_testkit::RunPlan {
        rollouts: 30,
        ..plan
    };
    let masked = writer.run(&again).unwrap();
    let code = wait(&mut child, Duration::from_secs(30));
    let (log, err) = read_all(&mut child);
    let fraction = masked as f64 / again.rollouts as f64;
    assert_eq!(fraction > 0.2, trips, "the case is what it says");
    assert_eq!(
        code,
        Some(if trips { 1 } else { 0 }),
        "{mode:?}, {masked} of {} masked\n{err}\n{log}",
        again.rollouts
    );
    if let Mode::NoEvents = mode {
        assert!(err.contains("polling it every second"), "{err}");
    }
    if trips {
        let alarm = log
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["event"] == "alarm")
            .expect("an alarm event");
        assert!(alarm["ts"].as_str().is_some_and(|ts| ts.ends_with('Z')));
        assert_eq!(alarm["reasons"][0][0], "capture_incomplete", "{alarm}");
        assert_eq!(log.matches("\"alarm\"").count(), 1, "once");
        return;
    }
    // Not tripped: the kill switch, the table and the explorer agree on every count of the
    // store as it is (the deleted store's rollouts are gone from it).
    let tally = last_heartbeat(&log);
    let explorer = explorer_tally(&dir);
    for field in ["ok", "masked", "retired", "at_risk", "waiting", "live"] {
        assert_eq!(
            tally[field],
            serde_json::to_value(explorer).unwrap()[field],
            "{mode:?} {field}: {tally} vs {explorer:?}"
        );
    }
    let (footer, status) = footer_counts(&dir);
    assert_eq!(status, Some(1), "check fails on any masked frozen rollout");
    assert_eq!(
        footer,
        format!(
            "30 rollouts: 0 ok, {} masked, 0 pending, {} retired",
            explorer.masked, explorer.retired
        )
    );
    assert_eq!(explorer.masked, masked);
}

#[test]
fn a_store_that_cannot_be_listed_is_not_a_healthy_stop() {
    // Root reads any directory: the test means something only for another user.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let temp = tempfile::tempdir().unwrap();
        let good = temp.path().join("good");
        let writer = tokscope_testkit::RunWriter::new(&good);
        writer.rollout("g1", 2, false, false).unwrap();
        // A file where a store is named: listing it fails (not a directory, not missing).
        let bad = temp.path().join("bad");
        std::fs::create_dir(&bad).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_tokscope"))
            .args(["check", "--follow", "--until-idle", "1"])
            .arg(&good)
            .arg(&bad)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // Replaced by a file: it exists and cannot be listed.
        std::fs::remove_dir(&bad).unwrap();
        std::fs::write(&bad, b"").unwrap();
        writer.rollout("g2", 2, false, false).unwrap();
        let code = wait(&mut child, Duration::from_secs(20));
        let (out, err) = read_all(&mut child);
        assert!(
            out.contains("g2"),
            "the other store is still followed: {out}"
        );
        assert_eq!(code, Some(3), "{err}");
        assert!(err.contains("cannot be listed"), "{err}");
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let store = temp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let mut child = spawn_in(Mode::Poll, &store, &["--until-idle", "1"]);
    let code = wait(&mut child, Duration::from_secs(20));
    std::fs::set_permissions(&store, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert_eq!(code, Some(3));
}

#[test]
fn closed_outputs_never_stop_the_kill_switch_nor_hide_the_alarm() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("store");
    let writer = tokscope_testkit::RunWriter::new(&dir);
    for n in 0..6 {
        writer
            .rollout(&format!("m{n}"), 2, n % 2 == 0, true)
            .unwrap();
    }
    // Standard output and standard error both closed pipes (`… 2>&1 | head -c 10`).
    let mut child = spawn(&dir, &["--max-mask-fraction", "0.2", "--min-frozen", "2"]);
    drop(child.stdout.take());
    drop(child.stderr.take());
    assert_eq!(
        wait(&mut child, Duration::from_secs(20)),
        Some(1),
        "the alarm wins, not a crash on a broken pipe"
    );
    // Only standard output closed: the alarm's counts go to standard error.
    let mut child = spawn(&dir, &["--max-mask-fraction", "0.2", "--min-frozen", "2"]);
    drop(child.stdout.take());
    let code = wait(&mut child, Duration::from_secs(20));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(code, Some(1));
    assert!(
        err.contains("ALARM: 3 of 6 judged rollouts masked"),
        "{err}"
    );
}

#[test]
fn a_signal_right_after_the_run_went_bad_still_exits_1() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("store");
    let writer = tokscope_testkit::RunWriter::new(&dir);
    writer.rollout("ok0", 2, false, true).unwrap();
    let mut child = spawn(&dir, &["--max-mask-fraction", "0.2", "--min-frozen", "2"]);
    std::thread::sleep(Duration::from_millis(500));
    for n in 0..4 {
        writer.rollout(&format!("m{n}"), 2, true, true).unwrap();
    }
    // SAFETY: signalling a child this test spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    assert_eq!(
        wait(&mut child, Duration::from_secs(10)),
        Some(1),
        "what was read before the signal is judged"
    );
}
