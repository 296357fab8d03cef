//! Every rollout of the conformance stores must agree with the reference consumer's report,
//! under the comparison rules of `tests/fixtures/conformance/compare.py`.

use crate::common::{compare_all, expected, fixture, reports};

fn check_store(store: &str) -> usize {
    let expected = expected(store);
    let actual = reports(&fixture(&format!("conformance/{store}")));
    let (passed, failures) = compare_all(&expected, &actual);
    assert!(
        failures.is_empty(),
        "{store}: {} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    passed
}

#[test]
fn all_sixty_conformance_rollouts_agree() {
    let passed = check_store("store-1-0") + check_store("store-1-1");
    assert_eq!(passed, 60);
}

#[test]
fn the_comparison_catches_a_difference() {
    // Guard against a comparison that cannot fail: alter one report and expect a mismatch.
    let expected = expected("store-1-0");
    let mut actual = reports(&fixture("conformance/store-1-0"));
    let victim = actual.iter_mut().find(|r| r["error"].is_null()).unwrap();
    victim["metrics"]["roots"] = serde_json::json!(99);
    let (_, failures) = compare_all(&expected, &actual);
    assert_eq!(failures.len(), 1);
    let first_branchy = actual
        .iter_mut()
        .find(|r| r["build"]["chains"].as_array().is_some_and(|c| c.len() > 1))
        .unwrap();
    first_branchy["build"]["chains"][1]["interstitial_lens"][0] = serde_json::json!(12345);
    let (_, failures) = compare_all(&expected, &actual);
    assert_eq!(failures.len(), 2);
}

#[test]
fn the_binary_writes_the_conformance_format() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tokscope"))
        .args(["build", "--format", "jsonl"])
        .arg(fixture("conformance/store-1-1"))
        .output()
        .unwrap();
    assert!(output.status.success());
    let actual: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (passed, failures) = compare_all(&expected("store-1-1"), &actual);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(passed, 30);
}

#[test]
fn token_ids_as_wide_and_negative_as_the_reference_takes_them() {
    // Written by the reference writer, judged by the reference consumer: ids 2^32, 2^53+1,
    // 2^63-1, 2^63+5, 2^64-1 rebuild exactly; a negative id fails only where the reference
    // must digest it (a root-only rollout with -1 is ok; a link over it is a failed build).
    let dir = fixture("wide-ids");
    let expected: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("expected.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let actual = reports(&dir.join("store"));
    let (passed, failures) = compare_all(&expected, &actual);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(passed, 6);
    let wide = actual
        .iter()
        .find(|r| r["rollout_id"] == "wide-root")
        .unwrap();
    let item = &wide["rebuilt_response"]["output"][0];
    assert_eq!(
        item["generation_token_ids"],
        serde_json::json!([9223372036854775807u64, 9223372036854775813u64, u64::MAX])
    );
    let negative = actual
        .iter()
        .find(|r| r["rollout_id"] == "neg-root")
        .unwrap();
    assert_eq!(
        negative["rebuilt_response"]["output"][0]["prompt_token_ids"][0],
        serde_json::json!(-1)
    );
}
