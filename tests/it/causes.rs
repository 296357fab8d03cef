//! Causes across a run, on a store written through the reference capture path with production
//! tokenizers and their chat templates (`tests/fixtures/causes`, made by its `make.py`): every
//! scenario — reasoning stripped from history, tool arguments re-serialized, a word re-split,
//! trailing whitespace trimmed, a compaction, a subagent, a timed-out final call, a retried
//! final call — lands in a group of its own, with reward, agent and the tasks masking thins.

use crate::common::{compare_all, fixture, reports};

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokscope_core::causes::Causes;
use tokscope_core::detok::Detokenizer;
use tokscope_core::load::{analyze_in_order, locate};
use tokscope_core::observe::Rows;
use tokscope_core::verdict::cause::{CallPlace, Evidence, RootKind, TextClass};
use tokscope_core::verdict::{Summary, VerdictOptions};

const STORE: &str = "causes/store";
const ROWS: &str = "causes/rollouts.jsonl";

/// A production tokenizer of `tests/fixtures/tokenizers`, unpacked into `dir`.
pub(crate) fn tokenizer(dir: &Path, name: &str) -> PathBuf {
    let packed = fixture(&format!("tokenizers/{name}.tokenizer.json.gz"));
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(packed).unwrap())
        .read_to_end(&mut json)
        .unwrap();
    let path = dir.join(format!("{name}.tokenizer.json"));
    std::fs::write(&path, json).unwrap();
    path
}

/// What the generator says of each rollout.
fn expected() -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(fixture("causes/expected.json")).unwrap();
    serde_json::from_str::<BTreeMap<String, Value>>(&text).unwrap()
}

/// Every rollout's summary, each judged with the tokenizer its model used.
fn summaries() -> Vec<Summary> {
    let dir = tempfile::tempdir().unwrap();
    let expected = expected();
    let rows = Rows::read(&[fixture(ROWS)]);
    let mut out = Vec::new();
    for (name, file) in [("qwen3", "qwen3"), ("deepseek-v3", "deepseek-v3")] {
        let detok = Detokenizer::load(&tokenizer(dir.path(), file)).unwrap();
        let options = VerdictOptions {
            detokenizer: Some(Arc::new(detok)),
            ..VerdictOptions::default()
        };
        let locations: Vec<_> = locate(&[fixture(STORE)], &[])
            .unwrap()
            .into_iter()
            .filter(|l| expected[&l.id]["tokenizer"] == name)
            .collect();
        analyze_in_order(
            &locations,
            &options,
            &rows,
            |a| Summary::of(&a),
            |s| out.push(s),
        );
    }
    out
}

/// The category a cause falls in, in the generator's words.
fn category(summary: &Summary) -> String {
    let Some(cause) = &summary.cause else {
        return "ok".into();
    };
    match &cause.evidence {
        Evidence::Link(link) => match link.text.as_ref().map(|t| t.class) {
            Some(TextClass::ReasoningRemoved) => "reasoning_removed",
            Some(TextClass::JsonReserialized) => "json_reserialized",
            Some(TextClass::Retokenized) => "retokenized_same_text",
            Some(TextClass::WhitespaceOnly) => "whitespace_only",
            other => return format!("link {other:?}"),
        }
        .into(),
        Evidence::Roots { extra } if extra.iter().all(|k| *k == RootKind::Compaction) => {
            "compaction_root".into()
        }
        Evidence::Roots { extra } if extra == &[RootKind::Subagent] => "subagent_root".into(),
        Evidence::Incomplete {
            call: Some(CallPlace::Final),
            ..
        } => "capture_incomplete_final".into(),
        Evidence::Retry {
            call: CallPlace::Final,
        } => "unresolved_final_retry".into(),
        other => format!("{other:?}"),
    }
}

