//! Making untrusted text (ids, messages, record content) safe to print on a terminal.

/// Replace control characters (including ESC, so no escape sequence gets through), Unicode
/// bidi controls, zero-width and invisible format characters, and line or paragraph
/// separators with visible escapes.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `c` must not reach a terminal as it is: a control character, or an invisible
/// format character (where ratatui and the terminal may disagree on its width, or that
/// reorders or hides text).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Soft hyphen, combining grapheme joiner, Arabic letter mark, Mongolian vowel
            // separator: invisible.
            '\u{AD}' | '\u{34F}' | '\u{61C}' | '\u{180E}'
            // Arabic number signs and end of ayah, Syriac abbreviation mark, Arabic disputed
            // end of ayah: prepended format characters.
            | '\u{600}'..='\u{605}'
            | '\u{6DD}'
            | '\u{70F}'
            | '\u{8E2}'
            // Kaithi number signs, Egyptian hieroglyph format controls, shorthand format
            // controls, musical symbol format controls.
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            // Zero-width space / joiners, LRM / RLM, line and paragraph separators, bidi
            // embeddings and overrides.
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            // Word joiner, invisible operators, bidi isolates, deprecated format controls.
            | '\u{2060}'..='\u{206F}'
            // Zero-width no-break space (BOM), interlinear annotations, tag characters.
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
        )
}

/// `text` safe to put on a clipboard that will be pasted into a terminal: no escape (ESC,
/// so no `ESC[201~` ends a bracketed paste), no other control character but tab and newline,
/// no invisible format character — each shown as its `\u{…}` escape.
pub fn clipboard_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c != '\n' && c != '\t' && needs_escape(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// JSON written by serde with the C1 controls (U+0080–U+009F: U+009B is CSI on some
/// terminals) and the line and paragraph separators escaped as `\u` sequences too, so a
/// report printed to a terminal cannot drive it. Only string contents can hold them, and
/// their UTF-8 lead bytes occur nowhere else, so the bytes are rewritten in place.
pub fn escape_json_controls(json: Vec<u8>) -> Vec<u8> {
    // Reports are hundreds of megabytes of digits: find the lead bytes with `memchr` and
    // copy the runs between them, rather than looking at every byte.
    let mut specials = memchr::memchr2_iter(0xC2, 0xE2, &json)
        .filter_map(|at| json_control_at(&json, at).map(|(code, width)| (at, code, width)))
        .peekable();
    if specials.peek().is_none() {
        return json;
    }
    let mut out = Vec::with_capacity(json.len() + 16);
    let mut copied = 0;
    for (at, code, width) in specials {
        out.extend_from_slice(&json[copied..at]);
        out.extend_from_slice(format!("\\u{code:04x}").as_bytes());
        copied = at + width;
    }
    out.extend_from_slice(&json[copied..]);
    out
}

/// The code point and width of the C1 control or line/paragraph separator whose UTF-8 lead
/// byte is at `at`, if one is there.
fn json_control_at(json: &[u8], at: usize) -> Option<(u32, usize)> {
    match json[at..] {
        [0xC2, second @ 0x80..=0x9F, ..] => Some((u32::from(second), 2)),
        [0xE2, 0x80, third @ (0xA8 | 0xA9), ..] => Some((0x2000 | u32::from(third - 0x80), 3)),
        _ => None,
    }
}

/// A path, safe to print.
pub fn path(path: &std::path::Path) -> String {
    sanitize(&path.display().to_string()).into_owned()
}

/// `time` in UTC as RFC 3339 with milliseconds (`2026-12-01T19:57:12.345Z`), so a log line
/// lines up with the trainer's.
pub fn utc_timestamp(time: std::time::SystemTime) -> String {
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = since.as_secs();
    let (days, in_day) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600,
        in_day / 60 % 60,
        in_day % 60,
        since.subsec_millis()
    )
}

