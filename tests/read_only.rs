//! The program never writes into a store it reads: after every command the store's file
//! names, bytes, modification and access times are unchanged, and nothing was created.

mod common;

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