#[test]
fn the_capture_path_store_agrees_with_the_reference_consumer() {
    let expected: Vec<Value> = std::fs::read_to_string(fixture("causes/expected.report.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (passed, failures) = compare_all(&expected, &reports(&fixture(STORE)));
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(passed, 31);
}

#[test]
fn each_scenario_gets_its_cause_with_the_first_differing_position() {
    let expected = expected();
    let summaries = summaries();
    assert_eq!(summaries.len(), expected.len());
    for summary in &summaries {
        let want = &expected[summary.rollout_id()];
        assert_eq!(
            category(summary),
            want["category"].as_str().unwrap(),
            "{}: {:#?}",
            summary.rollout_id(),
            summary.cause
        );
        if let Some(Evidence::Link(link)) = summary.cause.as_ref().map(|c| &c.evidence) {
            assert_eq!(
                link.position.map(|p| p as u64),
                want["first_diff"].as_u64(),
                "{}: the first differing token of the failing call",
                summary.rollout_id()
            );
            assert!(link.edit.is_some_and(|e| e.aligned), "{link:?}");
        }
        // The row's context reaches the summary.
        assert_eq!(
            summary.reward(),
            want["reward"].as_f64(),
            "{}",
            summary.rollout_id()
        );
        assert_eq!(summary.agent(), want["agent"].as_str());
    }
}

#[test]
fn each_scenario_is_one_group_and_no_two_scenarios_share_one() {
    let expected = expected();
    let causes = Causes::of(&summaries());
    let mut categories = BTreeSet::new();
    for group in causes.groups() {
        let scenario: BTreeSet<&str> = group
            .members
            .keys()
            .map(|(id, _)| expected[id]["category"].as_str().unwrap())
            .collect();
        assert_eq!(scenario.len(), 1, "{}: {scenario:?}", group.title);
        assert!(
            categories.insert(*scenario.iter().next().unwrap()),
            "two groups for one scenario: {}",
            group.title
        );
        assert_eq!(
            group.agents.values().sum::<usize>(),
            group.len(),
            "every row names its agent"
        );
        let rewards: Vec<f64> = group
            .members
            .keys()
            .map(|(id, _)| expected[id]["reward"].as_f64().unwrap())
            .collect();
        let reward = group.reward();
        assert_eq!(reward.known, rewards.len());
        assert_eq!(
            reward.masked_with_reward,
            rewards.iter().filter(|&&r| r > 0.0).count()
        );
        let mean = rewards.iter().sum::<f64>() / rewards.len() as f64;
        assert!((reward.mean.unwrap() - mean).abs() < 1e-9);
    }
    assert_eq!(categories.len(), 8, "{categories:?}");
    // Task 7: one delivered rollout left of four.
    let thinned = causes.thinned();
    let seven = thinned
        .iter()
        .find(|t| t.task == "7")
        .expect("task 7 is thinned");
    assert_eq!((seven.delivered, seven.masked), (1, 3));
    assert_eq!(seven.why, "fewer_than_2_delivered");
    for t in &thinned {
        let delivered = expected
            .values()
            .filter(|e| {
                e["task_index"].as_u64().map(|n| n.to_string()).as_deref() == Some(t.task.as_str())
                    && e["category"] == "ok"
            })
            .count();
        assert_eq!(delivered, t.delivered, "task {}", t.task);
    }
}

#[test]
fn without_a_tokenizer_the_edit_shape_still_groups_what_broke_alike() {
    let rows = Rows::read(&[fixture(ROWS)]);
    let locations = locate(&[fixture(STORE)], &[]).unwrap();
    let mut summaries = Vec::new();
    analyze_in_order(
        &locations,
        &VerdictOptions::default(),
        &rows,
        |a| Summary::of(&a),
        |s| summaries.push(s),
    );
    let causes = Causes::of(&summaries);
    let think: Vec<&str> = causes
        .groups()
        .iter()
        .filter(|g| g.members.keys().any(|(id, _)| id == "think-0"))
        .map(|g| g.key.as_str())
        .collect();
    assert_eq!(
        think,
        [
            "unresolved_parent_calls/parent_digest_mismatch/none/prefix_not_requested/parent_generation/removed"
        ]
    );
    for group in causes.groups() {
        assert!(
            !group.key.contains("text"),
            "no text class without a tokenizer"
        );
    }
}
