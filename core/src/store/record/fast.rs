//! A fast path for well-formed records.
//!
//! Token arrays are almost all of a store's bytes, and serde's per-element machinery is most
//! of the parse time. This scanner walks the top-level object itself, reads plain integer
//! arrays directly and hands every other value to the same [`FieldSeed`] serde uses. Anything
//! unusual (escapes in keys, floats in token arrays, any syntax error) returns `None` and the
//! line goes through the general parser, which also produces the error messages.

use crate::hash::HashMap;
use std::sync::Arc;

use super::super::seq::TokenSeq;
use super::RawRecord;
use super::deserialize::FieldSeed;
use serde::de::DeserializeSeed;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    /// Tokens this thread has read digit by digit (the work a repeat saves).
    static READ_FROM_DIGITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn skip_ws(&mut self) {
        self.at = skip_ws(self.bytes, self.at);
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// Skip a string starting at its opening quote; returns its contents (raw).
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            // A backslash as the last byte (a torn line) leaves `at` past the end.
            let offset = memchr::memchr2(b'"', b'\\', self.bytes.get(self.at..)?)?;
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

/// The token arrays of the records read so far in one pass over a file, with the bytes they
/// were read from.
///
/// A full-prompt record's prompt starts with its parent's prompt and generation, written the
/// same way: most of a store's digits are such repeats. Bytes equal to bytes already read
/// hold the same tokens, so a repeat is compared (memory speed), its tokens shared (the
/// prompt's [`TokenSeq`] starts with the parent's chunks), and only the new tail is read
/// digit by digit.
#[derive(Default)]
pub struct EarlierArrays<'a> {
    by_call: HashMap<String, Arrays<'a>>,
}

/// One earlier record's arrays: the exact bytes from `[` to `]`, and the tokens read there.
struct Arrays<'a> {
    prompt_text: &'a [u8],
    generation_text: &'a [u8],
    prompt: TokenSeq,
    generation: Arc<[u64]>,
    /// Some id of the record is above 2⁶³−1 (of any of its arrays, an over-written duplicate
    /// key's too: it only has to be true when one of these is; it matters only next to a
    /// negative id, which the fast path never reads).
    large: bool,
}

/// Where a record's token arrays sit in its line (from `[` to `]`), to offer them again to
/// the lines appended after it when the file is read again ([`EarlierArrays::offer`]).
#[derive(Clone, Debug)]
pub struct ArraySpans {
    prompt: std::ops::Range<usize>,
    generation: std::ops::Range<usize>,
    large: bool,
}

impl ArraySpans {
    /// Bytes of the two arrays' text.
    pub fn text_len(&self) -> usize {
        self.prompt.len() + self.generation.len()
    }

    /// The spans of `prompt` and `generation`, both slices of `line`.
    pub(super) fn within(line: &[u8], prompt: &[u8], generation: &[u8], large: bool) -> Self {
        let span = |part: &[u8]| {
            let start = part.as_ptr() as usize - line.as_ptr() as usize;
            start..start + part.len()
        };
        ArraySpans {
            prompt: span(prompt),
            generation: span(generation),
            large,
        }
    }
}

/// What the fast path read from one line.
pub(super) struct FastRecord<'a> {
    pub(super) raw: RawRecord,
    /// The bytes of the prompt and generation arrays, for [`EarlierArrays::remember`].
    pub(super) texts: Option<(&'a [u8], &'a [u8])>,
}

impl<'a> EarlierArrays<'a> {
    /// Offer a parsed record's arrays to the records after it (the first record of an id stays).
    pub(super) fn remember(
        &mut self,
        record: &super::TokenRecord,
        prompt_text: &'a [u8],
        generation_text: &'a [u8],
        large: bool,
    ) {
        if self.by_call.contains_key(&record.model_call_id) {
            return;
        }
        self.by_call.insert(
            record.model_call_id.clone(),
            Arrays {
                prompt_text,
                generation_text,
                prompt: record.prompt_token_ids.clone(),
                generation: record.generation_token_ids.clone(),
                large,
            },
        );
    }

