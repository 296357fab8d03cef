//! Hostile files and arguments: FIFOs, devices, directories and symlink loops named like store
//! files, escape sequences in file names, arguments that cannot work. Every case ends in
//! seconds, reports the other rollouts, and tells what it refused.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use tokscope_testkit::mkfifo;

/// Run the binary, killing it (and failing) when it takes longer than `limit`.
fn run_within(args: &[&std::ffi::OsStr], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("{args:?} hung for more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// A copy of the demo store with a FIFO, `/dev/zero`, a directory and a symlink loop named
/// like token files, a FIFO state file and a FIFO rows file.
fn hostile_store() -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let store = temp.path().join("S");
    std::fs::create_dir(&store).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store");
    for entry in std::fs::read_dir(demo).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), store.join(entry.file_name())).unwrap();
    }
    mkfifo(&store.join("h.tokens.jsonl"));
    std::os::unix::fs::symlink("/dev/zero", store.join("z.tokens.jsonl")).unwrap();
    std::fs::create_dir(store.join("d.tokens.jsonl")).unwrap();
    let looped = store.join("l.tokens.jsonl");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    std::fs::write(store.join("s.tokens.jsonl"), b"").unwrap();
    mkfifo(&store.join("s.tokens.state.json"));
    mkfifo(&store.join("fifo-rows.jsonl"));
    (temp, store)
}

#[test]
fn fifos_devices_directories_and_loops_are_reported_not_read() {
    let (_temp, store) = hostile_store();
    let output = run_within(&[os("build"), store.as_os_str()], Duration::from_secs(20));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for (id, what) in [
        ("h", "a FIFO"),
        ("z", "a character device"),
        ("d", "a directory"),
        ("l", "symbolic links"),
        ("s", "a FIFO"),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("{id} listed: {stdout}"));
        assert!(line.contains("masked"), "{line}");
        assert!(line.contains(what), "{line}");
    }
    // The demo's rollouts are all there; the FIFO rows file is refused by name.
    assert!(
        stdout.contains("demo-clean") && stdout.contains("demo-long"),
        "{stdout}"
    );
    assert!(
        stderr.contains("fifo-rows.jsonl") && stderr.contains("a FIFO"),
        "{stderr}"
    );
    // `check` fails on them: a rollout nobody can read is no good training data.
    let check = run_within(&[os("check"), store.as_os_str()], Duration::from_secs(20));
    assert_eq!(check.status.code(), Some(1));
}

#[test]
fn a_line_over_the_line_limit_is_reported_and_masks_only_its_rollout() {
    use tokscope_testkit::{Call, Rng, Rollout};
    let temp = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(7);
    // About 1.5 MB of prompt ids in one line, and a small rollout beside it.
    let huge = Rollout {
        id: "huge".into(),
        calls: vec![Call::root("c1", rng.tokens(200_000), vec![5], 1.0)],
        frozen: true,
        ..Rollout::default()
    };
    let small = Rollout {
        id: "small".into(),
        calls: vec![Call::root("c1", vec![1, 2, 3], vec![4], 1.0)],
        frozen: true,
        ..Rollout::default()
    };
    huge.write(temp.path()).unwrap();
    small.write(temp.path()).unwrap();
    let store = temp.path().as_os_str();
    let verdict_of = |stdout: &str, id: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("{id} listed: {stdout}"))
            .to_owned()
    };
    let limited = run_within(
        &[os("build"), store, os("--max-line-mib"), os("1")],
        Duration::from_secs(30),
    );
    let stdout = String::from_utf8_lossy(&limited.stdout);
    let stderr = String::from_utf8_lossy(&limited.stderr);
    assert!(verdict_of(&stdout, "huge").contains("masked"), "{stdout}");
    assert!(verdict_of(&stdout, "small").contains("ok"), "{stdout}");
    let told = format!("{stdout}{stderr}");
    assert!(
        told.contains("line limit") && told.contains("--max-line-mib"),
        "the reason is told: {told}"
    );
    // Under the default limit the same line is read and the rollout is good.
    let default = run_within(&[os("build"), store], Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&default.stdout);
    assert!(verdict_of(&stdout, "huge").contains("ok"), "{stdout}");
    // The limit must be at least 1 MiB.
    let refused = run_within(
        &[os("build"), store, os("--max-line-mib"), os("0")],
        Duration::from_secs(10),
    );
    assert_eq!(refused.status.code(), Some(2));
}

