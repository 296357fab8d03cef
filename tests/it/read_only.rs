//! The program never writes into a store it reads: after every command the store's file
//! names, bytes, modification and access times are unchanged, and nothing was created.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

#[derive(Debug, PartialEq)]
struct FileSnapshot {
    bytes: Vec<u8>,
    mtime: (i64, i64),
    atime: (i64, i64),
    mode: u32,
}

fn snapshot(dir: &Path) -> (BTreeMap<String, FileSnapshot>, (i64, i64)) {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        // Read the bytes without touching atime: std::fs::read would update it.
        let bytes = read_noatime(&entry.path());
        files.insert(
            entry.file_name().into_string().unwrap(),
            FileSnapshot {
                bytes,
                mtime: (meta.mtime(), meta.mtime_nsec()),
                atime: (meta.atime(), meta.atime_nsec()),
                mode: meta.mode(),
            },
        );
    }
    let meta = std::fs::metadata(dir).unwrap();
    (files, (meta.mtime(), meta.mtime_nsec()))
}

fn read_noatime(path: &Path) -> Vec<u8> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(0o1_000_000)
        .open(path)
        .unwrap();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    bytes
}

#[test]
fn no_command_changes_the_store() {
    let temp = tempfile::tempdir().unwrap();
    let store = temp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    for entry in std::fs::read_dir(common::fixture("conformance/store-1-0")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), store.join(entry.file_name())).unwrap();
    }
    // Rollout rows inside the store are found and read too: they must stay untouched as well.
    std::fs::copy(
        common::fixture("rows/store-1-0.rows.jsonl"),
        store.join("rollouts.jsonl"),
    )
    .unwrap();
    // Make access times older than modification times, so relatime would update them.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let before = snapshot(&store);
    let s = store.to_str().unwrap();
    let runs: Vec<Vec<&str>> = vec![
        vec![s],
        vec!["build", s],
        vec!["build", s, "--format", "json"],
        vec!["build", s, "--format", "jsonl"],
        vec![
            "build",
            s,
            "--rollout",
            "0-5-a0",
            "--terminal-call",
            "0-5-a0-c002-x",
        ],
        vec!["check", s],
    ];
    for args in runs {
        let output = Command::new(env!("CARGO_BIN_EXE_tokscope"))
            .args(&args)
            .current_dir(temp.path())
            .output()
            .unwrap();
        assert!(
            output.status.code().is_some_and(|c| c <= 1),
            "{args:?}: {output:?}"
        );
        let after = snapshot(&store);
        assert_eq!(before.1, after.1, "{args:?} changed the directory");
        assert_eq!(
            before.0.keys().collect::<Vec<_>>(),
            after.0.keys().collect::<Vec<_>>(),
            "{args:?} created or removed a file"
        );
        for (name, file) in &before.0 {
            assert_eq!(file, &after.0[name], "{args:?} touched {name}");
        }
    }
}

fn copy_store(into: &Path) -> std::path::PathBuf {
    let store = into.join("store");
    std::fs::create_dir(&store).unwrap();
    for entry in std::fs::read_dir(common::fixture("conformance/store-1-0")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), store.join(entry.file_name())).unwrap();
    }
    std::fs::copy(
        common::fixture("rows/store-1-0.rows.jsonl"),
        store.join("rollouts.jsonl"),
    )
    .unwrap();
    store
}

fn assert_unchanged(
    before: &(BTreeMap<String, FileSnapshot>, (i64, i64)),
    store: &Path,
    what: &str,
) {
    let after = snapshot(store);
    assert_eq!(before.1, after.1, "{what} changed the directory");
    assert_eq!(
        before.0.keys().collect::<Vec<_>>(),
        after.0.keys().collect::<Vec<_>>(),
        "{what} created or removed a file"
    );
    for (name, file) in &before.0 {
        assert_eq!(file, &after.0[name], "{what} touched {name}");
    }
}

