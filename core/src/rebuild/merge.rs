//! `prefix_merging`: chain a rollout's records into trees and chains (SPEC §5, steps 1–9).
//!
//! The result keeps every intermediate decision (which record was a duplicate, which delta
//! could not be rebuilt, why each call got the parent it got) because the panes show them.

use std::collections::BTreeMap;

use crate::hash::{HashMap, HashSet};
use std::sync::Arc;

use super::chains::finish_chains;
use super::digest::digest_prefix;
use super::memo::DigestMemo;
use super::memo::{cumulative_digest, starts_with};
use super::output::{BuildNotes, BuildOptions, BuildOutput, CallNode, LinkNote, RecordFate};
use crate::store::seq::TokenSeq;
use crate::store::{ParentResolution, TokenRecord};

/// Per placed node: whether its recorded digest matches its cumulative sequence (computed on
/// first need), with the memo that saves recomputing it across builds.
pub(super) struct ParentDigests<'a> {
    pub(super) consistent: Vec<Option<bool>>,
    pub(super) memo: Option<&'a DigestMemo>,
    /// The first negative id the reference would have had to digest (its build fails there).
    pub(super) negative: Option<i64>,
}

/// Note a negative id among the first `n` tokens of `seq` that the reference digests.
fn check_encodable(negative: &mut Option<i64>, seq: &TokenSeq, n: usize) {
    if negative.is_none() {
        *negative = seq.first_negative(n);
    }
}

/// Per-record token sequences after delta materialization.
struct Materialized {
    prompt: TokenSeq,
    cumulative: TokenSeq,
    /// The recorded digest is known to match `cumulative` (checked while materializing).
    digest_verified: bool,
}

