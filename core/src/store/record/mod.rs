//! The token record (`TokenEntry`, SPEC §3): parsing, the schema gate and validation.
//!
//! Parsing is hand-driven over `serde_json` so that token arrays go straight into shared
//! `u64` buffers (no intermediate `Value`), unknown keys are kept, and every refusal says
//! which field and why.

use std::fmt;
use std::sync::Arc;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

use super::seq::TokenSeq;

mod deserialize;
mod fast;

pub(crate) use fast::skip_ws;
#[cfg(test)]
pub(crate) use fast::take_tokens_read_from_digits;
pub use fast::{ArraySpans, EarlierArrays};

/// Newest record schema this reader understands.
pub(crate) const MAX_SCHEMA_VERSION: i64 = 5;
/// Oldest record schema this reader accepts (records below it never left development).
pub(crate) const MIN_SCHEMA_VERSION: i64 = 3;

/// The request-time parent decision recorded with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParentResolution {
    /// The call starts a new chain.
    Root,
    /// The call continues `parent_call_id`.
    Resolved,
    /// The resolver could not prove a parent.
    Unresolved,
}

impl ParentResolution {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ParentResolution::Root => "root",
            ParentResolution::Resolved => "resolved",
            ParentResolution::Unresolved => "unresolved",
        }
    }
}

/// One captured model call, validated.
#[derive(Clone, Debug)]
pub struct TokenRecord {
    /// Record schema version (3..=5).
    pub schema_version: i64,
    /// Rollout the call belongs to, as written in the record.
    pub rollout_id: String,
    /// Unique id of the model call within the rollout.
    pub model_call_id: String,
    /// Served model name.
    pub model: String,
    /// Prompt token ids (only the suffix after the parent when `prompt_is_delta`), as 64
    /// bits: the reference takes every id up to 2⁶⁴−1.
    /// A prompt that repeats an earlier record's prompt and generation shares their chunks.
    pub prompt_token_ids: TokenSeq,
    /// Sampled token ids.
    pub generation_token_ids: Arc<[u64]>,
    /// Some id is negative (kept as its two's complement): the reference accepts it, and
    /// fails only when it must digest it.
    pub negative_ids: bool,
    /// One log probability per sampled token.
    pub generation_log_probs: Arc<[f64]>,
    /// Mixture-of-experts routing, passed through untouched.
    pub routed_experts: Value,
    /// Responses output items with their token arrays stripped (shared: cloning a record
    /// must stay cheap, a live rebuild clones every record).
    pub output_items: Arc<[Map<String, Value>]>,
    /// Index of the output item that carried the token arrays.
    pub token_item_index: Option<usize>,
    /// Wall-clock seconds at capture; used only for chain selection.
    pub created_at: f64,
    /// The recorded parent decision (`None` for non-conforming records).
    pub parent_resolution: Option<ParentResolution>,
    /// Claimed parent call.
    pub parent_call_id: Option<String>,
    /// The resolver's diagnostic for its decision.
    pub parent_resolution_reason: String,
    /// Length of the full cumulative sequence (prompt + generation).
    pub cum_len: Option<i64>,
    /// Digest of the full cumulative sequence.
    pub digest: Option<String>,
    /// Whether `prompt_token_ids` holds only the suffix after the parent.
    pub prompt_is_delta: bool,
    /// Serving-time intent to supply the verified parent prefix.
    pub prefix_requested: bool,
    /// Generation-time proof that the prefix was applied.
    pub prefix_supplied: bool,
    /// Request-time lineage fingerprint (display only).
    pub continuation_fingerprint: String,
    /// Request-time lineage context length (display only).
    pub continuation_context_len: i64,
    /// Request-time lineage context digest (display only).
    pub continuation_context_digest: String,
    /// Fingerprint algorithm version (display only).
    pub fingerprint_version: Option<i64>,
    /// Keys this reader does not know, kept as written.
    pub extra: Arc<Map<String, Value>>,
}

