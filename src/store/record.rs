//! The token record (`TokenEntry`, SPEC §3): parsing, the schema gate and validation.
//!
//! Parsing is hand-driven over `serde_json` so that token arrays go straight into shared
//! `u32` buffers (no intermediate `Value`), unknown keys are kept, and every refusal says
//! which field and why.

use std::fmt;
use std::sync::Arc;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

/// Newest record schema this reader understands.
pub const MAX_SCHEMA_VERSION: i64 = 5;
/// Oldest record schema this reader accepts (records below it never left development).
pub const MIN_SCHEMA_VERSION: i64 = 3;

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
    /// Prompt token ids (only the suffix after the parent when `prompt_is_delta`).
    pub prompt_token_ids: Arc<[u32]>,
    /// Sampled token ids.
    pub generation_token_ids: Arc<[u32]>,
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
}

impl TokenRecord {
    /// Parse and validate one line (already stripped of surrounding whitespace).
    pub fn parse(line: &[u8]) -> Result<TokenRecord, RecordError> {
        if let Some(raw) = fast::parse(line) {
            return raw.validate().map_err(RecordError::Invalid);
        }
        let raw = match serde_json::from_slice::<RawRecord>(line) {
            Ok(raw) => raw,
            Err(error) => {
                // A type error stops serde before the rest of the line is read; the line is
                // still "malformed" when its syntax is broken further on.
                if !error.is_data() {
                    return Err(RecordError::Syntax(error.to_string()));
                }
                return Err(match serde_json::from_slice::<IgnoredAny>(line) {
                    Ok(_) => RecordError::Invalid(Refusal::Field(error.to_string())),
                    Err(syntax) => RecordError::Syntax(syntax.to_string()),
                });
            }
        };
        raw.validate().map_err(RecordError::Invalid)
    }
}

/// Fields as read, before validation.
#[derive(Default)]
struct RawRecord {
    schema_version: Option<i64>,
    rollout_id: Option<String>,
    model_call_id: Option<String>,
    model: Option<String>,
    prompt_token_ids: Option<Arc<[u32]>>,
    generation_token_ids: Option<Arc<[u32]>>,
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
            prompt_token_ids: prompt,
            generation_token_ids: generation,
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

impl<'de> de::Deserialize<'de> for RawRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RawRecordVisitor)
    }
}

struct RawRecordVisitor;

/// Attach the field name to a field's error.
fn field<T, E: de::Error>(name: &str, result: Result<T, E>) -> Result<T, E> {
    result.map_err(|e| E::custom(format!("field `{name}`: {e}")))
}

impl<'de> Visitor<'de> for RawRecordVisitor {
    type Value = RawRecord;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a token record object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRecord, A::Error> {
        let mut raw = RawRecord::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            map.next_value_seed(FieldSeed {
                raw: &mut raw,
                key: key.as_ref(),
            })?;
        }
        Ok(raw)
    }
}

