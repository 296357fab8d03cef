//! Every link note and every mask reason, built from small hand-made rollouts; a 10,000-call
//! chain; and order independence (any permutation of a rollout's lines gives the same report).

use proptest::prelude::*;
use serde_json::{Value, json};
use tokscope_core::rebuild::LinkNote;
use tokscope_core::store::{RolloutLocation, read_capture};
use tokscope_core::verdict::{Analysis, MaskReason, Verdict, VerdictOptions, analyze};
use tokscope_testkit::{Call, Lineage, Rng, Rollout, linear_rollout};

fn analyze_rollout(rollout: &Rollout, options: &VerdictOptions) -> Analysis {
    let dir = tempfile::tempdir().unwrap();
    rollout.write(dir.path()).unwrap();
    let location = RolloutLocation {
        dir: dir.path().to_path_buf(),
        id: rollout.id.clone(),
    };
    analyze(read_capture(&location), options)
}

fn run(calls: Vec<Call>) -> Analysis {
    let rollout = Rollout {
        id: "r".into(),
        calls,
        frozen: true,
        ..Rollout::default()
    };
    analyze_rollout(&rollout, &VerdictOptions::default())
}

fn notes_of(analysis: &Analysis) -> Vec<(String, LinkNote)> {
    let build = analysis.build.as_ref().unwrap();
    build
        .nodes
        .iter()
        .filter_map(|n| {
            n.note.map(|note| {
                (
                    analysis.capture.records[n.record].model_call_id.clone(),
                    note,
                )
            })
        })
        .collect()
}

fn codes(analysis: &Analysis) -> Vec<&'static str> {
    analysis.reasons.iter().map(MaskReason::code).collect()
}

#[test]
fn clean_chain_is_ok() {
    let a = run(vec![
        Call::root("a", vec![1, 2], vec![3], 1.0),
        Call::child("b", "a", vec![1, 2, 3, 4], vec![5, 6], 2.0),
    ]);
    assert_eq!(a.verdict, Verdict::Ok, "{:?}", a.reasons);
    let main = a.build.as_ref().unwrap().main_chain().unwrap();
    assert_eq!(main.links.len(), 2);
    assert_eq!(main.links[1].interstitial_len(), 1);
    let response = serde_json::to_value(a.response.as_ref().unwrap()).unwrap();
    assert_eq!(
        response["usage"],
        json!({"input_tokens": 2, "output_tokens": 3})
    );
    assert_eq!(
        response["output"][1]["prompt_token_ids"],
        json!([1, 2, 3, 4])
    );
}

#[test]
fn parent_unresolved_note_and_reason() {
    let mut b = Call::root("b", vec![1, 2, 3, 4], vec![5], 2.0);
    b.resolution = Some("unresolved");
    let a = run(vec![Call::root("a", vec![1, 2], vec![3], 1.0), b]);
    assert_eq!(notes_of(&a), vec![("b".into(), LinkNote::ParentUnresolved)]);
    assert!(codes(&a).contains(&"unresolved_parent_calls"));
    assert!(codes(&a).contains(&"roots_not_one"));
    assert!(codes(&a).contains(&"chains_not_one"));
    assert_eq!(a.verdict, Verdict::Masked);
}

#[test]
fn missing_resolution_note() {
    let mut b = Call::root("b", vec![1, 2, 3, 4], vec![5], 2.0);
    b.resolution = None;
    let a = run(vec![Call::root("a", vec![1, 2], vec![3], 1.0), b]);
    assert_eq!(
        notes_of(&a),
        vec![("b".into(), LinkNote::MissingResolution)]
    );
}

#[test]
fn digest_mismatch_note() {
    let a = run(vec![
        Call::root("a", vec![1, 2], vec![3], 1.0),
        Call::child("b", "a", vec![1, 2, 9, 4], vec![5], 2.0),
    ]);
    assert_eq!(
        notes_of(&a),
        vec![("b".into(), LinkNote::ParentDigestMismatch)]
    );
    let reason = a
        .reasons
        .iter()
        .find(|r| r.code() == "unresolved_parent_calls")
        .unwrap();
    assert_eq!(reason.calls(), vec!["b".to_string()]);
    assert!(reason.to_string().contains("parent_digest_mismatch"));
}

