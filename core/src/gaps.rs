//! Everything about a rollout that was not observed or could not be joined (SPEC §8), as
//! typed facts; the gaps pane words them.

use crate::observe::{ObservationGap, ObservedCall, RowSource};
use crate::rebuild::{ChainId, LinkNote, RecordFate};
use crate::store::{IssueKind, ReadIssue};
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

/// What a gap is about.
#[derive(Clone, Debug, PartialEq)]
pub enum GapFact {
    /// A refused, corrupt or otherwise unreadable line or file.
    ReadIssue(ReadIssue),
    /// An intent without a record while the rollout is live.
    InFlight,
    /// An intent without a record in a frozen rollout.
    Dangling,
    /// The state flags the capture incomplete.
    IncompleteFlag,
    /// A line of the incomplete sentinel.
    SentinelLine,
    /// A recorded parent link not used as recorded.
    ParentLink {
        /// Why.
        note: LinkNote,
        /// The parent the record named.
        claimed: Option<String>,
    },
    /// The same call id with different tokens.
    ConflictingDuplicate,
    /// A delta record whose full prompt cannot be rebuilt.
    DeltaBroken,
    /// A retry sibling whose kept generation is unknown.
    UnresolvedRetry,
    /// A call that generated nothing.
    EmptyGeneration,
    /// A chain that is not delivered.
    DroppedChain {
        /// Which chain.
        chain: ChainId,
        /// Its calls.
        calls: usize,
        /// The build's delivered fraction.
        delivered_fraction: f64,
    },
    /// An `ObservationGap` the harness recorded.
    Observation(ObservationGap),
    /// An observation record that could not be read.
    UnreadableRecord(String),
    /// An earlier row for the rollout, replaced by the one shown.
    ReplacedRow(RowSource),
    /// Rows were given, none names this rollout.
    NoRow,
    /// An observed model call with no token record.
    NoTokenRecord,
    /// An observed reference no model call of the row resolves.
    UnresolvedReference(ObservedCall),
    /// A reference whose key several model calls of the row share.
    AmbiguousReference(ObservedCall),
    /// A model call of the row without a `model_call_id` (its position).
    UnidentifiedCall(usize),
    /// A token record no invocation owns.
    UnownedRecord,
    /// An invocation on a parent cycle.
    InvocationCycle(String),
    /// A tool span on a parent-span cycle.
    ToolSpanCycle(String),
}

/// What a gap says, as the gaps pane shows it (and search and yank see it).
impl std::fmt::Display for GapFact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text: String = match self {
            GapFact::ReadIssue(issue) => issue.to_string(),
            GapFact::InFlight => "in flight: intent without a record yet".into(),
            GapFact::Dangling => "dangling intent: dispatched, never recorded".into(),
            GapFact::IncompleteFlag => {
                "state flagged incomplete: some call failed to capture".into()
            }
            GapFact::SentinelLine => "listed in the incomplete sentinel".into(),
            GapFact::ParentLink { note, claimed } => format!(
                "{note} (claimed parent {})",
                claimed.as_deref().unwrap_or("-")
            ),
            GapFact::ConflictingDuplicate => {
                "duplicate_call_id_conflict: same id, different tokens".into()
            }
            GapFact::DeltaBroken => {
                "delta_chain_unreconstructable: parent chain missing, cyclic or digest mismatch"
                    .into()
            }
            GapFact::UnresolvedRetry => {
                "retry sibling: nobody knows which generation the client kept".into()
            }
            GapFact::EmptyGeneration => "empty generation: no training signal, left out".into(),
            GapFact::DroppedChain {
                chain,
                calls,
                delivered_fraction,
            } => format!(
                "{chain} not delivered ({}); delivered fraction {:.1}%",
                crate::text::count(*calls, "call", "calls"),
                delivered_fraction * 100.0
            ),
            GapFact::Observation(gap) => {
                let mut text = gap.code.clone();
                if let Some(detail) = &gap.detail {
                    text.push_str(&format!(": {detail}"));
                }
                for (label, value) in [
                    ("invocation", &gap.invocation_id),
                    ("span", &gap.span_id),
                    ("agent", &gap.agent_instance),
                ] {
                    if let Some(value) = value {
                        text.push_str(&format!(" [{label} {value}]"));
                    }
                }
                text
            }
            GapFact::UnreadableRecord(problem) => format!("unreadable record: {problem}"),
            GapFact::ReplacedRow(earlier) => {
                format!("an earlier row for this rollout at {earlier} was replaced by this one")
            }
            GapFact::NoRow => "no rollout row names this rollout".into(),
            GapFact::NoTokenRecord => "observed model call with no token record".into(),
            GapFact::UnresolvedReference(call) => format!(
                "observed model call ({call}) that no model call of the row resolves, so no \
                 token record joins it"
            ),
            GapFact::AmbiguousReference(call) => {
                format!(
                    "a reference to {call} matches several model calls of the row: joined to none"
                )
            }
            GapFact::UnidentifiedCall(index) => format!(
                "model call #{} of the row has no model_call_id: no token record can join it",
                index + 1
            ),
            GapFact::UnownedRecord => "token record that no invocation owns".into(),
            GapFact::InvocationCycle(id) => format!("invocation {id} is on a parent cycle"),
            GapFact::ToolSpanCycle(span) => format!("tool span {span} is on a parent-span cycle"),
        };
        f.write_str(&text)
    }
}

