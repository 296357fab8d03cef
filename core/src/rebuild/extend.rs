//! Extending a build by the records appended to its input, without building again: what a
//! live rollout's append costs (its own link check, not its rollout's).
//!
//! An appended record whose parent is the leaf of a chain changes nothing the build decided
//! before: it is linked where the build's order puts it (the calls after it renumbered),
//! and no other record's fate, link, retry group or quarantine depends on it — none names
//! it, none sorted after it looked for an absent parent among the calls before it (a prefix
//! recovery), and its parent was in no retry group. Anything else — a new root, a retry
//! sibling, a repeated call id, a broken link or delta, an empty generation, a negative id,
//! an earlier record naming the new one as its parent, a recovery that could now find it —
//! is declined, and the caller builds from all the records ([`super::prefix_merging`]).
//! So is a call that would sort before its own parent (a parent whose recorded digest is of
//! a prefix shorter than its prompt lets a shorter prompt link to it): the full build looks
//! for a call's parent among the calls placed before it, and the extension keeps that order
//! (every parent before its children), which the projection's lending relies on too.
//! The chain the new call continues is extended by it, then the main chain is chosen again;
//! when the new call is the last one and its chain the last chain, with the same main chain,
//! the chains' facts and the delivered counts change by the new call alone, else they are
//! made again from the chains (no token touched either way). The result is the one the full
//! build gives, field for field (the differential test in `tests/it/incremental.rs` holds
//! it to that).

use crate::hash::HashMap;
use std::sync::Arc;

use super::chains::{chain_facts, chain_notes, note_chains, select_main};
use super::memo::{DigestMemo, cumulative_digest};
use super::merge::{ParentDigests, resolve_parent};
use super::output::{
    BuildLineage, BuildOptions, BuildOutput, CallNode, ChainLink, LinkNote, RecordFate,
};
use crate::store::{ParentResolution, TokenRecord};

/// `previous` (the build of a prefix of `records`) extended by the records after that
/// prefix, or `None` when one of them needs the full build.
pub(crate) fn extend_build(
    records: &[Arc<TokenRecord>],
    mut previous: BuildOutput,
    options: &BuildOptions,
) -> Option<BuildOutput> {
    let known = previous.fates.len();
    if previous.error.is_some()
        || previous.notes.terminal_call_id != options.terminal_call_id
        || known > records.len()
    {
        return None;
    }
    let memo = options.digest_memo.as_deref();
    let terminal = options.terminal_call_id.as_deref();
    let extended = (previous.lineage.build, previous.nodes.len());
    let mut all_after = true;
    for index in known..records.len() {
        all_after &= place_appended(records, index, &mut previous, memo, terminal)?;
    }
    previous.memo = options.digest_memo.clone();
    previous.lineage = BuildLineage::new(all_after.then_some(extended));
    crate::work::count(|work| work.extended_builds += 1);
    Some(previous)
}

