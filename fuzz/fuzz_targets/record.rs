//! One record line: parsed or refused, never a panic, a hang or a blow-up.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = tokscope_core::store::TokenRecord::parse(data) {
        // A record that parses has consistent arrays.
        assert_eq!(
            record.generation_token_ids.len(),
            record.generation_log_probs.len()
        );
    }
});
