//! Projecting a chain step by step, and what the next projection of the same chain, extended
//! by a live append, reuses of it.
//!
//! A live append extends the main chain by a call: every step before it is made of the same
//! calls, the same shared sequences and the same interstitial ranges, so it projects to the
//! same items, passes the same checks and adds the same usage. A projection keeps, with its
//! response, what each step was made from and the checks' state after it ([`Lendable`]); the
//! next one moves the shared steps' items over and resumes the checks after them. An append
//! then costs its own step: walking the earlier steps again (their sequences' nodes, long out
//! of the caches) cost as much as the rest of its analysis.

use std::sync::Arc;

use super::{CarriedTokens, ProjectedItem, RebuiltResponse};
use crate::rebuild::memo::DigestMemo;
use crate::rebuild::output::{BuildOutput, Chain, ChainLink};
use crate::store::TokenRecord;
use crate::store::seq::TokenSeq;

/// The response checks' running state after some items.
#[derive(Clone, Debug, Default)]
pub(super) struct Checked {
    /// The usage's input tokens: the first token-bearing item's prompt length, once seen.
    pub(super) input_tokens: Option<usize>,
    /// The usage's output tokens: the generations' lengths so far.
    pub(super) output_tokens: usize,
    /// Whether an item so far carried generated tokens.
    pub(super) has_tokens: bool,
    /// The sequence the contiguity check has seen so far.
    pub(super) seen: TokenSeq,
}

/// One projected step: what it was made from, its items, and the checks' state after them.
#[derive(Clone)]
pub(super) struct Step {
    /// The chain link's node and interstitial range.
    node: usize,
    interstitial: (usize, usize),
    /// The node's sequences, held so that no address compared can be reused meanwhile.
    prompt: TokenSeq,
    cumulative: TokenSeq,
    /// Its items in the output (consecutive, one at least).
    pub(super) items: usize,
    /// The chain's sequence after it.
    pub(super) through: TokenSeq,
    /// The checks' state after its items: set when the response's checks all pass (a
    /// response that fails them is not kept, so nothing is lent from it).
    pub(super) checked: Checked,
}

/// What a projection's response lends to the next projection (of the chain extended).
///
/// A step is lent only when all it was made from is unchanged (its node, its prompt and
/// cumulative sequences the very same, its interstitial range, the root's prompt length): a
/// build made whole gives every call a new cumulative sequence, and nothing is lent.
///
/// Kept only for a rollout followed live, by the analysis it keeps for its next append: a
/// copy (the one sent to a UI) and a cold read's hold none, so copying an analysis costs no
/// pass over the steps, and a response prints the same whatever it lends.
#[derive(Default)]
pub(crate) struct Lendable {
    root_prompt_len: usize,
    pub(super) steps: Vec<Step>,
}

impl Clone for Lendable {
    fn clone(&self) -> Lendable {
        Lendable::default()
    }
}

impl std::fmt::Debug for Lendable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lendable")
    }
}

/// The main chain's projection in a rollout's previous analysis, lent to the next one.
pub(crate) struct EarlierProjection {
    output: Vec<ProjectedItem>,
    lendable: Lendable,
}

impl EarlierProjection {
    /// Take the projection out of a previous analysis's `response`.
    pub(crate) fn take(response: &mut Option<RebuiltResponse>) -> Option<EarlierProjection> {
        let response = response.take()?;
        Some(EarlierProjection {
            output: response.output,
            lendable: response.lendable,
        })
    }

    /// The items and steps of the leading steps `chain` shares with the earlier one.
    fn lend(self, build: &BuildOutput, chain: &Chain) -> (Vec<ProjectedItem>, Vec<Step>) {
        let same = |(step, link): &(&Step, &ChainLink)| {
            let node = &build.nodes[link.node];
            step.node == link.node
                && step.interstitial == link.interstitial
                && node.prompt.ptr_eq(&step.prompt)
                && node.cumulative.ptr_eq(&step.cumulative)
        };
        let mut steps = self.lendable.steps;
        let shared = if self.lendable.root_prompt_len == chain.root_prompt_len {
            let walked = |steps: &[Step]| steps.iter().zip(&chain.links).take_while(same).count();
            // A chain is a path from its root, so when the last step both have is the same
            // node, at the same place, with the very same sequences, the steps before it are
            // its ancestors as they were: an append adds a leaf and never gives a call
            // another parent; every parent is placed before its children (the build's order,
            // which the extension keeps: see `rebuild::extend`), so renumbering, which moves
            // the nodes from a place on, moves a node's ancestors only if it moves the node;
            // and a build made again makes new sequences. So an append's projection does not
            // go over the whole chain to find what it shares.
            let both = steps.len().min(chain.links.len());
            match both.checked_sub(1) {
                Some(last) if same(&(&steps[last], &chain.links[last])) => {
                    debug_assert_eq!(walked(&steps), both, "the shared steps, walked");
                    both
                }
                _ => {
                    let shared = walked(&steps);
                    crate::work::count(|work| work.nodes_walked += shared as u64 + 1);
                    shared
                }
            }
        } else {
            0
        };
        steps.truncate(shared);
        let items = steps.iter().map(|step| step.items).sum();
        let mut output = self.output;
        output.truncate(items);
        (output, steps)
    }
}

