//! The configuration file and the remembered state, as the explorer uses them: key
//! overrides, the theme, the low-probability threshold, and the last session's rollout, tab
//! and token mode restored when the rollout appears (unless the user moved first).

use crate::common;
use crate::common::{key, keys};

use std::path::PathBuf;

use crossterm::event::KeyCode;
use tokscope::app::{App, Message, Pane, Remembered, Tab, TokenText};
use tokscope::config::Config;
use tokscope_core::verdict::VerdictOptions;

const STORE: &str = "tests/fixtures/conformance/store-1-0";

fn app() -> App {
    let stores = vec![PathBuf::from(STORE)];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    App::new(stores, analyses, options, common::viewport(120, 40))
}

#[test]
fn configured_keys_come_before_the_built_in_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[keys]\nzoom = \"Z\"\nquit = \"F10\"\nnext_pane = \"Ctrl-N\"\n",
    )
    .unwrap();
    let config = Config::load(&path).unwrap();
    let mut app = app();
    app.keys = config.keys().unwrap();
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "Z");
    assert_eq!(app.zoomed(), Some(Pane::Tree));
    key(&mut app, KeyCode::F(10));
    assert!(app.quit);
    // The built-in keys still work.
    let mut app = self::app();
    app.keys = config.keys().unwrap();
    keys(&mut app, "f");
    assert!(app.zoom);
    common::key_event(
        &mut app,
        crossterm::event::KeyEvent::new(
            KeyCode::Char('n'),
            crossterm::event::KeyModifiers::CONTROL,
        ),
    );
    assert_eq!(app.focus, Pane::Tree);
}

#[test]
fn the_last_session_is_restored_once_its_rollout_is_listed() {
    // A live app: the rollouts arrive after the restore was asked for.
    let stores = vec![PathBuf::from(STORE)];
    let options = VerdictOptions::default();
    let mut app = App::new_live(stores.clone(), options.clone(), common::viewport(120, 40));
    let what = Remembered {
        rollout: Some("0-21-a2".into()),
        tab: Some("graph".into()),
        tokens: Some("prose".into()),
    };
    app.restore(&what);
    assert_eq!(app.detail, Tab::Graph);
    assert_eq!(app.token_text, TokenText::Ids, "no tokenizer: ids stay");
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    let events: Vec<_> = analyses
        .into_iter()
        .map(|a| {
            tokscope_core::live::StoreEvent::Updated(Box::new(tokscope_core::verdict::Summary::of(
                &a,
            )))
        })
        .collect();
    app.update(Message::Store(events));
    let selected = app.list.rows[app.list.scroll.selected()];
    assert_eq!(app.rollouts[selected].rollout_id(), "0-21-a2");
    // Later batches keep it.
    app.update(Message::Store(vec![tokscope_core::live::StoreEvent::Ready]));
    let selected = app.list.rows[app.list.scroll.selected()];
    assert_eq!(app.rollouts[selected].rollout_id(), "0-21-a2");
    let again = app.remembered();
    assert_eq!(again.rollout.as_deref(), Some("0-21-a2"));
    assert_eq!(again.tab.as_deref(), Some("graph"));
    // Moving first wins over the restore.
    let mut app = App::new_live(stores.clone(), options.clone(), common::viewport(120, 40));
    app.restore(&what);
    keys(&mut app, "j");
    assert!(app.restore.is_none());
}

#[test]
fn a_configuration_error_stops_the_binary_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "[keys]\nfly = \"x\"\n").unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tokscope"))
            .args(args)
            .env("TOKSCOPE_CONFIG", &path)
            .output()
            .unwrap()
    };
    let output = run(&["check", "--follow", STORE]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("config.toml") && stderr.contains("fly"),
        "{stderr}"
    );
    // The configuration is the explorer's: build and the CI gate do not read it.
    assert!(run(&["build", STORE]).status.success());
    assert!(run(&["completions", "bash"]).status.success());
}