/// Why a line could not become a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The line is not valid JSON.
    #[error("malformed JSON: {0}")]
    Syntax(String),
    /// The line is JSON but not a valid record.
    #[error("refused record: {0}")]
    Invalid(Refusal),
    /// The line is longer than the line limit: not parsed.
    #[error(
        "line of {bytes} bytes is over the {limit}-byte line limit; not read (raise it with --max-line-mib)"
    )]
    TooLong {
        /// The line's length.
        bytes: usize,
        /// The limit in force.
        limit: usize,
    },
}

/// Why a JSON line is refused as a record (SPEC §3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A field has the wrong type or value (serde's message).
    #[error("{0}")]
    Field(String),
    /// Written by a newer writer.
    #[error(
        "schema_version {0} was written by a newer writer (this reader understands up to \
         {MAX_SCHEMA_VERSION}) — upgrade the reader"
    )]
    NewerSchema(i64),
    /// Below the lineage schema.
    #[error(
        "schema_version {0} is a pre-lineage record (below {MIN_SCHEMA_VERSION}), never \
         written in production — regenerate the rollout"
    )]
    PreLineage(i64),
    /// A required field is absent.
    #[error("missing required field `{0}`")]
    Missing(&'static str),
    /// JSON nested deeper than the reference writer's reader takes (orjson's limit).
    #[error("JSON nested more than {MAX_DEPTH} levels deep (the reference reader refuses it too)")]
    TooDeep,
    /// Generation and log probabilities differ in length.
    #[error("generation_token_ids and generation_log_probs differ in length ({0} vs {1})")]
    LogProbLength(usize, usize),
    /// `token_item_index` does not index `output_items`.
    #[error("token_item_index {0} is outside output_items (length {1})")]
    TokenItemIndex(i64, usize),
    /// `resolved` without a parent id.
    #[error("a `resolved` parent_resolution requires parent_call_id")]
    ResolvedWithoutParent,
    /// `root` or `unresolved` with a parent id.
    #[error("a `{0}` parent_resolution cannot carry parent_call_id")]
    ParentNotAllowed(&'static str),
    /// A delta prompt without a resolved parent.
    #[error("a delta prompt requires a `resolved` parent_call_id")]
    DeltaWithoutParent,
    /// Negative ids and ids above 2⁶³−1 in one record (no 64-bit form holds both).
    #[error("token ids both negative and above 2^63-1 in one record cannot be kept exactly")]
    MixedSigns,
}

impl TokenRecord {
    /// Parse and validate one line (already stripped of surrounding whitespace).
    pub fn parse(line: &[u8]) -> Result<TokenRecord, RecordError> {
        if let Some(fast) = fast::parse(line, None) {
            return fast.raw.validate().map_err(RecordError::Invalid);
        }
        Self::parse_general(line)
    }

    /// [`TokenRecord::parse`] for the next line of a pass over a file: a prompt that repeats
    /// an earlier record's arrays byte for byte shares their tokens from `earlier`, and this
    /// record's arrays are offered to the lines after it. Also returns where its arrays sit
    /// in `line` (when the fast path read them), for a later pass ([`EarlierArrays::offer`]).
    pub fn parse_after<'a>(
        line: &'a [u8],
        earlier: &mut EarlierArrays<'a>,
    ) -> Result<(TokenRecord, Option<ArraySpans>), RecordError> {
        let Some(fast) = fast::parse(line, Some(earlier)) else {
            return Self::parse_general(line).map(|record| (record, None));
        };
        let fast::FastRecord { raw, texts } = fast;
        let large = raw.large_ids;
        let record = raw.validate().map_err(RecordError::Invalid)?;
        let spans = texts.map(|(prompt, generation)| {
            earlier.remember(&record, prompt, generation, large);
            ArraySpans::within(line, prompt, generation, large)
        });
        Ok((record, spans))
    }

    /// The serde parser: slower, takes any JSON (nested as deep as the reference reader
    /// takes it, [`MAX_DEPTH`]), and words every error.
    fn parse_general(line: &[u8]) -> Result<TokenRecord, RecordError> {
        if nested_deeper_than(line, MAX_DEPTH) {
            return Err(RecordError::Invalid(Refusal::TooDeep));
        }
        let unbounded = |line: &[u8]| {
            let mut deserializer = serde_json::Deserializer::from_slice(line);
            // The depth was checked above: serde's own limit (128) is below the reference's.
            deserializer.disable_recursion_limit();
            let raw = RawRecord::deserialize(&mut deserializer)?;
            deserializer.end().map(|()| raw)
        };
        let raw = match unbounded(line) {
            Ok(raw) => raw,
            Err(error) => {
                // A type error stops serde before the rest of the line is read; the line is
                // still "malformed" when its syntax is broken further on.
                if !error.is_data() {
                    return Err(RecordError::Syntax(error.to_string()));
                }
                let mut whole = serde_json::Deserializer::from_slice(line);
                whole.disable_recursion_limit();
                let syntax = IgnoredAny::deserialize(&mut whole).and_then(|_| whole.end());
                return Err(match syntax {
                    Ok(_) => RecordError::Invalid(Refusal::Field(error.to_string())),
                    Err(syntax) => RecordError::Syntax(syntax.to_string()),
                });
            }
        };
        raw.validate().map_err(RecordError::Invalid)
    }
}