/// A record time (`created_at`, UNIX seconds) as UTC, RFC 3339 to the millisecond; `None`
/// for a time that is no moment (not finite, before 1970, or past the year 9999).
pub fn utc_of_seconds(seconds: f64) -> Option<String> {
    (seconds.is_finite() && (0.0..253_402_300_800.0).contains(&seconds))
        .then(|| utc_timestamp(std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(seconds)))
}

/// The time of day of a record time, UTC: `19:57:12Z` (what lines up with a trainer's log).
pub fn utc_clock_of_seconds(seconds: f64) -> Option<String> {
    utc_of_seconds(seconds).map(|full| format!("{}Z", &full[11..19]))
}

/// Which clock the explorer shows times in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Zone {
    /// UTC (`…Z`), as a training cluster's logs mostly are.
    #[default]
    Utc,
    /// This machine's local time, with its offset (`…+02:00`).
    Local,
}

/// The local time's offset from UTC at `unix` seconds, in seconds (`None` where it cannot
/// be had).
#[cfg(unix)]
// `tm_gmtoff` is a C `long`: 32 bits on some targets, so the conversion is not useless there.
#[allow(clippy::useless_conversion)]
fn local_offset(unix: i64) -> Option<i64> {
    use libc::time_t;
    let time: time_t = unix.try_into().ok()?;
    // SAFETY: `localtime_r` writes only into `tm`, which lives for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let done = unsafe { libc::localtime_r(&time, &mut tm) };
    (!done.is_null()).then_some(i64::from(tm.tm_gmtoff))
}

#[cfg(not(unix))]
fn local_offset(_unix: i64) -> Option<i64> {
    None
}

