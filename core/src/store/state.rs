//! The rollout state file (`<rid>.tokens.state.json`).
//!
//! The writer replaces it atomically. Its flags are read the way the reference store reads
//! them: any JSON value, judged by Python truthiness.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The parsed state of a rollout; defaults when the file does not exist.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RolloutState {
    /// Whether the state file exists.
    pub present: bool,
    /// The consumer has taken its snapshot.
    pub frozen: bool,
    /// The snapshot was delivered and the payload files deleted (tombstone).
    pub retired: bool,
    /// Some call failed to capture.
    pub incomplete: bool,
    /// Snapshot id of the freeze, as text.
    pub snapshot_id: String,
    /// Version counter (grows with every change), when it reads as an integer.
    pub version: Option<i64>,
    /// The writer's index of line digests by call id (`None` when missing or not an object).
    pub entry_digests: Option<EntryIndex>,
    /// Byte length of the records file covered by `entry_digests` (`None` when not an int).
    pub indexed_size: Option<i64>,
    /// Why the file could not be used, if it could not.
    pub error: Option<String>,
}

/// The writer's index of line digests by call id, kept as the state file wrote it.
///
/// The reference adds an entry at every call and the writer replaces the state at every
/// call, so a live reader reads a longer index at every append (60 calls: 5.5 KB, 12 µs to
/// build as a map). It is needed only when the records file holds lines past it, so it is
/// checked when read (every value parses) and built only when asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EntryIndex {
    /// A JSON object's text, valid.
    text: Box<str>,
}

impl EntryIndex {
    /// The digests by call id, as the file holds them (the last of a repeated id wins).
    pub fn entries(&self) -> Map<String, Value> {
        // Checked when the state was read: it parses, and as an object.
        let entries: Map<String, Value> = serde_json::from_str(&self.text).unwrap_or_default();
        crate::work::count(|work| work.index_entries_built += entries.len() as u64);
        entries
    }
}

/// A JSON value parsed through (numbers to their value, strings with their escapes) and not
/// kept: a value that does not parse is an error, as when it is built.
struct Parses;

impl<'de> Deserialize<'de> for Parses {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Parses, D::Error> {
        deserializer.deserialize_any(Parses)
    }
}

