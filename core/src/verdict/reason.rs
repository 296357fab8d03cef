//! Why a rollout is masked: one typed reason per rule, with the calls it concerns.

use std::fmt;

use crate::rebuild::LinkNote;
use crate::store::ReadIssue;

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
    /// Whether a later write can still cure this reason while the rollout is live (SPEC §6).
    ///
    /// Curable: calls in flight (intents without records), no records yet, nothing
    /// delivered yet, retries a later call may resolve, a terminal call or declared response
    /// not (yet) on the main chain. Not curable — the rollout is *at risk*: a call the state
    /// flags as failed to capture, a failed parent link, more than one root or chain (a fork
    /// stays a fork), a build that failed, files that cannot be read as the consumer reads
    /// them (corrupt or refused lines, conflicting duplicates, a bad state).
    pub fn curable_while_live(&self) -> bool {
        match self {
            MaskReason::CaptureIncomplete { state_flag, .. } => !state_flag,
            MaskReason::NoRecords
            | MaskReason::NothingDelivered
            | MaskReason::UnresolvedRetries(_)
            | MaskReason::TerminalNotFound(_)
            | MaskReason::TerminalNotDelivered(_)
            | MaskReason::DeclaredResponseUnmatched(_) => true,
            MaskReason::Retired
            | MaskReason::Unreadable(_)
            | MaskReason::BuildFailed(_)
            | MaskReason::UnresolvedParents(_)
            | MaskReason::RootCount(_)
            | MaskReason::ChainCount(_) => false,
        }
    }

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