#[test]
fn no_explorer_action_changes_a_read_only_store() {
    use crossterm::event::KeyCode;
    use std::os::unix::fs::PermissionsExt;
    use tokscope::app::{Action, App, Message, TextKey};
    let temp = tempfile::tempdir().unwrap();
    let store = copy_store(temp.path());
    for entry in std::fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let before = snapshot(&store);
    let stores = vec![store.clone()];
    let mut rows = tokscope_core::observe::Rows::default();
    rows.discover(&stores);
    let locations = tokscope_core::load::locate(&stores, &[]).unwrap();
    let mut analyses = Vec::new();
    let options = tokscope_core::verdict::VerdictOptions::default();
    tokscope_core::load::analyze_in_order(&locations, &options, &rows, |a| a, |a| analyses.push(a));
    let mut app = App::new(stores, analyses, options, common::viewport(120, 40));
    let out = temp.path().join("exports");
    std::fs::create_dir(&out).unwrap();
    // Every rollout opened, every pane walked, what-ifs, exports (also refused into the
    // store), replay stepped.
    for index in 0..app.list.rows.len() {
        app.update(Message::Click {
            pane: tokscope::app::Pane::List,
            row: None,
        });
        app.list.scroll.select(index);
        for action in [
            Action::Enter,
            Action::Down,
            Action::Divergence,
            Action::PinTerminal,
            Action::ToggleAttributed,
            Action::NextPane,
            Action::NextPane,
            Action::Bottom,
            Action::NextPane,
            Action::Enter,
            Action::NextPane,
            Action::Enter,
            Action::ClearWhatIf,
        ] {
            app.update(Message::Action(action));
            let _ = common::screen(&app);
        }
        for (what, dir) in [
            (Action::ExportReport, &out),
            (Action::ExportResponse, &store),
        ] {
            app.update(Message::Action(what));
            app.update(Message::Text(TextKey::ClearLine));
            let path = dir.join(format!("x{index}.json"));
            for c in path.to_str().unwrap().chars() {
                app.update(Message::Text(TextKey::Char(c)));
            }
            app.update(Message::Text(TextKey::Submit));
        }
        common::key(&mut app, KeyCode::Esc);
    }
    for action in [
        Action::ToggleReplay,
        Action::StepBack,
        Action::StepBack,
        Action::Speed100,
        Action::StepForward,
        Action::ToggleReplay,
    ] {
        app.update(Message::Action(action));
        let _ = common::screen(&app);
    }
    assert!(
        std::fs::read_dir(&out).unwrap().count() > 0,
        "exports went outside"
    );
    assert_unchanged(&before, &store, "the explorer");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn following_a_live_store_changes_nothing_but_what_its_writer_writes() {
    use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
    for mode in [
        WatchMode::Events,
        WatchMode::Poll(std::time::Duration::from_millis(50)),
    ] {
        let temp = tempfile::tempdir().unwrap();
        let store = copy_store(temp.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before = snapshot(&store);
        let handle = watch(
            vec![store.clone()],
            WatchOptions {
                mode,
                ..WatchOptions::default()
            },
        );
        // A writer appends a rollout call by call while the store is followed.
        let mut rng = tokscope_testkit::Rng::new(3);
        let full = tokscope_testkit::linear_rollout("w", 12, &mut rng, 6, false, true);
        for calls in 1..=full.calls.len() {
            let partial = tokscope_testkit::Rollout {
                calls: full.calls[..calls].to_vec(),
                ..full.clone()
            };
            partial.write(&store).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(15));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(handle);
        // The writer's files are exactly what it wrote; everything else is untouched.
        let expected = temp.path().join("expected");
        std::fs::create_dir(&expected).unwrap();
        full.write(&expected).unwrap();
        let after = snapshot(&store);
        for (name, file) in snapshot(&expected).0 {
            assert_eq!(after.0[&name].bytes, file.bytes, "{name}");
        }
        let mut others = before;
        others.1 = after.1; // the writer created files: the directory's mtime moved
        for name in snapshot(&expected).0.keys() {
            others.0.insert(name.clone(), snapshot_of(&store, name));
        }
        assert_unchanged(&others, &store, "following the live store");
    }
}

fn snapshot_of(store: &Path, name: &str) -> FileSnapshot {
    snapshot(store).0.remove(name).unwrap()
}