impl<'de> Visitor<'de> for Parses {
    type Value = Parses;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_str<E>(self, _: &str) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_unit<E>(self) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Parses, A::Error> {
        while items.next_element::<Parses>()?.is_some() {}
        Ok(Parses)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Parses, A::Error> {
        while entries.next_entry::<Parses, Parses>()?.is_some() {}
        Ok(Parses)
    }
}

/// A state file's top level: its fields but the index as values, the index as text (the
/// last of each key wins, as in Python); `None` when it is not an object.
struct TopLevel<'a>(Option<(Map<String, Value>, Option<&'a RawValue>)>);

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TopLevel<'de>, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = TopLevel<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
                let (mut fields, mut index) = (Map::new(), None);
                while let Some(key) = entries.next_key::<String>()? {
                    if key == "entry_digests" {
                        let raw: &RawValue = entries.next_value()?;
                        serde_json::from_str::<Parses>(raw.get())
                            .map_err(serde::de::Error::custom)?;
                        index = Some(raw);
                    } else {
                        fields.insert(key, entries.next_value()?);
                    }
                }
                Ok(TopLevel(Some((fields, index))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, items: A) -> Result<Self::Value, A::Error> {
                Parses.visit_seq(items).map(|_| TopLevel(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(TopLevel(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(TopLevel(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(TopLevel(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(TopLevel(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(TopLevel(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(TopLevel(None))
            }
        }
        deserializer.deserialize_any(Fields)
    }
}

/// Python truthiness of a JSON value.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python `int(value)` for a JSON value, if it succeeds.
pub(crate) fn py_int(value: &Value) -> Option<i64> {
    match value {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite())
                .map(|f| f.trunc() as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

impl RolloutState {
    /// Parse the bytes of a state file.
    pub fn parse(bytes: &[u8]) -> RolloutState {
        let top: TopLevel<'_> = match serde_json::from_slice(bytes) {
            Ok(top) => top,
            Err(error) => {
                return RolloutState {
                    present: true,
                    error: Some(format!("state file is not valid JSON: {error}")),
                    ..RolloutState::default()
                };
            }
        };
        let TopLevel(Some((raw, index))) = top else {
            return RolloutState {
                present: true,
                error: Some("state file is not a JSON object".into()),
                ..RolloutState::default()
            };
        };
        let flag = |key: &str| raw.get(key).is_some_and(truthy);
        let frozen = flag("frozen");
        let version = match raw.get("version") {
            None => Some(0),
            Some(value) => py_int(value),
        };
        let mut error = None;
        if version.is_none() {
            error = Some(format!(
                "state `version` is not an integer: {}",
                raw.get("version").map(Value::to_string).unwrap_or_default()
            ));
        } else if frozen && !raw.contains_key("snapshot_id") {
            error = Some("state is frozen but has no `snapshot_id`".into());
        } else if frozen && !raw.contains_key("version") {
            error = Some("state is frozen but has no `version`".into());
        }
        RolloutState {
            present: true,
            frozen,
            retired: flag("retired"),
            incomplete: flag("incomplete"),
            snapshot_id: match raw.get("snapshot_id") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            },
            version,
            entry_digests: index
                .filter(|text| text.get().starts_with('{'))
                .map(|text| EntryIndex {
                    text: text.get().into(),
                }),
            indexed_size: match raw.get("indexed_size") {
                Some(Value::Bool(b)) => Some(i64::from(*b)),
                Some(Value::Number(n)) => n.as_i64(),
                _ => None,
            },
            error,
        }
    }

    /// A missing state file.
    pub fn absent() -> RolloutState {
        RolloutState {
            version: Some(0),
            entry_digests: Some(EntryIndex { text: "{}".into() }),
            indexed_size: Some(0),
            ..RolloutState::default()
        }
    }

    /// The index is "legacy" (to be rebuilt from the whole file) when either part is unusable.
    pub(crate) fn legacy_index(&self) -> bool {
        self.entry_digests.is_none() || self.indexed_size.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_writer_state() {
        let state = RolloutState::parse(
            br#"{"entry_digests": {}, "frozen": true, "incomplete": false, "indexed_size": 10, "retired": false, "snapshot_id": "ab", "version": 7}"#,
        );
        assert!(state.frozen && !state.retired && !state.incomplete);
        assert_eq!(state.version, Some(7));
        assert_eq!(state.indexed_size, Some(10));
        assert!(!state.legacy_index());
        assert_eq!(state.error, None);
    }

    #[test]
    fn the_digest_index_is_read_and_values_that_do_not_parse_are_errors() {
        let state = RolloutState::parse(
            br#"{"entry_digests": {"c1": "ab", "c\u0032": null}, "indexed_size": 3, "version": 1, "version": 2}"#,
        );
        // The last of duplicate keys wins, as in Python.
        assert_eq!(state.version, Some(2));
        assert!(!state.legacy_index());
        let index = state.entry_digests.unwrap().entries();
        assert_eq!(index["c1"], "ab");
        assert!(index["c2"].is_null());
        // Kept as text and built when asked, the same: a repeated id's last digest wins, and
        // of two indexes the last.
        let repeated = RolloutState::parse(
            br#"{"entry_digests": {"c1": "ab"}, "entry_digests" :  {"c1": "ab", "c1": "cd"}, "indexed_size": 0}"#,
        );
        let index = repeated.entry_digests.unwrap().entries();
        assert_eq!((index.len(), &index["c1"]), (1, &Value::from("cd")));
        let replaced =
            RolloutState::parse(br#"{"entry_digests": {"c1": "ab"}, "entry_digests": 3}"#);
        assert!(replaced.entry_digests.is_none() && replaced.error.is_none());
        let not_an_index = RolloutState::parse(br#"{"entry_digests": [], "indexed_size": 0}"#);
        assert!(not_an_index.entry_digests.is_none() && not_an_index.legacy_index());
        // Well-formed text whose values do not parse (a number out of range, a lone
        // surrogate), wherever they are, make the file unusable: every value is parsed,
        // not only those read.
        for bad in [
            r#"{"x": 1e400, "version": 3}"#,
            r#"{"entry_digests": {"a": "\udc00"}, "indexed_size": 0}"#,
            r#"{"snapshot_id": "\ud800", "frozen": true, "version": 3}"#,
        ] {
            let error = RolloutState::parse(bad.as_bytes()).error.unwrap();
            assert!(
                error.starts_with("state file is not valid JSON: "),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn truthiness_and_errors() {
        let state = RolloutState::parse(br#"{"incomplete": "yes", "retired": 0, "version": "3"}"#);
        assert!(state.incomplete && !state.retired);
        assert_eq!(state.version, Some(3));
        assert!(state.legacy_index());
        assert!(RolloutState::parse(b"[1]").error.is_some());
        assert!(RolloutState::parse(b"{").error.is_some());
        assert!(
            RolloutState::parse(br#"{"frozen": true, "version": 1}"#)
                .error
                .unwrap()
                .contains("snapshot_id")
        );
        assert!(RolloutState::parse(br#"{"version": null}"#).error.is_some());
    }
}
