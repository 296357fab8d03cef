//! A fast path for well-formed records.
//!
//! Token arrays are almost all of a store's bytes, and serde's per-element machinery is most
//! of the parse time. This scanner walks the top-level object itself, reads plain integer
//! arrays directly and hands every other value to the same [`FieldSeed`] serde uses. Anything
//! unusual (escapes in keys, floats in token arrays, any syntax error) returns `None` and the
//! line goes through the general parser, which also produces the error messages.

use super::RawRecord;
use super::deserialize::FieldSeed;
use serde::de::DeserializeSeed;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
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
                    let tokens: std::sync::Arc<[u64]> = SCRATCH.with_borrow_mut(|scratch| {
                        let used = scan_token_array(&line[scan.at..], scratch)?;
                        scan.at += used;
                        Some(scratch[..].into())
                    })?;
                    raw.large_ids |= tokens.iter().any(|&t| t > i64::MAX as u64);
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

/// `None` when `bytes` is not exactly a plain list of non-negative 32-bit integers.
#[cfg(test)]
pub(super) fn fast_token_array(bytes: &[u8]) -> Option<Vec<u64>> {
    let mut tokens = Vec::new();
    let used = scan_token_array(bytes, &mut tokens)?;
    (used == bytes.len()).then_some(tokens)
}

/// Read a plain array of non-negative integers of up to 19 digits (all fit in 64 bits) at the
/// start of `bytes` into `out` (cleared first); returns the bytes consumed, or `None` for
/// anything else (the general parser then takes the line: longer numbers, negative ids).
fn scan_token_array(bytes: &[u8], out: &mut Vec<u64>) -> Option<usize> {
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
            }
        }
        let digits = i - start;
        // JSON forbids leading zeros; a lone "0" is fine. Up to 19 digits cannot overflow.
        if digits == 0 || digits > 19 || (bytes[start] == b'0' && digits > 1) {
            return None;
        }
        out.push(value);
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
