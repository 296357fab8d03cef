//! Projection of the main chain into a Responses object, its contiguity check, and the token
//! provenance of any chain (SPEC §5, "Projection" and "Token provenance").

use std::sync::Arc;

use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::output::{BuildOutput, Chain};
use crate::store::TokenRecord;
use crate::store::seq::TokenSeq;

const TOKEN_KEYS: [&str; 3] = [
    "prompt_token_ids",
    "generation_token_ids",
    "generation_log_probs",
];

/// Token fields restored on the item that carried a call's generation.
#[derive(Clone, Debug)]
pub struct CarriedTokens {
    /// Everything before this generation in the chain.
    pub prompt: TokenSeq,
    /// The generation.
    pub generation: TokenSeq,
    /// Its log probabilities.
    pub log_probs: Arc<[f64]>,
    /// Routing data, when the record has it.
    pub routed_experts: Option<Value>,
    /// `prompt` followed by `generation`.
    pub through: TokenSeq,
    /// Decimal text of the whole chain, formatted the first time the response is written
    /// (only export and `--format jsonl` write it; the explorer never pays for it).
    pub text: Option<Arc<LazyChainText>>,
}

/// The whole chain, and its [`ChainText`] once something serializes the response.
#[derive(Debug)]
pub struct LazyChainText {
    tokens: TokenSeq,
    text: std::sync::OnceLock<ChainText>,
}

impl LazyChainText {
    /// The chain's text, formatted on first use.
    fn get(&self) -> &ChainText {
        self.text.get_or_init(|| ChainText::new(&self.tokens))
    }

    /// Whether the text was formatted (for tests: nothing but output formats it).
    pub fn is_formatted(&self) -> bool {
        self.text.get().is_some()
    }
}

/// The comma-separated decimal text of a chain's token stream.
///
/// Every carrier item's prompt is a prefix of the chain, so the rebuilt response (whose size
/// is quadratic in the chain length) is written by copying prefixes of this text instead of
/// formatting every token of every prompt again.
#[derive(Debug)]
pub struct ChainText {
    text: String,
    /// `ends[k]`: byte length of the text of the first `k` tokens.
    ends: Vec<usize>,
}

impl ChainText {
    /// Format `tokens` once.
    pub fn new(tokens: &TokenSeq) -> ChainText {
        let mut text = String::with_capacity(tokens.len() * 7);
        let mut ends = Vec::with_capacity(tokens.len() + 1);
        ends.push(0);
        let mut buffer = itoa::Buffer::new();
        for (index, token) in tokens.values().enumerate() {
            if index > 0 {
                text.push(',');
            }
            text.push_str(buffer.format(token));
            ends.push(text.len());
        }
        ChainText { text, ends }
    }

    /// Serialize the first `count` tokens as a JSON array, emitted verbatim by serde_json.
    ///
    /// The array is put together in one buffer per thread: a report repeats the chain's text
    /// once per call, and a fresh allocation for each (megabytes, then freed) costs page
    /// faults on every call.
    fn serialize_prefix<S: SerializeMap>(&self, count: usize, map: &mut S) -> Result<(), S::Error> {
        thread_local! {
            static JSON: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let body = &self.text[..self.ends[count]];
        JSON.with_borrow_mut(|json| {
            json.clear();
            json.push('[');
            json.push_str(body);
            json.push(']');
            let written = map.serialize_entry("prompt_token_ids", &RawJson(json));
            // A long chain's buffer is not kept past it (a small one is reused as it is).
            if json.capacity() > CHAIN_JSON_KEPT {
                *json = String::new();
            }
            written
        })
    }
}

/// Text known to be valid JSON, written as-is.
///
/// `serde_json::value::RawValue` would re-parse the text to validate it, which costs as much
/// as formatting the tokens; this uses the same struct marker RawValue serializes through
/// (the tests compare the output with plain serialization, so a change in serde_json shows).
struct RawJson<'a>(&'a str);

