//! What a build produces: placed calls, the fate of every record, chains, notes, and the
//! facts every pane asks of a build, answered once.

use std::collections::BTreeMap;

use crate::hash::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use super::memo::DigestMemo;
use crate::store::TokenRecord;
use crate::store::seq::TokenSeq;

/// Why a recorded parent link was not used as recorded (or why a record was set aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkNote {
    /// The record says `unresolved`.
    ParentUnresolved,
    /// `resolved` without a parent id.
    ResolvedParentMissingId,
    /// The parent is absent; a unique longest-prefix candidate took its place.
    ParentCallIdMissingRecovered,
    /// The parent is absent and no unique candidate exists.
    ParentCallIdMissing,
    /// The parent is present but the prompt does not extend its cumulative sequence.
    ParentDigestMismatch,
    /// The record carries no parent decision at all.
    MissingResolution,
    /// A later record for the same call id carries different tokens.
    DuplicateCallIdConflict,
    /// A delta prompt whose parent chain cannot be rebuilt exactly.
    DeltaChainUnreconstructable,
}

impl LinkNote {
    /// The reference's name for this note.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkNote::ParentUnresolved => "parent_unresolved",
            LinkNote::ResolvedParentMissingId => "resolved_parent_missing_id",
            LinkNote::ParentCallIdMissingRecovered => "parent_call_id_missing_recovered",
            LinkNote::ParentCallIdMissing => "parent_call_id_missing",
            LinkNote::ParentDigestMismatch => "parent_digest_mismatch",
            LinkNote::MissingResolution => "missing_resolution",
            LinkNote::DuplicateCallIdConflict => "duplicate_call_id_conflict",
            LinkNote::DeltaChainUnreconstructable => "delta_chain_unreconstructable",
        }
    }

    /// Whether the note leaves an unresolved boundary (everything but a recovery).
    pub fn is_boundary(self) -> bool {
        self != LinkNote::ParentCallIdMissingRecovered
    }
}

impl fmt::Display for LinkNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the build did with one input record (indexed like the input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordFate {
    /// Placed as node `usize` of [`BuildOutput::nodes`].
    Placed(usize),
    /// A byte-for-byte repeat (same tokens) of input record `usize`; ignored.
    Duplicate(usize),
    /// Same call id as input record `usize` with different tokens.
    Conflict(usize),
    /// A delta record whose full prompt cannot be rebuilt.
    DeltaBroken,
    /// No generated tokens: no training signal, left out of the chains.
    EmptyGeneration,
}

/// A placed call.
#[derive(Clone, Debug)]
pub struct CallNode {
    /// Index of the record in the build input.
    pub record: usize,
    /// Full prompt (materialized for delta records, shared with the parent's tokens).
    pub prompt: TokenSeq,
    /// Prompt followed by the generation.
    pub cumulative: TokenSeq,
    /// Parent node, if linked.
    pub parent: Option<usize>,
    /// Child nodes, in placement order.
    pub children: Vec<usize>,
    /// Set aside as a retry sibling the harness did not keep.
    pub quarantined: bool,
    /// Why the recorded link was not used as recorded.
    pub note: Option<LinkNote>,
}

impl CallNode {
    /// Whether this call starts a fragment after an unproven boundary.
    pub(crate) fn unresolved_boundary(&self) -> bool {
        self.note.is_some_and(LinkNote::is_boundary)
    }
}

/// One link of a chain.
#[derive(Clone, Debug)]
pub struct ChainLink {
    /// The node.
    pub node: usize,
    /// Prompt positions `[start, end)` that are environment tokens added since the previous
    /// link's cumulative sequence (empty for the first link).
    pub interstitial: (usize, usize),
}

impl ChainLink {
    /// Number of interstitial tokens.
    pub fn interstitial_len(&self) -> usize {
        self.interstitial.1 - self.interstitial.0
    }
}

/// Which chain: the delivered one, or a branch (numbered in chain order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChainId {
    /// The delivered chain.
    Main,
    /// `branch-N`: a chain that is not delivered.
    Branch(usize),
}

impl std::fmt::Display for ChainId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainId::Main => f.write_str("main"),
            ChainId::Branch(n) => write!(f, "branch-{n}"),
        }
    }
}

impl serde::Serialize for ChainId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A root-to-leaf path of non-quarantined calls.
#[derive(Clone, Debug)]
pub struct Chain {
    /// `main` or `branch-N`.
    pub chain_id: ChainId,
    /// Links from root to leaf.
    pub links: Vec<ChainLink>,
    /// Prompt length of the root call.
    pub root_prompt_len: usize,
}

/// Counts and lists describing what the build kept, dropped or could not resolve.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BuildNotes {
    /// Root calls (quarantined ones included).
    pub roots: usize,
    /// Chains built.
    pub chains: usize,
    /// Generated tokens of every non-empty surviving call.
    pub generated_tokens_captured: usize,
    /// Generated tokens of the main chain.
    pub generated_tokens_delivered: usize,
    /// delivered / captured, rounded to 4 decimals.
    pub delivered_fraction: f64,
    /// Retry siblings whose kept generation is unknown.
    pub unresolved_retries: Vec<String>,
    /// Calls that generated nothing.
    pub empty_generation_calls: Vec<String>,
    /// Count of each link note.
    pub parent_link_failures: BTreeMap<String, usize>,
    /// Calls that begin a fragment after an unproven boundary.
    pub unresolved_parent_calls: Vec<String>,
    /// The terminal call the selection was anchored to, if any.
    pub terminal_call_id: Option<String>,
    /// Which chain delivered the terminal call (`None` when none did).
    pub terminal_chain: Option<ChainId>,
}