#[test]
fn unreadable_rollouts_count_as_masked_everywhere() {
    let (_temp, store) = hostile_store();
    let locations = tokscope_core::load::locate(std::slice::from_ref(&store), &[]).unwrap();
    let analyses = tokscope_core::load::analyze_all(&locations, &Default::default());
    let summaries: Vec<tokscope_core::verdict::Summary> = analyses
        .iter()
        .map(tokscope_core::verdict::Summary::of)
        .collect();
    let health = tokscope_core::health::Health::of(&summaries);
    let broken = ["h", "z", "d", "l", "s"];
    for analysis in analyses.iter().filter(|a| broken.contains(&a.rollout_id())) {
        assert_ne!(
            analysis.lifecycle,
            tokscope_core::verdict::Lifecycle::Cleared
        );
        assert_eq!(analysis.verdict, tokscope_core::verdict::Verdict::Masked);
    }
    assert_eq!(health.rollouts(), analyses.len());
    assert!(
        health
            .masked_by_reason
            .get("unreadable")
            .is_some_and(|&n| n >= 5)
    );
    // They are final verdicts: the alarm counts them.
    assert!(health.tally.masked >= 5);
}

#[test]
fn fifo_arguments_are_refused_without_waiting() {
    let temp = tempfile::tempdir().unwrap();
    let fifo = temp.path().join("rows.jsonl");
    mkfifo(&fifo);
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store");
    let output = run_within(
        &[
            os("build"),
            demo.as_os_str(),
            os("--rollouts"),
            fifo.as_os_str(),
        ],
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a FIFO"), "{stderr}");
    // A tokenizer that is a FIFO: one line, status 2, no hang (no terminal: the table).
    let tokenizer = temp.path().join("tokenizer.json");
    mkfifo(&tokenizer);
    let detok = tokscope_core::detok::Detokenizer::load(&tokenizer);
    assert!(detok.is_err_and(|e| e.to_string().contains("a FIFO")));
}

#[test]
fn escape_sequences_in_file_names_never_reach_the_terminal() {
    let temp = tempfile::tempdir().unwrap();
    let store = temp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::copy(
        common::fixture("producers/rollouts.jsonl"),
        store.join("r\x1b]0;owned\x07\u{202e}.jsonl"),
    )
    .unwrap();
    let output = run_within(&[os("build"), store.as_os_str()], Duration::from_secs(20));
    let all = [output.stdout, output.stderr].concat();
    assert!(!all.contains(&0x1b), "{}", String::from_utf8_lossy(&all));
    let text = String::from_utf8_lossy(&all);
    assert!(!text.contains('\u{202e}'), "{text}");
    assert!(text.contains("\\u{1b}]0;owned"), "{text}");
}

#[test]
fn call_ids_that_drive_terminals_reach_neither_the_json_nor_the_clipboard() {
    let temp = tempfile::tempdir().unwrap();
    let hostile = "c\u{1b}[201~\necho pwned\u{9b}31m";
    let rollout = tokscope_testkit::Rollout {
        id: "h".into(),
        calls: vec![tokscope_testkit::Call::root(
            hostile,
            vec![1, 2, 3],
            vec![4, 5],
            1.0,
        )],
        frozen: true,
        ..Default::default()
    };
    rollout.write(temp.path()).unwrap();
    // The report keeps the id (as JSON escapes): no raw ESC, no raw C1 on the terminal.
    for format in ["jsonl", "json"] {
        let output = run_within(
            &[
                os("build"),
                temp.path().as_os_str(),
                os("--format"),
                os(format),
            ],
            Duration::from_secs(20),
        );
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{9b}'),
            "{text:?}"
        );
        assert!(text.contains(r"\u009b31m"), "{text}");
        let first: serde_json::Value = if format == "json" {
            serde_json::from_str::<serde_json::Value>(&text).unwrap()[0].clone()
        } else {
            serde_json::from_str(text.lines().next().unwrap()).unwrap()
        };
        // Read back, the id is the one written.
        assert_eq!(
            first["build"]["chains"][0]["call_ids"][0], hostile,
            "{first}"
        );
    }
    // Yanked from the tree: the escape is spelled out, not sent to the shell it is pasted in.
    let stores = vec![temp.path().to_path_buf()];
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &Default::default(),
    );
    let mut app = tokscope::app::App::new(
        stores,
        analyses,
        Default::default(),
        common::viewport(120, 40),
    );
    common::key(&mut app, crossterm::event::KeyCode::Enter);
    common::keys(&mut app, "y");
    let yanked = app.take_clipboard().expect("the call id");
    assert!(
        !yanked.contains('\u{1b}') && !yanked.contains('\u{9b}'),
        "{yanked:?}"
    );
    assert!(yanked.contains("\\u{1b}[201~"), "{yanked:?}");
}

