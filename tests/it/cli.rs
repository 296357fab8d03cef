//! The command line: formats, exit codes, error messages.

use crate::common;

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(args)
        .output()
        .unwrap()
}

fn store(rel: &str) -> String {
    common::fixture(rel).to_str().unwrap().to_owned()
}

#[test]
fn missing_directory_is_one_clear_line_and_status_two() {
    let output = run(&["build", "/nonexistent/store"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("/nonexistent/store") && stderr.contains("no such directory"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn table_lists_every_rollout_with_verdict_and_reason() {
    let output = run(&["build", &store("conformance/store-1-0")]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("rollout") && lines[0].contains("first reason"));
    assert_eq!(lines.len(), 32, "header, 30 rollouts, summary");
    assert!(lines[31].starts_with("30 rollouts:"));
    let dangling = lines.iter().find(|l| l.starts_with("0-13-a2")).unwrap();
    // The explorer's words: a call in flight is waited on, not "pending (masked)".
    assert!(
        dangling.contains("live") && dangling.contains("waiting  "),
        "{dangling}"
    );
    assert!(
        dangling.contains("waiting on 0-13-a2-c009-fa8b"),
        "{dangling}"
    );
    let at_risk = lines.iter().find(|l| l.starts_with("0-3-a1 ")).unwrap();
    assert!(
        at_risk.contains("at risk") && at_risk.contains("2 roots"),
        "{at_risk}"
    );
    let clean = lines.iter().find(|l| l.starts_with("0-0-a0 ")).unwrap();
    assert!(
        clean.contains("pending (ok)") && clean.contains("100.0%"),
        "{clean}"
    );
}

#[test]
fn rollout_filter_and_json_array() {
    let output = run(&[
        "build",
        &store("conformance/store-1-0"),
        "--rollout",
        "0-3-a1",
        "--format",
        "json",
    ]);
    assert!(output.status.success());
    let reports: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0]["rollout_id"], "0-3-a1");
    assert_eq!(reports[0]["reasons"][0]["code"], "roots_not_one");
}

#[test]
fn check_fails_only_on_frozen_masked_rollouts() {
    let temp = tempfile::tempdir().unwrap();
    let mut rng = tokscope_testkit::Rng::new(7);
    let mut good = tokscope_testkit::linear_rollout("good", 3, &mut rng, 5, false, true);
    good.frozen = true;
    good.write(temp.path()).unwrap();
    let dir = temp.path().to_str().unwrap();
    assert_eq!(run(&["check", dir]).status.code(), Some(0));
    // A live masked rollout is pending, not a failure.
    let mut live = tokscope_testkit::linear_rollout("live", 2, &mut rng, 5, false, true);
    live.extra_intents.push("live-lost".into());
    live.write(temp.path()).unwrap();
    assert_eq!(run(&["check", dir]).status.code(), Some(0));
    let mut bad = tokscope_testkit::linear_rollout("bad", 2, &mut rng, 5, false, true);
    bad.frozen = true;
    bad.incomplete = true;
    bad.write(temp.path()).unwrap();
    let output = run(&["check", dir]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8(output.stdout).unwrap().contains("masked"));
}

#[test]
fn an_unknown_rollout_is_one_clear_line_and_status_two() {
    let output = run(&[
        "build",
        &store("conformance/store-1-0"),
        "--rollout",
        "nope",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("--rollout nope: no such rollout"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn the_demo_store_is_embedded_in_the_binary() {
    // As an installed binary would (no sources next to it): the embedded copy is unpacked.
    let temp = tempfile::tempdir().unwrap();
    let embedded = Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .arg("build")
        .env("TOKSCOPE_EMBEDDED_ASSETS", "1")
        .env("TMPDIR", temp.path())
        .output()
        .unwrap();
    assert_eq!(embedded.status.code(), Some(0));
    let sources = run(&[
        "build",
        &format!("{}/assets/demo-store", env!("CARGO_MANIFEST_DIR")),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&embedded.stdout),
        String::from_utf8_lossy(&sources.stdout)
    );
    let unpacked = std::fs::read_dir(temp.path()).unwrap().count();
    assert_eq!(
        unpacked, 1,
        "one directory of assets in the temporary directory"
    );
}

#[test]
fn demo_without_a_terminal_prints_the_demo_stores_table() {
    let output = run(&["demo"]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("13 rollouts: 6 ok, 6 masked, 1 pending"),
        "{text}"
    );
}

#[test]
fn flags_are_accepted_only_where_they_mean_something() {
    let dir = store("conformance/store-1-0");
    // Explorer flags are not build's: clap refuses them (status 2) and names the flag.
    for args in [
        vec!["build", "--poll", "100", &dir],
        vec!["build", "--no-watch", &dir],
        vec!["build", "--max-mask-fraction", "0.5", &dir],
        vec!["replay", "--poll", "100", &dir],
        vec!["replay", "--no-watch", &dir],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(args[1]), "{args:?}: {stderr}");
    }
    // The kill switch's flags need --follow.
    let output = run(&["check", "--max-mask-fraction", "0.5", &dir]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("check --follow"));
    // What every command reads is accepted by every command.
    let output = run(&["build", "--max-line-mib", "64", &dir]);
    assert!(output.status.success());
}

#[test]
fn check_without_a_directory_checks_the_demo_store_as_build_does() {
    let check = run(&["check"]);
    let build = run(&["build"]);
    assert_eq!(check.stdout, build.stdout);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("demo-clean"), "{text}");
    assert!(check.status.code().is_some_and(|c| c == 0 || c == 1));
}

#[test]
fn completions_and_man_page_come_from_the_definitions() {
    let bash = run(&["completions", "bash"]);
    assert!(bash.status.success());
    let script = String::from_utf8(bash.stdout).unwrap();
    assert!(script.contains("_tokscope") && script.contains("--max-mask-fraction"));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let output = run(&["completions", shell]);
        assert!(
            output.status.success() && !output.stdout.is_empty(),
            "{shell}"
        );
    }
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
    let man = run(&["man"]);
    assert!(man.status.success());
    let page = String::from_utf8(man.stdout).unwrap();
    assert!(
        page.contains(".TH tokscope") && page.contains("check"),
        "{page}"
    );
}