/// A record time (UNIX seconds) as a moment people read, in `zone`:
/// `2026-12-01 19:57:12.345Z` or `2026-12-01 20:57:12.345+01:00`.
pub fn moment(seconds: f64, zone: Zone) -> Option<String> {
    let offset = match zone {
        Zone::Utc => 0,
        Zone::Local => local_offset(seconds as i64).unwrap_or(0),
    };
    let shifted = utc_of_seconds(seconds + offset as f64)?;
    let text = shifted.replace('T', " ");
    Some(match (zone, offset) {
        (Zone::Utc, _) => text,
        (Zone::Local, offset) => {
            let sign = if offset < 0 { '-' } else { '+' };
            let minutes = offset.abs() / 60;
            format!(
                "{}{sign}{:02}:{:02}",
                text.trim_end_matches('Z'),
                minutes / 60,
                minutes % 60
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_in_utc_and_local_time() {
        let t = 1_796_155_032.345;
        assert_eq!(
            moment(t, Zone::Utc).as_deref(),
            Some("2026-12-01 19:57:12.345Z")
        );
        let local = moment(t, Zone::Local).unwrap();
        // The same moment with the machine's offset: `±HH:MM` at the end.
        let (_, offset) = local.split_at(local.len() - 6);
        assert!(
            offset.starts_with(['+', '-']) && &offset[3..4] == ":",
            "{local}"
        );
        assert_eq!(moment(f64::NAN, Zone::Local), None);
    }

    #[test]
    fn record_times_read_as_utc() {
        assert_eq!(
            utc_of_seconds(1_796_155_032.345).as_deref(),
            Some("2026-12-01T19:57:12.345Z")
        );
        assert_eq!(
            utc_clock_of_seconds(1_796_155_032.345).as_deref(),
            Some("19:57:12Z")
        );
        for no_moment in [f64::NAN, f64::INFINITY, -1.0, 1e300] {
            assert_eq!(utc_of_seconds(no_moment), None, "{no_moment}");
        }
    }

    #[test]
    fn clipboards_and_json_carry_no_terminal_control() {
        let id = "call\u{1b}[201~\necho pwned";
        let safe = clipboard_safe(id);
        assert!(!safe.contains('\u{1b}'), "{safe}");
        assert!(
            safe.contains('\n'),
            "a newline stays: text is pasted as text"
        );
        assert_eq!(clipboard_safe("plain\ttext"), "plain\ttext");
        for c in [
            '\u{600}',
            '\u{6DD}',
            '\u{110BD}',
            '\u{1D173}',
            '\u{1BCA0}',
            '\u{2028}',
            '\u{202E}',
        ] {
            assert!(needs_escape(c), "{:?}", c);
        }
        let json = serde_json::to_vec(&serde_json::json!({"a": "x\u{9b}31m\u{2028}é"})).unwrap();
        let escaped = String::from_utf8(escape_json_controls(json)).unwrap();
        assert_eq!(escaped, r#"{"a":"x\u009b31m\u2028é"}"#);
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back["a"], "x\u{9b}31m\u{2028}é");
    }

    /// The escape as first written, a byte at a time: what the scanning one must give.
    fn escape_json_controls_bytewise(json: &[u8]) -> Vec<u8> {
        let special = |w: &[u8]| {
            (w[0] == 0xC2 && (0x80..=0x9F).contains(&w[1]))
                || (w.len() > 2 && w[0] == 0xE2 && w[1] == 0x80 && (w[2] == 0xA8 || w[2] == 0xA9))
        };
        let mut out = Vec::new();
        let mut at = 0;
        while at < json.len() {
            let rest = &json[at..];
            if rest.len() >= 2 && special(&rest[..rest.len().min(3)]) {
                let (code, width) = if rest[0] == 0xC2 {
                    (u32::from(rest[1]), 2)
                } else {
                    (0x2000 | u32::from(rest[2] - 0x80), 3)
                };
                out.extend_from_slice(format!("\\u{code:04x}").as_bytes());
                at += width;
            } else {
                out.push(rest[0]);
                at += 1;
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn escaping_by_scanning_is_escaping_byte_by_byte(
            // Mostly the bytes that matter, so lead bytes meet their continuations, are cut
            // short at the end, and come in runs.
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![
                    0xC2u8, 0xE2, 0x7F, 0x80, 0x81, 0x9B, 0x9F, 0xA0, 0xA7, 0xA8, 0xA9, 0xAA, b'1',
                    b'"',
                ]),
                0..64,
            )
        ) {
            proptest::prop_assert_eq!(
                escape_json_controls(bytes.clone()),
                escape_json_controls_bytewise(&bytes)
            );
        }
    }

    #[test]
    fn utc_timestamps_are_rfc_3339() {
        use std::time::{Duration, UNIX_EPOCH};
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 2026-12-01T19:57:12.345Z, and a leap day.
        let at = UNIX_EPOCH + Duration::from_millis(1_796_155_032_345);
        assert_eq!(utc_timestamp(at), "2026-12-01T19:57:12.345Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(utc_timestamp(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn escapes_terminal_control() {
        assert_eq!(sanitize("plain é✓"), "plain é✓");
        assert_eq!(sanitize("a\x1b[31mred"), "a\\u{1b}[31mred");
        assert_eq!(sanitize("line\nbreak"), "line\\u{a}break");
        assert_eq!(sanitize("\u{202E}rtl"), "\\u{202e}rtl");
        assert_eq!(sanitize("a\u{200B}b"), "a\\u{200b}b");
        assert_eq!(sanitize("\u{2067}x\u{2069}"), "\\u{2067}x\\u{2069}");
        assert_eq!(sanitize("\u{FEFF}bom"), "\\u{feff}bom");
        assert_eq!(
            path(std::path::Path::new("rows\x1b]0;title\x07.jsonl")),
            "rows\\u{1b}]0;title\\u{7}.jsonl"
        );
    }
}

/// `n` followed by `one` or `many`, the count with thousands separators: "1 call",
/// "2,000 rollouts".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// `12345` as `12,345`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn counts_agree_in_number_and_group_thousands() {
        assert_eq!(super::count(1, "call", "calls"), "1 call");
        assert_eq!(super::count(0, "call", "calls"), "0 calls");
        assert_eq!(super::count(2_000, "rollout", "rollouts"), "2,000 rollouts");
        assert_eq!(super::thousands(1_939_360), "1,939,360");
        assert_eq!(super::thousands(999), "999");
    }
}
