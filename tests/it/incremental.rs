//! The incremental build: an append extends its rollout's build instead of building it
//! again, and the result is the full build's, field for field.
//!
//! - **Differential**: random append sequences of reference-shaped records (the lifecycle's
//!   intent then record then state; full and delta prompts with their lineage; branches,
//!   retry siblings, new roots, broken links and deltas, repeats, conflicts, empty
//!   generations, parents named before they are written, unresolved calls; several lines
//!   between two reads) are followed by a [`LiveStore`]; after every read its analysis must
//!   print exactly as a cold read's build of the same files.
//! - **The work an append costs**: one line parsed, one link checked, one parent hashed —
//!   a rebuild of the whole rollout per append fails here.

use std::path::Path;

use tokscope_core::live::{LiveStore, StoreEvent};
use tokscope_core::store::RolloutLocation;
use tokscope_core::store::read::read_capture;
use tokscope_core::verdict::{Analysis, Summary, VerdictOptions, analyze};
use tokscope_core::work;
use tokscope_testkit::{Call, Lineage, Rng, RunWriter};

const ROLLOUT: &str = "inc";

/// What a rollout's calls are known to be, to write the next one.
struct Written {
    /// Every call written, in order (repeats included).
    calls: Vec<Call>,
    /// Each call id's cumulative sequence.
    full: std::collections::HashMap<String, Vec<u64>>,
    /// The call most recent agents continue (the leaf of the conversation).
    leaf: Option<usize>,
    /// A parent named before it was written: its call, to write later.
    promised: Option<Call>,
    /// The leaf of a second conversation (a subagent's), growing alongside.
    other: Option<usize>,
    next: usize,
    time: f64,
}

impl Written {
    /// Nothing written yet.
    fn new() -> Written {
        Written {
            calls: Vec::new(),
            full: Default::default(),
            leaf: None,
            promised: None,
            other: None,
            next: 0,
            time: 1_790_000_000.0,
        }
    }
}

/// The `n`th call id: unique, in no order (as real ids are), so the build's order often
/// rests on prompt lengths alone, and sometimes on the ids.
fn call_id(n: usize) -> String {
    format!("c{:06x}", (n as u64).wrapping_mul(0x9E37_79B1) & 0xFF_FFFF)
}

impl Written {
    /// The cumulative sequence call `call` was written with (what its agent saw).
    fn cumulative(&self, call: usize) -> Vec<u64> {
        self.full[&self.calls[call].id].clone()
    }

    /// Note what a new call's cumulative sequence is (the first call of an id keeps it).
    fn note(&mut self, call: &Call, cumulative: Vec<u64>) {
        self.full.entry(call.id.clone()).or_insert(cumulative);
    }

    fn fresh_id(&mut self) -> String {
        self.next += 1;
        call_id(self.next)
    }
}

/// A child of `parent` with `env` new environment tokens, as a full or a delta record.
fn child_of(written: &mut Written, parent: usize, rng: &mut Rng, delta: bool) -> Call {
    let id = written.fresh_id();
    written.time += 1.0;
    let mut prompt = written.cumulative(parent);
    let suffix_len = rng.range(1, 12) as usize;
    let suffix = rng.tokens(suffix_len);
    prompt.extend_from_slice(&suffix);
    let generation_len = rng.range(1, 9) as usize;
    let generation = rng.tokens(generation_len);
    let parent_id = written.calls[parent].id.clone();
    let mut call = Call::child(
        &id,
        &parent_id,
        prompt.clone(),
        generation.clone(),
        written.time,
    );
    let mut cumulative = prompt;
    cumulative.extend_from_slice(&generation);
    written.note(&call, cumulative.clone());
    if delta {
        call.delta = true;
        call.prompt = suffix;
        call.lineage = Lineage::Given(
            cumulative.len(),
            tokscope_core::rebuild::digest::digest(&cumulative),
        );
    }
    call
}

/// A new root call of `prompt` and `generation` random tokens, noted.
fn root_of(written: &mut Written, rng: &mut Rng, prompt: usize, generation: usize) -> Call {
    let id = written.fresh_id();
    written.time += 1.0;
    let root = Call::root(
        &id,
        rng.tokens(prompt),
        rng.tokens(generation),
        written.time,
    );
    written.note(
        &root,
        [root.prompt.clone(), root.generation.clone()].concat(),
    );
    root
}

