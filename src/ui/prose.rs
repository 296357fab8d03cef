//! The token pane as flowing text: the chain decoded and wrapped like prose, colored by
//! origin (root prompt, environment, each call's generation), low-probability tokens and the
//! cursor marked. Tokens are decoded in runs, so a character split across byte-level tokens
//! (an emoji, CJK) appears whole; only what fits the pane is decoded.

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use super::Theme;
use crate::app::App;
use tokscope_core::detok::Detokenizer;
use tokscope_core::rebuild::{BuildOutput, Origin, Provenance};
use tokscope_core::store::TokenRecord;

/// The longest run decoded at once (a run ends anyway where the style changes).
const RUN: usize = 256;

/// What the prose needs to know about the chain.
pub(crate) struct Chain<'a> {
    /// The chain's tokens and where each comes from.
    pub provenance: &'a Provenance,
    /// The build (for log probabilities).
    pub build: &'a BuildOutput,
    /// The rollout's records.
    pub records: &'a [std::sync::Arc<TokenRecord>],
}

/// Decoded text as it may reach the terminal: line breaks kept, tabs as spaces, the zero-width
/// joiner kept (it joins emoji sequences, drawn whole), other control and invisible format
/// characters replaced.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => '\n',
            '\t' => ' ',
            '\u{200D}' => '\u{200D}',
            c if tokscope_core::text::needs_escape(c) => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// Lines of prose for `rows` rows of `width` columns, from the top of the token view (or
/// from just before the cursor when the cursor would not be on screen).
pub(crate) fn lines(
    app: &App,
    chain: &Chain<'_>,
    detok: &Detokenizer,
    theme: Theme,
    width: usize,
    rows: usize,
) -> Vec<Line<'static>> {
    let Some(view) = &app.view else {
        return Vec::new();
    };
    let tokens = &view.tokens;
    let top = tokens.rows.top() * tokens.per_row();
    let cursor = tokens.cursor;
    let draw = |from: usize| render(app, chain, detok, theme, from, cursor, width, rows);
    let mut start = top.min(cursor);
    let mut drawn = draw(start);
    if drawn.cursor_line.is_none() {
        start = cursor.saturating_sub(tokens.per_row());
        drawn = draw(start);
    }
    // Near the end of the chain the text may not fill the pane: start earlier.
    let step = (tokens.per_row() * rows / 2).max(1);
    for _ in 0..8 {
        if drawn.filled || start == 0 {
            break;
        }
        start = start.saturating_sub(step);
        let earlier = draw(start);
        if earlier.cursor_line.is_none() {
            break;
        }
        drawn = earlier;
    }
    let height = |line: &Line<'static>| {
        ratatui::widgets::Paragraph::new(line.clone())
            .wrap(ratatui::widgets::Wrap { trim: false })
            .line_count(u16::try_from(width).unwrap_or(u16::MAX))
            .max(1)
    };
    // A line too long for the pane (text without line breaks): start just before the
    // cursor, so the cursor is near the start of its line.
    if drawn
        .cursor_line
        .is_some_and(|at| height(&drawn.lines[at]) > rows)
    {
        drawn = draw(cursor.saturating_sub((tokens.per_row() / 2).max(1)));
    }
    // The cursor's line on screen: leading lines go while the rows up to it, as the pane
    // wraps them (at words), are more than the pane holds.
    let mut lines = drawn.lines;
    if let Some(at) = drawn.cursor_line {
        let heights: Vec<usize> = lines[..=at].iter().map(height).collect();
        let mut used: usize = heights.iter().sum();
        let mut first = 0;
        while used > rows && first < at {
            used -= heights[first];
            first += 1;
        }
        lines.drain(..first);
    }
    lines
}

/// Prose drawn from some token on.
struct Drawn {
    lines: Vec<Line<'static>>,
    /// The line the cursor's token is on, if drawn.
    cursor_line: Option<usize>,
    /// They fill the rows.
    filled: bool,
}

