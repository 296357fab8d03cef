//! The rollout state file (`<rid>.tokens.state.json`).
//!
//! The writer replaces it atomically. Its flags are read the way the reference store reads
//! them: any JSON value, judged by Python truthiness.

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
    pub entry_digests: Option<Map<String, Value>>,
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
    pub fn parse(bytes: &[u8]) -> RolloutState {
        let value: Value = match serde_json::from_slice(bytes) {
            Ok(value) => value,
            Err(error) => {
                return RolloutState {
                    present: true,
                    error: Some(format!("state file is not valid JSON: {error}")),
                    ..RolloutState::default()
                };
            }
        };
        let Value::Object(mut raw) = value else {
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
            // Moved out, not copied: the writer replaces the file at every call, so it is
            // read at every append, and the index grows with every call.
            entry_digests: match raw.remove("entry_digests") {
                Some(Value::Object(map)) => Some(map),
                _ => None,
            },
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
            entry_digests: Some(Map::new()),
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
        let index = state.entry_digests.unwrap();
        assert_eq!(index["c1"], "ab");
        assert!(index["c2"].is_null());
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