/// One random step of a run: the calls to write (each after its intent).
fn step(written: &mut Written, rng: &mut Rng) -> Vec<Call> {
    let leaf = match written.leaf {
        Some(leaf) => leaf,
        None => {
            let root = root_of(written, rng, 20, 5);
            written.leaf = Some(written.calls.len());
            written.calls.push(root.clone());
            return vec![root];
        }
    };
    let roll = rng.range(0, 100);
    let mut calls = Vec::new();
    let mut new_leaf = true;
    match roll {
        // The common case: the conversation goes on (a third of the time as deltas)...
        0..=44 => {
            let delta = rng.range(0, 3) == 0;
            calls.push(child_of(written, leaf, rng, delta));
        }
        // ... or a second one does, when there is one (its prompts often the shorter).
        45..=59 => match written.other {
            Some(other) => {
                let delta = rng.range(0, 3) == 0;
                calls.push(child_of(written, other, rng, delta));
                written.other = Some(written.calls.len());
                new_leaf = false;
            }
            None => calls.push(child_of(written, leaf, rng, false)),
        },
        // Two or three calls between two reads.
        60..=66 => {
            let first = child_of(written, leaf, rng, false);
            written.calls.push(first.clone());
            let delta = rng.range(0, 2) == 0;
            let second = child_of(written, written.calls.len() - 1, rng, delta);
            written.calls.pop();
            calls.extend([first, second]);
        }
        // A branch off an earlier call.
        67..=71 => {
            let at = rng.range(0, written.calls.len() as u64) as usize;
            calls.push(child_of(written, at, rng, false));
        }
        // A retry sibling of the leaf: the same prompt, another generation.
        72..=76 => {
            let mut retry = written.calls[leaf].clone();
            retry.id = written.fresh_id();
            retry.generation = rng.tokens(4);
            retry.created_at = written.time + 0.5;
            let mut full = written.cumulative(leaf);
            let own = written.calls[leaf].generation.len();
            full.truncate(full.len() - own);
            full.extend_from_slice(&retry.generation);
            if retry.delta {
                retry.lineage =
                    Lineage::Given(full.len(), tokscope_core::rebuild::digest::digest(&full));
            }
            written.note(&retry, full);
            new_leaf = rng.range(0, 2) == 0;
            calls.push(retry);
        }
        // A new root (a subagent, a compaction).
        77..=80 => {
            let root = root_of(written, rng, 30, 3);
            written.other = Some(written.calls.len());
            calls.push(root);
            new_leaf = false;
        }
        // A broken link: the prompt does not extend the parent's sequence.
        81..=84 => {
            let mut call = child_of(written, leaf, rng, false);
            let at = rng.range(0, 10) as usize;
            call.prompt[at] += 1;
            call.lineage = Lineage::Computed;
            calls.push(call);
        }
        // A repeat of an earlier record, byte for byte.
        85..=86 => {
            let at = rng.range(0, written.calls.len() as u64) as usize;
            calls.push(written.calls[at].clone());
            new_leaf = false;
        }
        // A conflict: an earlier call id with other tokens.
        87 => {
            let at = rng.range(0, written.calls.len() as u64) as usize;
            let mut call = written.calls[at].clone();
            call.generation.push(7);
            if call.delta {
                call.lineage = Lineage::Omitted;
            }
            calls.push(call);
            new_leaf = false;
        }
        // No generated tokens.
        88..=89 => {
            let mut call = child_of(written, leaf, rng, false);
            call.generation.clear();
            calls.push(call);
        }
        // A parent named before it is written (its child written first), then written.
        90..=92 => match written.promised.take() {
            Some(parent) => {
                calls.push(parent);
                new_leaf = false;
            }
            None => {
                let parent = child_of(written, leaf, rng, false);
                written.calls.push(parent.clone());
                // As a delta half the time: it cannot be rebuilt until its parent comes.
                let delta = rng.range(0, 2) == 0;
                let child = child_of(written, written.calls.len() - 1, rng, delta);
                written.calls.pop();
                written.promised = Some(parent);
                calls.push(child);
                new_leaf = false;
            }
        },
        // The writer could not resolve the parent.
        93..=94 => {
            let mut call = child_of(written, leaf, rng, false);
            call.resolution = Some("unresolved");
            call.parent = None;
            calls.push(call);
        }
        // A delta whose digest is wrong.
        95..=96 => {
            let mut call = child_of(written, leaf, rng, true);
            call.lineage = Lineage::Given(3, "0".repeat(64));
            calls.push(call);
        }
        // A full record without lineage.
        _ => {
            let mut call = child_of(written, leaf, rng, false);
            call.lineage = Lineage::Omitted;
            calls.push(call);
        }
    }
    for call in &calls {
        written.calls.push(call.clone());
    }
    if new_leaf {
        written.leaf = Some(written.calls.len() - 1);
    }
    calls
}