#[test]
fn missing_parent_recovered_or_not() {
    // The parent generated nothing, so it is filtered; its child recovers the grandparent.
    let recovered = run(vec![
        Call::root("a", vec![1, 2], vec![3], 1.0),
        Call::child("b", "a", vec![1, 2, 3, 4], vec![], 2.0),
        Call::child("c", "b", vec![1, 2, 3, 4, 5], vec![6], 3.0),
    ]);
    assert_eq!(
        notes_of(&recovered),
        vec![("c".into(), LinkNote::ParentCallIdMissingRecovered)]
    );
    assert_eq!(recovered.verdict, Verdict::Ok, "{:?}", recovered.reasons);
    assert_eq!(
        recovered
            .build
            .as_ref()
            .unwrap()
            .notes
            .empty_generation_calls,
        vec!["b"]
    );
    // No placed call is a prefix: the child becomes a root.
    let missing = run(vec![
        Call::root("a", vec![1, 2], vec![3], 1.0),
        Call::child("c", "gone", vec![7, 8, 9], vec![6], 3.0),
    ]);
    assert_eq!(
        notes_of(&missing),
        vec![("c".into(), LinkNote::ParentCallIdMissing)]
    );
    // Two identical candidates: ambiguous, no recovery.
    let mut retry = Call::root("a2", vec![1, 2], vec![3], 1.5);
    retry.created_at = 1.5;
    let ambiguous = run(vec![
        Call::root("a", vec![1, 2], vec![3], 1.0),
        retry,
        Call::child("c", "gone", vec![1, 2, 3, 4], vec![6], 3.0),
    ]);
    assert_eq!(
        notes_of(&ambiguous),
        vec![("c".into(), LinkNote::ParentCallIdMissing)]
    );
}

#[test]
fn empty_parent_id_follows_the_reference() {
    // The reference treats an empty (non-null) parent id as an absent parent, not as
    // `resolved_parent_missing_id` (which valid records cannot reach).
    let mut c = Call::child("c", "", vec![1, 2, 3, 4], vec![6], 3.0);
    c.resolution = None;
    let a = run(vec![Call::root("a", vec![1, 2], vec![3], 1.0), c]);
    assert_eq!(
        notes_of(&a),
        vec![("c".into(), LinkNote::ParentCallIdMissingRecovered)]
    );
}

#[test]
fn retries_extended_and_final() {
    // A retried middle call: the sibling extended by a later call is kept.
    let a = run(vec![
        Call::root("a", vec![1, 2], vec![3], 1.0),
        Call::child("b1", "a", vec![1, 2, 3, 4], vec![5], 2.0),
        Call::child("b2", "a", vec![1, 2, 3, 4], vec![6], 2.5),
        Call::child("c", "b2", vec![1, 2, 3, 4, 6, 7], vec![8], 3.0),
    ]);
    assert_eq!(a.build.as_ref().unwrap().quarantined, vec!["b1"]);
    assert_eq!(a.verdict, Verdict::Ok, "{:?}", a.reasons);
    // A retried final call: nobody knows which generation was kept.
    let f = run(vec![
        Call::root("a", vec![1, 2], vec![3], 1.0),
        Call::child("b2", "a", vec![1, 2, 3, 4], vec![6], 2.5),
        Call::child("b1", "a", vec![1, 2, 3, 4], vec![5], 2.0),
    ]);
    let build = f.build.as_ref().unwrap();
    assert_eq!(build.quarantined, vec!["b2"], "the smallest id is kept");
    let mut retries = build.notes.unresolved_retries.clone();
    retries.sort();
    assert_eq!(retries, vec!["b1", "b2"]);
    assert_eq!(codes(&f), vec!["unresolved_retries"]);
}

#[test]
fn duplicates_identical_and_conflicting() {
    let a = Call::root("a", vec![1, 2], vec![3], 1.0);
    let dup = run(vec![
        a.clone(),
        a.clone(),
        Call::child("b", "a", vec![1, 2, 3, 4], vec![5], 2.0),
    ]);
    assert_eq!(dup.verdict, Verdict::Ok);
    assert_eq!(dup.report_n_calls(), 3);
    // A conflicting duplicate is refused on read, as the reference store does.
    let mut other = a.clone();
    other.generation = vec![9];
    let conflict = run(vec![a, other]);
    assert_eq!(codes(&conflict), vec!["unreadable"]);
    assert!(conflict.error.as_ref().unwrap().contains("conflicting"));
}

trait NCalls {
    fn report_n_calls(&self) -> u64;
}
impl NCalls for Analysis {
    fn report_n_calls(&self) -> u64 {
        serde_json::to_value(self.report()).unwrap()["metrics"]["n_calls"]
            .as_u64()
            .unwrap()
    }
}

