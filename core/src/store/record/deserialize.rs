//! Deserializing a record with serde: every field typed as the reference reads it (lax
//! numbers, nullable fields, token arrays straight into `u64` buffers), unknown keys kept.

use super::*;

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
pub(super) struct FieldSeed<'a> {
    pub(super) raw: &'a mut RawRecord,
    pub(super) key: &'a str,
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
                let (tokens, negative, large) = field(k, TokenIds.deserialize(d))?;
                raw.negative_ids |= negative;
                raw.large_ids |= large;
                raw.prompt_token_ids = Some(tokens.into());
                raw.prompt_prefix = None
            }
            "generation_token_ids" => {
                let (tokens, negative, large) = field(k, TokenIds.deserialize(d))?;
                raw.negative_ids |= negative;
                raw.large_ids |= large;
                raw.generation_token_ids = Some(tokens.into())
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

/// A token id as the reference takes it: any integer from -2⁶³ to 2⁶⁴−1 (integral floats
/// too). A negative id is kept as its two's complement; the array says it holds one.
#[derive(Clone, Copy)]
struct TokenId;

/// One id read: its 64 bits, and whether it is negative.
#[derive(Clone, Copy)]
struct Read {
    bits: u64,
    negative: bool,
}

impl<'de> DeserializeSeed<'de> for TokenId {
    type Value = Read;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Read, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for TokenId {
    type Value = Read;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a token id")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Read, E> {
        Ok(Read {
            bits: v,
            negative: false,
        })
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Read, E> {
        Ok(Read {
            bits: v as u64,
            negative: v < 0,
        })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Read, E> {
        // 2⁶⁴ as a float: integral floats below it are exact u64 values.
        const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;
        if v.fract() == 0.0 && (0.0..TWO_TO_64).contains(&v) {
            Ok(Read {
                bits: v as u64,
                negative: false,
            })
        } else if v.fract() == 0.0 && v < 0.0 && v >= i64::MIN as f64 {
            self.visit_i64(v as i64)
        } else {
            Err(E::custom(format!("expected a token id, got {v}")))
        }
    }
}

/// An array of token ids, whether one of them is negative, and whether one is above 2⁶³−1.
pub(super) struct TokenIds;

impl<'de> DeserializeSeed<'de> for TokenIds {
    type Value = (Vec<u64>, bool, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TokenIds {
    type Value = (Vec<u64>, bool, bool);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of token ids")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(256));
        let (mut negative, mut large) = (false, false);
        while let Some(token) = seq.next_element_seed(TokenId)? {
            negative |= token.negative;
            large |= !token.negative && token.bits > i64::MAX as u64;
            out.push(token.bits);
        }
        Ok((out, negative, large))
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