/// Run `prefix_merging` over records in file order.
pub fn prefix_merging(records: &[Arc<TokenRecord>], options: &BuildOptions) -> BuildOutput {
    crate::work::count(|work| work.full_builds += 1);
    let mut fates: Vec<Option<RecordFate>> = vec![None; records.len()];
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    let mut unresolved_parent_calls = Vec::new();
    let count = |failures: &mut BTreeMap<String, usize>, note: LinkNote| {
        *failures.entry(note.as_str().to_owned()).or_default() += 1;
    };

    // Step 1: dedupe by call id, the first record wins.
    let mut first_by_id: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(records.len(), Default::default());
    let mut kept: Vec<usize> = Vec::with_capacity(records.len());
    for (index, record) in records.iter().enumerate() {
        match first_by_id.get(record.model_call_id.as_str()) {
            None => {
                first_by_id.insert(&record.model_call_id, index);
                kept.push(index);
            }
            Some(&first) => {
                let earlier = &records[first];
                let same = earlier.prompt_token_ids == record.prompt_token_ids
                    && earlier.generation_token_ids == record.generation_token_ids;
                if same {
                    fates[index] = Some(RecordFate::Duplicate(first));
                } else {
                    fates[index] = Some(RecordFate::Conflict(first));
                    count(&mut failures, LinkNote::DuplicateCallIdConflict);
                    unresolved_parent_calls.push(record.model_call_id.clone());
                }
            }
        }
    }

    // Step 2: materialize delta prompts.
    let memo = options.digest_memo.as_deref();
    let mut negative = None;
    let materialized = materialize(records, &kept, &first_by_id, memo, &mut negative);
    let mut survivors: Vec<usize> = Vec::with_capacity(kept.len());
    let mut delta_broken = Vec::new();
    for &index in &kept {
        match &materialized[index] {
            Some(_) => survivors.push(index),
            None => {
                fates[index] = Some(RecordFate::DeltaBroken);
                delta_broken.push(records[index].model_call_id.clone());
            }
        }
    }
    for id in delta_broken {
        count(&mut failures, LinkNote::DeltaChainUnreconstructable);
        unresolved_parent_calls.push(id);
    }

    // Step 3: drop empty generations.
    let mut empty_generation_calls = Vec::new();
    survivors.retain(|&index| {
        let empty = records[index].generation_token_ids.is_empty();
        if empty {
            fates[index] = Some(RecordFate::EmptyGeneration);
            empty_generation_calls.push(records[index].model_call_id.clone());
        }
        !empty
    });

    let mut out = BuildOutput {
        notes: BuildNotes {
            empty_generation_calls,
            terminal_call_id: options.terminal_call_id.clone(),
            ..BuildNotes::default()
        },
        memo: options.digest_memo.clone(),
        lineage: super::output::BuildLineage::new(None),
        ..BuildOutput::default()
    };

    // Step 4: order by (prompt length, call id).
    let prompt_len = |index: usize| {
        materialized[index]
            .as_ref()
            .expect("survivors are materialized")
            .prompt
            .len()
    };
    survivors.sort_by(|&a, &b| {
        prompt_len(a)
            .cmp(&prompt_len(b))
            .then_with(|| records[a].model_call_id.cmp(&records[b].model_call_id))
    });

    // Step 5: resolve parents against the calls already placed.
    let surviving_ids: HashMap<&str, ()> = survivors
        .iter()
        .map(|&i| (records[i].model_call_id.as_str(), ()))
        .collect();
    let needs_index = survivors.iter().any(|&i| {
        records[i]
            .parent_call_id
            .as_deref()
            .is_some_and(|p| !surviving_ids.contains_key(p))
    });
    if let Some(memo) = memo {
        memo.prefetch(&parents_to_digest(
            records,
            &survivors,
            &first_by_id,
            &surviving_ids,
            &materialized,
        ));
    }
    let mut prefix_index = needs_index.then(PrefixIndex::default);
    let mut node_by_id: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(survivors.len(), Default::default());
    let mut digests = ParentDigests {
        consistent: Vec::with_capacity(survivors.len()),
        memo,
        negative,
    };
    for &index in &survivors {
        let record = &records[index];
        let seqs = materialized[index]
            .as_ref()
            .expect("survivors are materialized");
        let node_index = out.nodes.len();
        let (parent, note) = resolve_parent(
            record,
            &seqs.prompt,
            records,
            &out.nodes,
            &node_by_id,
            prefix_index.as_ref(),
            &mut digests,
        );
        if let Some(note) = note {
            count(&mut failures, note);
            if note.is_boundary() {
                unresolved_parent_calls.push(record.model_call_id.clone());
            }
        }
        match parent {
            Some(parent) => out.nodes[parent].children.push(node_index),
            None => out.notes.roots += 1,
        }
        out.nodes.push(CallNode {
            record: index,
            prompt: seqs.prompt.clone(),
            cumulative: seqs.cumulative.clone(),
            parent,
            children: Vec::new(),
            quarantined: false,
            note,
        });
        // A delta record's digest was verified while materializing it: no need to hash again.
        digests
            .consistent
            .push(seqs.digest_verified.then_some(true));
        if let Some(prefix_index) = prefix_index.as_mut() {
            prefix_index.add(node_index, &seqs.cumulative);
        }
        node_by_id.insert(&record.model_call_id, node_index);
        fates[index] = Some(RecordFate::Placed(node_index));
    }

    // Step 6: retry siblings.
    resolve_retries(records, &mut out);

    out.notes.generated_tokens_captured = survivors
        .iter()
        .map(|&i| records[i].generation_token_ids.len())
        .sum();
    // Steps 7–9.
    finish_chains(records, options.terminal_call_id.as_deref(), &mut out);
    out.notes.parent_link_failures = failures;
    out.notes.unresolved_parent_calls = unresolved_parent_calls;
    out.fates = fates
        .into_iter()
        .map(|f| f.expect("every record has a fate"))
        .collect();
    // The reference's build stops at the first digest it cannot encode.
    out.error = digests
        .negative
        .map(|id| format!("ValueError: token ids must be non-negative, got {id}"));
    out
}

