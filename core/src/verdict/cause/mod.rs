//! A cause signature for a masked or at-risk rollout: its most fundamental reason refined by
//! the evidence the store and the row hold, so that rollouts that broke the same way share a
//! signature ([`Cause::key`]) and a run's masked rollouts can be counted by cause.
//!
//! The definitions (also in the README):
//! - **link failures** (`unresolved_parent_calls`): the first unresolved call's link note,
//!   the writer's `parent_resolution_reason`, whether the verified prefix was requested and
//!   supplied, where the first difference falls in the reference's provenance ([`Place`]),
//!   the edit there ([`Edit`]), and with a tokenizer what the edit did to the text
//!   ([`TextClass`]);
//! - **several roots**: what each root after the first is — a subagent's call, the call after
//!   a compaction, a verifier's call (from the row), or unexplained ([`RootKind`]);
//! - **incomplete captures**: whether the call without a record was the rollout's last call
//!   or one in mid-chain, and whether the state flags a failed capture;
//! - **unresolved retries**: a retry of the last call or of one in mid-chain;
//! - **unreadable files**: which kind of read problem;
//! - anything else: the reason's code.

mod edit;
mod text;

pub use edit::{Edit, EditShape, edit_at};
pub use text::{Decoded, SNIPPET, TextChange, TextClass, classify, snippet};

use std::sync::Arc;

use serde::Serialize;

use super::{Analysis, MaskReason};
use crate::detok::Detokenizer;
use crate::observe::Observations;
use crate::rebuild::BuildOutput;
use crate::rebuild::divergence::{Divergence, Reference, divergence};
use crate::store::TokenRecord;

/// Tokens decoded on each side of an edit, for context (JSON spacing shows only there, and
/// a re-serialized object is parsed whole from it).
const CONTEXT: usize = 256;

/// Where the first difference falls in the provenance of the sequence the child's prompt was
/// compared with (the claimed parent's prompt and generation, or the best candidate's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// In the root call's prompt (system prompt, task, first user turn).
    RootPrompt,
    /// In the generation of a call before the parent.
    EarlierGeneration,
    /// In tokens between two calls (tool results, user turns, the template's turn markers).
    Environment,
    /// In the parent's generation, before its last token.
    ParentGeneration,
    /// At the parent's last generated token (its stop token, as the template re-renders it).
    ParentGenerationEnd,
    /// In the prompt of a parent whose record was set aside (its ancestry is unknown).
    ParentPrompt,
    /// Nowhere: the child's prompt extends the whole sequence, so the tokens agree and the
    /// recorded lineage (`cum_len` / `digest`) is what is wrong.
    TokensAgree,
    /// Nowhere, and no parent was claimed: the prompt extends a placed call whole, but the
    /// writer linked none (its lineage lookup failed: `ambiguous`, `no_match`, …).
    ExtendsUnclaimed,
}

impl Place {
    /// Its name in signatures.
    pub fn name(self) -> &'static str {
        match self {
            Place::RootPrompt => "root_prompt",
            Place::EarlierGeneration => "earlier_generation",
            Place::Environment => "environment",
            Place::ParentGeneration => "parent_generation",
            Place::ParentGenerationEnd => "parent_generation_end",
            Place::ParentPrompt => "parent_prompt",
            Place::TokensAgree => "tokens_agree",
            Place::ExtendsUnclaimed => "extends_unclaimed",
        }
    }

    /// Words for a title.
    pub fn words(self) -> &'static str {
        match self {
            Place::RootPrompt => "in the root prompt",
            Place::EarlierGeneration => "in an earlier call's generation",
            Place::Environment => "in environment tokens",
            Place::ParentGeneration => "in the parent's generation",
            Place::ParentGenerationEnd => "at the end of the parent's generation",
            Place::ParentPrompt => "in the parent's prompt",
            Place::TokensAgree => "tokens agree, the recorded cum_len/digest is wrong",
            Place::ExtendsUnclaimed => {
                "the prompt extends an earlier call, but the writer linked no parent"
            }
        }
    }
}

/// Whether the verified parent prefix was asked for and proved supplied (the failing record's
/// `prefix_requested` / `prefix_supplied`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefixUse {
    /// Not requested: the harness re-rendered the history itself.
    NotRequested,
    /// Requested, not supplied.
    NotSupplied,
    /// Requested and supplied.
    Supplied,
}