#[test]
fn arguments_that_cannot_work_are_refused() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store");
    for args in [
        vec!["--poll", "10"],
        vec!["--poll", "0"],
        vec!["--max-mask-fraction", "2"],
        vec!["--max-mask-fraction", "NaN"],
        vec!["build", "--rollouts", "/nonexistent/rows.jsonl"],
    ] {
        let mut all: Vec<&std::ffi::OsStr> = args.iter().map(|a| os(a)).collect();
        all.push(demo.as_os_str());
        let output = run_within(&all, Duration::from_secs(20));
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        assert!(!output.stderr.is_empty());
    }
    // The same store twice (once through a symlink) is listed once.
    let temp = tempfile::tempdir().unwrap();
    let link = temp.path().join("again");
    std::os::unix::fs::symlink(&demo, &link).unwrap();
    let output = run_within(
        &[os("build"), demo.as_os_str(), link.as_os_str()],
        Duration::from_secs(20),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.matches("demo-clean ").count(), 1, "{stdout}");
}

#[test]
fn the_explorer_ends_with_the_conventional_status() {
    use tokscope::term::Ended;
    assert_eq!(Ended::Quit.status(), 0);
    assert_eq!(Ended::Signal(2).status(), 130);
    assert_eq!(Ended::Signal(15).status(), 143);
    assert_eq!(Ended::Signal(1).status(), 129);
    assert_eq!(Ended::TerminalLost.status(), 129);
    assert_eq!(Ended::WorkerFailed.status(), 101);
}

#[test]
fn a_fifo_created_while_watching_stops_nothing() {
    use tokscope_core::live::StoreEvent;
    use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
    for mode in [
        WatchMode::Events,
        WatchMode::Poll(Duration::from_millis(50)),
    ] {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        let handle = watch(
            vec![dir.clone()],
            WatchOptions {
                mode,
                ..WatchOptions::default()
            },
        );
        mkfifo(&dir.join("h.tokens.jsonl"));
        std::thread::sleep(Duration::from_millis(300));
        let mut rollout = tokscope_testkit::linear_rollout(
            "ok",
            2,
            &mut tokscope_testkit::Rng::new(5),
            4,
            false,
            true,
        );
        rollout.frozen = true;
        rollout.write(&dir).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut fifo_reports, mut written) = (0, false);
        while Instant::now() < deadline && !written {
            if let Ok(StoreEvent::Updated(a)) =
                handle.events.recv_timeout(Duration::from_millis(100))
            {
                match a.rollout_id() {
                    "h" => {
                        fifo_reports += 1;
                        assert_eq!(a.verdict, tokscope_core::verdict::Verdict::Masked);
                    }
                    "ok" => written = a.records == 2,
                    _ => {}
                }
            }
        }
        assert!(written, "later writes are still followed");
        // Polling stats the FIFO every tick but reports it once, not once a tick.
        std::thread::sleep(Duration::from_millis(500));
        fifo_reports += handle
            .events
            .try_iter()
            .filter(|e| matches!(e, StoreEvent::Updated(a) if a.rollout_id() == "h"))
            .count();
        assert!(
            (1..=2).contains(&fifo_reports),
            "{fifo_reports} reports of one FIFO"
        );
    }
}

#[test]
fn rows_are_streamed_under_the_line_limit() {
    let temp = tempfile::tempdir().unwrap();
    let store = temp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    tokscope_testkit::Rollout {
        id: "r1".into(),
        calls: vec![tokscope_testkit::Call::root(
            "c1",
            vec![1, 2, 3],
            vec![4],
            1.0,
        )],
        frozen: true,
        ..Default::default()
    }
    .write(&store)
    .unwrap();
    // A 64 MiB row (a runaway tool output), then a good row for r1.
    let rows = temp.path().join("rows.jsonl");
    let mut text = String::from("{\"_ng_rollout_id\":\"r0\",\"ng_trajectory\":{\"x\":\"");
    text.push_str(&"y".repeat(64 << 20));
    text.push_str("\"}}\n");
    text.push_str(r#"{"_ng_rollout_id":"r1","reward":1.0,"ng_trajectory":{"schema_version":"1.0","rollout_id":"r1","model_calls":[{"model_call_id":"c1"}]}}"#);
    text.push('\n');
    std::fs::write(&rows, text).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args([
            "build",
            "--format",
            "jsonl",
            "--max-line-mib",
            "1",
            "--rollouts",
        ])
        .arg(&rows)
        .arg(&store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The child's own peak memory: its high-water mark (monotonic, reset at exec), read while
    // it runs (the line is never held whole).
    let status_file = format!("/proc/{}/status", child.id());
    let high_water = || -> Option<u64> {
        let status = std::fs::read_to_string(&status_file).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let mut child = child;
    let mut peak_kib = 0;
    while child.try_wait().unwrap().is_none() {
        peak_kib = peak_kib.max(high_water().unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    }
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(
        stderr.contains("rows.jsonl:1: row skipped: 64 MiB, over the line limit of 1 MiB"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert!(
        report["observations"].is_object(),
        "the good row is joined: {report}"
    );
    let peak_mib = peak_kib / 1024;
    assert!(peak_mib < 48, "peak {peak_mib} MiB for a 64 MiB line");
}
