//! The consumer's verdict for a rollout (SPEC §6) and the report in the reference's shape.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::Serialize;

use crate::rebuild::project::ProjectionError;
use crate::rebuild::{
    BuildOptions, BuildOutput, LinkNote, RebuiltResponse, prefix_merging, project_main_chain,
};
use crate::store::{Capture, ReadIssue};

/// The builder name reported.
pub const BUILDER: &str = "prefix_merging";

/// How to judge a rollout.
#[derive(Clone, Debug)]
pub struct VerdictOptions {
    /// `model` of the rebuilt response.
    pub model: String,
    /// The harness's terminal call, anchoring chain selection.
    pub terminal_call_id: Option<String>,
    /// The served response id the harness kept (the consumer's `declared_response_id`),
    /// joined to a model call through the rollout row's model calls; unmatched, it masks.
    /// Only an explicit declaration: no producer writes one into its rows.
    pub declared_response_id: Option<String>,
    /// With `false`, an incomplete capture masks only when the terminal's chain was not
    /// delivered (the reference's `mask_incomplete_when_attributed`).
    pub mask_incomplete_when_attributed: bool,
    /// Digests remembered across rebuilds of one growing rollout (live monitoring).
    pub digest_memo: Option<std::sync::Arc<crate::rebuild::merge::DigestMemo>>,
    /// What the harness observed around the capture (its rollout row), when known.
    pub observations: Option<std::sync::Arc<crate::observe::Observations>>,
}

impl Default for VerdictOptions {
    fn default() -> Self {
        VerdictOptions {
            model: String::new(),
            terminal_call_id: None,
            declared_response_id: None,
            mask_incomplete_when_attributed: true,
            digest_memo: None,
            observations: None,
        }
    }
}

/// Where a rollout is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    /// Still being written (not frozen).
    Live,
    /// Snapshot taken.
    Frozen,
    /// Snapshot delivered and payload deleted.
    Retired,
    /// Every file deleted (cleared before a new attempt), seen while watching.
    Cleared,
}

/// The verdict shown to the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Frozen and trainable.
    Ok,
    /// Frozen (or retired) and masked.
    Masked,
    /// Live: the verdict it would get if frozen now is in `mask_sample`, not final.
    Pending,
}

/// Why a rollout is masked; each names the calls it concerns.
#[derive(Clone, Debug, PartialEq)]
pub enum MaskReason {
    /// The snapshot was delivered and its records deleted.
    Retired,
    /// The files could not be read the way the consumer reads them.
    Unreadable(ReadIssue),
    /// No token record at all.
    NoRecords,
    /// Building or projecting failed.
    BuildFailed(String),
    /// Some call failed to capture, or was dispatched and never recorded.
    CaptureIncomplete {
        /// The state file says so.
        state_flag: bool,
        /// Intents with no record.
        open_intents: Vec<String>,
    },
    /// Retry siblings whose kept generation nobody knows.
    UnresolvedRetries(Vec<String>),
    /// Calls starting a fragment after an unproven boundary, with the reason for each.
    UnresolvedParents(Vec<(String, LinkNote)>),
    /// Not exactly one root.
    RootCount(Vec<String>),
    /// Not exactly one chain.
    ChainCount(usize),
    /// The delivered chain generated nothing.
    NothingDelivered,
    /// The named terminal call has no record.
    TerminalNotFound(String),
    /// The named terminal call is not on the delivered chain.
    TerminalNotDelivered(String),
    /// The declared final response matches no model call of the rollout's row.
    DeclaredResponseUnmatched(String),
}

