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
