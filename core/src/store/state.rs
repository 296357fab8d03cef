//! The rollout state file (`<rid>.tokens.state.json`).
//!
//! The writer replaces it atomically. Its flags are read the way the reference store reads
//! them: any JSON value, judged by Python truthiness.

use serde_json::{Map, Value};

use crate::store::record::skip_ws;

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
/// build as a map). It is needed only for the ids of lines past it, so it is kept as text:
/// the reference's, plain, checked by a scan and kept as written; any other, parsed with the
/// file as before and kept as its JSON. Its entries are built only when asked.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryIndex {
    /// A JSON object's text, valid.
    text: Box<str>,
}

impl EntryIndex {
    /// The digests of the call ids `wanted` picks, as the file holds them (the last of a
    /// repeated id wins): a read past the index looks up its own lines' ids, not all.
    pub fn entries_of(&self, wanted: impl Fn(&str) -> bool) -> Map<String, Value> {
        use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
        use std::borrow::Cow;
        /// A key, borrowed from the text unless it has escapes.
        struct Key<'de>(Cow<'de, str>);
        impl<'de> serde::Deserialize<'de> for Key<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Text;
                impl<'de> Visitor<'de> for Text {
                    type Value = Key<'de>;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a call id")
                    }
                    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Key<'de>, E> {
                        Ok(Key(Cow::Borrowed(text)))
                    }
                    fn visit_str<E>(self, text: &str) -> Result<Key<'de>, E> {
                        Ok(Key(Cow::Owned(text.to_owned())))
                    }
                }
                d.deserialize_str(Text)
            }
        }
        struct Pick<F>(F);
        impl<'de, F: Fn(&str) -> bool> Visitor<'de> for Pick<F> {
            type Value = Map<String, Value>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an index of digests")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
                let mut picked = Map::new();
                while let Some(Key(id)) = entries.next_key()? {
                    if (self.0)(&id) {
                        picked.insert(id.into_owned(), entries.next_value()?);
                    } else {
                        entries.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(picked)
            }
        }
        impl<'de, F: Fn(&str) -> bool> DeserializeSeed<'de> for Pick<F> {
            type Value = Map<String, Value>;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_map(self)
            }
        }
        // Checked when the state was read: it parses, and as an object.
        let picked = Pick(wanted)
            .deserialize(&mut serde_json::Deserializer::from_str(&self.text))
            .unwrap_or_default();
        crate::work::count(|work| work.index_entries_built += picked.len() as u64);
        picked
    }

    /// The digests by call id, as the file holds them (the last of a repeated id wins).
    pub fn entries(&self) -> Map<String, Value> {
        self.entries_of(|_| true)
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
        // (see `plain_object_end`), a scan finds its end and only the rest of the top level
        // is parsed (as an object of its own; the scan accepts only text that parses, at the
        // same depth). Anything else, or an error, is parsed whole, as it always was: the
        // same values refused, the same messages, pointing into the file.
        let leading = leading_plain_index(bytes).filter(|_| scan_index);
        let rest = leading.and_then(|(text, after)| {
            let rest = [b"{", &bytes[after..]].concat();
            match serde_json::from_slice(&rest) {
                Ok(Value::Object(fields)) => Some((fields, text)),
                _ => None,
            }
        });
        let (mut raw, leading) = match rest {
            Some((fields, text)) => (fields, Some(text)),
            None => match serde_json::from_slice(bytes) {
                Ok(Value::Object(fields)) => {
                    if fields.contains_key("entry_digests") {
                        crate::work::count(|work| work.index_bytes_parsed += bytes.len() as u64);
                    }
                    (fields, None)
                }
                Ok(_) => {
                    return RolloutState {
                        present: true,
                        error: Some("state file is not a JSON object".into()),
                        ..RolloutState::default()
                    };
                }
                Err(error) => {
                    return RolloutState {
                        present: true,
                        error: Some(format!("state file is not valid JSON: {error}")),
                        ..RolloutState::default()
                    };
                }
            },
        };
        // The last of repeated keys wins: an index later in the file over the leading one.
        let index = match raw.remove("entry_digests") {
            Some(Value::Object(map)) => Some(EntryIndex {
                text: Value::Object(map).to_string().into(),
            }),
            Some(_) => None,
            None => leading.map(|text| EntryIndex { text: text.into() }),
        };
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
        let picked = state
            .entry_digests
            .as_ref()
            .unwrap()
            .entries_of(|id| id == "c2");
        assert_eq!(
            picked.len(),
            1,
            "an escaped id is picked by what it reads as"
        );
        assert!(picked["c2"].is_null());
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
        // Nested past serde_json's depth limit (128) by one level, inside the index.
        texts.push(format!(
            r#"{{"entry_digests":{{"a":{}{}}}}}"#,
            "[".repeat(126),
            "]".repeat(126)
        ));
        let mut all: Vec<Vec<u8>> = texts.into_iter().map(String::into_bytes).collect();
        all.push(not_utf8);
        // Every byte of a writer's state replaced by one that matters to a scan, and the
        // state cut short at every byte.
        let base = br#"{"entry_digests": {"c1": "ab", "c2": null},"frozen":false,"version":2}"#;
        for at in 0..base.len() {
            for byte in [
                b'"', b'\\', b',', b'}', b'{', b' ', b'\t', 1, 0x80, 0xff, b'n', b'1',
            ] {
                let mut text = base.to_vec();
                text[at] = byte;
                all.push(text);
            }
            all.push(base[..at].to_vec());
        }
        for text in &all {
            let (mut scanned, mut parsed) = (
                RolloutState::parse_from(text, true),
                RolloutState::parse_from(text, false),
            );
            let shown = String::from_utf8_lossy(text);
            assert_eq!(
                scanned.entry_digests.take().map(|index| index.entries()),
                parsed.entry_digests.take().map(|index| index.entries()),
                "{shown}"
            );
            // The rest, errors and their messages included.
            assert_eq!(scanned, parsed, "{shown}");
        }
        // Too deep is refused either way, as it always was.
        let deep = format!(
            r#"{{"entry_digests":{{"a":{}{}}}}}"#,
            "[".repeat(126),
            "]".repeat(126)
        );
        assert!(RolloutState::parse(deep.as_bytes()).error.is_some());
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