impl MaskReason {
    /// A stable short code (used for filtering and in JSON).
    pub fn code(&self) -> &'static str {
        match self {
            MaskReason::Retired => "retired",
            MaskReason::Unreadable(_) => "unreadable",
            MaskReason::NoRecords => "no_records",
            MaskReason::BuildFailed(_) => "build_failed",
            MaskReason::CaptureIncomplete { .. } => "capture_incomplete",
            MaskReason::UnresolvedRetries(_) => "unresolved_retries",
            MaskReason::UnresolvedParents(_) => "unresolved_parent_calls",
            MaskReason::RootCount(_) => "roots_not_one",
            MaskReason::ChainCount(_) => "chains_not_one",
            MaskReason::NothingDelivered => "nothing_delivered",
            MaskReason::TerminalNotFound(_) => "terminal_not_found",
            MaskReason::TerminalNotDelivered(_) => "terminal_not_delivered",
            MaskReason::DeclaredResponseUnmatched(_) => "declared_response_unmatched",
        }
    }

    /// The calls this reason concerns.
    pub fn calls(&self) -> Vec<String> {
        match self {
            MaskReason::CaptureIncomplete { open_intents, .. } => open_intents.clone(),
            MaskReason::UnresolvedRetries(calls) | MaskReason::RootCount(calls) => calls.clone(),
            MaskReason::UnresolvedParents(calls) => calls.iter().map(|(c, _)| c.clone()).collect(),
            MaskReason::TerminalNotFound(call) | MaskReason::TerminalNotDelivered(call) => {
                vec![call.clone()]
            }
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for MaskReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaskReason::Retired => write!(f, "retired: snapshot delivered, records deleted"),
            MaskReason::Unreadable(issue) => write!(f, "unreadable: {issue}"),
            MaskReason::NoRecords => write!(f, "no token records"),
            MaskReason::BuildFailed(error) => write!(f, "build failed: {error}"),
            MaskReason::CaptureIncomplete {
                state_flag,
                open_intents,
            } => {
                write!(f, "capture incomplete:")?;
                if *state_flag {
                    write!(f, " state flagged")?;
                }
                if !open_intents.is_empty() {
                    write!(f, " {} intent(s) without record", open_intents.len())?;
                }
                Ok(())
            }
            MaskReason::UnresolvedRetries(calls) => {
                write!(f, "unresolved retry: {}", calls.join(", "))
            }
            MaskReason::UnresolvedParents(calls) => {
                write!(f, "unresolved parent: ")?;
                for (i, (call, note)) in calls.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{call} ({note})")?;
                }
                Ok(())
            }
            MaskReason::RootCount(roots) => {
                write!(f, "{} roots: {}", roots.len(), roots.join(", "))
            }
            MaskReason::ChainCount(chains) => write!(f, "{chains} chains"),
            MaskReason::NothingDelivered => write!(f, "no generated token delivered"),
            MaskReason::TerminalNotFound(call) => write!(f, "terminal {call} has no record"),
            MaskReason::TerminalNotDelivered(call) => {
                write!(f, "terminal {call} is not on the delivered chain")
            }
            MaskReason::DeclaredResponseUnmatched(response) => {
                write!(
                    f,
                    "declared final response {response} matches no model call"
                )
            }
        }
    }
}

/// A rollout read, rebuilt and judged.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// What was read.
    pub capture: Capture,
    /// The build (`None` when the records could not be read, or there were none).
    pub build: Option<BuildOutput>,
    /// The rebuilt response of the main chain.
    pub response: Option<RebuiltResponse>,
    /// The consumer's error, for a failed build.
    pub error: Option<String>,
    /// The consumer's mask decision (as if frozen now, for a live rollout).
    pub mask_sample: bool,
    /// Whether the capture is incomplete.
    pub incomplete: bool,
    /// Every reason the rollout is masked, most fundamental first.
    pub reasons: Vec<MaskReason>,
    /// Live, frozen or retired.
    pub lifecycle: Lifecycle,
    /// Ok, masked or pending.
    pub verdict: Verdict,
    /// The options used.
    pub options: VerdictOptions,
}