/// Reads one field's value into its slot of a [`RawRecord`].
struct FieldSeed<'a> {
    raw: &'a mut RawRecord,
    key: &'a str,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let (raw, k) = (self.raw, self.key);
        match k {
            "schema_version" => raw.schema_version = Some(field(k, LaxInt.deserialize(d))?),
            "rollout_id" => raw.rollout_id = Some(field(k, Deserialize::deserialize(d))?),
            "model_call_id" => raw.model_call_id = Some(field(k, Deserialize::deserialize(d))?),
            "model" => raw.model = Some(field(k, Deserialize::deserialize(d))?),
            "prompt_token_ids" => {
                raw.prompt_token_ids = Some(field(k, TokenIds.deserialize(d))?.into())
            }
            "generation_token_ids" => {
                raw.generation_token_ids = Some(field(k, TokenIds.deserialize(d))?.into())
            }
            "generation_log_probs" => {
                raw.generation_log_probs = Some(field(k, LogProbs.deserialize(d))?)
            }
            "routed_experts" => raw.routed_experts = field(k, Deserialize::deserialize(d))?,
            "output_items" => raw.output_items = field(k, Deserialize::deserialize(d))?,
            "token_item_index" => raw.token_item_index = field(k, Nullable(LaxInt).deserialize(d))?,
            "created_at" => raw.created_at = Some(field(k, LaxFloat.deserialize(d))?),
            "parent_resolution" => {
                raw.parent_resolution = field(k, Option::<String>::deserialize(d))?
                    .map(|s| match s.as_str() {
                        "root" => Ok(ParentResolution::Root),
                        "resolved" => Ok(ParentResolution::Resolved),
                        "unresolved" => Ok(ParentResolution::Unresolved),
                        other => Err(de::Error::custom(format!(
                            "field `parent_resolution`: unknown value {other:?} (expected \
                             root, resolved, unresolved or null)"
                        ))),
                    })
                    .transpose()?
            }
            "parent_call_id" => raw.parent_call_id = field(k, Deserialize::deserialize(d))?,
            "parent_resolution_reason" => {
                raw.parent_resolution_reason = Some(field(k, Deserialize::deserialize(d))?)
            }
            "cum_len" => raw.cum_len = field(k, Nullable(LaxInt).deserialize(d))?,
            "digest" => raw.digest = field(k, Deserialize::deserialize(d))?,
            "prompt_is_delta" => raw.prompt_is_delta = field(k, Deserialize::deserialize(d))?,
            "prefix_requested" => raw.prefix_requested = field(k, Deserialize::deserialize(d))?,
            "prefix_supplied" => raw.prefix_supplied = field(k, Deserialize::deserialize(d))?,
            "continuation_fingerprint" => {
                raw.continuation_fingerprint = Some(field(k, Deserialize::deserialize(d))?)
            }
            "continuation_context_len" => {
                raw.continuation_context_len = Some(field(k, LaxInt.deserialize(d))?)
            }
            "continuation_context_digest" => {
                raw.continuation_context_digest = Some(field(k, Deserialize::deserialize(d))?)
            }
            "fingerprint_version" => {
                raw.fingerprint_version = field(k, Nullable(LaxInt).deserialize(d))?
            }
            _ => {
                let value = Value::deserialize(d)?;
                raw.extra.insert(k.to_owned(), value);
            }
        }
        Ok(())
    }
}

/// A fast path for well-formed records.
///
/// Token arrays are almost all of a store's bytes, and serde's per-element machinery is most
/// of the parse time. This scanner walks the top-level object itself, reads plain integer
/// arrays directly and hands every other value to the same [`FieldSeed`] serde uses. Anything
/// unusual (escapes in keys, floats in token arrays, any syntax error) returns `None` and the
/// line goes through the general parser, which also produces the error messages.
mod fast {
    use super::{FieldSeed, RawRecord};
    use serde::de::DeserializeSeed;

    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    struct Scanner<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl<'a> Scanner<'a> {
        fn skip_ws(&mut self) {
            while self.at < self.bytes.len()
                && matches!(self.bytes[self.at], b' ' | b'\n' | b'\r' | b'\t')
            {
                self.at += 1;
            }
        }

        fn eat(&mut self, byte: u8) -> Option<()> {
            (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
        }

        /// Skip a string starting at its opening quote; returns its contents (raw).
        fn string(&mut self) -> Option<&'a [u8]> {
            self.eat(b'"')?;
            let start = self.at;
            loop {
                let offset = memchr::memchr2(b'"', b'\\', &self.bytes[self.at..])?;
                self.at += offset;
                if self.bytes[self.at] == b'\\' {
                    self.at += 2;
                } else {
                    self.at += 1;
                    return Some(&self.bytes[start..self.at - 1]);
                }
            }
        }

        /// Skip one value; its syntax is checked later by whoever reads it.
        fn value(&mut self) -> Option<&'a [u8]> {
            let start = self.at;
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    let mut depth = 0usize;
                    loop {
                        match *self.bytes.get(self.at)? {
                            b'"' => {
                                self.string()?;
                                continue;
                            }
                            b'{' | b'[' => depth += 1,
                            b'}' | b']' => {
                                depth -= 1;
                                if depth == 0 {
                                    self.at += 1;
                                    break;
                                }
                            }
                            _ => {}
                        }
                        self.at += 1;
                    }
                }
                _ => {
                    while self.at < self.bytes.len()
                        && !matches!(
                            self.bytes[self.at],
                            b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'
                        )
                    {
                        self.at += 1;
                    }
                }
            }
            (self.at > start).then(|| &self.bytes[start..self.at])
        }
    }

    /// The record's fields, or `None` to use the general parser.
    pub(super) fn parse(line: &[u8]) -> Option<RawRecord> {
        let mut scan = Scanner { bytes: line, at: 0 };
        let mut raw = RawRecord::default();
        scan.skip_ws();
        scan.eat(b'{')?;
        scan.skip_ws();
        if scan.eat(b'}').is_none() {
            loop {
                scan.skip_ws();
                let key = scan.string()?;
                if key.iter().any(|&b| b == b'\\' || b < 0x20) {
                    return None;
                }
                let key = std::str::from_utf8(key).ok()?;
                scan.skip_ws();
                scan.eat(b':')?;
                scan.skip_ws();
                match key {
                    "prompt_token_ids" | "generation_token_ids" => {
                        // One reused scratch buffer: no growth copies, no fresh pages per array.
                        let tokens: std::sync::Arc<[u32]> = SCRATCH.with_borrow_mut(|scratch| {
                            let used = super::scan_token_array(&line[scan.at..], scratch)?;
                            scan.at += used;
                            Some(scratch[..].into())
                        })?;
                        if key == "prompt_token_ids" {
                            raw.prompt_token_ids = Some(tokens);
                        } else {
                            raw.generation_token_ids = Some(tokens);
                        }
                    }
                    _ => {
                        let value = scan.value()?;
                        let mut deserializer = serde_json::Deserializer::from_slice(value);
                        FieldSeed { raw: &mut raw, key }
                            .deserialize(&mut deserializer)
                            .ok()?;
                        deserializer.end().ok()?;
                    }
                }
                scan.skip_ws();
                if scan.eat(b',').is_none() {
                    scan.eat(b'}')?;
                    break;
                }
            }
        }
        scan.skip_ws();
        (scan.at == line.len()).then_some(raw)
    }
}

