//! Unit tests of the records-file reader.

use super::records::{ParsedRecords, parse_records};
use super::*;
use std::path::Path;

fn rec(id: &str, created: f64) -> String {
    format!(
        r#"{{"created_at":{created},"generation_log_probs":[-0.1],"generation_token_ids":[7],"model_call_id":"{id}","parent_resolution":"root","prompt_token_ids":[1,2],"rollout_id":"r"}}"#
    )
}

fn parse(data: &str) -> (ParsedRecords, Vec<ReadIssue>) {
    parse_with(data, &RolloutState::absent(), DEFAULT_LINE_LIMIT)
}

/// Read `data` under `state` with a line limit of `limit` bytes.
fn parse_with(data: &str, state: &RolloutState, limit: usize) -> (ParsedRecords, Vec<ReadIssue>) {
    let mut issues = Vec::new();
    let parsed = parse_records(
        RecordsBytes::whole(data.as_bytes()),
        state,
        &mut issues,
        &mut LineCache::default(),
        limit,
    );
    (parsed, issues)
}

/// A 60-call conversation of full prompts, one record per line, and its last call's sequence.
fn conversation() -> (Vec<String>, Vec<u64>) {
    let mut lines = Vec::new();
    let mut sequence: Vec<u64> = Vec::new();
    for call in 0..60u64 {
        let prompt: Vec<u64> = sequence.iter().copied().chain(call..call + 30).collect();
        let generation = [1000 + call];
        let parent = match call {
            0 => r#""parent_call_id":null,"parent_resolution":"root""#.to_owned(),
            _ => format!(
                r#""parent_call_id":"c{}","parent_resolution":"resolved""#,
                call - 1
            ),
        };
        lines.push(format!(
            r#"{{"generation_log_probs":[-0.1],"generation_token_ids":{generation:?},"model_call_id":"c{call}",{parent},"prompt_token_ids":{prompt:?},"rollout_id":"r"}}"#
        ));
        sequence = prompt;
        sequence.extend(generation);
    }
    (lines, sequence)
}

#[test]
fn a_conversation_is_read_in_time_linear_in_its_new_tokens() {
    let (lines, sequence) = conversation();
    let data = lines.join("\n") + "\n";
    // The state indexes half the file: the tail is checked first, yet read after its parents.
    let half = data.len() / 2;
    let indexed = half + data[half..].find('\n').unwrap() + 1;
    let state = RolloutState::parse(format!(r#"{{"indexed_size":{indexed}}}"#).as_bytes());
    crate::store::record::take_tokens_read_from_digits();
    let (parsed, issues) = parse_with(&data, &state, DEFAULT_LINE_LIMIT);
    assert!(issues.is_empty(), "{issues:?}");
    assert_eq!(parsed.records.len(), 60);
    assert_eq!(
        parsed.records[59].prompt_token_ids.to_vec(),
        &sequence[..sequence.len() - 1]
    );
    assert_eq!(
        crate::store::record::take_tokens_read_from_digits(),
        sequence.len()
    );
}

#[test]
fn appended_lines_share_the_tokens_of_lines_kept_from_earlier_reads() {
    let (lines, sequence) = conversation();
    let mut cache = LineCache::kept();
    let mut data = String::new();
    let mut read_from_digits = 0;
    crate::store::record::take_tokens_read_from_digits();
    // The file grows a line at a time, read again after each (as a followed rollout is).
    for line in &lines {
        data.push_str(line);
        data.push('\n');
        let mut issues = Vec::new();
        let parsed = parse_records(
            RecordsBytes::whole(data.as_bytes()),
            &RolloutState::absent(),
            &mut issues,
            &mut cache,
            DEFAULT_LINE_LIMIT,
        );
        read_from_digits += crate::store::record::take_tokens_read_from_digits();
        assert!(issues.is_empty(), "{issues:?}");
        let last = parsed.records.last().unwrap();
        let alone = TokenRecord::parse(line.as_bytes()).unwrap();
        assert_eq!(format!("{last:?}"), format!("{alone:?}"));
        crate::store::record::take_tokens_read_from_digits();
    }
    assert_eq!(read_from_digits, sequence.len());
}

#[test]
fn torn_final_line_is_ignored_and_reported() {
    let data = format!("{}\n{}", rec("a", 1.0), &rec("b", 2.0)[..30]);
    let (parsed, issues) = parse(&data);
    assert_eq!(parsed.records.len(), 1);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].kind, IssueKind::TornTail);
    assert!(!issues[0].fatal);
    assert_eq!(issues[0].at.unwrap().line, 2);
}

