//! A state file: parsed or reported as bad, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tokscope_core::store::RolloutState::parse(data);
});