/// Prose from token `start` until `rows` rows are full.
#[allow(clippy::too_many_arguments)]
fn render(
    app: &App,
    chain: &Chain<'_>,
    detok: &Detokenizer,
    theme: Theme,
    start: usize,
    cursor: usize,
    width: usize,
    rows: usize,
) -> Drawn {
    let provenance = chain.provenance;
    let total = provenance.tokens.len();
    let marked = app.view.as_ref().and_then(|v| v.tokens.marked());
    let low = |position: usize| {
        provenance
            .log_prob(chain.records, chain.build, position)
            .filter(|&lp| lp < app.low_logprob)
    };
    let is_generation = |origin: &Origin| matches!(origin, Origin::Generation { .. });
    let mut segment_index = provenance.segments.partition_point(|s| s.range.1 <= start);
    let mut generations_before = provenance.segments[..segment_index]
        .iter()
        .filter(|s| is_generation(&s.origin))
        .count();
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used_rows = 0;
    let mut line_width: usize = 0;
    let mut cursor_line = None;
    // Rows used when the cursor was drawn: a pane's worth more is drawn after it.
    let mut cursor_rows = usize::MAX;
    let width = width.max(1);
    // No more tokens than cells can be on screen: fetch them at once (a lookup by position
    // walks the rope, so never once per token).
    let end_of_window = total.min(start.saturating_add((rows + 1) * (width + 1) + RUN));
    let window = provenance.tokens.values_range(start, end_of_window);
    let chain_len = total;
    let total = end_of_window;
    let mut position = start;
    while position < total
        && used_rows + line_width.div_ceil(width).max(1) <= cursor_rows.saturating_add(rows + 1)
    {
        let Some(segment) = provenance.segments.get(segment_index) else {
            break;
        };
        if segment.range.1 <= position {
            generations_before += usize::from(is_generation(&segment.origin));
            segment_index += 1;
            continue;
        }
        // A run: tokens alike (same segment, cursor or not, low or not, marked or not).
        let class = |p: usize| {
            (
                p == cursor,
                low(p).is_some(),
                marked.as_ref().is_some_and(|m| m.contains(&p)),
            )
        };
        let kind = class(position);
        let mut end = position + 1;
        while end < segment.range.1.min(total) && end - position < RUN && class(end) == kind {
            end += 1;
        }
        let mut style = match segment.origin {
            Origin::RootPrompt => theme.root_prompt(),
            Origin::Interstitial { .. } => theme.environment(),
            Origin::Generation { .. } => theme.generated(generations_before),
        };
        if let Some(lp) = low(position) {
            style = theme.probability(style, lp, app.low_logprob);
        }
        if kind.2 {
            style = style.add_modifier(ratatui::style::Modifier::UNDERLINED);
        }
        if kind.0 {
            style = style.patch(theme.cursor());
        }
        let ids = &window[position - start..end - start];
        let mut text = printable(&detok.decode(ids));
        if text.is_empty() {
            // A token that decodes to nothing still shows where it is.
            text = "∅".into();
        } else if kind.0 && text.width() == 0 {
            // Under the cursor, a token that draws nothing (a variation selector, a combining
            // mark) sits on a dotted circle, the usual stand-in for a missing base.
            text.insert(0, '◌');
        }
        for (k, piece) in text.split('\n').enumerate() {
            if k > 0 {
                // The line break itself, faintly, then a new line.
                let last = lines.last_mut().expect("a line");
                last.push(Span::styled("⏎", style.patch(theme.dim())));
                used_rows += (line_width + 1).div_ceil(width).max(1);
                lines.push(Vec::new());
                line_width = 0;
            }
            if !piece.is_empty() {
                line_width += piece.width();
                lines
                    .last_mut()
                    .expect("a line")
                    .push(Span::styled(piece.to_owned(), style));
            }
            if kind.0 && cursor_line.is_none() {
                cursor_line = Some(lines.len() - 1);
                cursor_rows = used_rows;
            }
        }
        position = end;
    }
    let filled = used_rows + line_width.div_ceil(width) >= rows;
    if cursor >= chain_len {
        cursor_line = Some(0);
    }
    Drawn {
        lines: lines.into_iter().map(Line::from).collect(),
        cursor_line,
        filled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(printable("a\u{1b}[2Jb\tc\nd"), "a\u{FFFD}[2Jb c\nd");
    }
}