#[test]
fn corrupt_middle_line_is_fatal_and_located() {
    let first = rec("a", 1.0);
    let data = format!("{first}\n{{\"broken\n{}\n", rec("c", 3.0));
    let (parsed, issues) = parse(&data);
    assert_eq!(
        parsed.records.len(),
        2,
        "records around the corruption stay visible"
    );
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].kind, IssueKind::Corrupt);
    assert!(issues[0].fatal);
    assert_eq!(
        issues[0].at,
        Some(LinePos {
            line: 2,
            offset: first.len() as u64 + 1
        })
    );
}

#[test]
fn complete_final_line_without_newline_is_accepted() {
    let data = format!("{}\n{}", rec("a", 1.0), rec("b", 2.0));
    let (parsed, issues) = parse(&data);
    assert_eq!(parsed.records.len(), 2);
    assert_eq!(issues[0].kind, IssueKind::Unterminated);
}

#[test]
fn duplicate_lines_identical_vs_conflicting() {
    let same = format!("{}\n{}\n", rec("a", 1.0), rec("a", 1.0));
    let (parsed, issues) = parse(&same);
    assert_eq!(parsed.records.len(), 2);
    assert!(issues.is_empty());
    let conflict = format!("{}\n{}\n", rec("a", 1.0), rec("a", 2.0));
    let (_, issues) = parse(&conflict);
    assert_eq!(issues[0].kind, IssueKind::Conflict);
    assert!(issues[0].fatal);
}

#[test]
fn refused_record_is_fatal() {
    let bad = rec("b", 2.0).replace("\"rollout_id\"", "\"schema_version\":9,\"rollout_id\"");
    let data = format!("{}\n{bad}\n", rec("a", 1.0));
    let (parsed, issues) = parse(&data);
    assert_eq!(parsed.records.len(), 1);
    assert_eq!(issues[0].kind, IssueKind::Refused);
    assert!(issues[0].message.contains("upgrade the reader"));
}

#[test]
fn a_line_over_the_limit_is_a_located_fatal_gap_and_not_parsed() {
    let long = rec("b", 2.25);
    let data = format!("{}\n{long}\n{}\n", rec("a", 1.0), rec("c", 3.0));
    for indexed in [0, data.len() as i64] {
        let mut state = RolloutState::absent();
        state.indexed_size = Some(indexed);
        let (parsed, issues) = parse_with(&data, &state, long.len() - 1);
        let ids: Vec<_> = parsed.records.iter().map(|r| &*r.model_call_id).collect();
        assert_eq!(ids, ["a", "c"], "the other lines are still read");
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].kind, IssueKind::TooLong);
        assert!(issues[0].fatal);
        assert_eq!(issues[0].at.map(|at| at.line), Some(2));
        assert!(issues[0].message.contains("--max-line-mib"));
    }
    // Over the limit and last: it may be a write in progress, and the message says so.
    let torn = format!("{}\n{long}", rec("a", 1.0));
    let (_, issues) = parse_with(&torn, &RolloutState::absent(), long.len() - 1);
    assert_eq!(issues[0].kind, IssueKind::TooLong);
    assert!(
        issues[0].message.contains("write still in progress"),
        "{issues:?}"
    );
    // At the limit, the line is read.
    let (parsed, issues) = parse_with(&data, &RolloutState::absent(), long.len());
    assert_eq!(parsed.records.len(), 3);
    assert!(issues.is_empty());
}