/// `None` when `bytes` is not exactly a plain list of non-negative 32-bit integers.
#[cfg(test)]
fn fast_token_array(bytes: &[u8]) -> Option<Vec<u32>> {
    let mut tokens = Vec::new();
    let used = scan_token_array(bytes, &mut tokens)?;
    (used == bytes.len()).then_some(tokens)
}

/// Read a plain array of non-negative 32-bit integers at the start of `bytes` into `out`
/// (cleared first); returns the bytes consumed, or `None` for anything else.
fn scan_token_array(bytes: &[u8], out: &mut Vec<u32>) -> Option<usize> {
    let n = bytes.len();
    out.clear();
    if bytes.first() != Some(&b'[') {
        return None;
    }
    let mut i = 1;
    let skip_ws = |i: &mut usize| {
        while *i < n && matches!(bytes[*i], b' ' | b'\n' | b'\r' | b'\t') {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if bytes.get(i) == Some(&b']') {
        return Some(i + 1);
    }
    loop {
        skip_ws(&mut i);
        let start = i;
        let mut value: u64 = 0;
        // Up to 7 digits at once; longer numbers and the end of the line take the byte loop.
        let word = bytes
            .get(i..i + 8)
            .map(|chunk| u64::from_le_bytes(chunk.try_into().unwrap()));
        match word.map(|w| (w, leading_digits(w))) {
            Some((word, digits)) if digits < 8 => {
                value = swar_digits(word, digits);
                i += digits;
            }
            _ => {
                while let Some(&byte) = bytes.get(i) {
                    let digit = byte.wrapping_sub(b'0');
                    if digit > 9 {
                        break;
                    }
                    value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
                    i += 1;
                }
            }
        }
        let digits = i - start;
        // JSON forbids leading zeros; a lone "0" is fine. More than 10 digits cannot fit.
        if digits == 0
            || digits > 10
            || (bytes[start] == b'0' && digits > 1)
            || value > u64::from(u32::MAX)
        {
            return None;
        }
        out.push(value as u32);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b']') => return Some(i + 1),
            _ => {
                skip_ws(&mut i);
                match bytes.get(i) {
                    Some(b',') => i += 1,
                    Some(b']') => return Some(i + 1),
                    _ => return None,
                }
            }
        }
    }
}

