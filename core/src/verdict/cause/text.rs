//! What an edit did to the text, when a tokenizer can decode both sides: the classes a
//! harness's re-rendered history falls into, and a short normalized snippet of each side.

use serde::Serialize;

/// How the text of the two sides of an edit differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TextClass {
    /// The same text, tokenized differently (a word re-split).
    Retokenized,
    /// A reasoning block (`<think>…</think>`) the parent generated is missing.
    ReasoningRemoved,
    /// The same JSON, serialized differently (spacing, key order).
    JsonReserialized,
    /// Only whitespace differs (trimmed, collapsed, re-indented).
    WhitespaceOnly,
    /// Other text.
    OtherText,
}

impl TextClass {
    /// Its name in signatures.
    pub fn name(self) -> &'static str {
        match self {
            TextClass::Retokenized => "retokenized_same_text",
            TextClass::ReasoningRemoved => "reasoning_removed",
            TextClass::JsonReserialized => "json_reserialized",
            TextClass::WhitespaceOnly => "whitespace_only",
            TextClass::OtherText => "other_text",
        }
    }

    /// Words for a title.
    pub fn words(self) -> &'static str {
        match self {
            TextClass::Retokenized => "same text, tokenized differently",
            TextClass::ReasoningRemoved => "reasoning block removed",
            TextClass::JsonReserialized => "JSON re-serialized",
            TextClass::WhitespaceOnly => "whitespace only",
            TextClass::OtherText => "other text",
        }
    }
}

/// The decoded sides of an edit, classified.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TextChange {
    /// The class.
    pub class: TextClass,
    /// The parent's side, normalized (see [`snippet`]).
    pub removed: String,
    /// The child's side, normalized.
    pub inserted: String,
}

/// Reasoning markers of the chat templates that strip them from history.
const REASONING_MARKERS: [&str; 4] = ["<think>", "</think>", "<|begin_of_thought|>", "<reasoning>"];

fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn sorted_chars(text: &str) -> Vec<char> {
    let mut chars: Vec<char> = without_whitespace(text).chars().collect();
    chars.sort_unstable();
    chars
}

fn jsonish(text: &str) -> bool {
    text.contains(['{', '}', '"', ':', '[', ']'])
}

/// The decoded text around an edit.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// Text before the first difference (the same on both sides).
    pub before: String,
    /// What the parent's side has in the edit.
    pub removed: String,
    /// What the child's side has in its place.
    pub inserted: String,
    /// The parent's side from the first difference on, longer than the edit (for JSON).
    pub parent_after: String,
    /// The child's side from the first difference on, longer than the edit.
    pub child_after: String,
}

/// Braces before the difference tried as the start of a JSON value.
const JSON_STARTS: usize = 8;

/// Whether the JSON value that starts before the difference and spans it reads the same on
/// both sides while its text differs (spacing, key order): tried from each of the nearest
/// [`JSON_STARTS`] braces.
fn same_json(text: &Decoded) -> bool {
    // The first JSON value of `text`, if it runs past byte `past` (spans the difference).
    let spanning_value = |text: &str, past: usize| {
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
        let value = values.next()?.ok()?;
        (values.byte_offset() > past).then_some(value)
    };
    let starts = text.before.match_indices('{').map(|(at, _)| at);
    let starts: Vec<usize> = starts.collect();
    starts.iter().rev().take(JSON_STARTS).any(|&at| {
        let head = &text.before[at..];
        let parent = format!("{head}{}", text.parent_after);
        let child = format!("{head}{}", text.child_after);
        matches!(
            (spanning_value(&parent, head.len()), spanning_value(&child, head.len())),
            (Some(a), Some(b)) if a == b && a.is_object()
        )
    })
}