/// Bytes of chain JSON a thread keeps for the next call between reports.
const CHAIN_JSON_KEPT: usize = 16 << 20;

impl serde::Serialize for RawJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        const TOKEN: &str = "$serde_json::private::RawValue";
        let mut raw = serializer.serialize_struct(TOKEN, 1)?;
        raw.serialize_field(TOKEN, &self.0)?;
        raw.end()
    }
}

/// One output item of the rebuilt response.
#[derive(Clone, Debug)]
pub struct ProjectedItem {
    /// The call's output items, shared with its record.
    items: Arc<[Map<String, Value>]>,
    /// Which of them this is; `None` for a bare `{"type": "message"}` (a call without items).
    index: Option<usize>,
    /// The restored token fields, on carrier items.
    pub tokens: Option<CarriedTokens>,
    /// The call this item came from.
    pub call_index: usize,
}

impl ProjectedItem {
    /// The captured item (`None` for a bare message made for a call without items).
    pub fn content(&self) -> Option<&Map<String, Value>> {
        self.index.map(|i| &self.items[i])
    }
}

impl serde::Serialize for ProjectedItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let replaced = |key: &str| match &self.tokens {
            None => false,
            Some(t) => {
                TOKEN_KEYS.contains(&key) || (key == "routed_experts" && t.routed_experts.is_some())
            }
        };
        if self.index.is_none() {
            map.serialize_entry("type", "message")?;
        }
        for (key, value) in self.content().into_iter().flatten() {
            if !replaced(key) {
                map.serialize_entry(key, value)?;
            }
        }
        if let Some(tokens) = &self.tokens {
            match &tokens.text {
                Some(text) => text.get().serialize_prefix(tokens.prompt.len(), &mut map)?,
                None => map.serialize_entry("prompt_token_ids", &tokens.prompt)?,
            }
            map.serialize_entry("generation_token_ids", &tokens.generation)?;
            map.serialize_entry("generation_log_probs", &tokens.log_probs[..])?;
            if let Some(experts) = &tokens.routed_experts {
                map.serialize_entry("routed_experts", experts)?;
            }
        }
        map.end()
    }
}

/// The rebuilt response of the main chain.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RebuiltResponse {
    /// `proj-<rollout id>`.
    pub id: String,
    /// Model name given by the caller.
    pub model: String,
    /// Always `response`.
    pub object: &'static str,
    /// Output items in chain order.
    pub output: Vec<ProjectedItem>,
    /// Token counts.
    pub usage: Usage,
}

/// Usage block of the rebuilt response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Prompt length of the first token-bearing item.
    pub input_tokens: usize,
    /// Sum of generation lengths.
    pub output_tokens: usize,
}

/// A projection failure, worded like the reference's exception.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProjectionError(pub String);

/// Project a chain into output items with contiguous prompts.
pub(crate) fn project_chain(
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    chain: &Chain,
    earlier: Option<EarlierProjection>,
) -> Vec<ProjectedItem> {
    let (mut items, mut running, first) = match earlier {
        Some(earlier) => earlier.lend(build, chain),
        None => (Vec::new(), TokenSeq::new(), 0),
    };
    crate::work::count(|work| work.steps_projected += (chain.links.len() - first) as u64);
    for (step, link) in chain.links.iter().enumerate().skip(first) {
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
            text: None,
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
        running = through;
    }
    items
}

/// The main chain's projection in a rollout's previous analysis, lent to the next one.
///
/// A live append extends the main chain by a call: every step before it is made of the same
/// calls, the same shared sequences and the same interstitial ranges, so it projects to the
/// same items, which are moved over instead of made again (and the old ones dropped).
/// A step is lent only when all of that is unchanged (its node, its prompt and cumulative
/// sequences the very same, its interstitial range, the root's prompt length): a build made
/// whole gives every call a new cumulative sequence, and nothing is lent. (The steps hold
/// the sequences they compare, so no address can be reused meanwhile.)
pub(crate) struct EarlierProjection {
    root_prompt_len: usize,
    steps: Vec<EarlierStep>,
    output: Vec<ProjectedItem>,
}

