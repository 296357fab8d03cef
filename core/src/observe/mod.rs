//! Trajectory and observation records (SPEC §7): reading rollout rows leniently, as NeMo Gym's
//! rollout collection and agent integrations write them, joining them to token records by
//! identifiers only, and the gaps of everything that does not join.
//!
//! - [`record`]: what one row observed ([`Observations`]), and the joins by identifier.
//! - [`rows`]: rows files, the rollout each row belongs to, re-runs and skipped lines.
//!
//! The graph of what was observed is [`crate::graph`], above the verdict.

pub mod reader;
pub mod record;
pub mod rows;

pub use record::{
    CallRef, Compaction, Invocation, ModelCall, ModelRef, ObservationGap, Observations,
    ObservedCall, RowContext, RowSource, Sandbox, ToolCall, Verifier,
};
pub use rows::{MalformedRolloutId, RowProblem, Rows, row_key};
