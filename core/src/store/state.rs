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
                        crate::work::count(|work| {
                            work.index_bytes_parsed += raw.get().len() as u64;
                        });
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

/// JSON's whitespace from `at` on skipped.
fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Where a state's text opens with its index, plain: the index's bytes and where the rest of
/// the top level starts (after the comma that follows the index, or at the closing brace).
fn leading_plain_index(bytes: &[u8]) -> Option<(&str, usize)> {
    const KEY: &[u8] = br#""entry_digests""#;
    let at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let at = skip_ws(bytes, at + 1);
    if !bytes.get(at..)?.starts_with(KEY) {
        return None;
    }
    let at = skip_ws(bytes, at + KEY.len());
    if bytes.get(at) != Some(&b':') {
        return None;
    }
    let start = skip_ws(bytes, at + 1);
    let (len, ascii) = plain_object_end(bytes.get(start..)?)?;
    let text = &bytes[start..start + len];
    let text = if ascii {
        // SAFETY: every byte is ASCII (checked by `plain_object_end`), so it is UTF-8.
        unsafe { std::str::from_utf8_unchecked(text) }
    } else {
        std::str::from_utf8(text).ok()?
    };
    let end = start + len;
    let after = skip_ws(bytes, end);
    match bytes.get(after)? {
        // A comma must be followed by a key (`{"entry_digests": {}, }` is not JSON).
        b',' if bytes.get(skip_ws(bytes, after + 1)) == Some(&b'"') => Some((text, after + 1)),
        b'}' => Some((text, after)),
        _ => None,
    }
}

/// The length of a plain object at the start of `bytes`: keys and values strings with
/// neither escapes nor control characters (values may be `null`), as the reference's index
/// of call ids and hex digests is, and whether all of it is ASCII. `None` for anything else,
/// valid or not.
fn plain_object_end(bytes: &[u8]) -> Option<(usize, bool)> {
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let mut at = skip_ws(bytes, 1);
    if bytes.get(at) == Some(&b'}') {
        return Some((at + 1, true));
    }
    let mut ascii = true;
    let mut string = |at: usize| {
        let (end, plain_ascii) = plain_string_end(bytes, at)?;
        ascii &= plain_ascii;
        Some(end)
    };
    loop {
        at = skip_ws(bytes, string(at)?);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(bytes, at + 1);
        at = if bytes[at..].starts_with(b"null") {
            at + 4
        } else {
            string(at)?
        };
        at = skip_ws(bytes, at);
        match bytes.get(at)? {
            b',' => at = skip_ws(bytes, at + 1),
            b'}' => return Some((at + 1, ascii)),
            _ => return None,
        }
    }
}

/// The end (past its closing quote) of a string at `at` with neither escapes nor control
/// characters, and whether it is ASCII. Eight bytes at a time: an index holds thousands.
fn plain_string_end(bytes: &[u8], at: usize) -> Option<(usize, bool)> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    /// Whether some byte of `word` is a quote, a backslash, below 0x20 or not ASCII (exact
    /// for "some": a borrow only spreads above a byte that matched).
    fn special(word: u64) -> bool {
        let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
        let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
        (zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | below_space
            | (word & HIGH))
            != 0
    }
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let (mut i, mut ascii) = (at + 1, true);
    loop {
        while let Some(word) = bytes.get(i..i + 8) {
            if special(u64::from_le_bytes(word.try_into().ok()?)) {
                break;
            }
            i += 8;
        }
        match *bytes.get(i)? {
            b'"' => return Some((i + 1, ascii)),
            b'\\' | 0..0x20 => return None,
            0x80.. => ascii = false,
            _ => {}
        }
        i += 1;
    }
}

impl RolloutState {
    /// Parse the bytes of a state file.
    pub fn parse(bytes: &[u8]) -> RolloutState {
        RolloutState::parse_from(bytes, true)
    }