#[test]
fn conflicting_duplicate_inside_the_indexed_region_is_a_builder_note() {
    // When the writer's index covers both lines, the store does not re-check them; the builder
    // counts the conflict.
    let dir = tempfile::tempdir().unwrap();
    let a = Call::root("a", vec![1, 2], vec![3], 1.0);
    let mut other = a.clone();
    other.generation = vec![9];
    let rollout = Rollout {
        id: "r".into(),
        calls: vec![
            a,
            other,
            Call::child("b", "a", vec![1, 2, 3, 4], vec![5], 2.0),
        ],
        frozen: true,
        ..Rollout::default()
    };
    rollout.write(dir.path()).unwrap();
    let size = std::fs::metadata(dir.path().join("r.tokens.jsonl"))
        .unwrap()
        .len();
    std::fs::write(
        dir.path().join("r.tokens.state.json"),
        json!({"entry_digests": {}, "frozen": true, "incomplete": false, "indexed_size": size,
               "retired": false, "snapshot_id": "s", "version": 3})
        .to_string(),
    )
    .unwrap();
    let location = RolloutLocation {
        dir: dir.path().to_path_buf(),
        id: "r".into(),
    };
    let analysis = analyze(read_capture(&location), &VerdictOptions::default());
    let build = analysis.build.as_ref().unwrap();
    assert_eq!(
        build.notes.parent_link_failures["duplicate_call_id_conflict"],
        1
    );
    assert_eq!(build.notes.unresolved_parent_calls, vec!["a"]);
    assert!(codes(&analysis).contains(&"unresolved_parent_calls"));
}

#[test]
fn delta_records_materialize_or_break() {
    let mut b = Call::child("b", "a", vec![4], vec![5], 2.0);
    b.delta = true;
    b.lineage = Lineage::Given(5, tokscope_core::rebuild::digest::digest(&[1, 2, 3, 4, 5]));
    let ok = run(vec![Call::root("a", vec![1, 2], vec![3], 1.0), b.clone()]);
    assert_eq!(ok.verdict, Verdict::Ok, "{:?}", ok.reasons);
    let response = serde_json::to_value(ok.response.as_ref().unwrap()).unwrap();
    assert_eq!(
        response["output"][1]["prompt_token_ids"],
        json!([1, 2, 3, 4])
    );
    // Wrong digest: the delta cannot be verified.
    let mut wrong = b.clone();
    wrong.lineage = Lineage::Given(5, "00".repeat(32));
    let broken = run(vec![Call::root("a", vec![1, 2], vec![3], 1.0), wrong]);
    let build = broken.build.as_ref().unwrap();
    assert_eq!(
        build.notes.parent_link_failures["delta_chain_unreconstructable"],
        1
    );
    assert_eq!(build.notes.unresolved_parent_calls, vec!["b"]);
    // Missing parent: same.
    let mut orphan = b;
    orphan.parent = Some("gone".into());
    let orphaned = run(vec![Call::root("a", vec![1, 2], vec![3], 1.0), orphan]);
    assert_eq!(
        orphaned
            .build
            .as_ref()
            .unwrap()
            .notes
            .unresolved_parent_calls,
        vec!["b"]
    );
}

#[test]
fn delta_cycle_is_broken_not_looped() {
    let mut x = Call::child("x", "y", vec![1], vec![2], 1.0);
    x.delta = true;
    x.lineage = Lineage::Omitted;
    let mut y = Call::child("y", "x", vec![3], vec![4], 2.0);
    y.delta = true;
    y.lineage = Lineage::Omitted;
    let a = run(vec![x, y]);
    let mut broken = a
        .build
        .as_ref()
        .unwrap()
        .notes
        .unresolved_parent_calls
        .clone();
    broken.sort();
    assert_eq!(broken, vec!["x", "y"]);
    assert_eq!(codes(&a), vec!["build_failed"]);
    assert!(
        a.error
            .as_ref()
            .unwrap()
            .contains("no safe trainable chain")
    );
}