    /// Offer a record read in an earlier pass, its line `line` (the same bytes as then) and
    /// its arrays at `spans` there, to the lines after it.
    pub fn offer(&mut self, record: &super::TokenRecord, line: &'a [u8], spans: &ArraySpans) {
        let (Some(prompt), Some(generation)) = (
            line.get(spans.prompt.clone()),
            line.get(spans.generation.clone()),
        ) else {
            return;
        };
        self.remember(record, prompt, generation, spans.large);
    }

    /// Number of records remembered.
    pub fn len(&self) -> usize {
        self.by_call.len()
    }

    /// Whether no record is remembered.
    pub fn is_empty(&self) -> bool {
        self.by_call.is_empty()
    }
}

impl Arrays<'_> {
    /// Read a token array (`bytes` starts at its `[`) that repeats these arrays' tokens, in
    /// order, then goes on: `None` unless its bytes repeat them exactly, up to a number's end.
    /// `out` receives the tokens after the repeat.
    fn read_repeat(&self, bytes: &[u8], out: &mut Vec<u64>) -> Option<(usize, bool)> {
        if bytes.first() != Some(&b'[') {
            return None;
        }
        let mut at = 1;
        let mut repeated_any = false;
        for text in [self.prompt_text, self.generation_text] {
            let inner = trim_ws(text.get(1..text.len().checked_sub(1)?)?);
            if inner.is_empty() {
                continue;
            }
            at = skip_ws(bytes, at);
            if repeated_any {
                // The separator between the parent's prompt and its generation.
                if bytes.get(at) != Some(&b',') {
                    return None;
                }
                at = skip_ws(bytes, at + 1);
            }
            if !bytes.get(at..)?.starts_with(inner) {
                return None;
            }
            at += inner.len();
            repeated_any = true;
        }
        // The last repeated number must end where the earlier one did ("12" is not "123").
        if !repeated_any
            || !matches!(
                bytes.get(at),
                Some(b',' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            )
        {
            return None;
        }
        out.clear();
        let (used, large) = after_number(bytes, at, out)?;
        Some((used, large || self.large))
    }
}

/// JSON's whitespace from `at` on skipped.
pub(crate) fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        at += 1;
    }
    at
}

fn trim_ws(bytes: &[u8]) -> &[u8] {
    let start = skip_ws(bytes, 0);
    let mut end = bytes.len();
    while end > start && matches!(bytes[end - 1], b' ' | b'\n' | b'\r' | b'\t') {
        end -= 1;
    }
    &bytes[start..end]
}

/// The record's fields, or `None` to use the general parser. Token arrays that repeat an
/// earlier record's (named by `parent_call_id` before them) are copied from `earlier`.
pub(super) fn parse<'a>(
    line: &'a [u8],
    earlier: Option<&EarlierArrays<'a>>,
) -> Option<FastRecord<'a>> {
    let mut scan = Scanner { bytes: line, at: 0 };
    let mut raw = RawRecord::default();
    let mut prompt_text = None;
    let mut generation_text = None;
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
                    let is_prompt = key == "prompt_token_ids";
                    let repeated = earlier
                        .filter(|_| is_prompt)
                        .zip(raw.parent_call_id.as_deref())
                        .and_then(|(earlier, parent)| earlier.by_call.get(parent));
                    let start = scan.at;
                    // One reused scratch buffer: no growth copies, no fresh pages per array.
                    let mut prefix = None;
                    let tokens: Arc<[u64]> = SCRATCH.with_borrow_mut(|scratch| {
                        let bytes = &line[start..];
                        let (used, large) = match repeated
                            .and_then(|arrays| Some((arrays, arrays.read_repeat(bytes, scratch)?)))
                        {
                            Some((arrays, read)) => {
                                prefix = Some(arrays.prompt.append(arrays.generation.clone()));
                                read
                            }
                            None => scan_token_array(bytes, scratch)?,
                        };
                        scan.at += used;
                        raw.large_ids |= large;
                        Some(scratch[..].into())
                    })?;
                    let text = &line[start..scan.at];
                    if is_prompt {
                        raw.prompt_token_ids = Some(tokens);
                        raw.prompt_prefix = prefix;
                        prompt_text = Some(text);
                    } else {
                        raw.generation_token_ids = Some(tokens);
                        generation_text = Some(text);
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
    (scan.at == line.len()).then(|| FastRecord {
        raw,
        texts: prompt_text.zip(generation_text),
    })
}

