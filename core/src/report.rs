//! The report of one rollout: the reference consumer's JSON shape (`rollout_id`, `builder`,
//! `rebuilt_response`, `mask_sample`, `error`, `metrics`, …) plus tokscope's own fields, and
//! the observations summary when the rollout's row is known.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::rebuild::{BuildOutput, RebuiltResponse};
use crate::verdict::{Analysis, BUILDER, Lifecycle, Verdict};

impl Analysis {
    /// A generous estimate of the serialized report's size, to size its buffer once.
    pub fn report_size_hint(&self) -> usize {
        let tokens: usize = self.response.as_ref().map_or(0, |response| {
            response
                .output
                .iter()
                .filter_map(|item| item.tokens.as_ref())
                .map(|t| t.prompt.len() + t.generation.len() * 4)
                .sum()
        });
        4096 + tokens * 7
    }

    /// The report's `metrics` object (cheap: nothing else of the report is built).
    pub fn metrics_json(&self) -> serde_json::Value {
        serde_json::to_value(self.metrics()).unwrap_or_default()
    }

    /// The report's `build.notes` object, when there is a build.
    pub fn notes_json(&self) -> Option<serde_json::Value> {
        self.build
            .as_ref()
            .map(|b| serde_json::to_value(NotesReport::new(&b.notes)).unwrap_or_default())
    }

    fn metrics(&self) -> Metrics<'_> {
        let n_calls = self.n_calls();
        match (&self.error, &self.build) {
            (None, Some(build)) => {
                let notes = &build.notes;
                Metrics::Full {
                    n_calls,
                    chains: notes.chains,
                    roots: notes.roots,
                    quarantined_calls: build.quarantined.len(),
                    quarantined_fraction: if n_calls > 0 {
                        crate::rebuild::chains::round4(
                            build.quarantined.len() as f64 / n_calls as f64,
                        )
                    } else {
                        0.0
                    },
                    delivered_fraction: notes.delivered_fraction,
                    generated_tokens_captured: notes.generated_tokens_captured,
                    generated_tokens_delivered: notes.generated_tokens_delivered,
                    parent_link_failures: &notes.parent_link_failures,
                    unresolved_parent_calls: notes.unresolved_parent_calls.len(),
                    empty_generation_calls: notes.empty_generation_calls.len(),
                    capture_incomplete: self.incomplete.then_some(true),
                }
            }
            _ => Metrics::Failed {
                n_calls,
                capture_incomplete: self.incomplete.then_some(true),
            },
        }
    }

    /// The report in the reference consumer's JSON shape, plus tokscope's own fields.
    pub fn report(&self) -> Report<'_> {
        let metrics = self.metrics();
        let ok = self.error.is_none();
        let notes = self.build.as_ref().map(|b| &b.notes);
        Report {
            rollout_id: self.rollout_id(),
            builder: BUILDER,
            rebuilt_response: self.response.as_ref(),
            mask_sample: self.mask_sample,
            error: self.error.as_deref(),
            metrics,
            unresolved_retries: ok.then(|| notes.map(|n| &n.unresolved_retries[..]).unwrap_or(&[])),
            unresolved_parent_calls: ok
                .then(|| notes.map(|n| &n.unresolved_parent_calls[..]).unwrap_or(&[])),
            build: self
                .build
                .as_ref()
                .map(|b| BuildReport::new(&self.capture.records, b)),
            verdict: self.verdict,
            lifecycle: self.lifecycle,
            reasons: self
                .reasons
                .iter()
                .map(|r| ReasonReport {
                    code: r.code(),
                    calls: r.calls(),
                    detail: r.to_string(),
                })
                .collect(),
            read_issues: self
                .capture
                .issues
                .iter()
                .map(ToString::to_string)
                .collect(),
            observations: self
                .options
                .observations
                .as_ref()
                .map(|o| crate::graph::summary(o, self)),
            row: self
                .options
                .observations
                .as_ref()
                .map(|o| &o.context)
                .filter(|c| !c.is_empty()),
            cause: matches!(
                self.standing(),
                crate::verdict::Standing::Masked | crate::verdict::Standing::AtRisk
            )
            .then(|| crate::verdict::cause::cause_of(self))
            .flatten()
            .map(|cause| CauseReport {
                key: cause.key(),
                title: cause.title(),
                cause,
            }),
        }
    }
}