/// What one step of the earlier projection was made from, and what it made.
struct EarlierStep {
    node: usize,
    interstitial: (usize, usize),
    prompt: TokenSeq,
    cumulative: TokenSeq,
    /// Its items in the output (consecutive, one at least).
    items: usize,
    /// The chain's sequence after it.
    through: TokenSeq,
}

impl EarlierProjection {
    /// Take the projection out of a previous analysis's `response`, with the main chain of
    /// the `build` it was made from.
    pub(crate) fn take(
        response: &mut Option<RebuiltResponse>,
        build: Option<&BuildOutput>,
    ) -> Option<EarlierProjection> {
        let build = build?;
        let main = build.main_chain()?;
        let output = response.take()?.output;
        let mut steps = Vec::with_capacity(main.links.len());
        let mut at = 0;
        for link in &main.links {
            let items = output[at..]
                .iter()
                .take_while(|item| item.call_index == link.node)
                .count();
            let through = output[at..at + items]
                .iter()
                .find_map(|item| item.tokens.as_ref().map(|t| t.through.clone()));
            let (Some(through), true) = (through, items > 0) else {
                break;
            };
            let node = &build.nodes[link.node];
            steps.push(EarlierStep {
                node: link.node,
                interstitial: link.interstitial,
                prompt: node.prompt.clone(),
                cumulative: node.cumulative.clone(),
                items,
                through,
            });
            at += items;
        }
        Some(EarlierProjection {
            root_prompt_len: main.root_prompt_len,
            steps,
            output,
        })
    }

    /// The items of the leading steps `chain` shares with the earlier one, the chain's
    /// sequence after them, and how many steps that is.
    fn lend(self, build: &BuildOutput, chain: &Chain) -> (Vec<ProjectedItem>, TokenSeq, usize) {
        let same = |(step, link): &(&EarlierStep, &super::output::ChainLink)| {
            let node = &build.nodes[link.node];
            step.node == link.node
                && step.interstitial == link.interstitial
                && node.prompt.ptr_eq(&step.prompt)
                && node.cumulative.ptr_eq(&step.cumulative)
        };
        let shared = if self.root_prompt_len == chain.root_prompt_len {
            self.steps.iter().zip(&chain.links).take_while(same).count()
        } else {
            0
        };
        let Some(last) = shared.checked_sub(1).map(|i| &self.steps[i]) else {
            return (Vec::new(), TokenSeq::new(), 0);
        };
        let running = last.through.clone();
        let items = self.steps[..shared].iter().map(|step| step.items).sum();
        let mut output = self.output;
        output.truncate(items);
        (output, running, shared)
    }
}

/// One step along a chain: the sequence before link `step`'s generation (the running
/// sequence plus the link's new prompt tokens) and the sequence after it.
///
/// When the chain so far is exactly the start of the call's prompt (the normal case) both
/// results are the call's own shared sequences, so later prefix checks are pointer checks.
fn extend_chain(
    running: &TokenSeq,
    chain: &Chain,
    step: usize,
    link: &super::output::ChainLink,
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
    memo: Option<&super::memo::DigestMemo>,
    running: &TokenSeq,
    source: &TokenSeq,
    start: usize,
    end: usize,
) -> TokenSeq {
    if end == source.len()
        && running.len() == start
        && super::memo::starts_with(memo, source, running)
    {
        return source.clone();
    }
    if start >= end {
        return running.clone();
    }
    running.append_range(source, start, end)
}

/// A view of an item's token fields for the checks below.
enum ItemTokens<'a> {
    Carried(&'a CarriedTokens),
    Inline {
        prompt: Option<&'a Value>,
        generation: &'a Value,
    },
}

