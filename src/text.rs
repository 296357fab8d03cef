//! Making untrusted text (ids, messages, record content) safe to print on a terminal.

/// Replace control characters (including ESC, so no escape sequence gets through) and
/// Unicode bidi overrides with visible escapes.
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

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_control() {
        assert_eq!(sanitize("plain é✓"), "plain é✓");
        assert_eq!(sanitize("a\x1b[31mred"), "a\\u{1b}[31mred");
        assert_eq!(sanitize("line\nbreak"), "line\\u{a}break");
        assert_eq!(sanitize("\u{202E}rtl"), "\\u{202e}rtl");
    }
}
