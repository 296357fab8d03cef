//! The builder fed arbitrary (valid) records: small vocabularies so prompts share prefixes,
//! arbitrary parents, resolutions, deltas, lineage and duplicates — every step of
//! `prefix_merging`, the projection and the verdict, and the graph of a rollout row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tokscope_core::store::{RolloutFiles, RolloutLocation, capture_of_bytes};

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next().unwrap_or(0);
    let calls = usize::from(next() % 12);
    let mut lines = String::new();
    for index in 0..calls {
        let tokens = |n: u8, next: &mut dyn FnMut() -> u8| -> Vec<i64> {
            (0..n % 9).map(|_| i64::from(next() % 5) - i64::from(next() == 255)).collect()
        };
        let prompt_len = next();
        let prompt = tokens(prompt_len, &mut next);
        let generation_len = next();
        let generation = tokens(generation_len, &mut next);
        let mut record = json!({
            "rollout_id": "r",
            "model_call_id": format!("c{}", next() % 8),
            "prompt_token_ids": prompt,
            "generation_token_ids": generation,
            "generation_log_probs": vec![-0.5; generation.len()],
            "created_at": f64::from(next()),
            "output_items": [],
        });
        match next() % 5 {
            0 => record["parent_resolution"] = json!("root"),
            1 => record["parent_resolution"] = json!("unresolved"),
            2 => {
                record["parent_resolution"] = json!("resolved");
                record["parent_call_id"] = json!(format!("c{}", next() % 8));
                record["prompt_is_delta"] = json!(next() % 3 == 0);
            }
            3 => record["parent_call_id"] = json!(format!("c{}", next() % 8)),
            _ => {}
        }
        if next() % 2 == 0 {
            record["cum_len"] = json!(i64::from(next() % 20) - 2);
            let mut cumulative = prompt.clone();
            cumulative.extend(&generation);
            if cumulative.iter().all(|&t| t >= 0) {
                let ids: Vec<u64> = cumulative.iter().map(|&t| t as u64).collect();
                record["digest"] = json!(tokscope_core::rebuild::digest::digest(&ids));
            }
        }
        let _ = index;
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    let location = RolloutLocation {
        dir: "fuzz".into(),
        id: "r".into(),
    };
    let capture = capture_of_bytes(
        &location,
        RolloutFiles {
            records: Some(lines.as_bytes()),
            state: Some(br#"{"frozen": true}"#),
            ..Default::default()
        },
    );
    let analysis = tokscope_core::verdict::analyze(capture, &Default::default());
    let _ = serde_json::to_vec(&analysis.report());
    if let Some(build) = &analysis.build {
        for chain in &build.chains {
            let _ = tokscope_core::rebuild::provenance(build, chain);
        }
    }
});
