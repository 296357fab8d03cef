//! Rebuilding a rollout exactly as the reference builder does (SPEC §4–§5).

pub(crate) mod chains;
pub mod digest;
pub mod divergence;
mod extend;
mod lanes;
pub mod memo;
pub mod merge;
pub mod output;
pub mod project;

pub(crate) use extend::extend_build;
pub use merge::prefix_merging;
pub use output::{
    BuildNotes, BuildOptions, BuildOutput, CallNode, Chain, ChainId, ChainLink, LinkNote,
    RecordFate,
};
pub(crate) use project::project_main_chain;
pub use project::{Origin, Provenance, RebuiltResponse, Segment, provenance};

/// Records for the rebuild's unit tests.
#[cfg(test)]
pub(crate) mod test_records {
    use std::sync::Arc;

    use crate::store::TokenRecord;

    /// A full-prompt record without lineage (`cum_len` and `digest` absent).
    pub(crate) fn record(
        id: &str,
        parent: Option<&str>,
        prompt: &[i64],
        generation: &[i64],
    ) -> Arc<TokenRecord> {
        let (resolution, parent) = match parent {
            Some(parent) => ("resolved", format!("\"{parent}\"")),
            None => ("root", "null".to_owned()),
        };
        let line = format!(
            r#"{{"generation_log_probs":{:?},"generation_token_ids":{generation:?},"model_call_id":"{id}","parent_call_id":{parent},"parent_resolution":"{resolution}","prompt_token_ids":{prompt:?},"rollout_id":"r"}}"#,
            vec![-0.5; generation.len()],
        );
        Arc::new(TokenRecord::parse(line.as_bytes()).expect("a valid record"))
    }
}
