//! Projection of the main chain into a Responses object, its contiguity check, and the token
//! provenance of any chain (SPEC §5, "Projection" and "Token provenance").

use std::sync::Arc;

use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

mod chain;

pub(crate) use chain::EarlierProjection;
use chain::{Checked, Lendable, Projected, extend_chain, project_chain};

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
        ItemWithText(self, None).serialize(serializer)
    }
}

/// An item written with the text of a chain its prompt starts (the chain's prefixes are
/// copied, not formatted again for every prompt); without one, its prompt is formatted.
struct ItemWithText<'a>(&'a ProjectedItem, Option<&'a LazyChainText>);

impl serde::Serialize for ItemWithText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ItemWithText(item, chain) = *self;
        let mut map = serializer.serialize_map(None)?;
        let replaced = |key: &str| match &item.tokens {
            None => false,
            Some(t) => {
                TOKEN_KEYS.contains(&key) || (key == "routed_experts" && t.routed_experts.is_some())
            }
        };
        if item.index.is_none() {
            map.serialize_entry("type", "message")?;
        }
        for (key, value) in item.content().into_iter().flatten() {
            if !replaced(key) {
                map.serialize_entry(key, value)?;
            }
        }
        if let Some(tokens) = &item.tokens {
            match chain {
                Some(chain) => {
                    debug_assert!(chain.tokens.starts_with(&tokens.prompt));
                    chain
                        .get()
                        .serialize_prefix(tokens.prompt.len(), &mut map)?
                }
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
#[derive(Clone, Debug)]
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
    /// Decimal text of the whole chain, formatted the first time the response is written
    /// (only export and `--format jsonl` write it; the explorer never pays for it). Every
    /// carrier's prompt starts it. One per response: an append makes a new one, not a new
    /// reference on every item.
    pub chain_text: Option<Arc<LazyChainText>>,
    /// What the next projection of the chain extended reuses (not part of the response).
    pub(crate) lendable: Lendable,
}

impl serde::Serialize for RebuiltResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        /// The items, each with the chain's text.
        struct Output<'a>(&'a [ProjectedItem], Option<&'a LazyChainText>);
        impl serde::Serialize for Output<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
                for item in self.0 {
                    seq.serialize_element(&ItemWithText(item, self.1))?;
                }
                seq.end()
            }
        }
        let mut response = serializer.serialize_struct("RebuiltResponse", 5)?;
        response.serialize_field("id", &self.id)?;
        response.serialize_field("model", &self.model)?;
        response.serialize_field("object", self.object)?;
        response.serialize_field("output", &Output(&self.output, self.chain_text.as_deref()))?;
        response.serialize_field("usage", &self.usage)?;
        response.end()
    }
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

/// Build the response for the main chain, with the reference's checks. The steps `earlier`
/// (the previous projection of the chain, before an append extended it) shares are moved
/// over, and the checks resume after them; `lend_next`: keep this projection's steps with the
/// response for the next one (a rollout followed live).
pub(crate) fn project_main_chain(
    rollout_id: &str,
    model: &str,
    records: &[Arc<TokenRecord>],
    build: &BuildOutput,
    earlier: Option<EarlierProjection>,
    lend_next: bool,
) -> Result<RebuiltResponse, ProjectionError> {
    let Some(main) = build.main_chain() else {
        return Err(ProjectionError(
            "ValueError: capture produced no safe trainable chain".into(),
        ));
    };
    let projected = project_chain(records, build, main, earlier, lend_next);
    let (lent_items, lent_checked) = projected.lent_part();
    let Projected {
        items: output,
        mut lendable,
        lent,
    } = projected;
    // The running sequence only ever grows by appending, so every carrier's prompt is a prefix
    // of the last carrier's full sequence.
    let chain_text = output
        .iter()
        .rev()
        .find_map(|item| item.tokens.as_ref().map(|t| t.through.clone()))
        .map(|full| {
            Arc::new(LazyChainText {
                tokens: full,
                text: std::sync::OnceLock::new(),
            })
        });
    // The checks resume after the steps lent: their items passed them in the projection
    // they come from, which left its state after each step. Each check goes over the new
    // items in the reference's order (its first failure is the one reported), noting its
    // state where each new step ends.
    let new_steps = &mut lendable.steps[lent..];
    let ends: Vec<usize> = new_steps
        .iter()
        .scan(lent_items, |at, step| {
            *at += step.items;
            Some(*at)
        })
        .collect();
    let new_items = || output.iter().enumerate().skip(lent_items);
    let at_step_end = |index: usize| ends.binary_search(&(index + 1)).ok();
    let mut checked = lent_checked;
    if !checked.has_tokens && !output[lent_items..].iter().any(generates) {
        return Err(ProjectionError(
            "ValueError: capture produced no trainable generated tokens".into(),
        ));
    }
    crate::work::count(|work| work.items_checked += (output.len() - lent_items) as u64);
    for (index, item) in new_items() {
        count_usage(item, &mut checked)?;
        if let Some(step) = at_step_end(index) {
            new_steps[step].checked = checked.clone();
        }
    }
    let usage = Usage {
        input_tokens: checked.input_tokens.unwrap_or(0),
        output_tokens: checked.output_tokens,
    };
    let mut seen = checked.seen;
    for (index, item) in new_items() {
        check_contiguity(item, &mut seen, build.memo.as_deref())?;
        if let Some(step) = at_step_end(index) {
            new_steps[step].checked.seen = seen.clone();
        }
    }
    // A step whose items end in an inline one leaves a sequence of its own seen (made from
    // the item's JSON): not kept, nor the steps after it (each would hold the chain again).
    // (The steps lent passed this when their projection made them.)
    if let Some(cut) = lendable.steps[lent..]
        .iter()
        .position(|step| !step.checked.seen.ptr_eq(&step.through))
    {
        lendable.steps.truncate(lent + cut);
    }
    Ok(RebuiltResponse {
        id: format!("proj-{rollout_id}"),
        model: model.to_owned(),
        object: "response",
        output,
        usage,
        chain_text,
        lendable,
    })
}