/// The report of one rollout, serialized as one JSON object.
#[derive(Serialize)]
pub struct Report<'a> {
    rollout_id: &'a str,
    builder: &'static str,
    rebuilt_response: Option<&'a RebuiltResponse>,
    mask_sample: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    metrics: Metrics<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unresolved_retries: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unresolved_parent_calls: Option<&'a [String]>,
    build: Option<BuildReport<'a>>,
    verdict: Verdict,
    lifecycle: Lifecycle,
    reasons: Vec<ReasonReport>,
    read_issues: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observations: Option<serde_json::Value>,
    /// What the rollout's row says of it: reward, agent, task, its own `mask_sample`.
    #[serde(skip_serializing_if = "Option::is_none")]
    row: Option<&'a crate::observe::RowContext>,
    /// The cause signature, for a masked or at-risk rollout.
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<CauseReport>,
}

/// A cause signature with its key and title.
#[derive(Serialize)]
struct CauseReport {
    key: String,
    title: String,
    #[serde(flatten)]
    cause: crate::verdict::cause::Cause,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Metrics<'a> {
    Full {
        n_calls: usize,
        chains: usize,
        roots: usize,
        quarantined_calls: usize,
        quarantined_fraction: f64,
        delivered_fraction: f64,
        generated_tokens_captured: usize,
        generated_tokens_delivered: usize,
        parent_link_failures: &'a BTreeMap<String, usize>,
        unresolved_parent_calls: usize,
        empty_generation_calls: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        capture_incomplete: Option<bool>,
    },
    Failed {
        n_calls: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        capture_incomplete: Option<bool>,
    },
}

#[derive(Serialize)]
struct ReasonReport {
    code: &'static str,
    calls: Vec<String>,
    detail: String,
}

#[derive(Serialize)]
struct BuildReport<'a> {
    chains: Vec<ChainReport<'a>>,
    quarantined: &'a [String],
    notes: NotesReport<'a>,
}

#[derive(Serialize)]
struct ChainReport<'a> {
    chain_id: crate::rebuild::ChainId,
    call_ids: Vec<&'a str>,
    interstitial_lens: Vec<usize>,
    root_prompt_len: usize,
}

#[derive(Serialize)]
struct NotesReport<'a> {
    builder: &'static str,
    roots: usize,
    chains: usize,
    generated_tokens_captured: usize,
    generated_tokens_delivered: usize,
    delivered_fraction: f64,
    unresolved_retries: &'a [String],
    empty_generation_calls: &'a [String],
    parent_link_failures: &'a BTreeMap<String, usize>,
    unresolved_parent_calls: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    terminal_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    terminal_chain: Option<String>,
}

impl<'a> NotesReport<'a> {
    fn new(notes: &'a crate::rebuild::BuildNotes) -> Self {
        NotesReport {
            builder: BUILDER,
            roots: notes.roots,
            chains: notes.chains,
            generated_tokens_captured: notes.generated_tokens_captured,
            generated_tokens_delivered: notes.generated_tokens_delivered,
            delivered_fraction: notes.delivered_fraction,
            unresolved_retries: &notes.unresolved_retries,
            empty_generation_calls: &notes.empty_generation_calls,
            parent_link_failures: &notes.parent_link_failures,
            unresolved_parent_calls: &notes.unresolved_parent_calls,
            terminal_call_id: notes.terminal_call_id.as_deref(),
            // "main", or "" when no chain delivered the terminal.
            terminal_chain: notes.terminal_call_id.as_ref().map(|_| {
                notes
                    .terminal_chain
                    .map_or(String::new(), |chain| chain.to_string())
            }),
        }
    }
}

impl<'a> BuildReport<'a> {
    fn new(
        records: &'a [std::sync::Arc<crate::store::TokenRecord>],
        build: &'a BuildOutput,
    ) -> Self {
        let notes = &build.notes;
        BuildReport {
            chains: build
                .chains
                .iter()
                .map(|chain| ChainReport {
                    chain_id: chain.chain_id,
                    call_ids: chain
                        .links
                        .iter()
                        .map(|l| records[build.record_of(l.node)].model_call_id.as_str())
                        .collect(),
                    interstitial_lens: chain.links.iter().map(|l| l.interstitial_len()).collect(),
                    root_prompt_len: chain.root_prompt_len,
                })
                .collect(),
            quarantined: &build.quarantined,
            notes: NotesReport::new(notes),
        }
    }
}