#[test]
fn incomplete_capture_and_open_intents() {
    let mut rollout = linear_rollout("r", 3, &mut Rng::new(1), 4, false, true);
    rollout.frozen = true;
    rollout.incomplete = true;
    let a = analyze_rollout(&rollout, &VerdictOptions::default());
    assert_eq!(codes(&a), vec!["capture_incomplete"]);
    assert_eq!(
        serde_json::to_value(a.report()).unwrap()["metrics"]["capture_incomplete"],
        json!(true)
    );
    let mut dangling = linear_rollout("d", 3, &mut Rng::new(2), 4, false, true);
    dangling.frozen = true;
    dangling.extra_intents.push("d-lost".into());
    let a = analyze_rollout(&dangling, &VerdictOptions::default());
    assert_eq!(a.reasons[0].calls(), vec!["d-lost".to_string()]);
    assert_eq!(a.verdict, Verdict::Masked);
    // Live: the same rollout is pending, its would-be verdict masked.
    dangling.frozen = false;
    let a = analyze_rollout(&dangling, &VerdictOptions::default());
    assert_eq!(a.verdict, Verdict::Pending);
    assert!(a.mask_sample);
}

#[test]
fn terminal_anchor_selects_and_attribution_keeps_incomplete() {
    // Two roots: an auxiliary call that finished first, and the agent's chain.
    let calls = vec![
        Call::root("aux", vec![9, 9], vec![8], 1.0),
        Call::root("a", vec![1, 2], vec![3], 2.0),
        Call::child("b", "a", vec![1, 2, 3, 4], vec![5], 3.0),
    ];
    let default = run(calls.clone());
    let main = default.build.as_ref().unwrap().main_chain().unwrap();
    assert_eq!(
        main.links.len(),
        1,
        "default selection takes the earliest root (aux)"
    );
    let mut rollout = Rollout {
        id: "r".into(),
        calls,
        frozen: true,
        incomplete: true,
        ..Rollout::default()
    };
    let options = VerdictOptions {
        terminal_call_id: Some("b".into()),
        mask_incomplete_when_attributed: false,
        ..VerdictOptions::default()
    };
    let anchored = analyze_rollout(&rollout, &options);
    let build = anchored.build.as_ref().unwrap();
    assert_eq!(build.main_chain().unwrap().links.len(), 2);
    assert_eq!(
        build.notes.terminal_chain,
        Some(tokscope_core::rebuild::ChainId::Main)
    );
    assert!(
        !codes(&anchored).contains(&"capture_incomplete"),
        "{:?}",
        anchored.reasons
    );
    let strict = analyze_rollout(
        &rollout,
        &VerdictOptions {
            mask_incomplete_when_attributed: true,
            ..options.clone()
        },
    );
    assert!(codes(&strict).contains(&"capture_incomplete"));
    rollout.incomplete = false;
    let unknown = analyze_rollout(
        &rollout,
        &VerdictOptions {
            terminal_call_id: Some("zzz".into()),
            ..options
        },
    );
    assert!(codes(&unknown).contains(&"terminal_not_found"));
    let report = serde_json::to_value(unknown.report()).unwrap();
    assert_eq!(report["build"]["notes"]["terminal_chain"], json!(""));
}

#[test]
fn read_failures_mask_with_located_reasons() {
    let mut torn = linear_rollout("t", 3, &mut Rng::new(3), 4, false, true);
    torn.frozen = true;
    torn.trailing = br#"{"rollout_id": "t", "model_call"#.to_vec();
    let a = analyze_rollout(&torn, &VerdictOptions::default());
    assert_eq!(
        a.verdict,
        Verdict::Ok,
        "a torn tail is ignored: {:?}",
        a.reasons
    );
    assert_eq!(
        a.capture.issues[0].kind,
        tokscope_core::store::IssueKind::TornTail
    );

    let mut corrupt = torn.clone();
    corrupt.trailing = b"{not json\n{}\n".to_vec();
    let a = analyze_rollout(&corrupt, &VerdictOptions::default());
    assert_eq!(codes(&a), vec!["unreadable"]);
    let text = a.reasons[0].to_string();
    assert!(text.contains("line 4") && text.contains("byte"), "{text}");
    assert_eq!(
        a.capture.records.len(),
        3,
        "the readable records stay for triage"
    );

    let mut newer = torn.clone();
    newer.trailing = Vec::new();
    newer.calls[1]
        .overrides
        .insert("schema_version".into(), json!(6));
    let a = analyze_rollout(&newer, &VerdictOptions::default());
    assert!(a.reasons[0].to_string().contains("upgrade the reader"));
    assert_eq!(a.report_n_calls(), 0);
}