fn item_tokens(item: &ProjectedItem) -> Option<ItemTokens<'_>> {
    if let Some(tokens) = &item.tokens {
        return Some(ItemTokens::Carried(tokens));
    }
    let content = item.content()?;
    match content.get("generation_token_ids") {
        None | Some(Value::Null) => None,
        Some(generation) => Some(ItemTokens::Inline {
            prompt: content.get("prompt_token_ids"),
            generation,
        }),
    }
}

fn json_tokens(value: Option<&Value>) -> Result<Vec<u64>, ProjectionError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| {
                v.as_u64()
                    .or_else(|| v.as_i64().map(|n| n as u64))
                    .ok_or_else(|| ProjectionError(format!("TypeError: unusable token {v}")))
            })
            .collect(),
        Some(other) => Err(ProjectionError(format!(
            "TypeError: token field is {other}"
        ))),
    }
}

/// Build the response for the main chain, with the reference's checks.
pub(crate) fn project_main_chain(
    rollout_id: &str,
    model: &str,
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    earlier: Option<EarlierProjection>,
) -> Result<RebuiltResponse, ProjectionError> {
    let Some(main) = build.main_chain() else {
        return Err(ProjectionError(
            "ValueError: capture produced no safe trainable chain".into(),
        ));
    };
    let mut output = project_chain(records, build, main, earlier);
    // The running sequence only ever grows by appending, so every carrier's prompt is a prefix
    // of the last carrier's full sequence.
    let full = output
        .iter()
        .rev()
        .find_map(|item| item.tokens.as_ref().map(|t| t.through.clone()));
    if let Some(full) = full {
        let text = Arc::new(LazyChainText {
            tokens: full.clone(),
            text: std::sync::OnceLock::new(),
        });
        for tokens in output.iter_mut().filter_map(|item| item.tokens.as_mut()) {
            debug_assert!(full.starts_with(&tokens.prompt));
            tokens.text = Some(Arc::clone(&text));
        }
    }
    let has_tokens = output.iter().any(|item| match item_tokens(item) {
        Some(ItemTokens::Carried(t)) => !t.generation.is_empty(),
        Some(ItemTokens::Inline { generation, .. }) => crate::store::state::truthy(generation),
        None => false,
    });
    if !has_tokens {
        return Err(ProjectionError(
            "ValueError: capture produced no trainable generated tokens".into(),
        ));
    }
    let mut input_tokens = None;
    let mut output_tokens = 0;
    for item in &output {
        match item_tokens(item) {
            Some(ItemTokens::Carried(t)) => {
                input_tokens.get_or_insert(t.prompt.len());
                output_tokens += t.generation.len();
            }
            Some(ItemTokens::Inline { prompt, generation }) => {
                if input_tokens.is_none() {
                    input_tokens = Some(match prompt {
                        Some(Value::Array(a)) => a.len(),
                        Some(Value::String(s)) => s.chars().count(),
                        None => return Err(ProjectionError("KeyError: 'prompt_token_ids'".into())),
                        Some(other) => {
                            return Err(ProjectionError(format!(
                                "TypeError: object of type {other} has no len()"
                            )));
                        }
                    });
                }
                match generation {
                    Value::Array(a) => output_tokens += a.len(),
                    other => {
                        return Err(ProjectionError(format!(
                            "TypeError: object of type {other} has no len()"
                        )));
                    }
                }
            }
            None => {}
        }
    }
    let response = RebuiltResponse {
        id: format!("proj-{rollout_id}"),
        model: model.to_owned(),
        object: "response",
        output,
        usage: Usage {
            input_tokens: input_tokens.unwrap_or(0),
            output_tokens,
        },
    };
    check_contiguity(&response, build.memo.as_deref())?;
    Ok(response)
}