/// The deepest nesting a record may have: the reference writer's reader (orjson) refuses
/// deeper JSON, and so does this one (checked without recursion, so any depth is safe).
pub const MAX_DEPTH: usize = 1024;

/// Whether `json` nests arrays and objects more than `limit` deep (strings skipped).
fn nested_deeper_than(json: &[u8], limit: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in json {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Fields as read, before validation.
#[derive(Default)]
struct RawRecord {
    schema_version: Option<i64>,
    rollout_id: Option<String>,
    model_call_id: Option<String>,
    model: Option<String>,
    prompt_token_ids: Option<Arc<[u64]>>,
    /// The earlier record's tokens that the prompt repeats before `prompt_token_ids`.
    prompt_prefix: Option<TokenSeq>,
    generation_token_ids: Option<Arc<[u64]>>,
    negative_ids: bool,
    large_ids: bool,
    generation_log_probs: Option<Vec<f64>>,
    routed_experts: Value,
    output_items: Vec<Map<String, Value>>,
    token_item_index: Option<i64>,
    created_at: Option<f64>,
    parent_resolution: Option<ParentResolution>,
    parent_call_id: Option<String>,
    parent_resolution_reason: Option<String>,
    cum_len: Option<i64>,
    digest: Option<String>,
    prompt_is_delta: bool,
    prefix_requested: bool,
    prefix_supplied: bool,
    continuation_fingerprint: Option<String>,
    continuation_context_len: Option<i64>,
    continuation_context_digest: Option<String>,
    fingerprint_version: Option<i64>,
    extra: Map<String, Value>,
}

impl RawRecord {
    fn validate(self) -> Result<TokenRecord, Refusal> {
        let schema_version = self.schema_version.unwrap_or(MAX_SCHEMA_VERSION);
        if schema_version > MAX_SCHEMA_VERSION {
            return Err(Refusal::NewerSchema(schema_version));
        }
        if schema_version < MIN_SCHEMA_VERSION {
            return Err(Refusal::PreLineage(schema_version));
        }
        let required = Refusal::Missing;
        let rollout_id = self.rollout_id.ok_or_else(|| required("rollout_id"))?;
        let model_call_id = self
            .model_call_id
            .ok_or_else(|| required("model_call_id"))?;
        let prompt = self
            .prompt_token_ids
            .ok_or_else(|| required("prompt_token_ids"))?;
        let generation = self
            .generation_token_ids
            .ok_or_else(|| required("generation_token_ids"))?;
        let log_probs = self
            .generation_log_probs
            .ok_or_else(|| required("generation_log_probs"))?;
        if generation.len() != log_probs.len() {
            return Err(Refusal::LogProbLength(generation.len(), log_probs.len()));
        }
        if self.negative_ids && self.large_ids {
            return Err(Refusal::MixedSigns);
        }
        let token_item_index = match self.token_item_index {
            None => None,
            Some(index) if index >= 0 && (index as usize) < self.output_items.len() => {
                Some(index as usize)
            }
            Some(index) => {
                return Err(Refusal::TokenItemIndex(index, self.output_items.len()));
            }
        };
        match self.parent_resolution {
            Some(ParentResolution::Resolved)
                if self.parent_call_id.as_deref().is_none_or(str::is_empty) =>
            {
                return Err(Refusal::ResolvedWithoutParent);
            }
            Some(status @ (ParentResolution::Root | ParentResolution::Unresolved))
                if self.parent_call_id.is_some() =>
            {
                return Err(Refusal::ParentNotAllowed(status.as_str()));
            }
            _ => {}
        }
        if self.prompt_is_delta
            && (self.parent_call_id.is_none()
                || self.parent_resolution != Some(ParentResolution::Resolved))
        {
            return Err(Refusal::DeltaWithoutParent);
        }
        Ok(TokenRecord {
            schema_version,
            rollout_id,
            model_call_id,
            model: self.model.unwrap_or_default(),
            prompt_token_ids: (self.prompt_prefix.unwrap_or_default())
                .append_ids(prompt, self.negative_ids),
            generation_token_ids: generation,
            negative_ids: self.negative_ids,
            generation_log_probs: log_probs.into(),
            routed_experts: self.routed_experts,
            output_items: self.output_items.into(),
            token_item_index,
            created_at: self.created_at.unwrap_or(0.0),
            parent_resolution: self.parent_resolution,
            parent_call_id: self.parent_call_id,
            parent_resolution_reason: self.parent_resolution_reason.unwrap_or_default(),
            cum_len: self.cum_len,
            digest: self.digest,
            prompt_is_delta: self.prompt_is_delta,
            prefix_requested: self.prefix_requested,
            prefix_supplied: self.prefix_supplied,
            continuation_fingerprint: self.continuation_fingerprint.unwrap_or_default(),
            continuation_context_len: self.continuation_context_len.unwrap_or(0),
            continuation_context_digest: self.continuation_context_digest.unwrap_or_default(),
            fingerprint_version: self.fingerprint_version,
            extra: Arc::new(self.extra),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fast::{fast_token_array, leading_digits, swar_digits};
    use super::*;

    #[test]
    fn nesting_as_deep_as_the_reference_takes_is_read_and_deeper_is_named() {
        // On a thread with the stack every parsing thread of tokscope has.
        std::thread::Builder::new()
            .stack_size(crate::pool::WORKER_STACK)
            .spawn(nesting_checks)
            .expect("a thread")
            .join()
            .expect("no overflow");
    }

    fn nesting_checks() {
        let line = |depth: usize| {
            format!(
                r#"{{"rollout_id":"r","model_call_id":"c","prompt_token_ids":[1],"generation_token_ids":[2],"generation_log_probs":[-0.5],"routed_experts":{}0{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            )
        };
        for depth in [1, 127, 128, 129, 600, MAX_DEPTH - 1] {
            let record = TokenRecord::parse(line(depth).as_bytes())
                .unwrap_or_else(|e| panic!("depth {depth}: {e}"));
            assert!(record.routed_experts.is_array(), "depth {depth}");
        }
        for depth in [MAX_DEPTH + 1, 100_000] {
            let error = TokenRecord::parse(line(depth).as_bytes()).expect_err("too deep");
            assert!(
                matches!(error, RecordError::Invalid(Refusal::TooDeep)),
                "{error}"
            );
        }
        assert!(
            !nested_deeper_than(br#"{"a":"[[[[[[[["}"#, 2),
            "brackets in strings"
        );
        assert!(nested_deeper_than(b"[[[", 2));
    }

    fn line(extra: &str) -> String {
        format!(
            r#"{{"rollout_id":"r","model_call_id":"c1","prompt_token_ids":[1,2],"generation_token_ids":[3],"generation_log_probs":[-0.5]{extra}}}"#
        )
    }

    fn invalid(extra: &str) -> String {
        match TokenRecord::parse(line(extra).as_bytes()) {
            Err(RecordError::Invalid(refusal)) => refusal.to_string(),
            other => panic!("expected a refusal for {extra:?}, got {other:?}"),
        }
    }

    #[test]
    fn minimal_record_gets_defaults_and_keeps_unknown_keys() {
        let record = TokenRecord::parse(line(r#","future":{"x":1}"#).as_bytes()).unwrap();
        assert_eq!(record.schema_version, 5);
        assert_eq!(record.model, "");
        assert_eq!(record.prompt_token_ids.to_vec(), [1, 2]);
        assert_eq!(record.parent_resolution, None);
        assert_eq!(record.extra["future"], serde_json::json!({"x": 1}));
    }

    #[test]
    fn schema_gate() {
        assert!(invalid(r#","schema_version":6"#).contains("upgrade the reader"));
        assert!(invalid(r#","schema_version":2"#).contains("regenerate"));
        assert!(TokenRecord::parse(line(r#","schema_version":3"#).as_bytes()).is_ok());
    }

    #[test]
    fn validation_rules() {
        assert!(invalid(r#","generation_log_probs":[]"#).contains("differ in length"));
        assert!(invalid(r#","token_item_index":0"#).contains("outside output_items"));
        assert!(invalid(r#","parent_resolution":"resolved""#).contains("requires parent_call_id"));
        assert!(
            invalid(r#","parent_resolution":"root","parent_call_id":"p""#).contains("cannot carry")
        );
        assert!(
            invalid(r#","parent_resolution":"unresolved","parent_call_id":"p""#)
                .contains("cannot carry")
        );
        assert!(invalid(r#","prompt_is_delta":true"#).contains("delta prompt"));
        assert!(invalid(r#","parent_resolution":"maybe""#).contains("unknown value"));
        // Negative ids are kept (the reference fails only where it must digest them); with
        // ids above 2^63-1 in the same record no 64-bit form holds both.
        let negative = TokenRecord::parse(line(r#","prompt_token_ids":[-1,2]"#).as_bytes());
        assert!(
            negative.is_ok_and(|r| r.negative_ids && r.prompt_token_ids.get(0) == Some(u64::MAX))
        );
        assert!(
            invalid(r#","prompt_token_ids":[-1,18446744073709551615]"#).contains("both negative")
        );
        let wide =
            TokenRecord::parse(line(r#","prompt_token_ids":[18446744073709551615]"#).as_bytes());
        assert!(wide.is_ok_and(|r| !r.negative_ids && r.prompt_token_ids.get(0) == Some(u64::MAX)));
        assert!(invalid(r#","model":null"#).contains("model"));
        let missing = TokenRecord::parse(br#"{"rollout_id":"r"}"#);
        assert!(
            matches!(missing, Err(RecordError::Invalid(m)) if m.to_string().contains("model_call_id"))
        );
        assert!(matches!(
            TokenRecord::parse(b"[1,2]"),
            Err(RecordError::Invalid(_))
        ));
    }

    #[test]
    fn syntax_errors_are_told_apart_from_refusals() {
        assert!(matches!(
            TokenRecord::parse(br#"{"rollout_id":"r","prompt"#),
            Err(RecordError::Syntax(_))
        ));
        // A type error before a syntax error is still a malformed line.
        assert!(matches!(
            TokenRecord::parse(br#"{"schema_version":"x","rollout_id":"#),
            Err(RecordError::Syntax(_))
        ));
    }

    #[test]
    fn fuzz_findings_stay_fixed() {
        // A line cut right after a backslash inside a string (a torn write) read past the end.
        for line in [
            &br#"{"model":"x\"#[..],
            br#"{"a":"\"#,
            br#"{"#,
            br#"{"a":["#,
        ] {
            assert!(TokenRecord::parse(line).is_err());
        }
        let found = include_bytes!("../../../../fuzz/regressions/record-backslash-at-end");
        assert!(TokenRecord::parse(found).is_err());
    }

    #[test]
    fn token_array_scanner() {
        assert_eq!(fast_token_array(b"[]"), Some(vec![]));
        assert_eq!(fast_token_array(b"[ ]"), Some(vec![]));
        assert_eq!(fast_token_array(b"[ 1 , 22,333 ]"), Some(vec![1, 22, 333]));
        assert_eq!(
            fast_token_array(b"[0,4294967295]"),
            Some(vec![0, u32::MAX.into()])
        );
        assert_eq!(
            fast_token_array(b"[4294967296,9223372036854775807]"),
            Some(vec![1 << 32, i64::MAX as u64])
        );
        for unusual in [
            // Twenty digits (2^64-1 among them) take the general parser.
            &b"[18446744073709551615]"[..],
            b"[1.0]",
            b"[-1]",
            b"[01]",
            b"[1,]",
            b"[1 2]",
            b"[1e3]",
            b"[1]x",
        ] {
            assert_eq!(
                fast_token_array(unusual),
                None,
                "{}",
                String::from_utf8_lossy(unusual)
            );
        }
    }

    #[test]
    fn swar_digits_match_decimal_parsing() {
        let mut rng = tokscope_testkit::Rng::new(5);
        for _ in 0..20_000 {
            let digits = rng.range(1, 8) as usize;
            let number = rng.range(0, 10u64.pow(digits as u32));
            let text = format!("{number:0digits$},]x9876543");
            let word = u64::from_le_bytes(text.as_bytes()[..8].try_into().unwrap());
            assert_eq!(leading_digits(word), digits, "{text}");
            assert_eq!(swar_digits(word, digits), number, "{text}");
        }
        let word = u64::from_le_bytes(*b"12345678");
        assert_eq!(leading_digits(word), 8);
        assert_eq!(swar_digits(word, 8), 12_345_678);
        for odd in [
            *b"1\xff345678",
            *b"9:;/.,-x",
            *b"\x00\x00\x00\x00\x00\x00\x00\x00",
        ] {
            let word = u64::from_le_bytes(odd);
            let expected = odd.iter().take_while(|b| b.is_ascii_digit()).count();
            assert_eq!(leading_digits(word), expected);
        }
        let tokens: Vec<u64> = (0..5000)
            .map(|_| rng.range(0, u64::from(u32::MAX) + 1) << (rng.range(0, 31)))
            .collect();
        let text = serde_json::to_string(&tokens).unwrap();
        assert_eq!(fast_token_array(text.as_bytes()), Some(tokens));
    }

    #[test]
    fn fast_and_general_parsers_agree() {
        let lines = [
            line(
                r#","future":{"x":[1,"]}"]},"output_items":[{"type":"message","content":[{"text":"a \" ] } {"}]}],"token_item_index":0"#,
            ),
            line(r#","created_at":5,"parent_resolution":"root""#),
            line(r#","schema_version":6"#),
            format!(" {} ", line("")),
        ];
        for text in &lines {
            let fast = fast::parse(text.as_bytes(), None).map(|fast| fast.raw.validate());
            let general =
                serde_json::from_slice::<RawRecord>(text.as_bytes()).map(|raw| raw.validate());
            let fast = fast.expect("well-formed lines take the fast path");
            match (fast, general.unwrap()) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(format!("{a:?}"), format!("{b:?}"));
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                (a, b) => panic!("{a:?} vs {b:?}"),
            }
        }
        // Odd but valid JSON falls back to the general parser and still parses.
        let odd = line(r#","created_at":1e0"#).replace("[1,2]", "[1.0,2]");
        assert!(fast::parse(odd.as_bytes(), None).is_none());
        assert_eq!(
            TokenRecord::parse(odd.as_bytes())
                .unwrap()
                .prompt_token_ids
                .to_vec(),
            [1, 2]
        );
        // Broken lines are left to the general parser, which classifies them.
        for broken in [
            &br#"{"a":1"#[..],
            br#"{"a":1}}"#,
            br#"{"a" 1}"#,
            br#"{"a":[1,2}"#,
            b"{\"a\":\"x\x01\"}",
        ] {
            assert!(
                fast::parse(broken, None).is_none()
                    || serde_json::from_slice::<RawRecord>(broken).is_ok()
            );
        }
    }

    #[test]
    fn lax_numbers() {
        let record = TokenRecord::parse(
            line(r#","schema_version":4.0,"created_at":3,"cum_len":"3""#).as_bytes(),
        )
        .unwrap();
        assert_eq!(record.schema_version, 4);
        assert_eq!(record.created_at, 3.0);
        assert_eq!(record.cum_len, Some(3));
    }
}