#[test]
fn no_records_and_retired() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("e.tokens.intents"), "e-c1\n").unwrap();
    std::fs::write(
        dir.path().join("z.tokens.state.json"),
        r#"{"entry_digests": {}, "frozen": true, "incomplete": false, "indexed_size": 0, "retired": true, "snapshot_id": "s", "version": 4}"#,
    )
    .unwrap();
    let locations = tokscope_core::load::locate(&[dir.path().to_path_buf()], &[]).unwrap();
    let analyses = tokscope_core::load::analyze_all(&locations, &VerdictOptions::default());
    assert_eq!(
        codes(&analyses[0]),
        vec!["capture_incomplete", "no_records"]
    );
    assert_eq!(codes(&analyses[1]), vec!["retired"]);
    assert_eq!(
        analyses[1].lifecycle,
        tokscope_core::verdict::Lifecycle::Retired
    );
    assert!(analyses.iter().all(|a| a.error.is_some() && a.mask_sample));
}

#[test]
fn contiguity_failure_and_nothing_delivered_paths() {
    // Two items carry inline token arrays and no carrier index: both get the chain's tokens,
    // so the second does not extend the first — the reference's contiguity check fails.
    let mut a = Call::root("a", vec![1, 2], vec![3], 1.0);
    a.output_items = Some(vec![
        json!({"type": "reasoning", "generation_token_ids": [3]}),
        json!({"type": "message", "generation_token_ids": [3]}),
    ]);
    a.overrides.insert("token_item_index".into(), Value::Null);
    let analysis = run(vec![a]);
    assert_eq!(codes(&analysis), vec!["build_failed"]);
    assert!(
        analysis
            .error
            .as_ref()
            .unwrap()
            .contains("prefix-contiguous")
    );
}

#[test]
fn ten_thousand_call_chain() {
    let mut rollout = linear_rollout("long", 10_000, &mut Rng::new(11), 2, true, false);
    rollout.frozen = true;
    let analysis = analyze_rollout(&rollout, &VerdictOptions::default());
    assert_eq!(analysis.verdict, Verdict::Ok, "{:?}", analysis.reasons);
    let build = analysis.build.as_ref().unwrap();
    assert_eq!(build.main_chain().unwrap().links.len(), 10_000);
    assert_eq!(build.notes.delivered_fraction, 1.0);
    let provenance = tokscope_core::rebuild::provenance(build, build.main_chain().unwrap());
    assert_eq!(provenance.segments.len(), 2 * 10_000);
    assert_eq!(
        provenance.tokens.len(),
        build.nodes.last().unwrap().cumulative.len()
    );
}

fn fixture_rollouts() -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for store in ["store-1-0", "store-1-1"] {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/conformance")
            .join(store);
        for location in tokscope_core::store::discover(&dir).unwrap() {
            out.push((dir.clone(), location.id));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn any_permutation_of_lines_gives_the_same_report(index in 0usize..60, seed in any::<u64>()) {
        let rollouts = fixture_rollouts();
        let (dir, id) = &rollouts[index % rollouts.len()];
        let location = RolloutLocation { dir: dir.clone(), id: id.clone() };
        let original = analyze(read_capture(&location), &VerdictOptions::default());
        let mut shuffled_capture = read_capture(&location);
        let mut rng = Rng::new(seed);
        let records = &mut shuffled_capture.records;
        for i in (1..records.len()).rev() {
            let j = rng.range(0, i as u64 + 1) as usize;
            records.swap(i, j);
        }
        let shuffled = analyze(shuffled_capture, &VerdictOptions::default());
        let (a, b) = (serde_json::to_value(original.report()).unwrap(), serde_json::to_value(shuffled.report()).unwrap());
        let normalize = |mut v: Value| {
            // List order of notes may follow file order; compare them as multisets.
            for path in [["build", "notes", "unresolved_parent_calls"], ["build", "notes", "unresolved_retries"], ["build", "notes", "empty_generation_calls"]] {
                if let Some(list) = v.pointer_mut(&format!("/{}", path.join("/"))).and_then(Value::as_array_mut) {
                    list.sort_by_key(|x| x.to_string());
                }
            }
            for key in ["unresolved_parent_calls", "unresolved_retries"] {
                if let Some(list) = v.get_mut(key).and_then(Value::as_array_mut) {
                    list.sort_by_key(|x| x.to_string());
                }
            }
            if let Some(list) = v.pointer_mut("/build/quarantined").and_then(Value::as_array_mut) {
                list.sort_by_key(|x| x.to_string());
            }
            v["reasons"] = Value::Null;
            v
        };
        prop_assert_eq!(normalize(a), normalize(b));
    }
}
