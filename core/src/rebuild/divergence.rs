//! Where a call's prompt stops agreeing with the parent it claims (or, without one, with the
//! call whose cumulative sequence shares the longest prefix with it).

use std::sync::Arc;

use super::output::BuildOutput;
use crate::store::TokenRecord;
use crate::store::seq::{TokenSeq, TokenValue};

/// Tokens shown on each side of the first difference.
pub(crate) const CONTEXT: usize = 8;

/// What a prompt was compared with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    /// The claimed parent, placed as this node.
    ClaimedNode(usize),
    /// The claimed parent's record, which was set aside (empty generation, broken delta…).
    ClaimedRecord(usize),
    /// No claimed parent available: the placed call sharing the longest prefix.
    Candidate(usize),
}

/// The first disagreement between a prompt and a reference sequence.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    /// The call examined (node index).
    pub node: usize,
    /// What its prompt was compared with.
    pub reference: Reference,
    /// Call id of the reference.
    pub reference_call: String,
    /// Length of the prompt.
    pub prompt_len: usize,
    /// Length of the reference sequence.
    pub reference_len: usize,
    /// First position where they differ (`min(len)` when one is a prefix of the other).
    pub position: usize,
    /// Position of the first token in the windows below.
    pub window_start: usize,
    /// The prompt's tokens around `position`.
    pub prompt_window: Vec<TokenValue>,
    /// The reference's tokens around `position`.
    pub reference_window: Vec<TokenValue>,
}

impl Divergence {
    /// The prompt fully contains the reference: the tokens agree and the failure lies in the
    /// recorded lineage (`cum_len` / `digest`) instead.
    pub fn tokens_agree(&self) -> bool {
        self.position == self.reference_len && self.reference_len <= self.prompt_len
    }
}

fn window(seq: &TokenSeq, start: usize, end: usize) -> Vec<TokenValue> {
    seq.values()
        .skip(start)
        .take(end.saturating_sub(start))
        .collect()
}

/// Compare node `node`'s prompt with its claimed parent, or the best candidate.
///
/// Only for calls whose parent link failed (a link note other than a recovery); a call whose
/// link holds, or an explicit root, has nothing to explain: `None`.
pub fn divergence(
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    node: usize,
) -> Option<Divergence> {
    let call = &build.nodes[node];
    if !call.unresolved_boundary() {
        return None;
    }
    let record = &records[call.record];
    let prompt = &call.prompt;
    let claimed = record.parent_call_id.as_deref().filter(|id| !id.is_empty());
    let (reference, sequence) = match claimed.and_then(|id| build.node_of(records, id)) {
        Some(parent) => (
            Reference::ClaimedNode(parent),
            build.nodes[parent].cumulative.clone(),
        ),
        None => match claimed.and_then(|id| records.iter().position(|r| r.model_call_id == id)) {
            Some(index) if !records[index].prompt_is_delta => {
                let r = &records[index];
                (
                    Reference::ClaimedRecord(index),
                    (r.prompt_token_ids.clone())
                        .append_ids(r.generation_token_ids.clone(), r.negative_ids),
                )
            }
            _ => {
                // Descendants extend this prompt by construction: they are no candidates.
                let mut excluded = vec![false; build.nodes.len()];
                let mut stack = vec![node];
                while let Some(n) = stack.pop() {
                    excluded[n] = true;
                    stack.extend_from_slice(&build.nodes[n].children);
                }
                let best = build
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !excluded[*i])
                    .map(|(i, n)| (i, prompt.common_prefix_len(&n.cumulative, usize::MAX)))
                    .max_by_key(|&(i, shared)| (shared, std::cmp::Reverse(i)))?;
                (
                    Reference::Candidate(best.0),
                    build.nodes[best.0].cumulative.clone(),
                )
            }
        },
    };
    let reference_call = match reference {
        Reference::ClaimedNode(n) | Reference::Candidate(n) => {
            records[build.record_of(n)].model_call_id.clone()
        }
        Reference::ClaimedRecord(i) => records[i].model_call_id.clone(),
    };
    let position = prompt.common_prefix_len(&sequence, usize::MAX);
    let window_start = position.saturating_sub(CONTEXT);
    let window_end = position + CONTEXT + 1;
    Some(Divergence {
        node,
        reference,
        reference_call,
        prompt_len: prompt.len(),
        reference_len: sequence.len(),
        position,
        window_start,
        prompt_window: window(prompt, window_start, window_end),
        reference_window: window(&sequence, window_start, window_end),
    })
}