/// The analysis as it prints, the digest memo left out (a cache).
fn canonical(mut analysis: Analysis) -> String {
    analysis.options.digest_memo = None;
    format!("{analysis:?}")
}

fn detail(events: Vec<StoreEvent>) -> Option<Analysis> {
    events.into_iter().find_map(|event| match event {
        StoreEvent::Detail(analysis) => Some(*analysis),
        _ => None,
    })
}

/// As [`detail`], the summary sent with the analysis checked against a cold read's on the
/// way (a live summary adds an append's record to what it read of the earlier ones).
fn detail_and_summary(events: Vec<StoreEvent>) -> Option<Analysis> {
    let summary = events.iter().find_map(|event| match event {
        StoreEvent::Updated(summary) => Some(summary.clone()),
        _ => None,
    });
    let analysis = detail(events)?;
    let summary = summary.expect("a change sends the summary with the analysis");
    let cold = analyze(read_capture(&analysis.capture.location), &analysis.options);
    assert_eq!(
        *summary,
        Summary::of(&cold),
        "the live summary is a cold read's"
    );
    Some(analysis)
}

/// The live analysis after a change must print as a cold read's.
fn assert_same_as_cold(live: Analysis, options: &VerdictOptions, what: &str) {
    let cold = analyze(read_capture(&live.capture.location), options);
    let (live, cold) = (canonical(live), canonical(cold));
    if live != cold {
        let at = live
            .bytes()
            .zip(cold.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(live.len().min(cold.len()));
        let around = |text: &str| {
            let from = text.floor_char_boundary(at.saturating_sub(400));
            let to = text.ceil_char_boundary((at + 200).min(text.len()));
            text[from..to].to_owned()
        };
        panic!(
            "{what}: the live analysis differs from a cold read's at byte {at}\n--- live\n{}\n--- cold\n{}",
            around(&live),
            around(&cold)
        );
    }
}

fn follow(dir: &Path, options: &VerdictOptions) -> LiveStore {
    let mut store = LiveStore::new(vec![dir.to_path_buf()], options.clone());
    store.rescan().expect("the store lists");
    let location = RolloutLocation {
        dir: dir.to_path_buf(),
        id: ROLLOUT.into(),
    };
    store.set_focus(vec![location]);
    store
}

#[test]
fn appends_extend_the_build_exactly_as_building_again() {
    let mut appends = 0usize;
    let mut extended = 0u64;
    for seed in 0..40u64 {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let writer = RunWriter::new(dir);
        let mut rng = Rng::new(1_000 + seed);
        let mut written = Written::new();
        // Some runs anchor the main chain on a terminal call.
        let options = VerdictOptions {
            terminal_call_id: (seed % 4 == 3).then(|| call_id(6)),
            ..VerdictOptions::default()
        };
        writer.begin_call(ROLLOUT, "c0001").unwrap();
        let mut store = follow(dir, &options);
        for turn in 0..32 {
            let calls = step(&mut written, &mut rng);
            for (k, call) in calls.iter().enumerate() {
                writer.begin_call(ROLLOUT, &call.id).unwrap();
                // Sometimes read between the intent and its record (a call in flight).
                if k == 0
                    && rng.range(0, 4) == 0
                    && let Some(live) = detail_and_summary(store.poll().unwrap())
                {
                    assert_same_as_cold(
                        live,
                        &options,
                        &format!("seed {seed} turn {turn}, intent"),
                    );
                }
                writer.append_anyway(ROLLOUT, call).unwrap();
            }
            work::take();
            let events = store.poll().unwrap();
            extended += work::take().extended_builds;
            let live = detail_and_summary(events).expect("the rollout changed");
            appends += 1;
            assert_same_as_cold(live, &options, &format!("seed {seed} turn {turn}"));
        }
        // Frozen at the end: judged once more, as a cold read.
        writer.freeze(ROLLOUT).unwrap();
        let live = detail_and_summary(store.poll().unwrap()).expect("the freeze is a change");
        assert_same_as_cold(live, &options, &format!("seed {seed}, frozen"));
    }
    // Many reads extend (the sequences are mostly an agent going on): the test would pass
    // without the incremental path otherwise, proving nothing.
    assert!(
        extended as usize * 5 > appends * 2,
        "only {extended} of {appends} reads extended their build"
    );
}

/// One rollout being written as a chain, each call the child of the one before, through the
/// reference lifecycle, and a store following it.
struct Chain {
    writer: RunWriter,
    written: Written,
    rng: Rng,
    store: LiveStore,
}

impl Chain {
    /// The rollout's root written in `dir`, and read.
    fn start(dir: &Path, seed: u64, options: &VerdictOptions) -> Chain {
        let writer = RunWriter::new(dir);
        let mut rng = Rng::new(seed);
        let mut written = Written::new();
        let root = step(&mut written, &mut rng).remove(0);
        writer.begin_call(ROLLOUT, &root.id).unwrap();
        writer.append(ROLLOUT, &root).unwrap();
        let store = follow(dir, options);
        Chain {
            writer,
            written,
            rng,
            store,
        }
    }

    /// The leaf's child, begun (its intent written) but not appended; and the length of its
    /// own cumulative sequence.
    fn begin_child(&mut self, delta: bool) -> (Call, usize) {
        let leaf = self.written.leaf.unwrap();
        let call = child_of(&mut self.written, leaf, &mut self.rng, delta);
        self.written.calls.push(call.clone());
        let child = self.written.calls.len() - 1;
        self.written.leaf = Some(child);
        self.writer.begin_call(ROLLOUT, &call.id).unwrap();
        (call, self.written.cumulative(child).len())
    }
}

/// A rollout of `calls` calls being written, each the child of the one before, through the
/// reference lifecycle; every append read by a [`LiveStore`]: the work of each read.
fn appends_work(calls: usize, delta: bool) -> Vec<(work::Work, usize)> {
    let temp = tempfile::tempdir().unwrap();
    let mut chain = Chain::start(temp.path(), 5, &VerdictOptions::default());
    let mut out = Vec::new();
    for _ in 1..calls {
        let (call, own_cumulative) = chain.begin_child(delta);
        chain.writer.append(ROLLOUT, &call).unwrap();
        work::take();
        let live = detail(chain.store.poll().unwrap()).expect("changed");
        // As the watcher does once the poll's changes are sent.
        chain.store.hash_ahead();
        out.push((work::take(), own_cumulative));
        assert!(!live.mask_sample, "{:?}", live.reasons);
    }
    out
}

#[test]
fn an_append_costs_its_own_line_not_its_rollout() {
    for delta in [false, true] {
        let reads = appends_work(40, delta);
        for (n, (work, own_cumulative)) in reads.iter().enumerate().skip(1) {
            let what = format!("append {} of 40 (delta records: {delta})", n + 2);
            assert_eq!(work.records_parsed, 1, "{what}: {work:?}");
            assert_eq!(work.calls_linked, 1, "{what}: {work:?}");
            assert_eq!(work.full_builds, 0, "{what}: {work:?}");
            assert_eq!(work.extended_builds, 1, "{what}: {work:?}");
            // The parent is the last line: its bytes are at hand, not read again.
            assert_eq!(work.bytes_reread, 0, "{what}: {work:?}");
            // The earlier lines' records are carried over from the previous read: only the
            // new line's is gathered.
            assert_eq!(work.lines_gathered, 1, "{what}: {work:?}");
            // The main chain's earlier steps are lent by the previous projection: only the
            // new call's step is projected.
            assert_eq!(work.steps_projected, 1, "{what}: {work:?}");
            // And checked: the earlier items' usage and contiguity are carried over.
            assert_eq!(work.items_checked, 1, "{what}: {work:?}");
            // The chains' facts and the delivered count change by the new call alone: no
            // pass over the rollout's calls.
            assert_eq!(work.nodes_walked, 0, "{what}: {work:?}");
            // The state's index of line digests (the reference's, one entry a call) covers
            // the new line: it is checked, not built.
            assert_eq!(work.index_entries_built, 0, "{what}: {work:?}");
            assert_eq!(work.index_bytes_parsed, 0, "{what}: {work:?}");
            // One sequence hashed, the new call's own: a delta's to check its digest; a full
            // record's ahead of its child, after the poll's changes (its own link check found
            // its parent's digest hashed ahead by the previous poll).
            assert_eq!(
                work.tokens_hashed, *own_cumulative as u64,
                "{what}: {work:?}"
            );
            // And hashed from the contiguous copy made of the call's sequence, not from the
            // arrays scattered over the heap.
            assert_eq!(
                work.tokens_hashed_contiguous, work.tokens_hashed,
                "{what}: {work:?}"
            );
        }
    }
}

/// A record written whole but not yet ended by its newline is accepted (as the reference
/// reader does); looking at the rollout again reads it again unchanged and extends the
/// build by nothing, rather than building the rollout again.
#[test]
fn a_last_record_without_its_newline_is_not_built_again_when_looked_at() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let options = VerdictOptions::default();
    let mut chain = Chain::start(dir, 9, &options);
    for _ in 0..4 {
        let (call, _) = chain.begin_child(false);
        chain.writer.append(ROLLOUT, &call).unwrap();
        detail(chain.store.poll().unwrap()).expect("changed");
    }
    // The next record's bytes, its newline not written yet.
    let (call, _) = chain.begin_child(false);
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(format!("{ROLLOUT}.tokens.jsonl")))
        .and_then(|mut file| std::io::Write::write_all(&mut file, call.to_line(ROLLOUT).as_bytes()))
        .unwrap();
    let mut store = chain.store;
    let live = detail(store.poll().unwrap()).expect("changed");
    assert_eq!(
        live.capture.records.len(),
        6,
        "the record without its newline counts"
    );
    let location = live.capture.location.clone();
    for look in 0..2 {
        work::take();
        let again = detail(store.set_focus(vec![location.clone()])).expect("a detail");
        let work = work::take();
        assert_eq!(work.full_builds, 0, "look {look}: {work:?}");
        assert_eq!(work.extended_builds, 1, "look {look}: {work:?}");
        assert_eq!(work.steps_projected, 0, "look {look}: {work:?}");
        assert_same_as_cold(again, &options, "looked at again");
    }
}