/// Place record `index` (every record before it is in `out`) as the child of the leaf it
/// names, where the build's order puts it, or `None` when the full build is needed; whether
/// it was placed after every call (none moved).
fn place_appended(
    records: &[Arc<TokenRecord>],
    index: usize,
    out: &mut BuildOutput,
    memo: Option<&DigestMemo>,
    terminal_call_id: Option<&str>,
) -> Option<bool> {
    let record = &records[index];
    if record.negative_ids || record.generation_token_ids.is_empty() {
        return None;
    }
    if matches!(
        record.parent_resolution,
        Some(ParentResolution::Root | ParentResolution::Unresolved)
    ) {
        return None;
    }
    let id = record.model_call_id.as_str();
    let claimed = record.parent_call_id.as_deref()?;
    // The first record of the claimed id, and no earlier one of this id or naming it.
    let ids = out.call_ids.of(&records[..index]);
    if ids.first.contains_key(id) || ids.named.contains(id) {
        return None;
    }
    let RecordFate::Placed(parent) = out.fates[*ids.first.get(claimed)?] else {
        return None;
    };
    let parent_node = &out.nodes[parent];
    // A leaf at the end of a chain, in no retry group (its group's kept member would change).
    let chain = out.chain_ending_at[parent]?;
    if !parent_node.children.is_empty()
        || parent_node.quarantined
        || out.retry_group_of[parent].is_some()
    {
        return None;
    }
    let prompt = if record.prompt_is_delta {
        parent_node.cumulative.concat(&record.prompt_token_ids)
    } else {
        record.prompt_token_ids.clone()
    };
    let cumulative = prompt.append_ids(record.generation_token_ids.clone(), false);
    if record.prompt_is_delta {
        // Its own digest is checked first: copied now, it is hashed from one array.
        if let Some(memo) = memo {
            memo.follow(None, &cumulative);
        }
        // As materializing does: the delta's digest must hold, its ids be encodable.
        if cumulative.first_negative(cumulative.len()).is_some() {
            return None;
        }
        if let Some(expected) = record.digest.as_deref().filter(|d| !d.is_empty())
            && cumulative_digest(memo, record, &cumulative) != expected
        {
            return None;
        }
    }
    // Where the build's order (prompt length, call id) places it. The calls after it were
    // linked before it existed: only one that looked for an absent parent among the calls
    // placed before it (a prefix recovery) could have found this one.
    let key = (prompt.len(), id);
    let at = out
        .nodes
        .partition_point(|n| (n.prompt.len(), records[n.record].model_call_id.as_str()) < key);
    // Before its own parent (linked by a digest of a prefix shorter than the parent's
    // prompt): the full build does not find its parent among the calls placed before it.
    if at <= parent {
        return None;
    }
    if out.nodes[at..].iter().any(|n| {
        matches!(
            n.note,
            Some(LinkNote::ParentCallIdMissing | LinkNote::ParentCallIdMissingRecovered)
        )
    }) {
        return None;
    }
    let node_by_id = HashMap::from_iter([(claimed, parent)]);
    let mut digests = ParentDigests {
        consistent: vec![None; out.nodes.len()],
        memo,
        negative: None,
    };
    let (linked, note) = resolve_parent(
        record,
        &prompt,
        records,
        &out.nodes,
        &node_by_id,
        None,
        &mut digests,
    );
    if linked != Some(parent) || note.is_some() || digests.negative.is_some() {
        return None;
    }
    // The next append's parent, most likely: its digest will be asked for then.
    if let Some(memo) = memo {
        memo.follow(Some(record), &cumulative);
    }
    make_room(out, at);
    out.nodes[parent].children.push(at);
    out.nodes.insert(
        at,
        CallNode {
            record: index,
            prompt,
            cumulative,
            parent: Some(parent),
            children: Vec::new(),
            quarantined: false,
            note: None,
        },
    );
    out.fates.push(RecordFate::Placed(at));
    out.retry_group_of.insert(at, None);
    out.notes.generated_tokens_captured += record.generation_token_ids.len();
    let last = at + 1 == out.nodes.len();
    extend_chain(records, terminal_call_id, out, chain, at, last);
    Some(last)
}

/// The chains once node `at` (`last`: the last node) is linked as the child of the leaf that
/// ended chain `chain` (every node from `at` on moved one place up): that chain goes on to it and takes the
/// place its new leaf gives it (the chains are in the order of their leaves), then the
/// main chain, its facts and notes are made again. What `finish_chains` makes, without
/// walking every leaf up to its root again; and, when the new node is the last one and the
/// chains keep their places and their main one (an agent going on, the common append),
/// without walking the chains either: the facts and the delivered count change by the new
/// node alone.
fn extend_chain(
    records: &[Arc<TokenRecord>],
    terminal_call_id: Option<&str>,
    out: &mut BuildOutput,
    chain: usize,
    at: usize,
    last: bool,
) {
    if !last {
        for link in out
            .chains
            .iter_mut()
            .flat_map(|chain| chain.links.iter_mut())
        {
            if link.node >= at {
                link.node += 1;
            }
        }
    }
    let mut extended = out.chains.remove(chain);
    let leaf = extended.links.last().map(|link| link.node);
    let (before, prompt) = (
        leaf.map_or(0, |leaf| out.nodes[leaf].cumulative.len()),
        out.nodes[at].prompt.len(),
    );
    extended.links.push(ChainLink {
        node: at,
        interstitial: (before.min(prompt), prompt),
    });
    let place = out
        .chains
        .partition_point(|other| other.links.last().is_some_and(|link| link.node < at));
    out.chains.insert(place, extended);
    let main_before = out.main;
    out.main = None;
    out.notes.terminal_chain = None;
    select_main(records, terminal_call_id, out);
    if last && place == chain && out.main == main_before {
        // Only the new leaf is new to the facts: the one chain it is on, which ends there
        // now rather than at its parent.
        if let Some(parent) = leaf {
            out.chain_ending_at[parent] = None;
        }
        out.node_chain.push(Some(place));
        out.chain_ending_at.push(Some(place));
        let mut delivered = out.notes.generated_tokens_delivered;
        if out.main == Some(place) {
            delivered += records[out.nodes[at].record].generation_token_ids.len();
        }
        note_chains(out, delivered);
    } else {
        chain_facts(out);
        chain_notes(records, out);
    }
}

