//! Every user-facing string of the explorer, in one place.

use std::path::Path;

use crate::verdict::Analysis;

/// Program name in the header.
pub const APP: &str = "tokscope";
/// Pane titles.
pub const TITLE_LIST: &str = "rollouts";
/// Pane title.
pub const TITLE_TREE: &str = "chain tree";
/// Pane title.
pub const TITLE_TOKENS: &str = "tokens";
/// Pane title.
pub const TITLE_INSPECTOR: &str = "inspector";
/// Pane title.
pub const TITLE_GAPS: &str = "gaps";
/// Help title.
pub const TITLE_HELP: &str = "keys — any key closes";

/// Shown when a selected call is on no chain.
pub const NOT_ON_A_CHAIN: &str =
    "this call is on no chain (quarantined or under a quarantined call)";
/// Shown when no low-probability token remains.
pub const NO_LOW_PROB: &str = "no further generated token below the probability threshold";
/// Shown when an action needs a call selected in the tree.
pub const SELECT_A_CALL: &str = "select a call in the chain tree first";
/// Shown when a divergence cannot be computed.
pub const NO_DIVERGENCE: &str =
    "no divergence to show: this call's parent link holds, or it is a root by decision";
/// Shown when the what-if is dropped.
pub const WHAT_IF_CLEARED: &str = "what-if cleared: showing the rollout as built";
/// Refusal to export into a store.
pub const REFUSE_STORE_WRITE: &str =
    "refusing to write inside a token-store directory; choose a path outside the store";
/// No rebuilt response to export.
pub const NO_RESPONSE: &str = "this rollout has no rebuilt response (the build failed)";
/// A write in progress (torn tail) on a live rollout.
pub const WRITING: &str = "✎ writing…";
/// Replay keys outside replay.
pub const REPLAY_ONLY: &str = "replay is off: press R to replay the store call by call";
/// Live keys outside live monitoring.
pub const LIVE_ONLY: &str = "not watching a store (open one to monitor it live)";
/// Replay started.
pub const REPLAY_ON: &str =
    "replay: , and . step one call · Space play · 1 2 3 speed · : jump · R leaves";
/// Replay ended.
pub const REPLAY_OFF: &str = "replay off: showing the store as it is now";
/// Jump prompt.
pub const JUMP_PROMPT: &str = "jump to (call number, +seconds, or call id): ";
/// No tokenizer loaded.
pub const NO_TOKENIZER: &str = "no tokenizer loaded: start with --tokenizer PATH/tokenizer.json";
/// Empty store.
pub const NO_ROLLOUTS: &str = "no rollouts match (check the filters, or the store is empty)";
/// Nothing selected.
pub const NO_SELECTION: &str = "no rollout selected";
/// No build to show.
pub const NO_BUILD: &str = "no build: the records could not be read (see the inspector and gaps)";
/// No chain to show.
pub const NO_CHAIN: &str = "no chain to show";
/// Graph pane title.
pub const TITLE_GRAPH: &str = "observation graph";
/// No rollout row.
pub const NO_OBSERVATIONS: &str =
    "no rollout row for this rollout: pass --rollouts PATH (rows files in the store are found)";
/// Enter on a graph line that is no model call.
pub const NOT_A_CALL: &str = "select a model call (●) to jump to its tokens";
/// No gaps.
pub const NO_GAPS: &str = "no gaps: everything was observed and joined";
/// Token legend.
pub const LEGEND: &str = "root prompt · environment (mask 0) · generated (mask 1) · ▁ low p";

/// Default export file name in the current directory.
pub fn default_export_name(rollout_id: &str, report: bool) -> String {
    let kind = if report { "report" } else { "response" };
    format!("{rollout_id}.{kind}.json")
}

/// Export succeeded.
pub fn exported(path: &Path) -> String {
    format!("wrote {}", path.display())
}

/// Export failed.
pub fn export_failed(error: &str) -> String {
    format!("export failed: {error}")
}

/// A call id not found in the tree.
pub fn no_such_call(call: &str) -> String {
    format!("{call} is not in this rollout's tree")
}

/// Export prompt.
pub fn export_prompt(report: bool) -> &'static str {
    if report {
        "export report to: "
    } else {
        "export rebuilt response to: "
    }
}

/// The differences a what-if made.
pub fn what_if_changes(before: &Analysis, after: &Analysis) -> Vec<String> {
    let mut changes = Vec::new();
    let verdict = |a: &Analysis| {
        if a.mask_sample { "masked" } else { "trainable" }
    };
    if before.mask_sample != after.mask_sample {
        changes.push(format!("verdict: {} → {}", verdict(before), verdict(after)));
    } else {
        changes.push(format!("verdict unchanged: {}", verdict(after)));
    }
    let main_calls = |a: &Analysis| -> Vec<String> {
        let Some(build) = &a.build else {
            return Vec::new();
        };
        build.main_chain().map_or(Vec::new(), |c| {
            c.links
                .iter()
                .map(|l| {
                    a.capture.records[build.record_of(l.node)]
                        .model_call_id
                        .clone()
                })
                .collect()
        })
    };
    let (b, a) = (main_calls(before), main_calls(after));
    if b != a {
        changes.push(format!(
            "main chain: {} calls ending {} → {} calls ending {}",
            b.len(),
            b.last().map_or("-", String::as_str),
            a.len(),
            a.last().map_or("-", String::as_str)
        ));
    }
    let fraction = |x: &Analysis| x.build.as_ref().map_or(0.0, |b| b.notes.delivered_fraction);
    if fraction(before) != fraction(after) {
        changes.push(format!(
            "delivered: {:.1}% → {:.1}%",
            fraction(before) * 100.0,
            fraction(after) * 100.0
        ));
    }
    let codes = |x: &Analysis| x.reasons.iter().map(|r| r.code()).collect::<Vec<_>>();
    for code in codes(before) {
        if !codes(after).contains(&code) {
            changes.push(format!("reason gone: {code}"));
        }
    }
    for code in codes(after) {
        if !codes(before).contains(&code) {
            changes.push(format!("new reason: {code}"));
        }
    }
    changes
}