    /// [`RolloutState::parse`], its index found by a scan when plain (`scan_index`; else
    /// the whole file goes through the parser, as the tests compare).
    fn parse_from(bytes: &[u8], scan_index: bool) -> RolloutState {
        // The reference writes its keys sorted, its index first: when that index is plain
        // (see `plain_object_end`), a scan finds its end and the rest is parsed as an object
        // of its own. Anything else, or an error, goes through the whole parse (its messages
        // then point into the file).
        let leading = leading_plain_index(bytes).filter(|_| scan_index);
        let rest: Vec<u8>;
        let fast = match &leading {
            Some((_, after)) => {
                rest = [b"{", &bytes[*after..]].concat();
                serde_json::from_slice::<TopLevel<'_>>(&rest).ok()
            }
            None => None,
        };
        let top: TopLevel<'_> = match fast.map_or_else(|| serde_json::from_slice(bytes), Ok) {
            Ok(TopLevel(Some((fields, None)))) if leading.is_some() => {
                let index = leading.map(|(text, _)| EntryIndex { text: text.into() });
                return RolloutState::from_fields(fields, index);
            }
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
        let index = index
            .filter(|text| text.get().starts_with('{'))
            .map(|text| EntryIndex {
                text: text.get().into(),
            });
        RolloutState::from_fields(raw, index)
    }

    /// The state of a file's top-level fields but its index, and its index.
    fn from_fields(raw: Map<String, Value>, index: Option<EntryIndex>) -> RolloutState {
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
            entry_digests: index,
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

    /// The index found by a scan reads as the whole parse reads it, or leaves it to it.
    #[test]
    fn a_plain_index_scanned_reads_as_parsed() {
        let index = r#"{"c1": "ab", "c2" :"cd" ,"c3":null}"#;
        let mut texts: Vec<String> = vec![
            format!(r#"{{"entry_digests":{index},"frozen":false,"indexed_size":3,"version":4}}"#),
            format!(r#" {{ "entry_digests" : {index} }} "#),
            format!(r#"{{"entry_digests": {index}, "entry_digests": {{"x": "y"}}, "version": 1}}"#),
            format!(r#"{{"entry_digests": {index}, "entry_digests": [], "version": 1}}"#),
            format!(r#"{{"entry_digests": {index}, "version": 1, "x": 1e400}}"#),
            format!(r#"{{"entry_digests": {index}, }}"#),
            format!(r#"{{"entry_digests": {index},, "version": 1}}"#),
            format!(r#"{{"entry_digests": {index} "version": 1}}"#),
            format!(r#"{{"entry_digests": {index}}} x"#),
            format!(r#"{{"entry_digests": {index}"#),
            r#"{"entry_digests": {}, "frozen": true, "snapshot_id": "s", "version": 2}"#.into(),
            r#"{"entry_digests": {"c1": "ab"}, "version": 1}"#.into(),
            r#"{"entry_digests": {"c1": "a	b"}, "version": 1}"#.into(),
            r#"{"entry_digests": {"c1": 3}, "version": 1}"#.into(),
            r#"{"entry_digests": {"c1": nul}, "version": 1}"#.into(),
            r#"{"entry_digests": {"c1" "ab"}, "version": 1}"#.into(),
            r#"{"entry_digests": {"c1": "ab",}, "version": 1}"#.into(),
            r#"{"frozen": false, "entry_digests": {"c1": "ab"}}"#.into(),
        ];
        // A control character and a byte that is not UTF-8 inside a string.
        texts.push("{\"entry_digests\": {\"c1\": \"a\u{1}b\"}}".into());
        let mut not_utf8 = br#"{"entry_digests": {"c1": "a"#.to_vec();
        not_utf8.extend_from_slice(&[0xff, b'"', b'}', b'}']);
        let mut all: Vec<Vec<u8>> = texts.into_iter().map(String::into_bytes).collect();
        all.push(not_utf8);
        for text in &all {
            let (scanned, parsed) = (
                RolloutState::parse_from(text, true),
                RolloutState::parse_from(text, false),
            );
            let shown = String::from_utf8_lossy(text);
            assert_eq!(scanned, parsed, "{shown}");
            assert_eq!(
                scanned.entry_digests.map(|index| index.entries()),
                parsed.entry_digests.map(|index| index.entries()),
                "{shown}"
            );
        }
        // The first is scanned, not parsed: its index is kept as written.
        crate::work::take();
        let first = RolloutState::parse(&all[0]);
        assert_eq!(first.entry_digests.unwrap().text.as_ref(), index);
        assert_eq!(crate::work::take().index_bytes_parsed, 0);
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