/// `None` when `bytes` is not exactly a plain list of non-negative 32-bit integers.
#[cfg(test)]
pub(super) fn fast_token_array(bytes: &[u8]) -> Option<Vec<u64>> {
    let mut tokens = Vec::new();
    let (used, _) = scan_token_array(bytes, &mut tokens)?;
    (used == bytes.len()).then_some(tokens)
}

/// Read a plain array of non-negative integers of up to 19 digits (all fit in 64 bits) at the
/// start of `bytes` into `out` (cleared first); returns the bytes consumed and whether some id
/// is above 2⁶³−1, or `None` for anything else (the general parser then takes the line:
/// longer numbers, negative ids).
fn scan_token_array(bytes: &[u8], out: &mut Vec<u64>) -> Option<(usize, bool)> {
    out.clear();
    if bytes.first() != Some(&b'[') {
        return None;
    }
    let i = skip_ws(bytes, 1);
    if bytes.get(i) == Some(&b']') {
        return Some((i + 1, false));
    }
    numbers(bytes, i, out)
}

/// Go on reading an array whose last number ended at `i`.
fn after_number(bytes: &[u8], i: usize, out: &mut Vec<u64>) -> Option<(usize, bool)> {
    match separator(bytes, i)? {
        Separator::Comma(next) => numbers(bytes, next, out),
        Separator::Close(end) => Some((end, false)),
    }
}

/// What follows a number of an array, past it.
enum Separator {
    /// A comma: another number follows from here.
    Comma(usize),
    /// The closing bracket: the array ends here.
    Close(usize),
}

/// The separator after a number that ends at `i` (whitespace around it allowed), or `None`.
fn separator(bytes: &[u8], i: usize) -> Option<Separator> {
    let i = skip_ws(bytes, i);
    match bytes.get(i) {
        Some(b',') => Some(Separator::Comma(i + 1)),
        Some(b']') => Some(Separator::Close(i + 1)),
        _ => None,
    }
}

/// Read numbers from `i` (at the next one, or at whitespace before it) to the closing bracket.
/// Tokens this thread read digit by digit since the last call (tests of the work done).
#[cfg(test)]
pub(crate) fn take_tokens_read_from_digits() -> usize {
    READ_FROM_DIGITS.replace(0)
}

fn numbers(bytes: &[u8], i: usize, out: &mut Vec<u64>) -> Option<(usize, bool)> {
    #[cfg(test)]
    let before = out.len();
    let read = read_numbers(bytes, i, out);
    #[cfg(test)]
    READ_FROM_DIGITS.set(READ_FROM_DIGITS.get() + out.len() - before);
    read
}

fn read_numbers(bytes: &[u8], mut i: usize, out: &mut Vec<u64>) -> Option<(usize, bool)> {
    let mut large = false;
    loop {
        i = skip_ws(bytes, i);
        let start = i;
        let mut value: u64 = 0;
        // Up to 7 digits at once; longer numbers and the end of the line take the byte loop.
        let word = bytes
            .get(i..i + 8)
            .and_then(|chunk| chunk.try_into().ok())
            .map(u64::from_le_bytes);
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
                large |= value > i64::MAX as u64;
            }
        }
        let digits = i - start;
        // JSON forbids leading zeros; a lone "0" is fine. Up to 19 digits cannot overflow.
        if digits == 0 || digits > 19 || (bytes[start] == b'0' && digits > 1) {
            return None;
        }
        out.push(value);
        match separator(bytes, i)? {
            Separator::Comma(next) => i = next,
            Separator::Close(end) => return Some((end, large)),
        }
    }
}