/// Step 2: rebuild the full prompt of every kept record; `None` marks a broken delta.
///
/// Walks are iterative and memoized: a delta chain can be thousands of calls long.
fn materialize(
    records: &[Arc<TokenRecord>],
    kept: &[usize],
    first_by_id: &HashMap<&str, usize>,
    memo: Option<&DigestMemo>,
    negative: &mut Option<i64>,
) -> Vec<Option<Materialized>> {
    // Cumulative sequence of each kept record: None = not computed yet, Some(None) = broken.
    let mut cumulative: Vec<Option<Option<TokenSeq>>> = vec![None; records.len()];
    let mut prompts: Vec<Option<TokenSeq>> = vec![None; records.len()];
    let mut walking = vec![false; records.len()];
    for &start in kept {
        if cumulative[start].is_some() {
            continue;
        }
        // Walk up until a full-prompt record, a computed one, a missing parent or a cycle.
        let mut stack = vec![start];
        walking[start] = true;
        let mut base: Option<TokenSeq>;
        loop {
            let Some(&top) = stack.last() else {
                unreachable!("the walk stack holds its start until it is done")
            };
            let record = &records[top];
            if !record.prompt_is_delta {
                stack.pop();
                walking[top] = false;
                let signed = record.negative_ids;
                let prompt = record.prompt_token_ids.clone();
                let cum = prompt.append_ids(record.generation_token_ids.clone(), signed);
                prompts[top] = Some(prompt);
                cumulative[top] = Some(Some(cum.clone()));
                base = Some(cum);
                break;
            }
            let parent = record
                .parent_call_id
                .as_deref()
                .and_then(|id| first_by_id.get(id).copied());
            match parent {
                Some(p) if cumulative[p].is_some() => {
                    base = cumulative[p].clone().flatten();
                    break;
                }
                Some(p) if !walking[p] => {
                    walking[p] = true;
                    stack.push(p);
                }
                _ => {
                    base = None;
                    break;
                }
            }
        }
        // Unwind: each delta's cumulative extends its parent's.
        while let Some(top) = stack.pop() {
            walking[top] = false;
            let record = &records[top];
            match base {
                Some(parent_cum) => {
                    let signed = record.negative_ids;
                    let prompt = parent_cum.concat(&record.prompt_token_ids);
                    let cum = prompt.append_ids(record.generation_token_ids.clone(), signed);
                    prompts[top] = Some(prompt);
                    cumulative[top] = Some(Some(cum.clone()));
                    base = Some(cum);
                }
                None => cumulative[top] = Some(None),
            }
        }
    }
    // The delta digests checked below, two at a time.
    if let Some(memo) = memo {
        let wanted: Vec<(&TokenRecord, &TokenSeq)> = kept
            .iter()
            .filter_map(|&index| {
                let record = &records[index];
                let Some(Some(cum)) = &cumulative[index] else {
                    return None;
                };
                let recorded = record.digest.as_deref().is_some_and(|d| !d.is_empty());
                (record.prompt_is_delta && recorded).then_some((&**record, cum))
            })
            .collect();
        memo.prefetch(&wanted);
    }
    let mut out: Vec<Option<Materialized>> = (0..records.len()).map(|_| None).collect();
    for &index in kept {
        let record = &records[index];
        let Some(Some(cum)) = &cumulative[index] else {
            continue;
        };
        let mut digest_verified = false;
        if record.prompt_is_delta
            && let Some(expected) = record.digest.as_deref().filter(|d| !d.is_empty())
        {
            check_encodable(negative, cum, cum.len());
            if cumulative_digest(memo, record, cum) != expected {
                continue;
            }
            digest_verified = true;
        }
        out[index] = Some(Materialized {
            prompt: prompts[index]
                .clone()
                .expect("a materialized record has its prompt"),
            cumulative: cum.clone(),
            digest_verified,
        });
    }
    out
}

/// The records whose cumulative digests step 5 is likely to ask for: each surviving parent
/// that a surviving call names and that records a digest (not already checked as a delta).
/// (Computing one more than asked changes nothing but the work.)
fn parents_to_digest<'a>(
    records: &'a [Arc<TokenRecord>],
    survivors: &[usize],
    first_by_id: &HashMap<&str, usize>,
    surviving_ids: &HashMap<&str, ()>,
    materialized: &'a [Option<Materialized>],
) -> Vec<(&'a TokenRecord, &'a TokenSeq)> {
    let mut seen = HashSet::default();
    survivors
        .iter()
        .filter_map(|&child| {
            let record = &records[child];
            if matches!(
                record.parent_resolution,
                Some(ParentResolution::Root | ParentResolution::Unresolved)
            ) {
                return None;
            }
            let claimed = record.parent_call_id.as_deref()?;
            surviving_ids.get(claimed)?;
            let parent = *first_by_id.get(claimed)?;
            let seqs = materialized[parent].as_ref()?;
            let parent_record = &records[parent];
            let recorded = parent_record
                .digest
                .as_deref()
                .is_some_and(|d| !d.is_empty());
            (recorded && !seqs.digest_verified && seen.insert(parent))
                .then_some((&**parent_record, &seqs.cumulative))
        })
        .collect()
}

