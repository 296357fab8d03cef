//! Everything about a rollout that was not observed or could not be joined (SPEC §8).

use crate::rebuild::{ChainId, RecordFate};
use crate::store::IssueKind;
use crate::verdict::{Analysis, Lifecycle};

/// What kind of gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GapKind {
    /// An intent without a record while the rollout is live.
    InFlight,
    /// An intent without a record in a frozen rollout: a lost call.
    Dangling,
    /// The state says some call failed to capture.
    IncompleteFlag,
    /// A line of the incomplete sentinel.
    SentinelLine,
    /// A call whose recorded parent link was not used as recorded.
    ParentLink,
    /// Retry siblings whose kept generation is unknown.
    UnresolvedRetry,
    /// A call that generated nothing.
    EmptyGeneration,
    /// Chains other than main are not delivered.
    DroppedChain,
    /// A refused, corrupt, torn or otherwise unreadable line or file.
    ReadIssue,
    /// An `ObservationGap` the harness recorded, or an unreadable observation record.
    Observation,
    /// Something observed that does not join the token capture (or the reverse).
    Join,
}

/// One gap.
#[derive(Clone, Debug, PartialEq)]
pub struct Gap {
    /// Kind.
    pub kind: GapKind,
    /// The call it concerns, if any.
    pub call: Option<String>,
    /// What happened.
    pub detail: String,
}

/// Capture gaps of an analyzed rollout, most serious first.
pub fn capture_gaps(analysis: &Analysis) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let capture = &analysis.capture;
    let records = &capture.records;
    for issue in &capture.issues {
        if issue.kind == IssueKind::Unterminated {
            continue;
        }
        gaps.push(Gap {
            kind: GapKind::ReadIssue,
            call: None,
            detail: issue.to_string(),
        });
    }
    let (kind, detail) = if analysis.lifecycle == Lifecycle::Live {
        (GapKind::InFlight, "in flight: intent without a record yet")
    } else {
        (
            GapKind::Dangling,
            "dangling intent: dispatched, never recorded",
        )
    };
    for call in capture.open_intents() {
        gaps.push(Gap {
            kind,
            call: Some(call.to_owned()),
            detail: detail.into(),
        });
    }
    if capture.state.incomplete {
        gaps.push(Gap {
            kind: GapKind::IncompleteFlag,
            call: None,
            detail: "state flagged incomplete: some call failed to capture".into(),
        });
    }
    for line in capture.sentinel.iter().flatten() {
        gaps.push(Gap {
            kind: GapKind::SentinelLine,
            call: Some(line.clone()),
            detail: "listed in the incomplete sentinel".into(),
        });
    }
    let Some(build) = &analysis.build else {
        return gaps;
    };
    for node in &build.nodes {
        if let Some(note) = node.note {
            let record = &records[node.record];
            let claimed = record.parent_call_id.as_deref().unwrap_or("-");
            gaps.push(Gap {
                kind: GapKind::ParentLink,
                call: Some(record.model_call_id.clone()),
                detail: format!("{note} (claimed parent {claimed})"),
            });
        }
    }
    for (index, fate) in build.fates.iter().enumerate() {
        let call = records[index].model_call_id.clone();
        match fate {
            RecordFate::Conflict(_) => gaps.push(Gap {
                kind: GapKind::ParentLink,
                call: Some(call),
                detail: "duplicate_call_id_conflict: same id, different tokens".into(),
            }),
            RecordFate::DeltaBroken => gaps.push(Gap {
                kind: GapKind::ParentLink,
                call: Some(call),
                detail:
                    "delta_chain_unreconstructable: parent chain missing, cyclic or digest mismatch"
                        .into(),
            }),
            _ => {}
        }
    }
    for call in &build.notes.unresolved_retries {
        gaps.push(Gap {
            kind: GapKind::UnresolvedRetry,
            call: Some(call.clone()),
            detail: "retry sibling: nobody knows which generation the client kept".into(),
        });
    }
    for call in &build.notes.empty_generation_calls {
        gaps.push(Gap {
            kind: GapKind::EmptyGeneration,
            call: Some(call.clone()),
            detail: "empty generation: no training signal, left out".into(),
        });
    }
    if build.chains.len() > 1 || build.notes.delivered_fraction < 1.0 {
        for chain in build.chains.iter().filter(|c| c.chain_id != ChainId::Main) {
            let leaf = &records[build.record_of(chain.links.last().unwrap().node)];
            gaps.push(Gap {
                kind: GapKind::DroppedChain,
                call: Some(leaf.model_call_id.clone()),
                detail: format!(
                    "{} not delivered ({} calls); delivered fraction {:.1}%",
                    chain.chain_id,
                    chain.links.len(),
                    build.notes.delivered_fraction * 100.0
                ),
            });
        }
    }
    gaps
}