/// The builder's result.
#[derive(Clone, Debug, Default)]
pub struct BuildOutput {
    /// Placed calls, in placement order (prompt length, call id).
    pub nodes: Vec<CallNode>,
    /// What became of each input record.
    pub fates: Vec<RecordFate>,
    /// Chains; the one named `main` is delivered.
    pub chains: Vec<Chain>,
    /// Index of the main chain in `chains`.
    pub main: Option<usize>,
    /// Quarantined call ids, in the order they were quarantined.
    pub quarantined: Vec<String>,
    /// Notes.
    pub notes: BuildNotes,
    /// Per node: the chain it is shown on — main when it is on main, else the first chain
    /// through it; `None` for a node on no chain (under a quarantined call).
    pub node_chain: Vec<Option<usize>>,
    /// Per node: the chain that ends at it (leaves only).
    pub chain_ending_at: Vec<Option<usize>>,
    /// Groups of sibling calls with identical prompts (retries), two or more each.
    pub retry_groups: Vec<Vec<usize>>,
    /// Per node: its retry group, if any.
    pub retry_group_of: Vec<Option<usize>>,
    /// Why the reference's build fails where this one went on (a negative id it had to
    /// digest), worded as the reference's exception.
    pub error: Option<String>,
    /// The memo the build used, for the projection's prefix checks (the same comparisons).
    pub(crate) memo: Option<Arc<DigestMemo>>,
    /// The records' call ids, as extending the build by appended records asks for them.
    pub(crate) call_ids: CallIds,
    /// Which build this is, and the build it extends by calls placed after all of that
    /// one's (which then keep their places, parents and notes).
    pub(crate) lineage: BuildLineage,
}

/// A build's identity, and what it extends (see [`BuildOutput::lineage`]): what a rollout's
/// summary takes in of its calls at an append, without going over the earlier ones again.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BuildLineage {
    /// This build (0: not numbered).
    pub(crate) build: u64,
    /// The build this one extends, and its number of calls (kept here as they were).
    pub(crate) extends: Option<(u64, usize)>,
}

impl BuildLineage {
    /// A new build's, extending `extends` if given.
    pub(crate) fn new(extends: Option<(u64, usize)>) -> BuildLineage {
        static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        BuildLineage {
            build: BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            extends,
        }
    }
}

impl std::fmt::Debug for BuildLineage {
    // Bookkeeping: a build extended and one made whole print the same.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BuildLineage")
    }
}

impl BuildOutput {
    /// The delivered chain.
    pub fn main_chain(&self) -> Option<&Chain> {
        self.main.map(|i| &self.chains[i])
    }

    /// The input record a node was placed from.
    pub fn record_of(&self, node: usize) -> usize {
        self.nodes[node].record
    }

    /// Whether a node is on the delivered chain.
    pub fn on_main(&self, node: usize) -> bool {
        self.main.is_some() && self.node_chain.get(node).copied().flatten() == self.main
    }

    /// The chain a node is shown on (see [`BuildOutput::node_chain`]).
    pub fn chain_of(&self, node: usize) -> Option<usize> {
        self.node_chain.get(node).copied().flatten()
    }

    /// Whether chain `chain` passes through `node`.
    pub fn chain_contains(&self, chain: usize, node: usize) -> bool {
        self.chains[chain].links.iter().any(|l| l.node == node)
    }

    /// The retry group of a node: its members (the node included), when it has siblings
    /// with the identical prompt.
    pub fn retry_group(&self, node: usize) -> Option<&[usize]> {
        let group = self.retry_group_of.get(node).copied().flatten()?;
        Some(&self.retry_groups[group])
    }

    /// Node of a call id, if placed.
    pub(crate) fn node_of(&self, records: &[Arc<TokenRecord>], call_id: &str) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| records[n.record].model_call_id == call_id)
    }
}

/// Options of a build.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Anchor chain selection on the chain that ends at this call.
    pub terminal_call_id: Option<String>,
    /// Digests remembered from earlier builds of the same growing records file.
    pub digest_memo: Option<Arc<DigestMemo>>,
}

/// The call ids of a build's first records, as an appended record asks about them: taken in
/// on the build's first extension, then each record's as the next one is placed (whatever
/// became of it). Without it an append
/// compared the ids of every record before it (each record's strings, long out of the caches,
/// as many misses as records).
#[derive(Default)]
pub(crate) struct CallIds {
    /// How many records the ids are of.
    records: usize,
    /// Each id's first record.
    pub(super) first: HashMap<String, usize>,
    /// The ids records name as their parent's.
    pub(super) named: HashSet<String>,
}

impl CallIds {
    /// The ids of `records`, taken in from where they were taken up to.
    pub(super) fn of(&mut self, records: &[Arc<TokenRecord>]) -> &CallIds {
        if self.records > records.len() {
            *self = CallIds::default();
        }
        for (index, record) in records.iter().enumerate().skip(self.records) {
            self.first
                .entry(record.model_call_id.clone())
                .or_insert(index);
            if let Some(parent) = &record.parent_call_id {
                self.named.insert(parent.clone());
            }
        }
        self.records = records.len();
        self
    }
}

impl Clone for CallIds {
    /// Empty: a cache, taken in again by the copy that is extended, if one is (the copy of an
    /// analysis sent to the screen at each append never is, and copying every id was most of
    /// that copy's cost on a rollout of thousands of calls).
    fn clone(&self) -> CallIds {
        CallIds::default()
    }
}

impl std::fmt::Debug for CallIds {
    // A cache: a build extended and one made whole print the same.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallIds")
    }
}