impl PrefixUse {
    fn of(record: &TokenRecord) -> PrefixUse {
        match (record.prefix_requested, record.prefix_supplied) {
            (_, true) => PrefixUse::Supplied,
            (true, false) => PrefixUse::NotSupplied,
            (false, false) => PrefixUse::NotRequested,
        }
    }

    /// Its name in signatures.
    pub fn name(self) -> &'static str {
        match self {
            PrefixUse::NotRequested => "prefix_not_requested",
            PrefixUse::NotSupplied => "prefix_not_supplied",
            PrefixUse::Supplied => "prefix_supplied",
        }
    }
}

/// A broken parent link, refined.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkCause {
    /// The link note (`parent_digest_mismatch`, …).
    pub note: &'static str,
    /// The writer's `parent_resolution_reason` (`no_match`, `ambiguous`, …; empty if none).
    pub writer_reason: String,
    /// Prefix requested / supplied.
    pub prefix: PrefixUse,
    /// Where the first difference falls (`None`: nothing to compare with).
    pub place: Option<Place>,
    /// The call compared with.
    pub reference_call: Option<String>,
    /// The first differing position in the child's prompt.
    pub position: Option<usize>,
    /// The edit there.
    pub edit: Option<Edit>,
    /// What it did to the text (with a tokenizer).
    pub text: Option<TextChange>,
    /// What the row says the failing call is (a compaction's, a subagent's or a verifier's
    /// call), when it says.
    pub observed: Option<RootKind>,
}

/// What a root after the first is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    /// A model call of a subagent's invocation.
    Subagent,
    /// A context compaction's: the call that wrote the summary, or the first call after it.
    Compaction,
    /// A verifier's (judge's) model call.
    Verifier,
    /// A call that claims a parent it could not be linked to.
    UnresolvedLink,
    /// Nothing the row says explains it.
    Unexplained,
    /// No row was given to say what it is.
    NoRow,
}

impl RootKind {
    /// Its name in signatures.
    pub fn name(self) -> &'static str {
        match self {
            RootKind::Subagent => "subagent",
            RootKind::Compaction => "compaction",
            RootKind::Verifier => "verifier",
            RootKind::UnresolvedLink => "unresolved_link",
            RootKind::Unexplained => "unexplained",
            RootKind::NoRow => "no_row",
        }
    }

    /// Words for a title.
    pub fn words(self) -> &'static str {
        match self {
            RootKind::Subagent => "a subagent's call",
            RootKind::Compaction => "a compaction (its summary call or the call after it)",
            RootKind::Verifier => "a verifier's call",
            RootKind::UnresolvedLink => "an unresolved link",
            RootKind::Unexplained => "a call the row does not explain",
            RootKind::NoRow => "a call no row explains (no rows given)",
        }
    }
}

/// Whether a call is the rollout's last one or in mid-chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPlace {
    /// No call came after it.
    Final,
    /// Later calls came after it.
    MidChain,
}

impl CallPlace {
    /// Its name in signatures.
    pub fn name(self) -> &'static str {
        match self {
            CallPlace::Final => "final",
            CallPlace::MidChain => "mid_chain",
        }
    }
}

/// The refinement of a reason.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// A broken parent link.
    Link(LinkCause),
    /// Several roots: what each after the first is, in root order.
    Roots {
        /// One kind per extra root.
        extra: Vec<RootKind>,
    },
    /// A call dispatched and never recorded, or flagged as failed to capture.
    Incomplete {
        /// The state flags a failed capture.
        state_flag: bool,
        /// Where the first call without a record sits (`None`: only the flag).
        call: Option<CallPlace>,
    },
    /// Retry siblings nobody chose between.
    Retry {
        /// A retry of the last call, or of one in mid-chain.
        call: CallPlace,
    },
    /// Files that cannot be read.
    Unreadable {
        /// The kind of read problem.
        problem: String,
    },
    /// Nothing more than the reason.
    Reason,
}

/// A masked (or at-risk) rollout's cause signature.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cause {
    /// The reason's code.
    pub reason: &'static str,
    /// The call it concerns (the first failing call), if any.
    pub call: Option<String>,
    /// The refinement.
    pub evidence: Evidence,
}