/// Number of leading ASCII digits in the 8 bytes of `word` (little-endian: first byte first).
pub(super) fn leading_digits(word: u64) -> usize {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    // A byte is a digit iff its high nibble is 3 and adding 6 keeps it there (low nibble <= 9).
    // A carry out of a non-digit byte only disturbs later bytes, never an earlier flag.
    let not_digit =
        ((word & HIGH) ^ THREES) | ((word.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ THREES);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `count` (1..=7, or 8) digit bytes of `word`.
pub(super) fn swar_digits(word: u64, count: usize) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::super::TokenRecord;
    use super::EarlierArrays;

    fn record(id: &str, parent: Option<&str>, prompt: &str, generation: &str) -> String {
        let resolution = if parent.is_some() { "resolved" } else { "root" };
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        let count = serde_json::from_str::<Vec<u64>>(generation).unwrap().len();
        let logprobs = vec!["-0.5"; count];
        format!(
            r#"{{"generation_log_probs":[{}],"generation_token_ids":{generation},"model_call_id":"{id}","parent_call_id":{parent},"parent_resolution":"{resolution}","prompt_token_ids":{prompt},"rollout_id":"r"}}"#,
            logprobs.join(",")
        )
    }

    /// Read `lines` in one pass and one by one: the records must be the same.
    fn same_as_alone(lines: &[String]) -> Vec<TokenRecord> {
        let mut earlier = EarlierArrays::default();
        let mut records = Vec::new();
        for line in lines {
            let together =
                TokenRecord::parse_after(line.as_bytes(), &mut earlier).map(|(record, _)| record);
            let alone = TokenRecord::parse(line.as_bytes());
            assert_eq!(format!("{together:?}"), format!("{alone:?}"), "{line}");
            records.extend(together.ok());
        }
        records
    }

    #[test]
    fn repeated_arrays_read_as_the_digits_say() {
        let parent = record("a", None, "[1,22,333]", "[4,55]");
        let cases = [
            // The usual child: the parent's whole sequence, then more.
            ("[1,22,333,4,55,6]", Some(vec![1, 22, 333, 4, 55, 6])),
            ("[1,22,333,4,55]", Some(vec![1, 22, 333, 4, 55])),
            // A longer last number is another token, not a repeat.
            ("[1,22,333,4,556,7]", Some(vec![1, 22, 333, 4, 556, 7])),
            ("[1,22,333,4,5]", Some(vec![1, 22, 333, 4, 5])),
            ("[1,22,333,45,5]", Some(vec![1, 22, 333, 45, 5])),
            ("[1, 22, 333, 4, 55, 6]", Some(vec![1, 22, 333, 4, 55, 6])),
            ("[1,22,333,4,55 , 6 ]", Some(vec![1, 22, 333, 4, 55, 6])),
            ("[9]", Some(vec![9])),
            ("[]", Some(vec![])),
            // A float after the repeat is for the general parser (which takes whole ones).
            ("[1,22,333,4,55.0]", Some(vec![1, 22, 333, 4, 55])),
            ("[1,22,333,4,55.5]", None),
            (
                "[1,22,333,4,55,-1]",
                Some(vec![1, 22, 333, 4, 55, u64::MAX]),
            ),
        ];
        for (prompt, expected) in cases {
            let child = record("b", Some("a"), prompt, "[8]");
            let records = same_as_alone(&[parent.clone(), child]);
            let child = records.iter().find(|r| r.model_call_id == "b");
            assert_eq!(
                child.map(|r| r.prompt_token_ids.to_vec()),
                expected,
                "{prompt}"
            );
        }
    }

    #[test]
    fn empty_and_missing_parent_arrays() {
        for (parent_prompt, parent_generation, child_prompt) in [
            ("[]", "[4,55]", "[4,55,6]"),
            ("[1,2]", "[]", "[1,2,6]"),
            ("[]", "[]", "[6]"),
            ("[ 1 , 2 ]", "[ 3 ]", "[1 , 2,3,6]"),
        ] {
            let lines = [
                record("a", None, parent_prompt, parent_generation),
                record("b", Some("a"), child_prompt, "[8]"),
                record("c", Some("zz"), child_prompt, "[8]"),
            ];
            assert_eq!(same_as_alone(&lines).len(), 3);
        }
    }

    #[test]
    fn large_ids_travel_with_the_repeat() {
        let lines = [
            record("a", None, "[9999999999999999999]", "[1]"),
            record("b", Some("a"), "[9999999999999999999,1,2]", "[8]"),
        ];
        let records = same_as_alone(&lines);
        // 19 digits, above 2⁶³−1: read by the fast path, shared, and kept exactly.
        assert_eq!(
            records[1].prompt_token_ids.get(0),
            Some(9_999_999_999_999_999_999)
        );
        assert!(records[1].prompt_token_ids.first_negative(3).is_none());
        assert!(!records[1].negative_ids);
    }

    #[test]
    fn a_conversation_reads_each_token_from_digits_once() {
        let mut lines = Vec::new();
        let mut sequence: Vec<u64> = Vec::new();
        let mut new_tokens = 0;
        for call in 0..100u64 {
            // A tool result, then the model's reply.
            let prompt: Vec<u64> = sequence
                .iter()
                .copied()
                .chain(call * 7..call * 7 + 50)
                .collect();
            let generation: Vec<u64> = (0..20).map(|t| 100_000 + call * 20 + t).collect();
            new_tokens += 70;
            let text = |v: &[u64]| serde_json::to_string(v).unwrap();
            let parent = call.checked_sub(1).map(|p| format!("c{p}"));
            lines.push(record(
                &format!("c{call}"),
                parent.as_deref(),
                &text(&prompt),
                &text(&generation),
            ));
            sequence = prompt;
            sequence.extend(generation);
        }
        super::take_tokens_read_from_digits();
        let mut earlier = EarlierArrays::default();
        for line in &lines {
            TokenRecord::parse_after(line.as_bytes(), &mut earlier).unwrap();
        }
        // Linear in what each call adds (the log probabilities are not token ids).
        assert_eq!(super::take_tokens_read_from_digits(), new_tokens);
        assert_eq!(sequence.len(), new_tokens);
        // Read alone, every line reads all its tokens: quadratic in the conversation.
        super::take_tokens_read_from_digits();
        for line in &lines {
            TokenRecord::parse(line.as_bytes()).unwrap();
        }
        assert!(super::take_tokens_read_from_digits() > 40 * new_tokens);
    }

    #[test]
    fn random_children_read_the_same_in_one_pass() {
        let mut rng = tokscope_testkit::Rng::new(11);
        let mut lines = Vec::new();
        let mut sequences: Vec<Vec<u64>> = Vec::new();
        for call in 0..200 {
            let parent = (call > 0).then(|| rng.range(0, call) as usize);
            let mut prompt = parent.map_or_else(Vec::new, |p| sequences[p].clone());
            // Sometimes change or cut the repeat, or write it with spaces.
            match rng.range(0, 6) {
                0 if !prompt.is_empty() => {
                    let at = rng.range(0, prompt.len() as u64) as usize;
                    prompt[at] = prompt[at] * 10 + 1;
                }
                1 => prompt.truncate(prompt.len() / 2),
                _ => {}
            }
            for _ in 0..rng.range(0, 5) {
                prompt.push(rng.range(0, 200_000));
            }
            let generation: Vec<u64> = (0..rng.range(0, 4)).map(|_| rng.range(0, 99)).collect();
            let mut prompt_text = serde_json::to_string(&prompt).unwrap();
            if rng.range(0, 5) == 0 {
                prompt_text = prompt_text.replace(',', ", ");
            }
            let text = |v: &[u64]| serde_json::to_string(v).unwrap();
            lines.push(record(
                &format!("c{call}"),
                parent.map(|p| format!("c{p}")).as_deref(),
                &prompt_text,
                &text(&generation),
            ));
            let mut sequence = prompt;
            sequence.extend(&generation);
            sequences.push(sequence);
        }
        assert_eq!(same_as_alone(&lines).len(), 200);
    }
}
