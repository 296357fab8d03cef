//! Rebuilding a rollout exactly as the reference builder does (SPEC §4–§5).

pub mod digest;
pub mod divergence;
pub mod merge;
pub mod project;
pub mod seq;

pub use merge::{
    BuildNotes, BuildOptions, BuildOutput, CallNode, Chain, ChainId, ChainLink, LinkNote,
    RecordFate, prefix_merging,
};
pub use project::{Origin, Provenance, RebuiltResponse, Segment, project_main_chain, provenance};
pub use seq::TokenSeq;
