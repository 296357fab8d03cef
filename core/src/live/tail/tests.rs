//! Tests of following one file: appends, truncation, replacement, rewrites in place, the
//! last line kept aside.

use super::*;
use std::io::Write;

#[test]
fn the_head_hash_tells_apart_a_change_anywhere_in_the_bytes() {
    let mut rng = tokscope_testkit::Rng::new(7);
    let base: Vec<u8> = (0..4099).map(|_| rng.next_u64() as u8).collect();
    let mut seen = std::collections::HashSet::new();
    for len in [0, 1, 7, 8, 9, 4096, 4099] {
        assert!(seen.insert(hash_of(&base[..len])), "length {len}");
    }
    for at in 0..base.len() {
        let mut changed = base.clone();
        changed[at] ^= 1 << (at % 8);
        assert!(seen.insert(hash_of(&changed)), "a bit flipped at {at}");
    }
}

#[test]
fn follows_appends_truncation_replacement_and_removal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mut tail = FileTail::new(path.clone(), true);
    assert_eq!(tail.refresh(), Change::None);
    std::fs::write(&path, b"one\n").unwrap();
    assert_eq!(tail.refresh(), Change::Reread);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"two\n").unwrap();
    assert_eq!(tail.refresh(), Change::Appended);
    assert_eq!(tail.bytes(), Some(&b"one\ntwo\n"[..]));
    assert_eq!(tail.bytes_read, 8, "only new bytes are read");
    std::fs::write(&path, b"x\n").unwrap(); // truncated and rewritten
    assert_eq!(tail.refresh(), Change::Reread);
    assert_eq!(tail.bytes(), Some(&b"x\n"[..]));
    let other = dir.path().join("g");
    std::fs::write(&other, b"replaced\n").unwrap();
    std::fs::rename(&other, &path).unwrap();
    assert_eq!(tail.refresh(), Change::Reread);
    assert_eq!(tail.bytes(), Some(&b"replaced\n"[..]));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(tail.refresh(), Change::Removed);
    assert_eq!(tail.bytes(), None);
    assert_eq!(tail.refresh(), Change::None);
}

#[test]
fn a_forgotten_file_is_read_whole_again_only_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"one\n").unwrap();
    let mut tail = FileTail::new(path.clone(), true);
    assert_eq!(tail.refresh(), Change::Reread);
    tail.forget();
    assert!(tail.is_cold() && tail.bytes().is_none());
    assert_eq!(tail.refresh(), Change::None, "unchanged: not read");
    assert_eq!(tail.bytes_read, 4);
    assert_eq!(tail.reload(), Change::None, "read again, but no change");
    assert_eq!(tail.bytes(), Some(&b"one\n"[..]));
    tail.forget();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"two\n").unwrap();
    assert_eq!(
        tail.refresh(),
        Change::Reread,
        "changed while cold: read whole"
    );
    assert_eq!(tail.bytes(), Some(&b"one\ntwo\n"[..]));
    tail.forget();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        tail.refresh(),
        Change::Removed,
        "a cold file's removal is a change"
    );
}