impl Cause {
    /// The signature: the fields rollouts that broke the same way share (no call ids,
    /// positions, lengths or text), in order.
    pub fn signature(&self) -> Vec<(&'static str, String)> {
        let mut fields = vec![("reason", self.reason.to_owned())];
        match &self.evidence {
            Evidence::Link(link) => {
                fields.push(("note", link.note.to_owned()));
                let writer = match link.writer_reason.as_str() {
                    "" => "none",
                    reason => reason,
                };
                fields.push(("writer_reason", writer.to_owned()));
                fields.push(("prefix", link.prefix.name().to_owned()));
                fields.extend(link.place.map(|p| ("place", p.name().to_owned())));
                // What the edit did to the text says more than its shape (a stripped block
                // removes tokens, or replaces a few when a merge spans its end): with a
                // tokenizer the text class refines the signature, without one the shape.
                match (&link.text, link.edit) {
                    (Some(text), _) => fields.push(("text", text.class.name().to_owned())),
                    (None, Some(edit)) => fields.push(("edit", edit.shape().name().to_owned())),
                    (None, None) => {}
                }
                fields.extend(link.observed.map(|o| ("observed", o.name().to_owned())));
            }
            Evidence::Roots { extra } => {
                let mut kinds: Vec<&str> = extra.iter().map(|k| k.name()).collect();
                kinds.sort_unstable();
                kinds.dedup();
                fields.push(("extra_roots", kinds.join("+")));
            }
            Evidence::Incomplete { state_flag, call } => {
                fields.push(("state_flag", state_flag.to_string()));
                fields.extend(call.map(|c| ("call", c.name().to_owned())));
            }
            Evidence::Retry { call } => fields.push(("call", call.name().to_owned())),
            Evidence::Unreadable { problem } => fields.push(("problem", problem.clone())),
            Evidence::Reason => {}
        }
        fields
    }

    /// The signature as one line: `reason=… note=… place=…` (sanitized).
    pub fn signature_line(&self) -> String {
        signature_line(&self.signature())
    }

    /// The grouping key: the signature's values, joined with `/`.
    pub fn key(&self) -> String {
        let values: Vec<String> = self.signature().into_iter().map(|(_, v)| v).collect();
        values.join("/")
    }

    /// A title a person reads: what broke, where, how.
    pub fn title(&self) -> String {
        match &self.evidence {
            Evidence::Link(link) => {
                let what = match (&link.text, link.edit) {
                    (_, _)
                        if matches!(
                            link.place,
                            Some(Place::TokensAgree | Place::ExtendsUnclaimed)
                        ) =>
                    {
                        String::new()
                    }
                    (Some(text), _) => format!(" {}", text.class.words()),
                    (None, Some(edit)) => format!(" tokens {}", edit.shape().name()),
                    (None, None) => String::new(),
                };
                let place = link
                    .place
                    .map_or(String::new(), |p| format!(" {}", p.words()));
                let observed = link
                    .observed
                    .map_or(String::new(), |o| format!(" at {}", o.words()));
                let writer = match link.writer_reason.as_str() {
                    "" => String::new(),
                    reason => format!("writer: {reason}, "),
                };
                format!(
                    "broken link{observed}:{what}{place} ({writer}{})",
                    link.prefix.name().replace('_', " ")
                )
            }
            Evidence::Roots { extra } => {
                let mut kinds: Vec<&str> = extra.iter().map(|k| k.words()).collect();
                kinds.sort_unstable();
                kinds.dedup();
                format!("extra root: {}", kinds.join(" and "))
            }
            Evidence::Incomplete { state_flag, call } => match (call, state_flag) {
                (Some(CallPlace::Final), _) => "final call never recorded (timed out?)".into(),
                (Some(CallPlace::MidChain), _) => "a mid-chain call never recorded".into(),
                (None, _) => "a call failed to capture (state flagged)".into(),
            },
            Evidence::Retry { call } => match call {
                CallPlace::Final => "final call retried, kept generation unknown".into(),
                CallPlace::MidChain => "mid-chain call retried, kept generation unknown".into(),
            },
            Evidence::Unreadable { problem } => format!("unreadable files: {problem}"),
            Evidence::Reason => self.reason.replace('_', " "),
        }
    }
}