impl GapFact {
    /// The kind of gap this fact is.
    pub fn kind(&self) -> GapKind {
        match self {
            GapFact::ReadIssue(_) => GapKind::ReadIssue,
            GapFact::InFlight => GapKind::InFlight,
            GapFact::Dangling => GapKind::Dangling,
            GapFact::IncompleteFlag => GapKind::IncompleteFlag,
            GapFact::SentinelLine => GapKind::SentinelLine,
            GapFact::ParentLink { .. } | GapFact::ConflictingDuplicate | GapFact::DeltaBroken => {
                GapKind::ParentLink
            }
            GapFact::UnresolvedRetry => GapKind::UnresolvedRetry,
            GapFact::EmptyGeneration => GapKind::EmptyGeneration,
            GapFact::DroppedChain { .. } => GapKind::DroppedChain,
            GapFact::Observation(_) | GapFact::UnreadableRecord(_) | GapFact::ReplacedRow(_) => {
                GapKind::Observation
            }
            GapFact::NoRow
            | GapFact::NoTokenRecord
            | GapFact::UnresolvedReference(_)
            | GapFact::AmbiguousReference(_)
            | GapFact::UnidentifiedCall(_)
            | GapFact::UnownedRecord
            | GapFact::InvocationCycle(_)
            | GapFact::ToolSpanCycle(_) => GapKind::Join,
        }
    }
}

/// One gap.
#[derive(Clone, Debug, PartialEq)]
pub struct Gap {
    /// The call it concerns, if any.
    pub call: Option<String>,
    /// What it is about.
    pub fact: GapFact,
}

impl Gap {
    /// A gap about `call`.
    pub fn about(call: impl Into<String>, fact: GapFact) -> Gap {
        Gap {
            call: Some(call.into()),
            fact,
        }
    }

    /// A gap about no call in particular.
    pub(crate) fn general(fact: GapFact) -> Gap {
        Gap { call: None, fact }
    }

    /// Its kind.
    pub fn kind(&self) -> GapKind {
        self.fact.kind()
    }
}

/// Capture gaps of an analyzed rollout, most serious first.
pub fn capture_gaps(analysis: &Analysis) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let capture = &analysis.capture;
    let records = &capture.records;
    for issue in &capture.issues {
        if issue.kind != IssueKind::Unterminated {
            gaps.push(Gap::general(GapFact::ReadIssue(issue.clone())));
        }
    }
    let open = if analysis.lifecycle == Lifecycle::Live {
        GapFact::InFlight
    } else {
        GapFact::Dangling
    };
    for call in capture.open_intents() {
        gaps.push(Gap::about(call, open.clone()));
    }
    if capture.state.incomplete {
        gaps.push(Gap::general(GapFact::IncompleteFlag));
    }
    for line in capture.sentinel.iter().flatten() {
        gaps.push(Gap::about(line.clone(), GapFact::SentinelLine));
    }
    let Some(build) = &analysis.build else {
        return gaps;
    };
    for node in &build.nodes {
        if let Some(note) = node.note {
            let record = &records[node.record];
            let claimed = record.parent_call_id.clone();
            gaps.push(Gap::about(
                record.model_call_id.clone(),
                GapFact::ParentLink { note, claimed },
            ));
        }
    }
    for (index, fate) in build.fates.iter().enumerate() {
        let call = &records[index].model_call_id;
        match fate {
            RecordFate::Conflict(_) => {
                gaps.push(Gap::about(call.clone(), GapFact::ConflictingDuplicate))
            }
            RecordFate::DeltaBroken => gaps.push(Gap::about(call.clone(), GapFact::DeltaBroken)),
            _ => {}
        }
    }
    for call in &build.notes.unresolved_retries {
        gaps.push(Gap::about(call.clone(), GapFact::UnresolvedRetry));
    }
    for call in &build.notes.empty_generation_calls {
        gaps.push(Gap::about(call.clone(), GapFact::EmptyGeneration));
    }
    if build.chains.len() > 1 || build.notes.delivered_fraction < 1.0 {
        for chain in build.chains.iter().filter(|c| c.chain_id != ChainId::Main) {
            let Some(leaf) = chain.links.last() else {
                continue;
            };
            gaps.push(Gap::about(
                records[build.record_of(leaf.node)].model_call_id.clone(),
                GapFact::DroppedChain {
                    chain: chain.chain_id,
                    calls: chain.links.len(),
                    delivered_fraction: build.notes.delivered_fraction,
                },
            ));
        }
    }
    gaps
}