/// Whether an item carries generated tokens.
fn generates(item: &ProjectedItem) -> bool {
    match item_tokens(item) {
        Some(ItemTokens::Carried(t)) => !t.generation.is_empty(),
        Some(ItemTokens::Inline { generation, .. }) => crate::store::state::truthy(generation),
        None => false,
    }
}

/// Count an item's tokens into the usage, as the reference does (the first token-bearing
/// item's prompt length, every generation's length), and whether it carries generated ones.
fn count_usage(item: &ProjectedItem, checked: &mut Checked) -> Result<(), ProjectionError> {
    checked.has_tokens |= generates(item);
    match item_tokens(item) {
        Some(ItemTokens::Carried(t)) => {
            checked.input_tokens.get_or_insert(t.prompt.len());
            checked.output_tokens += t.generation.len();
        }
        Some(ItemTokens::Inline { prompt, generation }) => {
            if checked.input_tokens.is_none() {
                checked.input_tokens = Some(match prompt {
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
                Value::Array(a) => checked.output_tokens += a.len(),
                other => {
                    return Err(ProjectionError(format!(
                        "TypeError: object of type {other} has no len()"
                    )));
                }
            }
        }
        None => {}
    }
    Ok(())
}

/// Require a token-bearing item's prompt to extend everything `seen` before it; `seen` then
/// goes on through its generation.
fn check_contiguity(
    item: &ProjectedItem,
    seen: &mut TokenSeq,
    memo: Option<&super::memo::DigestMemo>,
) -> Result<(), ProjectionError> {
    let broken = || {
        ProjectionError(
            "AssertionError: projection is not prefix-contiguous: an output item's \
             prompt_token_ids does not extend the tokens seen so far"
                .into(),
        )
    };
    match item_tokens(item) {
        None => {}
        Some(ItemTokens::Carried(tokens)) => {
            if !super::memo::starts_with(memo, &tokens.prompt, seen) {
                return Err(broken());
            }
            *seen = tokens.through.clone();
        }
        Some(ItemTokens::Inline { prompt, generation }) => {
            let prompt = json_tokens(prompt).map_err(|_| broken())?;
            let prompt = TokenSeq::from(prompt);
            if !prompt.starts_with(seen) {
                return Err(broken());
            }
            let generation = json_tokens(Some(generation))?;
            *seen = prompt.append(generation.into());
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
        mut earlier: Option<RebuiltResponse>,
    ) -> (String, u64) {
        let earlier = EarlierProjection::take(&mut earlier);
        crate::work::take();
        let response = project_main_chain("r", "m", records, build, earlier, true).unwrap();
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
        let response = project_main_chain("r", "m", &records[..2], &before, None, true).ok();
        let after = extend_build(&records, before, &build_options()).expect("extended");
        let (lent, steps) = projected(&records, &after, response);
        assert_eq!(steps, 1, "the two earlier steps are lent");
        assert_eq!(lent, projected(&records, &after, None).0);
    }

    #[test]
    fn checks_resumed_after_the_lent_steps_fail_as_checks_from_the_start() {
        // The appended call's first item is inline, its prompt a prefix of the chain that
        // does not extend what was seen: the contiguity check must resume from the lent
        // steps' sequence (from nothing, it would pass, and the carrier after it too).
        let appended = r#"{"generation_log_probs":[-0.5],"generation_token_ids":[8],"model_call_id":"c","parent_call_id":"b","parent_resolution":"resolved","prompt_token_ids":[1,2,3,4,5,6,7],"rollout_id":"r","output_items":[{"type":"message","prompt_token_ids":[1,2,3],"generation_token_ids":[4]},{"type":"message"}],"token_item_index":1}"#;
        let records = [
            record("a", None, &[1, 2], &[3]),
            record("b", Some("a"), &[1, 2, 3, 4], &[5, 6]),
            Arc::new(TokenRecord::parse(appended.as_bytes()).expect("a valid record")),
        ];
        let before = prefix_merging(&records[..2], &build_options());
        let mut response = project_main_chain("r", "m", &records[..2], &before, None, true).ok();
        let after = extend_build(&records, before, &build_options()).expect("extended");
        let earlier = EarlierProjection::take(&mut response);
        let lent = project_main_chain("r", "m", &records, &after, earlier, true).map(|_| ());
        let fresh = project_main_chain("r", "m", &records, &after, None, true).map(|_| ());
        assert!(fresh.is_err(), "not contiguous");
        assert_eq!(lent, fresh);
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
        let response = project_main_chain("r", "m", &old, &old_build, None, true).ok();
        let new_build = prefix_merging(&new, &build_options());
        let (lent, steps) = projected(&new, &new_build, response);
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
        let text = response.chain_text.as_ref().expect("a chain's text");
        assert!(!text.is_formatted(), "not by the build");
        serde_json::to_string(response).unwrap();
        assert!(text.is_formatted(), "by writing it");
    }
}
