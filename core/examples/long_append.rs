//! An append's cost against the length of the rollout it goes to: a linear rollout of N calls
//! (delta records), 300 calls short of its end, is read by a [`LiveStore`]; then its last 300
//! calls are appended one at a time through the reference lifecycle (intent, record, state
//! indexed up to the record), each followed by the refresh a change event makes. Prints the
//! refreshes' median and p90 for each N given (default 400, 2,000 and 10,000), for a rollout
//! nobody looks at and for the one open on the screen (its whole analysis is then copied to
//! the screen at each append).
//!
//! `cargo run --release -p tokscope-core --example long_append -- 400 2000 10000`

use std::time::Instant;

use tokscope_core::live::LiveStore;
use tokscope_core::verdict::VerdictOptions;
use tokscope_testkit::{Rng, RunWriter, linear_rollout};

const APPENDED: usize = 300;

fn main() {
    let lengths: Vec<usize> = std::env::args()
        .skip(1)
        .map(|arg| arg.parse().expect("a number of calls"))
        .collect();
    let lengths = if lengths.is_empty() {
        vec![400, 2_000, 10_000]
    } else {
        lengths
    };
    for calls in lengths {
        for looked_at in [false, true] {
            measure(calls, looked_at);
        }
    }
}

/// Append the last [`APPENDED`] calls of a rollout of `calls` calls; print what each cost.
fn measure(calls: usize, looked_at: bool) {
    assert!(calls > APPENDED, "more than {APPENDED} calls");
    let dir = tempfile::tempdir().unwrap();
    let full = linear_rollout("long", calls, &mut Rng::new(5), 64, true, false);
    let mut first = full.clone();
    first.calls.truncate(calls - APPENDED);
    first.write(dir.path()).unwrap();
    // Its state's index of line digests as the reference writer keeps it: every line's,
    // indexed by the writer's first append (as `_sync_entry_index` brings an index up to
    // the file), so a state of N calls is read at every append.
    RunWriter::new(dir.path()).index("long").unwrap();

    let stores = vec![dir.path().to_path_buf()];
    let mut store = LiveStore::new(stores.clone(), VerdictOptions::default());
    store.rescan().unwrap();
    let location = tokscope_core::load::locate(&stores, &[]).unwrap()[0].clone();
    if looked_at {
        store.set_focus(vec![location.clone()]);
    }
    store.refresh(&location);
    let writer = RunWriter::new(dir.path());
    tokscope_core::work::take();
    let mut times = Vec::with_capacity(APPENDED);
    for call in &full.calls[calls - APPENDED..] {
        writer.begin_call("long", &call.id).unwrap();
        writer
            .append_record_line("long", &call.to_line("long"))
            .unwrap();
        let started = Instant::now();
        let events = store.refresh(&location);
        times.push(started.elapsed().as_secs_f64() * 1e6);
        assert!(!events.is_empty(), "each append is a change");
    }
    times.sort_by(f64::total_cmp);
    let work = tokscope_core::work::take();
    println!(
        "{calls} calls{}: an append's refresh takes {:.0} µs (median), {:.0} µs (p90); \
         {} of {APPENDED} builds extended, {:.1} nodes walked per append",
        if looked_at { ", looked at" } else { "" },
        times[APPENDED / 2],
        times[APPENDED * 9 / 10],
        work.extended_builds,
        work.nodes_walked as f64 / APPENDED as f64,
    );
}
