//! The rollout state file (`<rid>.tokens.state.json`).
//!
//! The writer replaces it atomically. Its flags are read the way the reference store reads
//! them: any JSON value, judged by Python truthiness.

use std::borrow::Cow;
use std::collections::HashMap;

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
    /// `entry_digests`, the writer's index of line digests by call id, as written (`None`
    /// when missing or not an object): it grows with every call and is read only when the
    /// records file goes past the index ([`RolloutState::entry_digests`]).
    pub entry_digests_text: Option<String>,
    /// Byte length of the records file covered by `entry_digests` (`None` when not an int).
    pub indexed_size: Option<i64>,
    /// Why the file could not be used, if it could not.
    pub error: Option<String>,
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
    ///
    /// The writer replaces it at every call, so it is read at every append: its values are
    /// taken as written text and only the few read here are parsed (no map of every value
    /// built, no entry of the digest index read).
    pub fn parse(bytes: &[u8]) -> RolloutState {
        // Duplicate keys: the last one wins, as in Python's `json.loads`.
        let raw: HashMap<Cow<'_, str>, &RawValue> = match serde_json::from_slice(bytes) {
            Ok(raw) => raw,
            // Not an object, or not JSON: said as the whole value's parse says it.
            Err(_) => return RolloutState::unusable(bytes),
        };
        let value = |key: &str| {
            raw.get(key)
                .map(|text| serde_json::from_str::<Value>(text.get()).unwrap_or(Value::Null))
        };
        let flag = |key: &str| value(key).as_ref().is_some_and(truthy);
        let frozen = flag("frozen");
        let version_value = value("version");
        let version = match &version_value {
            None => Some(0),
            Some(value) => py_int(value),
        };
        let mut error = None;
        if version.is_none() {
            error = Some(format!(
                "state `version` is not an integer: {}",
                version_value.map(|v| v.to_string()).unwrap_or_default()
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
            snapshot_id: match value("snapshot_id") {
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => String::new(),
            },
            version,
            entry_digests_text: raw
                .get("entry_digests")
                .filter(|text| text.get().starts_with('{'))
                .map(|text| text.get().to_owned()),
            indexed_size: match value("indexed_size") {
                Some(Value::Bool(b)) => Some(i64::from(b)),
                Some(Value::Number(n)) => n.as_i64(),
                _ => None,
            },
            error,
        }
    }

    /// A state file that is not a JSON object, and why.
    fn unusable(bytes: &[u8]) -> RolloutState {
        let error = match serde_json::from_slice::<Value>(bytes) {
            Err(error) => format!("state file is not valid JSON: {error}"),
            Ok(_) => "state file is not a JSON object".into(),
        };
        RolloutState {
            present: true,
            error: Some(error),
            ..RolloutState::default()
        }
    }

    /// A missing state file.
    pub fn absent() -> RolloutState {
        RolloutState {
            version: Some(0),
            entry_digests_text: Some("{}".into()),
            indexed_size: Some(0),
            ..RolloutState::default()
        }
    }

    /// The index is "legacy" (to be rebuilt from the whole file) when either part is unusable.
    pub(crate) fn legacy_index(&self) -> bool {
        self.entry_digests_text.is_none() || self.indexed_size.is_none()
    }

    /// The writer's index of line digests by call id (`None` when missing or not an object).
    pub fn entry_digests(&self) -> Option<Map<String, Value>> {
        serde_json::from_str(self.entry_digests_text.as_deref()?).ok()
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
    fn the_digest_index_is_kept_as_written_and_read_when_asked() {
        let state = RolloutState::parse(
            br#"{"entry_digests": {"c1": "ab", "c\u0032": null}, "indexed_size": 3, "version": 1, "version": 2}"#,
        );
        // The last of duplicate keys wins, as in Python.
        assert_eq!(state.version, Some(2));
        assert!(!state.legacy_index());
        let index = state.entry_digests().unwrap();
        assert_eq!(index["c1"], "ab");
        assert!(index["c2"].is_null());
        for not_an_index in [
            r#"{"entry_digests": [], "indexed_size": 0}"#,
            r#"{"indexed_size": 0}"#,
        ] {
            let state = RolloutState::parse(not_an_index.as_bytes());
            assert!(state.entry_digests().is_none() && state.legacy_index());
        }
        assert_eq!(RolloutState::absent().entry_digests(), Some(Map::new()));
        assert_eq!(
            RolloutState::parse(b"[1]").error.as_deref(),
            Some("state file is not a JSON object")
        );
        assert!(
            RolloutState::parse(b"{\"version\": 1,")
                .error
                .unwrap()
                .starts_with("state file is not valid JSON: ")
        );
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