#[test]
fn indexed_region_is_trusted_but_still_read() {
    let data = format!("{}\n{}\n", rec("a", 1.0), rec("a", 2.0));
    let mut state = RolloutState::absent();
    state.indexed_size = Some(data.len() as i64);
    let (parsed, issues) = parse_with(&data, &state, DEFAULT_LINE_LIMIT);
    assert_eq!(
        parsed.records.len(),
        2,
        "the conflict is the builder's to find"
    );
    assert!(issues.is_empty());
    state.indexed_size = Some(data.len() as i64 + 1);
    let (_, issues) = parse_with(&data, &state, DEFAULT_LINE_LIMIT);
    assert_eq!(issues[0].kind, IssueKind::BadState);
}

/// A reader between the writer's line and its state meets a tail of one line: the index (an
/// entry a call) is looked up for that line's id alone, and still finds a conflict with it.
#[test]
fn a_tail_looks_up_its_own_ids_in_the_index() {
    let lines: Vec<String> = (0..50).map(|n| rec(&format!("c{n}"), n as f64)).collect();
    let indexed: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let index: String = (0..50)
        .map(|n| format!(r#""c{n}":"{:064x}""#, n))
        .collect::<Vec<_>>()
        .join(",");
    let state = RolloutState::parse(
        format!(
            r#"{{"entry_digests":{{{index}}},"indexed_size":{},"version":50}}"#,
            indexed.len()
        )
        .as_bytes(),
    );
    // A new call past the index: nothing of the index built.
    let data = format!("{indexed}{}\n", rec("c50", 50.0));
    crate::work::take();
    let (parsed, issues) = parse_with(&data, &state, DEFAULT_LINE_LIMIT);
    assert_eq!((parsed.records.len(), issues.len()), (51, 0), "{issues:?}");
    assert_eq!(crate::work::take().index_entries_built, 0);
    // A line past the index repeating an indexed id with other bytes: a conflict, found by
    // that one entry.
    let data = format!("{indexed}{}\n", rec("c7", 99.0));
    let (_, issues) = parse_with(&data, &state, DEFAULT_LINE_LIMIT);
    assert_eq!(crate::work::take().index_entries_built, 1);
    assert!(
        issues.iter().any(|issue| issue.kind == IssueKind::Conflict),
        "{issues:?}"
    );
}

#[test]
fn intents_split_like_python() {
    assert_eq!(
        decode_lines(b"a\r\nb\rc\n\n  d  \n").unwrap(),
        vec!["a", "b", "c", "d"]
    );
    assert!(decode_lines(b"ok\n\xff\n").is_err());
}

/// Read `path` as a followed file is read: only the bytes from where the kept cache must
/// resume, the file open for the lines before.
/// A read of `path` from where `cache` left off, as a followed rollout's (the records of the
/// read before, if given, lent back as a live rollout lends its previous capture's).
fn read_followed(
    path: &Path,
    state: &RolloutState,
    cache: &mut LineCache,
    before: &mut Option<ParsedRecords>,
) -> (String, usize) {
    if let Some(before) = before.take() {
        cache.lend(before.records, before.lines);
    }
    let file = std::fs::File::open(path).unwrap();
    let data = std::fs::read(path).unwrap();
    let base = cache.resume();
    let view = RecordsBytes {
        fresh: &data[base..],
        base,
        kept: None,
        file: Some(&file),
    };
    let mut issues = Vec::new();
    let parsed = parse_records(view, state, &mut issues, cache, DEFAULT_LINE_LIMIT);
    let described = describe(&parsed, &issues);
    *before = Some(parsed);
    (described, base)
}

/// Everything a read found, to compare two reads.
fn describe(parsed: &ParsedRecords, issues: &[ReadIssue]) -> String {
    format!(
        "{:?}\n{:?}\n{}\n{issues:?}",
        parsed.records, parsed.lines, parsed.acknowledged_len
    )
}

#[test]
fn a_followed_file_read_from_where_it_grew_reads_as_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.tokens.jsonl");
    let (lines, _) = conversation();
    // Whole lines, torn writes finished later, a blank line, a conflicting duplicate of an
    // early call, a corrupt line with more after it, a line accepted without its newline
    // and then spoilt, and a last line without its newline.
    let conflict = lines[1].replace(
        "\"generation_log_probs\":[-0.1]",
        "\"generation_log_probs\":[-0.2]",
    );
    let mut writes: Vec<String> = Vec::new();
    for (index, line) in lines.iter().enumerate().take(20) {
        if index % 7 == 3 {
            let (head, rest) = line.split_at(line.len() / 2);
            writes.push(head.to_owned());
            writes.push(format!("{rest}\n"));
        } else {
            writes.push(format!("{line}\n"));
        }
    }
    // A whole record without its newline yet (accepted), which more bytes then spoil.
    writes.push(lines[20].clone());
    writes.push(format!(" x\n{}\n", lines[20]));
    writes.push("   \n".into());
    writes.push(format!("{conflict}\n"));
    writes.push(format!("{}\n", lines[20]));
    writes.push("{\"broken\n".into());
    writes.push(format!("{}\n", lines[21]));
    writes.push(lines[22].clone());
    // Without entry digests the index is a legacy one (every line is in the tail); with
    // them and an index at the end of all the writes, the lines before it are checked by
    // the full read alone (the index is past the end until the last write).
    let end: usize = writes.iter().map(String::len).sum();
    let states = [
        "{\"indexed_size\":0}".to_owned(),
        format!("{{\"indexed_size\":{}}}", lines[0].len() + 1),
        format!("{{\"indexed_size\":{end},\"entry_digests\":{{}}}}"),
    ];
    for state in &states {
        std::fs::write(&path, "").unwrap();
        let state = RolloutState::parse(state.as_bytes());
        assert!(state.error.is_none(), "{state:?}");
        let mut cache = LineCache::kept();
        let mut data = String::new();
        let (mut bases, mut before, mut carried) = (Vec::new(), None, 0);
        for write in &writes {
            data.push_str(write);
            std::fs::write(&path, &data).unwrap();
            let (followed, base) = read_followed(&path, &state, &mut cache, &mut before);
            carried += cache.carried();
            bases.push(base);
            let mut issues = Vec::new();
            let whole = parse_records(
                RecordsBytes::whole(data.as_bytes()),
                &state,
                &mut issues,
                &mut LineCache::default(),
                DEFAULT_LINE_LIMIT,
            );
            assert_eq!(followed, describe(&whole, &issues), "after {write:?}");
        }
        assert!(
            bases.windows(2).all(|pair| pair[0] <= pair[1]) && bases.last() > Some(&0),
            "each read starts where the last one left off: {bases:?}"
        );
        // Until the corrupt line, each read carries the earlier lines' records over.
        assert!(carried >= 20 * 19 / 2, "{carried} records carried over");
    }
}

#[test]
fn a_followed_file_shares_its_parents_tokens_wherever_they_sit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.tokens.jsonl");
    let (lines, sequence) = conversation();
    let mut cache = LineCache::kept();
    let mut data = String::new();
    crate::store::record::take_tokens_read_from_digits();
    for line in &lines {
        data.push_str(line);
        data.push('\n');
        std::fs::write(&path, &data).unwrap();
        read_followed(&path, &RolloutState::absent(), &mut cache, &mut None);
    }
    assert_eq!(
        crate::store::record::take_tokens_read_from_digits(),
        sequence.len(),
        "each id read from its digits once, the parents' bytes read again by offset"
    );
    assert!(cache.held_bytes() > 0);
}