/// Classify an edit from its decoded text (JSON spacing shows only in context: `{"a":` then
/// ` 1` against `1`).
pub fn classify(text: &Decoded) -> TextClass {
    let (removed, inserted) = (text.removed.as_str(), text.inserted.as_str());
    let marked = |text: &str| REASONING_MARKERS.iter().any(|m| text.contains(m));
    if removed == inserted {
        return TextClass::Retokenized;
    }
    if marked(removed) && !marked(inserted) {
        return TextClass::ReasoningRemoved;
    }
    if same_json(text) {
        return TextClass::JsonReserialized;
    }
    let last_before = text.before.trim_end().chars().last();
    let in_json = text.before.contains('"') && last_before.is_some_and(|c| ":,{[".contains(c));
    if without_whitespace(removed) == without_whitespace(inserted) {
        return if in_json || (jsonish(removed) && jsonish(inserted)) {
            TextClass::JsonReserialized
        } else {
            TextClass::WhitespaceOnly
        };
    }
    // The same characters in another order: keys re-ordered.
    if jsonish(removed) && sorted_chars(removed) == sorted_chars(inserted) {
        return TextClass::JsonReserialized;
    }
    TextClass::OtherText
}

/// Longest snippet kept of each side, in characters.
pub const SNIPPET: usize = 48;

/// A side of an edit as one short line: line breaks as `⏎`, tabs as `⇥`, a run of spaces as
/// `·` each (so trimmed whitespace is visible), cut in the middle with `…` past [`SNIPPET`].
pub fn snippet(text: &str) -> String {
    let visible: Vec<char> = text
        .chars()
        .map(|c| match c {
            '\n' => '⏎',
            '\t' => '⇥',
            ' ' => '·',
            c if c.is_control() => '�',
            c => c,
        })
        .collect();
    if visible.len() <= SNIPPET {
        return visible.into_iter().collect();
    }
    let half = SNIPPET / 2;
    let head: String = visible[..half].iter().collect();
    let tail: String = visible[visible.len() - (SNIPPET - half - 1)..]
        .iter()
        .collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_re_rendered_history_gets_its_class() {
        let edit = |before: &str, removed: &str, inserted: &str, after: &str| Decoded {
            before: before.into(),
            removed: removed.into(),
            inserted: inserted.into(),
            parent_after: format!("{removed}{after}"),
            child_after: format!("{inserted}{after}"),
        };
        let class =
            |before, removed, inserted, after| classify(&edit(before, removed, inserted, after));
        assert_eq!(class("say ", "hello", "hello", ""), TextClass::Retokenized);
        assert_eq!(
            class("assistant\n", "<think>\nplan\n</think>\n\n", "", "Done."),
            TextClass::ReasoningRemoved
        );
        assert_eq!(
            class("{\"path\":", " ", "", "\"a\"}"),
            TextClass::JsonReserialized
        );
        // Keys re-ordered: the minimal edit is one key moved, the object reads the same.
        let moved = Decoded {
            before: "call {\"a\": 1, ".into(),
            removed: "\"b\": 2, ".into(),
            inserted: "".into(),
            parent_after: "\"b\": 2, \"c\": 3}</tool>".into(),
            child_after: "\"c\": 3, \"b\": 2}</tool>".into(),
        };
        assert_eq!(classify(&moved), TextClass::JsonReserialized);
        assert_eq!(
            class("The answer is 42.", "  \n", "", "<eos>"),
            TextClass::WhitespaceOnly
        );
        assert_eq!(class("a ", "cat", "dog", " sat"), TextClass::OtherText);
        // Other JSON values: not the same object.
        assert_eq!(class("{\"a\": ", "1", "2", "}"), TextClass::OtherText);
        // An object that ends before the difference says nothing about it (a tool call, then
        // a file listing whose last name changed).
        assert_eq!(
            class(
                "{\"cmd\": \"ls src\"}\nparser.rs\n",
                "lib",
                " config",
                ".rs"
            ),
            TextClass::OtherText
        );
    }

    #[test]
    fn snippets_show_whitespace_and_keep_both_ends() {
        assert_eq!(snippet("a b\n\tc"), "a·b⏎⇥c");
        let long = "x".repeat(30) + &"y".repeat(30);
        let s = snippet(&long);
        assert_eq!(s.chars().count(), SNIPPET);
        assert!(
            s.starts_with("xxx") && s.ends_with("yyy") && s.contains('…'),
            "{s}"
        );
        assert_eq!(snippet("\u{1b}[2J"), "�[2J");
    }
}