/// Renumber the nodes from `at` on one place up, for a node inserted at `at` (every index
/// into the nodes: parents, children, fates, retry groups).
fn make_room(out: &mut BuildOutput, at: usize) {
    let shift = |node: &mut usize| {
        if *node >= at {
            *node += 1;
        }
    };
    if at == out.nodes.len() {
        return;
    }
    for node in &mut out.nodes {
        if let Some(parent) = node.parent.as_mut() {
            shift(parent);
        }
        node.children.iter_mut().for_each(shift);
    }
    for fate in &mut out.fates {
        if let RecordFate::Placed(node) = fate {
            shift(node);
        }
    }
    for group in &mut out.retry_groups {
        group.iter_mut().for_each(shift);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebuild::output::CallIds;
    use crate::rebuild::prefix_merging;
    use crate::rebuild::test_records::record;

    fn options(terminal: Option<&str>) -> BuildOptions {
        BuildOptions {
            terminal_call_id: terminal.map(str::to_owned),
            digest_memo: Some(Arc::default()),
        }
    }

    #[test]
    fn call_ids_taken_in_as_records_come_answer_as_a_walk_over_them() {
        let records = [
            record("a", None, &[1], &[2]),
            record("b", Some("a"), &[1, 2], &[3]),
            record("a", Some("x"), &[1, 2], &[4]),
            record("c", Some("b"), &[1, 2, 3], &[5]),
        ];
        let mut ids = CallIds::default();
        for end in [1, 3, 4, 2] {
            let known = ids.of(&records[..end]);
            for id in ["a", "b", "c", "x", "y"] {
                let first = records[..end].iter().position(|r| r.model_call_id == id);
                let named = records[..end]
                    .iter()
                    .any(|r| r.parent_call_id.as_deref() == Some(id));
                assert_eq!(known.first.get(id).copied(), first, "{id} of {end}");
                assert_eq!(known.named.contains(id), named, "{id} of {end}");
            }
        }
    }

    #[test]
    fn a_link_over_a_negative_id_is_built_whole() {
        // The child's link makes the reference digest its prompt, which holds the root's
        // negative id: its build fails, so the extension must not succeed.
        let records = [
            record("a", None, &[1, -2, 3], &[4]),
            record("b", Some("a"), &[1, -2, 3, 4, 5], &[6]),
        ];
        let before = prefix_merging(&records[..1], &options(None));
        assert_eq!(before.error, None);
        assert!(extend_build(&records, before, &options(None)).is_none());
        assert!(prefix_merging(&records, &options(None)).error.is_some());
    }

    #[test]
    fn another_terminal_call_is_built_whole_and_the_same_one_extends() {
        let records = [
            record("a", None, &[1, 2], &[3]),
            record("b", Some("a"), &[1, 2, 3, 4], &[5]),
        ];
        let before = prefix_merging(&records[..1], &options(Some("a")));
        assert!(extend_build(&records, before.clone(), &options(Some("b"))).is_none());
        assert!(extend_build(&records, before.clone(), &options(None)).is_none());
        let extended = extend_build(&records, before, &options(Some("a"))).expect("extends");
        let full = prefix_merging(&records, &options(Some("a")));
        assert_eq!(format!("{extended:?}"), format!("{full:?}"));
    }

    /// A parent whose recorded digest is of a prefix shorter than its own prompt: a child
    /// links to it by that digest with a prompt shorter than the parent's, so the build's
    /// order puts the child first. Extending must not place it there (found by review: the
    /// child was placed before its parent, which it then named as itself).
    #[test]
    fn a_call_that_would_sort_before_its_parent_is_built_whole() {
        let mut parent = (*record("p", None, &[1, 2, 3, 4], &[5])).clone();
        parent.cum_len = Some(2);
        parent.digest = Some(crate::rebuild::digest::digest_prefix(
            &parent.prompt_token_ids,
            2,
        ));
        let records = [Arc::new(parent), record("c", Some("p"), &[1, 2, 9], &[7])];
        let before = prefix_merging(&records[..1], &options(None));
        let full = prefix_merging(&records, &options(None));
        // The full build does not link the child (its parent is not placed before it).
        assert_eq!(full.notes.roots, 2, "{full:?}");
        assert!(
            extend_build(&records, before, &options(None)).is_none(),
            "the extension declines"
        );
    }
}