/// The state a reader meets at every append is the reference's: an index of every line's
/// digest by call id that grows with the calls, covering the file up to `indexed_size`
/// (brought up to the file first when a store was written without one).
#[test]
fn the_writer_indexes_every_line_as_the_reference_does() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let mut rng = Rng::new(7);
    let rollout = tokscope_testkit::linear_rollout(ROLLOUT, 6, &mut rng, 5, false, true);
    // The first four written without an index (`indexed_size` 0), the rest appended.
    let mut first = rollout.clone();
    first.calls.truncate(4);
    first.write(dir).unwrap();
    let writer = RunWriter::new(dir);
    for call in &rollout.calls[4..] {
        writer.begin_call(ROLLOUT, &call.id).unwrap();
        writer.append(ROLLOUT, call).unwrap();
    }
    let records = std::fs::read(dir.join(format!("{ROLLOUT}.tokens.jsonl"))).unwrap();
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(format!("{ROLLOUT}.tokens.state.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(state["indexed_size"], records.len());
    // Four lines recovered into the index, two appended.
    assert_eq!(state["version"], 4 + 4 + 2);
    // Keys sorted, as the reference writes them: the index first.
    let text = std::fs::read_to_string(dir.join(format!("{ROLLOUT}.tokens.state.json"))).unwrap();
    assert!(text.starts_with(r#"{"entry_digests":{"#), "{text}");
    let index = state["entry_digests"].as_object().unwrap();
    assert_eq!(index.len(), 6);
    for (call, line) in rollout.calls.iter().zip(records.split(|&b| b == b'\n')) {
        assert_eq!(
            index[&call.id],
            tokscope_testkit::line_digest(line),
            "{}",
            call.id
        );
    }
    // The reader takes the index as the freeze does: nothing past it, nothing refused.
    let capture = read_capture(&RolloutLocation {
        dir: dir.to_path_buf(),
        id: ROLLOUT.into(),
    });
    assert!(capture.issues.is_empty(), "{:?}", capture.issues);
    assert_eq!(capture.records.len(), 6);
    // The same record again is not written again; another payload for its id is refused
    // and marks the rollout incomplete.
    let last = rollout.calls.last().unwrap();
    writer.append(ROLLOUT, last).unwrap();
    let records_path = dir.join(format!("{ROLLOUT}.tokens.jsonl"));
    assert_eq!(std::fs::read(&records_path).unwrap(), records);
    let mut other = last.clone();
    other.generation.push(1);
    assert!(writer.append(ROLLOUT, &other).is_err());
    assert_eq!(std::fs::read(&records_path).unwrap(), records);
    let capture = read_capture(&RolloutLocation {
        dir: dir.to_path_buf(),
        id: ROLLOUT.into(),
    });
    assert!(capture.state.incomplete);
    // Frozen, the rollout takes no more records.
    writer.freeze(ROLLOUT).unwrap();
    let mut after = last.clone();
    after.id = "after-freeze".into();
    assert!(writer.append(ROLLOUT, &after).is_err());
    assert_eq!(std::fs::read(&records_path).unwrap(), records);
}