/// Rebuild and judge one rollout.
pub fn analyze(capture: Capture, options: &VerdictOptions) -> Analysis {
    let state = &capture.state;
    let lifecycle = if !capture.files_present {
        Lifecycle::Cleared
    } else if state.retired {
        Lifecycle::Retired
    } else if state.frozen {
        Lifecycle::Frozen
    } else {
        Lifecycle::Live
    };
    let mut analysis = Analysis {
        build: None,
        response: None,
        error: None,
        mask_sample: true,
        incomplete: false,
        reasons: Vec::new(),
        lifecycle,
        verdict: Verdict::Masked,
        options: options.clone(),
        capture,
    };
    let capture = &analysis.capture;
    // The consumer's freeze: a bad state file, then a tombstone, then unreadable records.
    let state_issue = capture
        .issues
        .iter()
        .find(|i| i.fatal && i.kind == crate::store::IssueKind::BadState && i.at.is_none());
    let read_failure = if capture.state.retired && capture.state.error.is_none() {
        Some(MaskReason::Retired)
    } else {
        state_issue
            .or_else(|| capture.fatal())
            .map(|issue| MaskReason::Unreadable(issue.clone()))
    };
    if let Some(reason) = read_failure {
        analysis.error = Some(match &reason {
            MaskReason::Retired => format!(
                "RuntimeError: Token capture for rollout {} is retired",
                capture.location.id
            ),
            other => other.to_string(),
        });
        analysis.reasons.push(reason);
        return finish(analysis);
    }
    analysis.incomplete = capture.incomplete();
    let open_intents: Vec<String> = capture
        .open_intents()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let incomplete_reason = MaskReason::CaptureIncomplete {
        state_flag: capture.state.incomplete,
        open_intents,
    };
    if capture.records.is_empty() {
        analysis.error = Some("capture contains no token records".into());
        if analysis.incomplete {
            analysis.reasons.push(incomplete_reason);
        }
        analysis.reasons.push(MaskReason::NoRecords);
        return finish(analysis);
    }

    let records = &capture.records;
    // A declared final response names the terminal, unless a terminal call was given.
    let declared = options.declared_response_id.as_ref().map(|response| {
        options
            .observations
            .as_ref()
            .ok_or_else(|| response.clone())
            .and_then(|o| o.declared_response(response))
    });
    let terminal_call_id = options
        .terminal_call_id
        .clone()
        .or_else(|| declared.as_ref().and_then(|d| d.as_ref().ok().cloned()));
    let build = prefix_merging(
        records,
        &BuildOptions {
            terminal_call_id: terminal_call_id.clone(),
            digest_memo: options.digest_memo.clone(),
        },
    );
    let projected = project_main_chain(&capture.location.id, &options.model, records, &build);
    let mut reasons = Vec::new();
    let mut structural_mask = false;
    match projected {
        Err(ProjectionError(error)) => {
            analysis.error = Some(error.clone());
            reasons.push(MaskReason::BuildFailed(error));
        }
        Ok(response) => {
            let notes = &build.notes;
            if !notes.unresolved_retries.is_empty() {
                reasons.push(MaskReason::UnresolvedRetries(
                    notes.unresolved_retries.clone(),
                ));
            }
            if !notes.unresolved_parent_calls.is_empty() {
                reasons.push(MaskReason::UnresolvedParents(unresolved_with_notes(
                    records, &build,
                )));
            }
            if notes.roots != 1 {
                let roots = build
                    .nodes
                    .iter()
                    .filter(|n| n.parent.is_none())
                    .map(|n| records[n.record].model_call_id.clone())
                    .collect();
                reasons.push(MaskReason::RootCount(roots));
            }
            if notes.chains != 1 {
                reasons.push(MaskReason::ChainCount(notes.chains));
            }
            if response.usage.output_tokens == 0 {
                reasons.push(MaskReason::NothingDelivered);
            }
            structural_mask = !reasons.is_empty();
            analysis.response = Some(response);
        }
    }
    let mut terminal_delivered = false;
    if let Some(Err(response)) = &declared {
        reasons.push(MaskReason::DeclaredResponseUnmatched(response.clone()));
    }
    if let Some(terminal) = &terminal_call_id {
        if !records.iter().any(|r| &r.model_call_id == terminal) {
            reasons.push(MaskReason::TerminalNotFound(terminal.clone()));
        } else if build.notes.terminal_chain != "main" {
            reasons.push(MaskReason::TerminalNotDelivered(terminal.clone()));
        } else {
            terminal_delivered = analysis.error.is_none();
        }
    }
    let incomplete_masks =
        analysis.incomplete && (options.mask_incomplete_when_attributed || !terminal_delivered);
    if incomplete_masks {
        reasons.insert(0, incomplete_reason);
    }
    analysis.mask_sample = analysis.error.is_some() || structural_mask || !reasons.is_empty();
    analysis.reasons = reasons;
    analysis.build = Some(build);
    finish(analysis)
}

fn finish(mut analysis: Analysis) -> Analysis {
    if analysis.error.is_some() {
        analysis.mask_sample = true;
    }
    analysis.verdict = match analysis.lifecycle {
        Lifecycle::Live => Verdict::Pending,
        _ if analysis.mask_sample => Verdict::Masked,
        _ => Verdict::Ok,
    };
    analysis
}

/// Each unresolved parent call with the note that made it one.
fn unresolved_with_notes(
    records: &[std::sync::Arc<crate::store::TokenRecord>],
    build: &BuildOutput,
) -> Vec<(String, LinkNote)> {
    let mut note_of: HashMap<&str, LinkNote> = HashMap::new();
    for node in &build.nodes {
        if let Some(note) = node.note {
            note_of.insert(&records[node.record].model_call_id, note);
        }
    }
    for (index, fate) in build.fates.iter().enumerate() {
        let note = match fate {
            crate::rebuild::RecordFate::Conflict(_) => LinkNote::DuplicateCallIdConflict,
            crate::rebuild::RecordFate::DeltaBroken => LinkNote::DeltaChainUnreconstructable,
            _ => continue,
        };
        note_of.entry(&records[index].model_call_id).or_insert(note);
    }
    build
        .notes
        .unresolved_parent_calls
        .iter()
        .map(|call| {
            (
                call.clone(),
                note_of
                    .get(call.as_str())
                    .copied()
                    .unwrap_or(LinkNote::ParentUnresolved),
            )
        })
        .collect()
}

impl Analysis {
    /// The rollout id.
    pub fn rollout_id(&self) -> &str {
        &self.capture.location.id
    }

    /// Number of record lines (duplicates included), as the consumer counts calls.
    pub fn n_calls(&self) -> usize {
        // Without a build the consumer never got the records (unreadable, retired or none).
        if self.build.is_none() {
            0
        } else {
            self.capture.records.len()
        }
    }

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

    /// The first reason, if masked.
    pub fn first_reason(&self) -> Option<&MaskReason> {
        self.reasons.first()
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
                        crate::rebuild::merge::round4(
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
                .map(|o| crate::observe::graph::summary(o, self)),
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
    chain_id: &'a str,
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
    terminal_chain: Option<&'a str>,
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
            terminal_chain: notes
                .terminal_call_id
                .as_ref()
                .map(|_| notes.terminal_chain.as_str()),
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
                    chain_id: &chain.chain_id,
                    call_ids: chain
                        .links
                        .iter()
                        .map(|l| records[build.nodes[l.node].record].model_call_id.as_str())
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
