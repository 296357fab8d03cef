//! A rows file: every line read leniently, joins and cycles computed, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rows = tokscope_core::observe::Rows::default();
    rows.read_bytes(std::path::Path::new("rows.jsonl"), data);
    for observations in rows.by_rollout.values() {
        let _ = observations.observed_calls();
        let _ = observations.referenced_calls();
        let _ = observations.ambiguous_references();
        let _ = observations.invocation_cycles();
        let _ = observations.tool_cycles();
    }
});