/// A chain projected: its items, and its steps (those lent first, then those made, up to the
/// first that cannot be lent on).
pub(super) struct Projected {
    pub(super) items: Vec<ProjectedItem>,
    pub(super) lendable: Lendable,
    /// How many of the steps were lent (their checks' state is filled in).
    pub(super) lent: usize,
}

impl Projected {
    /// The items of the steps lent, and the checks' state after them.
    pub(super) fn lent_part(&self) -> (usize, Checked) {
        let steps = &self.lendable.steps[..self.lent];
        let items = steps.iter().map(|step| step.items).sum();
        let checked = steps.last().map(|s| s.checked.clone()).unwrap_or_default();
        (items, checked)
    }
}

/// Project a chain into output items with contiguous prompts, lent what `earlier` shares;
/// `lend_next`: keep the steps for the next projection to borrow.
pub(super) fn project_chain(
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    chain: &Chain,
    earlier: Option<EarlierProjection>,
    lend_next: bool,
) -> Projected {
    let (mut items, mut steps) = match earlier {
        Some(earlier) => earlier.lend(build, chain),
        None => (Vec::new(), Vec::new()),
    };
    let lent = steps.len();
    let mut running = steps
        .last()
        .map_or_else(TokenSeq::new, |step| step.through.clone());
    // Steps are kept while each has items and a carrier (its `through`): the next
    // projection resumes after the last one kept.
    let mut keeping = lend_next;
    crate::work::count(|work| work.steps_projected += (chain.links.len() - lent) as u64);
    for (step, link) in chain.links.iter().enumerate().skip(lent) {
        let node = &build.nodes[link.node];
        let record = &records[node.record];
        let (prompt, through) = extend_chain(&running, chain, step, link, build);
        let tokens = CarriedTokens {
            prompt: prompt.clone(),
            generation: TokenSeq::from_ids(
                record.generation_token_ids.clone(),
                record.negative_ids,
            ),
            log_probs: record.generation_log_probs.clone(),
            routed_experts: (!record.routed_experts.is_null())
                .then(|| record.routed_experts.clone()),
            through: through.clone(),
        };
        let content = &record.output_items;
        let carriers: Vec<usize> = match record.token_item_index {
            Some(index) => vec![index],
            None => {
                let inline: Vec<usize> = content
                    .iter()
                    .enumerate()
                    .filter(|(_, item)| {
                        item.get("generation_token_ids")
                            .is_some_and(|v| !v.is_null())
                    })
                    .map(|(i, _)| i)
                    .collect();
                if inline.is_empty() && !content.is_empty() {
                    vec![content.len() - 1]
                } else {
                    inline
                }
            }
        };
        let before = items.len();
        if content.is_empty() {
            items.push(ProjectedItem {
                items: content.clone(),
                index: None,
                tokens: Some(tokens),
                call_index: link.node,
            });
        } else {
            for index in 0..content.len() {
                items.push(ProjectedItem {
                    items: content.clone(),
                    index: Some(index),
                    tokens: carriers.contains(&index).then(|| tokens.clone()),
                    call_index: link.node,
                });
            }
        }
        let count = items.len() - before;
        keeping &= count > 0 && items[before..].iter().any(|item| item.tokens.is_some());
        if keeping {
            steps.push(Step {
                node: link.node,
                interstitial: link.interstitial,
                prompt: node.prompt.clone(),
                cumulative: node.cumulative.clone(),
                items: count,
                through: through.clone(),
                checked: Checked::default(),
            });
        }
        running = through;
    }
    Projected {
        items,
        lendable: Lendable {
            root_prompt_len: chain.root_prompt_len,
            steps,
        },
        lent,
    }
}

/// One step along a chain: the sequence before link `step`'s generation (the running
/// sequence plus the link's new prompt tokens) and the sequence after it.
///
/// When the chain so far is exactly the start of the call's prompt (the normal case) both
/// results are the call's own shared sequences, so later prefix checks are pointer checks.
pub(super) fn extend_chain(
    running: &TokenSeq,
    chain: &Chain,
    step: usize,
    link: &ChainLink,
    build: &BuildOutput,
) -> (TokenSeq, TokenSeq) {
    let node = &build.nodes[link.node];
    let (start, end) = if step == 0 {
        (0, chain.root_prompt_len)
    } else {
        link.interstitial
    };
    let prompt = append_range(build.memo.as_deref(), running, &node.prompt, start, end);
    let through = if prompt.ptr_eq(&node.prompt) {
        node.cumulative.clone()
    } else {
        prompt.append_range(&node.cumulative, node.prompt.len(), node.cumulative.len())
    };
    (prompt, through)
}

/// `running` followed by `source[start..end]`, sharing `source` when `running` is its prefix.
fn append_range(
    memo: Option<&DigestMemo>,
    running: &TokenSeq,
    source: &TokenSeq,
    start: usize,
    end: usize,
) -> TokenSeq {
    if end == source.len()
        && running.len() == start
        && crate::rebuild::memo::starts_with(memo, source, running)
    {
        return source.clone();
    }
    if start >= end {
        return running.clone();
    }
    running.append_range(source, start, end)
}
