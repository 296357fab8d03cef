//! The intents file's lines, decoded as the file grows ([`IntentsCache`]).

use super::{LinePos, strip};

/// The intents decoded by the last read of a kept cache, and that read's lines lent back.
#[derive(Clone, Debug, Default)]
pub(super) struct IntentsCache {
    /// What the last read decoded, up to the last line break it saw.
    known: Option<KnownIntents>,
    /// The last read's intents, lent back by the caller.
    lent: Option<Vec<String>>,
    /// Leading lines the last decode took over from those lent (not decoded again).
    carried: usize,
}

/// The intents decoded by a read, up to the last line break it saw.
#[derive(Clone, Debug)]
struct KnownIntents {
    /// The file's bytes up to that break (a copy: a few bytes a call).
    bytes: Vec<u8>,
    /// The lines in them.
    lines: usize,
    /// The pieces they split into (line numbers go on from there).
    segments: usize,
}

impl IntentsCache {
    /// The last read's lines, handed back for the next.
    pub(super) fn lend(&mut self, lines: Vec<String>) {
        self.lent = Some(lines);
    }

    /// Leading lines the last decode took over from those lent back: the same lines as the
    /// read before's.
    pub(super) fn carried(&self) -> usize {
        self.carried
    }

    /// The intents file's lines (as `decode_lines` splits the whole file). When the
    /// last read's lines were lent back and `bytes` start with the ones it decoded (the file
    /// grew), only the bytes after its last line break are decoded: an append of a call costs
    /// its own intent, not one allocation per call of the rollout. `keep`: remember what was
    /// decoded for the next read.
    pub(super) fn decode(&mut self, bytes: &[u8], keep: bool) -> Result<Vec<String>, LinePos> {
        let lent = self.lent.take();
        let (mut lines, mut seen, from, segments) = match (self.known.take(), lent) {
            (Some(known), Some(mut lines))
                if bytes.starts_with(&known.bytes) && lines.len() >= known.lines =>
            {
                lines.truncate(known.lines);
                let from = known.bytes.len();
                (lines, known.bytes, from, known.segments)
            }
            _ => (Vec::new(), Vec::new(), 0, 0),
        };
        self.carried = lines.len();
        decode_lines_into(&bytes[from..], from, segments, &mut lines)?;
        if keep {
            // Known from now on: the bytes up to the last line break, and their lines (a last
            // line without its break is decoded again next time).
            let through = bytes
                .iter()
                .rposition(|b| is_line_break(*b))
                .map_or(0, |at| at + 1)
                .max(from);
            let partial = !strip(&bytes[through..]).is_empty();
            let breaks = bytes[from..through]
                .iter()
                .filter(|b| is_line_break(**b))
                .count();
            seen.extend_from_slice(&bytes[from..through]);
            self.known = Some(KnownIntents {
                bytes: seen,
                lines: lines.len() - usize::from(partial),
                segments: segments + breaks,
            });
        }
        Ok(lines)
    }
}

/// The lines of bytes found at `offset` in their file, after `segments` pieces split
/// off before them: their lines appended to `out`.
pub(super) fn decode_lines_into(
    bytes: &[u8],
    mut offset: usize,
    segments: usize,
    out: &mut Vec<String>,
) -> Result<(), LinePos> {
    for (index, raw) in bytes.split(|b| is_line_break(*b)).enumerate() {
        let at = LinePos {
            line: segments + index + 1,
            offset: offset as u64,
        };
        offset += raw.len() + 1;
        let line = strip(raw);
        if line.is_empty() {
            continue;
        }
        out.push(std::str::from_utf8(line).map_err(|_| at)?.to_owned());
    }
    Ok(())
}

/// What splits an intents file's lines (as Python's `splitlines` of ids does).
fn is_line_break(byte: u8) -> bool {
    byte == b'\n' || byte == b'\r'
}
