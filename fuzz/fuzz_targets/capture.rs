//! A whole rollout's files from arbitrary bytes (state, intents, sentinel and records split
//! at 0xFF bytes), read, rebuilt and judged, and its report and gaps produced.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tokscope_core::store::{RolloutFiles, RolloutLocation, capture_of_bytes};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&b| b == 0xFF);
    let mut next = || parts.next();
    let files = RolloutFiles {
        state: next(),
        intents: next(),
        sentinel: next(),
        records: next(),
    };
    let location = RolloutLocation {
        dir: "fuzz".into(),
        id: "r".into(),
    };
    let capture = capture_of_bytes(&location, files);
    let analysis = tokscope_core::verdict::analyze(capture, &Default::default());
    let _ = serde_json::to_vec(&analysis.report());
    let _ = tokscope_core::graph::rollout_gaps(&analysis);
});
