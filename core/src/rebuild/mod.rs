//! Rebuilding a rollout exactly as the reference builder does (SPEC §4–§5).

pub mod digest;
pub mod divergence;
mod extend;
pub mod memo;
pub mod merge;
pub mod output;
pub mod project;
mod twin;

pub(crate) use extend::extend_build;
pub use merge::prefix_merging;
pub use output::{
    BuildNotes, BuildOptions, BuildOutput, CallNode, Chain, ChainId, ChainLink, LinkNote,
    RecordFate,
};
pub(crate) use project::project_main_chain;
pub use project::{Origin, Provenance, RebuiltResponse, Segment, provenance};