/// Step 5 for one call: its parent node and the note explaining any deviation.
pub(super) fn resolve_parent(
    record: &TokenRecord,
    prompt: &TokenSeq,
    records: &[Arc<TokenRecord>],
    nodes: &[CallNode],
    node_by_id: &HashMap<&str, usize>,
    prefix_index: Option<&PrefixIndex>,
    digests: &mut ParentDigests<'_>,
) -> (Option<usize>, Option<LinkNote>) {
    crate::work::count(|work| work.calls_linked += 1);
    match record.parent_resolution {
        Some(ParentResolution::Root) => return (None, None),
        Some(ParentResolution::Unresolved) => return (None, Some(LinkNote::ParentUnresolved)),
        _ => {}
    }
    let claimed = record.parent_call_id.as_deref();
    if record.parent_resolution != Some(ParentResolution::Resolved) && claimed.is_none() {
        return (None, Some(LinkNote::MissingResolution));
    }
    let Some(claimed) = claimed else {
        return (None, Some(LinkNote::ResolvedParentMissingId));
    };
    let Some(&parent) = node_by_id.get(claimed) else {
        // An absent parent is no evidence of conflict: look for a unique surviving ancestor.
        return match prefix_index.and_then(|index| index.infer_parent(prompt, nodes)) {
            Some(found) => (Some(found), Some(LinkNote::ParentCallIdMissingRecovered)),
            None => (None, Some(LinkNote::ParentCallIdMissing)),
        };
    };
    let parent_node = &nodes[parent];
    let parent_record = &records[parent_node.record];
    let parent_cum = &parent_node.cumulative;
    let claimed_len = parent_record.cum_len.unwrap_or(parent_cum.len() as i64);
    if claimed_len > prompt.len() as i64 {
        return (None, Some(LinkNote::ParentDigestMismatch));
    }
    // Python slice semantics for a negative length.
    let n = if claimed_len < 0 {
        (prompt.len() as i64 + claimed_len).max(0) as usize
    } else {
        claimed_len as usize
    };
    let recorded = parent_record.digest.as_deref().filter(|d| !d.is_empty());
    // What the reference digests here: the prompt's prefix, and the parent's cumulative
    // sequence when it records no digest. A negative id in either fails its build.
    check_encodable(&mut digests.negative, prompt, n);
    if recorded.is_none() {
        check_encodable(&mut digests.negative, parent_cum, parent_cum.len());
    }
    // The expected digest is the parent's own cumulative digest when it is consistent, so the
    // check is a token comparison; only an inconsistent parent needs the prefix hashed.
    let memo = digests.memo;
    let consistent = *digests.consistent[parent].get_or_insert_with(|| {
        recorded.is_none_or(|d| cumulative_digest(memo, parent_record, parent_cum) == d)
    });
    let holds = if consistent {
        n == parent_cum.len() && starts_with(memo, prompt, parent_cum)
    } else {
        Some(digest_prefix(prompt, n).as_str()) == recorded
    };
    if holds {
        (Some(parent), None)
    } else {
        (None, Some(LinkNote::ParentDigestMismatch))
    }
}

/// Longest-prefix lookup over placed calls' cumulative sequences.
///
/// Keys are (length, polynomial hash of the prefix), so a lookup is one pass over the prompt;
/// hits are confirmed token by token, so hash collisions cannot link unrelated calls.
#[derive(Default)]
pub(super) struct PrefixIndex {
    by_key: HashMap<(usize, u64), Vec<usize>>,
    lengths: HashSet<usize>,
}

const HASH_BASE: u64 = 0x9E37_79B9_7F4A_7C15;

fn roll(hash: u64, token: u64) -> u64 {
    hash.wrapping_mul(HASH_BASE)
        .wrapping_add(token.wrapping_add(1))
}

impl PrefixIndex {
    fn add(&mut self, node: usize, cumulative: &TokenSeq) {
        let hash = cumulative.iter().fold(0u64, roll);
        self.by_key
            .entry((cumulative.len(), hash))
            .or_default()
            .push(node);
        self.lengths.insert(cumulative.len());
    }