/// Require every token-bearing item's prompt to extend everything before it.
pub(crate) fn check_contiguity(
    response: &RebuiltResponse,
    memo: Option<&super::memo::DigestMemo>,
) -> Result<(), ProjectionError> {
    let broken = || {
        ProjectionError(
            "AssertionError: projection is not prefix-contiguous: an output item's \
             prompt_token_ids does not extend the tokens seen so far"
                .into(),
        )
    };
    let mut seen = TokenSeq::new();
    for item in &response.output {
        match item_tokens(item) {
            None => {}
            Some(ItemTokens::Carried(tokens)) => {
                if !super::memo::starts_with(memo, &tokens.prompt, &seen) {
                    return Err(broken());
                }
                seen = tokens.through.clone();
            }
            Some(ItemTokens::Inline { prompt, generation }) => {
                let prompt = json_tokens(prompt).map_err(|_| broken())?;
                let prompt = TokenSeq::from(prompt);
                if !prompt.starts_with(&seen) {
                    return Err(broken());
                }
                let generation = json_tokens(Some(generation))?;
                seen = prompt.append(generation.into());
            }
        }
    }
    Ok(())
}

/// Where a span of a chain's token stream came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The root call's prompt.
    RootPrompt,
    /// Environment tokens added before call `node` (tool output, user turns).
    Interstitial {
        /// Node index of the call whose prompt added them.
        node: usize,
    },
    /// Sampled by call `node`.
    Generation {
        /// Node index of the generating call.
        node: usize,
    },
}

/// A contiguous span of a chain's token stream with one origin.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Origin of the tokens.
    pub origin: Origin,
    /// Positions `[start, end)` in the chain's token stream.
    pub range: (usize, usize),
    /// Loss mask: 1 for generated tokens, 0 for prompt and environment tokens.
    pub mask: u8,
}

/// The token stream of a chain: its tokens plus one segment per origin.
#[derive(Clone, Debug)]
pub struct Provenance {
    /// All tokens of the chain, in order.
    pub tokens: TokenSeq,
    /// Segments covering `tokens` exactly, in order.
    pub segments: Vec<Segment>,
}

impl Provenance {
    /// The segment holding position `position`.
    pub fn segment_at(&self, position: usize) -> Option<&Segment> {
        let index = self.segments.partition_point(|s| s.range.1 <= position);
        self.segments.get(index).filter(|s| s.range.0 <= position)
    }

    /// The log probability of the token at `position` (generated tokens only).
    pub fn log_prob(
        &self,
        records: &[Arc<TokenRecord>],
        build: &BuildOutput,
        position: usize,
    ) -> Option<f64> {
        let segment = self.segment_at(position)?;
        match segment.origin {
            Origin::Generation { node } => records[build.record_of(node)]
                .generation_log_probs
                .get(position - segment.range.0)
                .copied(),
            _ => None,
        }
    }
}