#[test]
fn a_parent_hint_is_the_id_a_line_names_and_only_that() {
    use super::records::parent_hint;
    assert_eq!(
        parent_hint(br#"{"a":1,"parent_call_id" : "c7","prompt_token_ids":[]}"#),
        Some("c7")
    );
    assert_eq!(parent_hint(br#"{"parent_call_id":null}"#), None);
    assert_eq!(parent_hint(br#"{"parent_call_id":"a\"b"}"#), None);
    assert_eq!(parent_hint(br#"{"parent_call_id":"unterminated"#), None);
    assert_eq!(parent_hint(br#"{"model_call_id":"x"}"#), None);
}

#[test]
fn open_intents_are_the_intents_no_record_has_in_any_order() {
    let location = RolloutLocation {
        dir: "store".into(),
        id: "r".into(),
    };
    let mut next = 11u64;
    let mut random = |n: u64| {
        next = next
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (next >> 33) % n
    };
    for case in 0..300 {
        // Records c0..cN in file order; intents mostly in the same order, some swapped,
        // repeated, without a record, or missing.
        let records = random(12) as usize;
        let lines: Vec<String> = (0..records)
            .map(|i| rec(&format!("c{i}"), i as f64))
            .collect();
        let mut intents: Vec<String> = (0..records + random(8) as usize)
            .filter(|_| random(10) > 0)
            .map(|i| format!("c{i}"))
            .collect();
        for _ in 0..random(3) {
            if intents.len() > 1 {
                let (a, b) = (
                    random(intents.len() as u64) as usize,
                    random(intents.len() as u64) as usize,
                );
                intents.swap(a, b);
            }
        }
        if random(4) == 0 && !intents.is_empty() {
            intents.push(intents[0].clone());
        }
        let records_bytes = lines.join("\n") + "\n";
        let intents_bytes = intents.join("\n") + "\n";
        let capture = capture_of_bytes(
            &location,
            RolloutFiles {
                records: Some(records_bytes.as_bytes()),
                intents: Some(intents_bytes.as_bytes()),
                ..RolloutFiles::default()
            },
        );
        let recorded: HashSet<&str> = capture
            .records
            .iter()
            .map(|r| r.model_call_id.as_str())
            .collect();
        let expected: Vec<&str> = capture
            .intents
            .iter()
            .map(String::as_str)
            .filter(|id| !recorded.contains(id))
            .collect();
        assert_eq!(capture.open_intents(), expected, "case {case}: {intents:?}");
    }
}

/// Intents decoded by a kept cache as a file grows (the last read's lines lent back each
/// time) are those of decoding the whole file, through partial lines, every kind of line
/// break, blank lines, a bad line and a file written anew.
#[test]
fn intents_decoded_as_the_file_grows_are_those_of_the_whole_file() {
    let pieces: [&[u8]; 14] = [
        b"c0\n",
        b"c1",
        b"\n",
        b"c2\r\n",
        b"  c3  \n",
        b"\n\n",
        b"c4\r",
        b"c5",
        b"x",
        b"\r\nc6\n",
        b" ",
        b"\n",
        b"c7\nc8\nc9\n",
        b"\xff\n",
    ];
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for round in 0..200 {
        let mut cache = LineCache::kept();
        let mut file: Vec<u8> = Vec::new();
        let mut last: Option<Vec<String>> = None;
        for step in 0..12 {
            match next() % 10 {
                // Written anew, shorter or other.
                0 if round % 3 == 0 => file = b"n0\n".to_vec(),
                _ => {
                    let piece = pieces[(next() % pieces.len() as u64) as usize];
                    // The bad line only now and then.
                    if piece != b"\xff\n" || round % 5 == 0 {
                        file.extend_from_slice(piece);
                    }
                }
            }
            if let Some(lines) = last.take() {
                cache.lend_intents(lines);
            }
            let got = cache.intents(&file);
            let want = decode_lines(&file);
            assert_eq!(
                got,
                want,
                "round {round}, step {step}: {:?}",
                String::from_utf8_lossy(&file)
            );
            last = got.ok();
        }
    }
}
