//! The consumer's verdict for a rollout (SPEC §6): rebuild, judge, and say why.
//!
//! The reasons are typed ([`MaskReason`]); the report's JSON shapes live in [`crate::report`].

pub mod cause;
mod reason;
mod standing;
mod summary;
pub(crate) use summary::RecordTally;
pub use summary::Summary;

pub use reason::MaskReason;
pub use standing::{LiveStatus, Standing, Tally};

use crate::hash::HashMap;

use serde::Serialize;

use crate::rebuild::project::{EarlierProjection, ProjectionError};
use crate::rebuild::{
    BuildOptions, BuildOutput, ChainId, LinkNote, RebuiltResponse, extend_build, prefix_merging,
    project_main_chain,
};
use crate::store::Capture;

/// The builder name reported.
pub(crate) const BUILDER: &str = "prefix_merging";

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
    pub digest_memo: Option<std::sync::Arc<crate::rebuild::memo::DigestMemo>>,
    /// What the harness observed around the capture (its rollout row), when known.
    pub observations: Option<std::sync::Arc<crate::observe::Observations>>,
    /// The tokenizer, when given: a broken link's cause then says what the edit did to the
    /// text ([`cause`]).
    pub detokenizer: Option<std::sync::Arc<crate::detok::Detokenizer>>,
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
            detokenizer: None,
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

impl Lifecycle {
    /// Its name, as every surface prints it: `live`, `frozen`, `retired` or `cleared`.
    pub fn name(self) -> &'static str {
        match self {
            Lifecycle::Live => "live",
            Lifecycle::Frozen => "frozen",
            Lifecycle::Retired => "retired",
            Lifecycle::Cleared => "cleared",
        }
    }
}

/// The verdict shown to the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Frozen and trainable, or retired (delivered).
    Ok,
    /// Frozen (or its files cannot be read) and masked.
    Masked,
    /// Live: the verdict it would get if frozen now is in `mask_sample`, not final.
    Pending,
}

impl Verdict {
    /// The words every surface prints for this verdict with mask decision `mask_sample`:
    /// `ok`, `masked`, or `pending (masked)` / `pending (ok)` (what a freeze now would give).
    pub fn words(self, mask_sample: bool) -> &'static str {
        match (self, mask_sample) {
            (Verdict::Ok, _) => "ok",
            (Verdict::Masked, _) => "masked",
            (Verdict::Pending, true) => "pending (masked)",
            (Verdict::Pending, false) => "pending (ok)",
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
    /// Intents without a record (calls in flight), counted once: the screen asks every
    /// frame, and counting means hashing every record's id.
    pub open_intents: usize,
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
    analyze_continuing(capture, options, None, 0)
}

/// Rebuild and judge one rollout whose `previous` analysis is known: when its records are
/// those `previous` built with, followed by appended ones, the build is extended by them
/// ([`crate::rebuild::extend_build`]) instead of made again (the same result, at the cost of
/// the appended records alone). `carried`: how many leading records of `capture` are the
/// very records `previous` was built with (the read knows: it carried them over).
pub(crate) fn analyze_continuing(
    capture: Capture,
    options: &VerdictOptions,
    mut previous: Option<Analysis>,
    carried: usize,
) -> Analysis {
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
    // Counted once (each count hashes every record's id).
    let open_intents: Vec<String> = capture
        .open_intents()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut analysis = Analysis {
        build: None,
        response: None,
        error: None,
        mask_sample: true,
        incomplete: false,
        open_intents: open_intents.len(),
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
    // As `Capture::incomplete`, with the intents counted above.
    analysis.incomplete = capture.state.incomplete || !open_intents.is_empty();
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
            .and_then(|o| o.declared_response(response))
            .ok_or_else(|| response.clone())
    });
    let terminal_call_id = options
        .terminal_call_id
        .clone()
        .or_else(|| declared.as_ref().and_then(|d| d.as_ref().ok().cloned()));
    let build_options = BuildOptions {
        terminal_call_id: terminal_call_id.clone(),
        // Without one to carry over, a memo for this build alone: the projection then
        // reuses the link checks' prefix comparisons instead of repeating them.
        digest_memo: Some(options.digest_memo.clone().unwrap_or_default()),
    };
    // The previous main chain's items, for the steps the new one shares (a live append).
    let earlier = previous
        .as_mut()
        .and_then(|p| EarlierProjection::take(&mut p.response));
    let build = previous
        .and_then(|previous| build_of_prefix(previous, carried))
        .and_then(|build| extend_build(records, build, &build_options))
        .unwrap_or_else(|| prefix_merging(records, &build_options));
    let projected = match &build.error {
        Some(error) => Err(ProjectionError(error.clone())),
        // A rollout followed live (its memo carried from one analysis to the next) keeps its
        // projection's steps for its next append's.
        None => project_main_chain(
            &capture.location.id,
            &options.model,
            records,
            &build,
            earlier,
            options.digest_memo.is_some(),
        ),
    };
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
        } else if build.notes.terminal_chain != Some(ChainId::Main) {
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

/// The build of `previous` when the records it was built with are the first `carried` of
/// this capture's (the same parsed records, carried over by the read: the file only grew).
fn build_of_prefix(previous: Analysis, carried: usize) -> Option<BuildOutput> {
    previous.build.filter(|build| build.fates.len() == carried)
}

fn finish(mut analysis: Analysis) -> Analysis {
    if analysis.error.is_some() {
        analysis.mask_sample = true;
    }
    // A file that cannot be read at all (not a regular file, no permission, a symlink
    // loop) is no capture in progress: the rollout is masked now, not pending.
    let unreadable = analysis
        .capture
        .issues
        .iter()
        .any(|i| i.fatal && i.kind == crate::store::IssueKind::Io);
    analysis.verdict = match analysis.lifecycle {
        // Built and delivered before its payload went: tokscope's verdict (and every count)
        // is delivered, while `mask_sample` stays what the consumer gives now that the
        // records are gone.
        Lifecycle::Retired => Verdict::Ok,
        Lifecycle::Live if !unreadable => Verdict::Pending,
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
    let mut note_of: HashMap<&str, LinkNote> = HashMap::default();
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

    /// The first reason, if masked.
    pub fn first_reason(&self) -> Option<&MaskReason> {
        self.reasons.first()
    }

    /// The reason that decides: for a live rollout its first incurable one (what puts it at
    /// risk; its calls in flight may still come), else the most fundamental.
    pub fn leading_reason(&self) -> Option<&MaskReason> {
        let incurable = match self.lifecycle {
            Lifecycle::Live => self.reasons.iter().find(|r| !r.curable_while_live()),
            _ => None,
        };
        incurable.or(self.reasons.first())
    }

    /// What the verdict means now (see [`LiveStatus`]).
    pub fn live_status(&self) -> LiveStatus {
        LiveStatus::of(
            self.lifecycle,
            &self.reasons,
            self.open_intents,
            self.mask_sample,
        )
    }

    /// Where it stands in the run's accounting (see [`Standing`]).
    pub fn standing(&self) -> Standing {
        Standing::of(self.lifecycle, self.verdict, self.live_status())
    }
}