    /// The unique node whose cumulative sequence is the longest prefix of `prompt`.
    fn infer_parent(&self, prompt: &TokenSeq, nodes: &[CallNode]) -> Option<usize> {
        let mut hits: Vec<(usize, u64)> = Vec::new();
        let mut hash = 0u64;
        for (position, token) in prompt.iter().enumerate() {
            hash = roll(hash, token);
            if self.lengths.contains(&(position + 1))
                && self.by_key.contains_key(&(position + 1, hash))
            {
                hits.push((position + 1, hash));
            }
        }
        for key in hits.iter().rev() {
            let matching: Vec<usize> = self.by_key[key]
                .iter()
                .copied()
                .filter(|&n| prompt.starts_with(&nodes[n].cumulative))
                .collect();
            match matching.len() {
                0 => continue,
                1 => return Some(matching[0]),
                _ => return None, // identical candidates: ambiguous
            }
        }
        None
    }
}

/// Step 6: among siblings with identical prompts keep the extended one(s).
fn resolve_retries(records: &[Arc<TokenRecord>], out: &mut BuildOutput) {
    // Parent groups in order of their first placed member (all roots form one group).
    let mut group_of_parent: HashMap<Option<usize>, usize> = HashMap::default();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (index, node) in out.nodes.iter().enumerate() {
        let group = *group_of_parent.entry(node.parent).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[group].push(index);
    }
    out.retry_group_of = vec![None; out.nodes.len()];
    for group in groups {
        for retry_group in identical_prompt_groups(&out.nodes, &group) {
            if retry_group.len() < 2 {
                continue;
            }
            for &n in &retry_group {
                out.retry_group_of[n] = Some(out.retry_groups.len());
            }
            out.retry_groups.push(retry_group.clone());
            let extended: Vec<usize> = retry_group
                .iter()
                .copied()
                .filter(|&n| {
                    out.nodes[n]
                        .children
                        .iter()
                        .any(|&c| !out.nodes[c].quarantined)
                })
                .collect();
            let keep: Vec<usize> = if extended.is_empty() {
                out.notes.unresolved_retries.extend(
                    retry_group
                        .iter()
                        .map(|&n| records[out.nodes[n].record].model_call_id.clone()),
                );
                // Groups have two members or more (checked above).
                retry_group
                    .iter()
                    .copied()
                    .min_by(|&a, &b| {
                        records[out.nodes[a].record]
                            .model_call_id
                            .cmp(&records[out.nodes[b].record].model_call_id)
                    })
                    .into_iter()
                    .collect()
            } else {
                extended
            };
            for &n in &retry_group {
                if !keep.contains(&n) && !out.nodes[n].quarantined {
                    out.nodes[n].quarantined = true;
                    out.quarantined
                        .push(records[out.nodes[n].record].model_call_id.clone());
                }
            }
        }
    }
}

/// Split a sibling group into runs of identical prompts, each in order of first member.
fn identical_prompt_groups(nodes: &[CallNode], group: &[usize]) -> Vec<Vec<usize>> {
    // Only prompts of equal length can be equal; hash only when lengths collide.
    let mut by_len: HashMap<usize, Vec<usize>> = HashMap::default();
    for &n in group {
        by_len.entry(nodes[n].prompt.len()).or_default().push(n);
    }
    let mut result: Vec<Vec<usize>> = Vec::new();
    let mut slot_of: HashMap<usize, usize> = HashMap::default();
    let mut by_hash: HashMap<(usize, u64), Vec<usize>> = HashMap::default(); // -> result slots
    for &n in group {
        let len = nodes[n].prompt.len();
        if by_len[&len].len() == 1 {
            slot_of.insert(n, result.len());
            result.push(vec![n]);
            continue;
        }
        let hash = nodes[n].prompt.iter().fold(0u64, roll);
        let slots = by_hash.entry((len, hash)).or_default();
        let existing = slots
            .iter()
            .copied()
            .find(|&slot| nodes[result[slot][0]].prompt == nodes[n].prompt);
        match existing {
            Some(slot) => result[slot].push(n),
            None => {
                slots.push(result.len());
                result.push(vec![n]);
            }
        }
    }
    result
}