/// Number of leading ASCII digits in the 8 bytes of `word` (little-endian: first byte first).
fn leading_digits(word: u64) -> usize {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    // A byte is a digit iff its high nibble is 3 and adding 6 keeps it there (low nibble <= 9).
    // A carry out of a non-digit byte only disturbs later bytes, never an earlier flag.
    let not_digit =
        ((word & HIGH) ^ THREES) | ((word.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ THREES);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `count` (1..=7, or 8) digit bytes of `word`.
fn swar_digits(word: u64, count: usize) -> u64 {
    if count == 0 {
        return 0;
    }
    // Digit values, moved to the top so the missing ones read as leading zeros. Borrows from
    // subtracting '0' from non-digit bytes only travel upward, into bytes shifted out.
    let mut v = word.wrapping_sub(0x3030_3030_3030_3030) << (8 * (8 - count));
    v = (v.wrapping_mul(10) + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    (v.wrapping_mul(10000) + (v >> 32)) & 0xFFFF_FFFF
}

/// An integer, also accepted as an integral float or a decimal string (pydantic's lax mode).
#[derive(Clone, Copy)]
struct LaxInt;

impl<'de> DeserializeSeed<'de> for LaxInt {
    type Value = i64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<i64, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for LaxInt {
    type Value = i64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("integer {v} is out of range")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        if v.fract() == 0.0 && v.abs() < 9.0e18 {
            Ok(v as i64)
        } else {
            Err(E::custom(format!("expected an integer, got {v}")))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        v.trim()
            .parse()
            .map_err(|_| E::custom(format!("expected an integer, got {v:?}")))
    }
}

/// A float, also accepted as an integer or a decimal string.
#[derive(Clone, Copy)]
struct LaxFloat;

impl<'de> DeserializeSeed<'de> for LaxFloat {
    type Value = f64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for LaxFloat {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        v.trim()
            .parse()
            .map_err(|_| E::custom(format!("expected a number, got {v:?}")))
    }
}

/// `null` or the inner value.
struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de> + Copy> DeserializeSeed<'de> for Nullable<S> {
    type Value = Option<S::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de> + Copy> Visitor<'de> for Nullable<S> {
    type Value = Option<S::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }
}

/// A token id: a non-negative integer that fits in 32 bits.
#[derive(Clone, Copy)]
struct TokenId;

impl<'de> DeserializeSeed<'de> for TokenId {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for TokenId {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative token id")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
        u32::try_from(v).map_err(|_| E::custom(format!("token id {v} does not fit in 32 bits")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
        if v < 0 {
            Err(E::custom(format!(
                "token id {v} is negative; the digest cannot encode it"
            )))
        } else {
            self.visit_u64(v as u64)
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u32, E> {
        if v.fract() == 0.0 && v >= 0.0 && v <= f64::from(u32::MAX) {
            Ok(v as u32)
        } else {
            Err(E::custom(format!("expected a token id, got {v}")))
        }
    }
}

/// An array of token ids.
struct TokenIds;

impl<'de> DeserializeSeed<'de> for TokenIds {
    type Value = Vec<u32>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u32>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TokenIds {
    type Value = Vec<u32>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of token ids")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u32>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(256));
        while let Some(token) = seq.next_element_seed(TokenId)? {
            out.push(token);
        }
        Ok(out)
    }
}

/// An array of log probabilities.
struct LogProbs;

impl<'de> DeserializeSeed<'de> for LogProbs {
    type Value = Vec<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<f64>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for LogProbs {
    type Value = Vec<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of log probabilities")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f64>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(64));
        while let Some(value) = seq.next_element_seed(LaxFloat)? {
            out.push(value);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(&record.prompt_token_ids[..], &[1, 2]);
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
        assert!(invalid(r#","prompt_token_ids":[-1]"#).contains("negative"));
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
    fn token_array_scanner() {
        assert_eq!(fast_token_array(b"[]"), Some(vec![]));
        assert_eq!(fast_token_array(b"[ ]"), Some(vec![]));
        assert_eq!(fast_token_array(b"[ 1 , 22,333 ]"), Some(vec![1, 22, 333]));
        assert_eq!(fast_token_array(b"[0,4294967295]"), Some(vec![0, u32::MAX]));
        for unusual in [
            &b"[4294967296]"[..],
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
        let tokens: Vec<u32> = (0..5000)
            .map(|_| rng.range(0, u64::from(u32::MAX) + 1) as u32)
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
            let fast = fast::parse(text.as_bytes()).map(|raw| raw.validate());
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
        assert!(fast::parse(odd.as_bytes()).is_none());
        assert_eq!(
            &TokenRecord::parse(odd.as_bytes()).unwrap().prompt_token_ids[..],
            &[1, 2]
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
                fast::parse(broken).is_none()
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