/// Signature fields as one line: `reason=… note=… place=…` (sanitized: values come from
/// the store).
pub fn signature_line(fields: &[(&'static str, String)]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{k}={}", crate::text::sanitize(v)))
        .collect();
    parts.join(" ")
}

/// The cause of `analysis`, if it is masked (or would be, frozen now) for a reason.
pub fn cause_of(analysis: &Analysis) -> Option<Cause> {
    let reason = analysis.leading_reason()?;
    let records = &analysis.capture.records;
    let observations = analysis.options.observations.as_deref();
    let detokenizer = analysis.options.detokenizer.as_deref();
    let (call, evidence) = match (reason, &analysis.build) {
        (MaskReason::UnresolvedParents(calls), Some(build)) => {
            let (call, note) = calls.first()?;
            let mut link = link_cause(records, build, call, note.as_str(), detokenizer);
            link.observed = observations.and_then(|o| observed_kind(o, call));
            (Some(call.clone()), Evidence::Link(link))
        }
        (MaskReason::RootCount(roots), Some(build)) => {
            // The main chain's root is the rollout's own; without one, the first root.
            let main_root = build
                .main_chain()
                .and_then(|chain| chain.links.first())
                .map(|link| records[build.record_of(link.node)].model_call_id.as_str())
                .or(roots.first().map(String::as_str));
            let extra: Vec<&String> = roots
                .iter()
                .filter(|root| Some(root.as_str()) != main_root)
                .collect();
            let kinds = extra
                .iter()
                .map(|root| root_kind(records, build, root, observations))
                .collect();
            (
                extra.first().map(|root| (*root).clone()),
                Evidence::Roots { extra: kinds },
            )
        }
        (
            MaskReason::CaptureIncomplete {
                state_flag,
                open_intents,
            },
            _,
        ) => {
            let first = open_intents.first();
            let call = first.map(|call| {
                let at = analysis.capture.intents.iter().position(|i| i == call);
                let later_recorded = at.is_some_and(|at| {
                    analysis.capture.intents[at + 1..]
                        .iter()
                        .any(|later| records.iter().any(|r| &r.model_call_id == later))
                });
                if later_recorded {
                    CallPlace::MidChain
                } else {
                    CallPlace::Final
                }
            });
            (
                first.cloned(),
                Evidence::Incomplete {
                    state_flag: *state_flag,
                    call,
                },
            )
        }
        (MaskReason::UnresolvedRetries(calls), Some(build)) => {
            let has_children = calls.iter().any(|call| {
                build
                    .node_of(records, call)
                    .is_some_and(|n| !build.nodes[n].children.is_empty())
            });
            let call = if has_children {
                CallPlace::MidChain
            } else {
                CallPlace::Final
            };
            (calls.first().cloned(), Evidence::Retry { call })
        }
        (MaskReason::Unreadable(issue), _) => (
            None,
            Evidence::Unreadable {
                problem: issue.kind.name().to_owned(),
            },
        ),
        _ => (reason.calls().into_iter().next(), Evidence::Reason),
    };
    Some(Cause {
        reason: reason.code(),
        call,
        evidence,
    })
}

/// What the root `call` is, from its link note and the row.
fn root_kind(
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    call: &str,
    observations: Option<&Observations>,
) -> RootKind {
    if build
        .node_of(records, call)
        .is_some_and(|n| build.nodes[n].unresolved_boundary())
    {
        return RootKind::UnresolvedLink;
    }
    match observations {
        Some(o) if !o.missing_row => observed_kind(o, call).unwrap_or(RootKind::Unexplained),
        _ => RootKind::NoRow,
    }
}

/// What the row says `call` is: a compaction's, a verifier's or a subagent's.
fn observed_kind(obs: &Observations, call: &str) -> Option<RootKind> {
    let names = |r: &crate::observe::CallRef| obs.resolve(r).as_deref() == Some(call);
    if obs
        .compactions
        .iter()
        .any(|c| c.after.as_ref().is_some_and(names) || c.model_calls.iter().any(names))
    {
        return Some(RootKind::Compaction);
    }
    if obs
        .verifiers
        .iter()
        .any(|v| v.model_calls.iter().any(names))
    {
        return Some(RootKind::Verifier);
    }
    let subagent = obs.invocations.iter().any(|i| {
        (i.parent.is_some() || i.spawned_by_tool_call.is_some()) && i.model_calls.iter().any(names)
    });
    subagent.then_some(RootKind::Subagent)
}

/// The link cause of the unresolved call `call` (note `note`).
fn link_cause(
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    call: &str,
    note: &'static str,
    detokenizer: Option<&Detokenizer>,
) -> LinkCause {
    let record = records.iter().find(|r| r.model_call_id == call);
    let mut cause = LinkCause {
        note,
        writer_reason: record
            .map(|r| r.parent_resolution_reason.clone())
            .unwrap_or_default(),
        prefix: record.map_or(PrefixUse::NotRequested, |r| PrefixUse::of(r)),
        place: None,
        reference_call: None,
        position: None,
        edit: None,
        text: None,
        observed: None,
    };
    let Some(found) = build
        .node_of(records, call)
        .and_then(|node| divergence(records, build, node))
    else {
        return cause;
    };
    cause.reference_call = Some(found.reference_call.clone());
    cause.position = Some(found.position);
    if found.tokens_agree() {
        cause.place = Some(match found.reference {
            Reference::Candidate(_) => Place::ExtendsUnclaimed,
            Reference::ClaimedNode(_) | Reference::ClaimedRecord(_) => Place::TokensAgree,
        });
        return cause;
    }
    let (prompt, reference) = sides(records, build, &found);
    cause.place = Some(place_of(records, build, &found));
    let window = edit::LONGEST_ONE_SIDED + edit::AGREE;
    let at = found.position;
    let child = prompt.values_range(at, (at + window).min(prompt.len()));
    let parent_end = (at + window).min(reference.len());
    let parent = reference.values_range(at, parent_end);
    let edit = edit_at(&child, &parent, parent_end == reference.len());
    cause.edit = Some(edit);
    if let (Some(detok), true) = (detokenizer, edit.aligned) {
        let removed = edit.removed.min(parent.len());
        let inserted = edit.inserted.min(child.len());
        let decoded = Decoded {
            before: detok.decode(&reference.values_range(at.saturating_sub(CONTEXT), at)),
            removed: detok.decode(&parent[..removed]),
            inserted: detok.decode(&child[..inserted]),
            parent_after: detok.decode(&parent[..(removed + CONTEXT).min(parent.len())]),
            child_after: detok.decode(&child[..(inserted + CONTEXT).min(child.len())]),
        };
        cause.text = Some(TextChange {
            class: classify(&decoded),
            removed: snippet(&decoded.removed),
            inserted: snippet(&decoded.inserted),
        });
    }
    cause
}

/// The child's prompt and the sequence it was compared with.
fn sides(
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    found: &Divergence,
) -> (crate::store::seq::TokenSeq, crate::store::seq::TokenSeq) {
    let prompt = build.nodes[found.node].prompt.clone();
    let reference = match found.reference {
        Reference::ClaimedNode(n) | Reference::Candidate(n) => build.nodes[n].cumulative.clone(),
        Reference::ClaimedRecord(i) => {
            let r = &records[i];
            (r.prompt_token_ids.clone()).append_ids(r.generation_token_ids.clone(), r.negative_ids)
        }
    };
    (prompt, reference)
}

/// Where `found.position` falls in the reference's provenance.
fn place_of(records: &[Arc<TokenRecord>], build: &BuildOutput, found: &Divergence) -> Place {
    let at = found.position;
    let node = match found.reference {
        Reference::ClaimedNode(n) | Reference::Candidate(n) => n,
        Reference::ClaimedRecord(i) => {
            let prompt_len = records[i].prompt_token_ids.len();
            return if at < prompt_len {
                Place::ParentPrompt
            } else if at + 1 >= found.reference_len {
                Place::ParentGenerationEnd
            } else {
                Place::ParentGeneration
            };
        }
    };
    let mut current = node;
    loop {
        let call = &build.nodes[current];
        let (prompt_len, cumulative_len) = (call.prompt.len(), call.cumulative.len());
        if at >= prompt_len && at < cumulative_len {
            return match (current == node, at + 1 == cumulative_len) {
                (true, true) => Place::ParentGenerationEnd,
                (true, false) => Place::ParentGeneration,
                (false, _) => Place::EarlierGeneration,
            };
        }
        match call.parent {
            Some(parent) if at >= build.nodes[parent].cumulative.len() => {
                return Place::Environment;
            }
            Some(parent) => current = parent,
            None => return Place::RootPrompt,
        }
    }
}