/// Token provenance and loss mask of a chain.
pub fn provenance(build: &BuildOutput, chain: &Chain) -> Provenance {
    let mut segments = Vec::new();
    let mut tokens = TokenSeq::new();
    let mut push = |origin, tokens_now: &TokenSeq, before: usize, mask| {
        if tokens_now.len() > before {
            segments.push(Segment {
                origin,
                range: (before, tokens_now.len()),
                mask,
            });
        }
    };
    for (step, link) in chain.links.iter().enumerate() {
        let before = tokens.len();
        let (prompt, through) = extend_chain(&tokens, chain, step, link, build);
        let origin = if step == 0 {
            Origin::RootPrompt
        } else {
            Origin::Interstitial { node: link.node }
        };
        push(origin, &prompt, before, 0);
        push(
            Origin::Generation { node: link.node },
            &through,
            prompt.len(),
            1,
        );
        tokens = through;
    }
    Provenance { tokens, segments }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebuild::test_records::record;
    use crate::rebuild::{BuildOptions, extend_build, prefix_merging};

    fn build_options() -> BuildOptions {
        BuildOptions {
            terminal_call_id: None,
            digest_memo: Some(Arc::default()),
        }
    }

    /// The response of `build`, projected with what `earlier` lends, and the steps projected.
    fn projected(
        records: &[Arc<TokenRecord>],
        build: &BuildOutput,
        earlier: Option<(Option<RebuiltResponse>, &BuildOutput)>,
    ) -> (String, u64) {
        let earlier =
            earlier.and_then(|(mut response, b)| EarlierProjection::take(&mut response, Some(b)));
        crate::work::take();
        let response = project_main_chain("r", "m", records, build, earlier).unwrap();
        (format!("{response:?}"), crate::work::take().steps_projected)
    }

    #[test]
    fn an_extended_chain_projects_its_new_step_alone() {
        let records = [
            record("a", None, &[1, 2], &[3]),
            record("b", Some("a"), &[1, 2, 3, 4], &[5, 6]),
            record("c", Some("b"), &[1, 2, 3, 4, 5, 6, 7], &[8]),
        ];
        let before = prefix_merging(&records[..2], &build_options());
        let (_, steps) = projected(&records[..2], &before, None);
        assert_eq!(steps, 2);
        let response = project_main_chain("r", "m", &records[..2], &before, None).ok();
        let snapshot = before.clone();
        let after = extend_build(&records, before, &build_options()).expect("extended");
        let (lent, steps) = projected(&records, &after, Some((response, &snapshot)));
        assert_eq!(steps, 1, "the two earlier steps are lent");
        assert_eq!(lent, projected(&records, &after, None).0);
    }

    #[test]
    fn nothing_is_lent_to_a_build_of_other_records() {
        // The same shape (ids, lengths, links) with other tokens: a rollout id reused by a
        // new attempt, built whole. Its steps are not the earlier ones.
        let shaped = |base: i64| {
            [
                record("a", None, &[base, 2], &[3]),
                record("b", Some("a"), &[base, 2, 3, 4], &[5, 6]),
            ]
        };
        let (old, new) = (shaped(1), shaped(100));
        let old_build = prefix_merging(&old, &build_options());
        let response = project_main_chain("r", "m", &old, &old_build, None).ok();
        let new_build = prefix_merging(&new, &build_options());
        let (lent, steps) = projected(&new, &new_build, Some((response, &old_build)));
        assert_eq!(steps, 2);
        assert_eq!(lent, projected(&new, &new_build, None).0);
    }

    #[test]
    fn chain_text_serializes_like_the_token_sequence() {
        /// `{"prompt_token_ids": <first count tokens>}` through the chain text.
        struct Prefix<'a>(&'a ChainText, usize);
        impl serde::Serialize for Prefix<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(1))?;
                self.0.serialize_prefix(self.1, &mut map)?;
                map.end()
            }
        }
        let seq = TokenSeq::from(vec![5, 0, 4_294_967_295]).append(vec![7, 12].into());
        let text = ChainText::new(&seq);
        // Longest first: the shorter ones reuse (and must not show) the longer one's buffer.
        for count in (0..=seq.len()).rev() {
            let fast = serde_json::to_string(&Prefix(&text, count)).unwrap();
            let plain = serde_json::json!({"prompt_token_ids": seq.to_vec()[..count]});
            assert_eq!(fast, plain.to_string());
        }
        // Through a Value, too (as the library's JSON report helpers do).
        let value = serde_json::to_value(Prefix(&text, 2)).unwrap();
        assert_eq!(value, serde_json::json!({"prompt_token_ids": [5, 0]}));
    }

    #[test]
    fn chain_text_is_formatted_only_when_the_response_is_written() {
        let analyses = crate::load::demo_store_analyses();
        let response = analyses
            .iter()
            .find_map(|a| a.response.as_ref())
            .expect("a rollout with a response");
        let texts: Vec<&Arc<LazyChainText>> = response
            .output
            .iter()
            .filter_map(|item| item.tokens.as_ref()?.text.as_ref())
            .collect();
        assert!(!texts.is_empty());
        assert!(texts.iter().all(|t| !t.is_formatted()), "not by the build");
        serde_json::to_string(response).unwrap();
        assert!(texts.iter().all(|t| t.is_formatted()), "by writing it");
    }
}