/// A temporary directory holding one file `f` with `bytes`.
fn file_with(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// Append `bytes` to the file at `path`, as a writer does.
fn append(path: &std::path::Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

#[test]
fn a_whole_read_says_whether_the_file_is_the_one_read_before_grown() {
    let (dir, path) = file_with(b"one\n");
    let mut tail = FileTail::records(path.clone());
    assert_eq!(tail.refresh(), Change::Reread);
    assert!(!tail.continued(), "nothing was read before");
    tail.forget();
    append(&path, b"two\n");
    assert_eq!(tail.reload(), Change::Reread);
    assert!(tail.continued(), "the same file, grown while cold");
    tail.settle(4, 8);
    assert_eq!(tail.bytes(), Some(&b""[..]), "parsed lines are not held");
    assert_eq!(tail.kept_line(), Some(&b"two\n"[..]), "but the last");
    assert_eq!(tail.view().map(|v| (v.base, v.len())), Some((8, 8)));
    append(&path, b"thr");
    assert_eq!(tail.refresh(), Change::Appended);
    tail.settle(4, 8);
    assert_eq!(
        tail.bytes(),
        Some(&b"thr"[..]),
        "an unfinished line is held"
    );
    assert_eq!(tail.kept_line(), Some(&b"two\n"[..]), "still the last line");
    std::fs::write(&path, b"x\n").unwrap();
    assert_eq!(tail.refresh(), Change::Reread);
    assert!(!tail.continued(), "truncated");
    let other = dir.path().join("g");
    std::fs::write(&other, b"x\ny\n").unwrap();
    std::fs::rename(&other, &path).unwrap();
    assert_eq!(tail.refresh(), Change::Reread);
    assert!(!tail.continued(), "replaced");
}

#[test]
fn the_last_complete_line_is_kept_aside_and_swapped_with_each_append() {
    let (_dir, path) = file_with(b"one\ntwo\n");
    let mut tail = FileTail::records(path.clone());
    assert_eq!(tail.refresh(), Change::Reread);
    // Several lines read at once: the last one copied aside.
    tail.settle(4, 8);
    assert_eq!(tail.kept_line(), Some(&b"two\n"[..]));
    assert_eq!(tail.bytes(), Some(&b""[..]));
    // (A whole read's buffer goes to the thread's spare, not to the lines' pool: a pool
    // of whole files' buffers held a first scan's peak 45 MB higher.)
    assert!(line_pool::capacities().is_empty());
    // A line and the start of the next appended: the line is kept, the rest held.
    append(&path, b"three\nfo");
    assert_eq!(tail.refresh(), Change::Appended);
    let view = tail.view().unwrap();
    assert_eq!((view.base, view.fresh), (8, &b"three\nfo"[..]));
    assert_eq!(view.kept, Some((4, &b"two\n"[..])), "the parent at hand");
    tail.settle(8, 14);
    assert_eq!(tail.kept_line(), Some(&b"three\n"[..]));
    assert_eq!(tail.bytes(), Some(&b"fo"[..]));
    // The held start completed: the buffer read into becomes the kept line.
    append(&path, b"ur\n");
    assert_eq!(tail.refresh(), Change::Appended);
    assert_eq!(tail.view().unwrap().kept, Some((8, &b"three\n"[..])));
    tail.settle(14, 19);
    assert_eq!(tail.kept_line(), Some(&b"four\n"[..]));
    assert_eq!(tail.bytes(), Some(&b""[..]));
    // From then on an append is read into a buffer given back by an earlier line (not
    // the thread's spare, a whole file's buffer, which the line would be copied out of),
    // and kept as read.
    for (line, at) in [(&b"4.5\n"[..], 19u64), (b"4.75\n", 23)] {
        crate::store::open::recycle(Vec::with_capacity(1 << 20));
        append(&path, line);
        assert_eq!(tail.refresh(), Change::Appended);
        let read_into = tail.view().unwrap().fresh.as_ptr();
        tail.settle(at, at + line.len() as u64);
        assert_eq!(tail.kept_line(), Some(line));
        assert_eq!(
            tail.kept_line().unwrap().as_ptr(),
            read_into,
            "kept as read"
        );
        assert!(
            !line_pool::capacities().is_empty(),
            "the line before's buffer given back"
        );
    }
    // A last line too long to keep: none is (not the one before it either).
    append(&path, b"five\n");
    assert_eq!(tail.refresh(), Change::Appended);
    tail.settle(33, 33);
    assert_eq!(tail.kept_line(), None);
    assert_eq!(tail.view().map(|v| (v.base, v.len())), Some((33, 33)));
    // Replaced: nothing kept of the old file.
    std::fs::write(&path, b"x\n").unwrap();
    assert_eq!(tail.refresh(), Change::Reread);
    assert_eq!(tail.kept_line(), None);
    assert_eq!(tail.bytes(), Some(&b"x\n"[..]));
}

#[test]
fn a_file_rewritten_longer_between_two_looks_is_read_whole() {
    let (_dir, path) = file_with(b"");
    // Within the fingerprint's bytes (read whole at once) and past them (head read alone).
    for pad in [0, 2 * HEAD_BYTES] {
        let line = |id: &str| format!("{{\"id\":\"{id}\",\"pad\":\"{}\"}}\n", "x".repeat(pad));
        for settles in [false, true] {
            std::fs::write(&path, line("first")).unwrap();
            let mut tail = if settles {
                FileTail::records(path.clone())
            } else {
                FileTail::new(path.clone(), true)
            };
            assert_eq!(tail.refresh(), Change::Reread);
            if settles {
                tail.settle(0, line("first").len() as u64);
            }
            // An append is read as one.
            append(&path, line("second").as_bytes());
            assert_eq!(
                tail.refresh(),
                Change::Appended,
                "pad {pad}, settles {settles}"
            );
            let known = line("first").len() + line("second").len();
            if settles {
                tail.settle(line("first").len() as u64, known as u64);
            }
            // Truncated and written again (the same inode), longer, before the next look.
            let rewritten = [line("third"), line("fourth"), line("fifth")].concat();
            std::fs::write(&path, &rewritten).unwrap();
            assert_eq!(
                tail.refresh(),
                Change::Reread,
                "pad {pad}, settles {settles}"
            );
            assert!(!tail.continued());
            assert_eq!(tail.bytes(), Some(rewritten.as_bytes()));
        }
    }
}

#[test]
fn a_file_rewritten_in_place_while_cold_is_not_taken_for_the_one_read() {
    let (_dir, path) = file_with(b"first attempt\n");
    let mut tail = FileTail::records(path.clone());
    assert_eq!(tail.refresh(), Change::Reread);
    tail.forget();
    // Truncated and written again (the same inode), longer than before.
    std::fs::write(&path, b"second attempt, longer\n").unwrap();
    assert_eq!(tail.reload(), Change::Reread);
    assert!(
        !tail.continued(),
        "another version: nothing known of the first holds"
    );
}

#[test]
fn a_settled_file_whose_times_changed_is_not_read_again() {
    let (_dir, path) = file_with(b"one\ntwo\n");
    let mut tail = FileTail::records(path.clone());
    assert_eq!(tail.refresh(), Change::Reread);
    tail.settle(8, 8);
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(
        tail.refresh(),
        Change::None,
        "the same bytes: nothing to parse"
    );
    assert_eq!(tail.bytes_read, 8);
    // The same size, other bytes: read whole.
    std::fs::write(&path, b"six\nten\n").unwrap();
    assert_eq!(tail.refresh(), Change::Reread);
    assert!(!tail.continued());
}

#[test]
fn a_small_file_first_seen_empty_keeps_a_buffer_of_its_size() {
    let (_dir, path) = file_with(b"");
    // Give this thread a large spare buffer, as reading a large file would.
    crate::store::open::recycle(Vec::with_capacity(4 << 20));
    let mut tail = FileTail::new(path.clone(), true);
    assert_eq!(tail.refresh(), Change::Reread);
    append(&path, b"c1\n");
    assert_eq!(tail.refresh(), Change::Appended);
    assert!(tail.held_bytes() < 4 << 10, "held {}", tail.held_bytes());
}

/// One followed records file in [`appends_of_all_lengths_are_read_and_kept_exactly`]: its
/// bytes as written, and where its parsing settled last (`keep_from`, `resume`).
struct Followed {
    path: PathBuf,
    tail: FileTail,
    written: Vec<u8>,
    settled: Option<(usize, usize)>,
}

#[test]
fn appends_of_all_lengths_are_read_and_kept_exactly() {
    // Three files followed by one thread, so buffers pass between them through the lines'
    // pool: short lines, lines past the 4 KiB read whole, lines of tens of KiB, several at
    // once, and lines completed over two appends; after every refresh and every settle,
    // what a read sees is the file's bytes, and the kept line is the one asked for.
    let dir = tempfile::tempdir().unwrap();
    let mut rng = tokscope_testkit::Rng::new(41);
    let mut files: Vec<Followed> = (0..3)
        .map(|at| {
            let path = dir.path().join(format!("r{at}"));
            std::fs::write(&path, b"").unwrap();
            let mut tail = FileTail::records(path.clone());
            tail.refresh();
            Followed {
                path,
                tail,
                written: Vec::new(),
                settled: None,
            }
        })
        .collect();
    for step in 0..300 {
        let followed = &mut files[rng.range(0, 3) as usize];
        let mut bytes = Vec::new();
        for _ in 0..rng.range(1, 3) {
            let len = match rng.range(0, 4) {
                0 => rng.range(1, 200),
                1 => rng.range(3_000, 6_000),
                _ => rng.range(10_000, 60_000),
            } as usize;
            bytes.extend((0..len).map(|_| b'a' + (rng.next_u64() % 26) as u8));
            bytes.push(b'\n');
        }
        // Now and then the last line's end comes with the next append.
        if rng.range(0, 4) == 0 {
            bytes.extend_from_slice(b"unfinished");
        }
        append(&followed.path, &bytes);
        followed.written.extend_from_slice(&bytes);
        let written = &followed.written;
        assert_ne!(followed.tail.refresh(), Change::None, "step {step}");
        let view = followed.tail.view().expect("read");
        let (keep_from, resume) = followed.settled.unwrap_or((0, 0));
        assert_eq!(view.base, resume, "step {step}");
        assert!(
            view.fresh == &written[resume..],
            "step {step}: the new bytes"
        );
        if followed.settled.is_some() && keep_from < resume {
            let kept = view.kept.expect("a kept line");
            assert_eq!(kept.0, keep_from, "step {step}");
            assert!(
                kept.1 == &written[keep_from..resume],
                "step {step}: the kept line"
            );
        }
        // Parsed up to the last complete line; that line kept, or (now and then, as for a
        // line too long to keep) none.
        let resume = written
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        let last_start = written[..resume.saturating_sub(1)]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        let keep_from = if rng.range(0, 8) == 0 {
            resume
        } else {
            last_start
        };
        followed.tail.settle(keep_from as u64, resume as u64);
        followed.settled = Some((keep_from, resume));
        let kept = followed.tail.kept_line();
        if keep_from < resume {
            assert!(
                kept == Some(&written[keep_from..resume]),
                "step {step}: kept as asked"
            );
        } else {
            assert_eq!(kept, None, "step {step}");
        }
        assert!(
            followed.tail.bytes() == Some(&written[resume..]),
            "step {step}: the unfinished rest"
        );
    }
}
