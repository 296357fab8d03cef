//! One-line bars (header, health strip, status bar, the token cursor line) that fit any
//! width: every part says how much it matters and may offer shorter forms. The least
//! important part is shortened, then left out, until the line fits; the most important
//! facts stay whole, and only when they alone overflow is the line cut, with an ellipsis.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// One part of a bar.
pub(crate) struct Part {
    /// Its forms, longest first, each with its rank: 0 for what must stay, larger numbers
    /// are shortened (to the next form) or left out first.
    forms: Vec<(u8, Vec<Span<'static>>)>,
    /// No separator after it (a badge that carries its own spacing).
    badge: bool,
}

impl Part {
    /// A part of one styled text.
    pub(crate) fn text(rank: u8, text: impl Into<String>, style: Style) -> Part {
        Part::spans(rank, vec![Span::styled(text.into(), style)])
    }

    /// A part made of spans.
    pub(crate) fn spans(rank: u8, spans: Vec<Span<'static>>) -> Part {
        Part {
            forms: vec![(rank, spans)],
            badge: false,
        }
    }

    /// A shorter form of the part, used before leaving it out (add the longest first); it
    /// keeps the part's rank.
    pub(crate) fn or(self, spans: Vec<Span<'static>>) -> Part {
        let rank = self.forms.last().map_or(0, |(rank, _)| *rank);
        self.or_at(rank, spans)
    }

    /// A shorter form with its own rank: a long form can go early while a short one stays.
    pub(crate) fn or_at(mut self, rank: u8, spans: Vec<Span<'static>>) -> Part {
        self.forms.push((rank, spans));
        self
    }

    /// A shorter form of one styled text.
    pub(crate) fn or_text(self, text: impl Into<String>, style: Style) -> Part {
        self.or(vec![Span::styled(text.into(), style)])
    }

    /// Drawn without a separator after it.
    pub(crate) fn badge(mut self) -> Part {
        self.badge = true;
        self
    }
}

fn width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(Span::width).sum()
}

/// The parts, in order, fitted into `max` columns with `separator` between them.
pub(crate) fn fit(parts: Vec<Part>, separator: Span<'static>, max: usize) -> Line<'static> {
    // Per part: the form in use, or `None` once left out.
    let mut chosen: Vec<Option<usize>> = vec![Some(0); parts.len()];
    let total = |chosen: &[Option<usize>]| {
        let mut sum = 0;
        let mut joint = 0;
        for (part, form) in parts.iter().zip(chosen) {
            if let Some(form) = form {
                sum += joint + width(&part.forms[*form].1);
                joint = if part.badge { 0 } else { separator.width() };
            }
        }
        sum
    };
    while total(&chosen) > max {
        // The least important part still shown (the later of equals): shorten it, else
        // leave it out; the must-stay parts are only shortened.
        let rank = |i: usize, form: usize| parts[i].forms[form].0;
        let candidate = (0..parts.len())
            .filter_map(|i| chosen[i].map(|form| (i, form)))
            .filter(|&(i, form)| rank(i, form) > 0 || form + 1 < parts[i].forms.len())
            .max_by_key(|&(i, form)| (rank(i, form), i));
        let Some((i, form)) = candidate else { break };
        chosen[i] = (form + 1 < parts[i].forms.len()).then_some(form + 1);
    }
    let mut spans = Vec::new();
    let mut joint = false;
    for (part, form) in parts.into_iter().zip(&chosen) {
        if let Some(form) = form {
            if joint {
                spans.push(separator.clone());
            }
            joint = !part.badge;
            spans.extend(
                part.forms
                    .into_iter()
                    .nth(*form)
                    .map(|(_, spans)| spans)
                    .unwrap_or_default(),
            );
        }
    }
    Line::from(clip_spans(spans, max))
}

/// Spans cut to `max` columns, the cut marked with an ellipsis.
pub(crate) fn clip_spans(spans: Vec<Span<'static>>, max: usize) -> Vec<Span<'static>> {
    if width(&spans) <= max {
        return spans;
    }
    let mut out = Vec::new();
    let mut used = 0;
    let room = max.saturating_sub(1);
    for span in spans {
        let span_width = span.width();
        if used + span_width <= room {
            used += span_width;
            out.push(span);
            continue;
        }
        let mut text = String::new();
        for c in span.content.chars() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > room {
                break;
            }
            used += w;
            text.push(c);
        }
        out.push(Span::styled(format!("{text}…"), span.style));
        return out;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    fn parts() -> Vec<Part> {
        vec![
            Part::text(0, "tokscope ", Style::default()).badge(),
            Part::text(0, "3 masked", Style::default()),
            Part::text(2, "12 calls", Style::default()),
            Part::text(1, "3 live (1 waiting)", Style::default())
                .or_text("3 live", Style::default()),
            Part::text(3, "/a/store", Style::default()),
        ]
    }

    #[test]
    fn everything_when_it_fits() {
        let line = fit(parts(), Span::raw(" · "), 200);
        assert_eq!(
            text(&line),
            "tokscope 3 masked · 12 calls · 3 live (1 waiting) · /a/store"
        );
    }

    #[test]
    fn least_important_go_first_and_shorter_forms_before_leaving_out() {
        let sep = || Span::raw(" · ");
        assert_eq!(
            text(&fit(parts(), sep(), 50)),
            "tokscope 3 masked · 12 calls · 3 live (1 waiting)"
        );
        assert_eq!(
            text(&fit(parts(), sep(), 40)),
            "tokscope 3 masked · 3 live (1 waiting)"
        );
        assert_eq!(text(&fit(parts(), sep(), 30)), "tokscope 3 masked · 3 live");
        assert_eq!(text(&fit(parts(), sep(), 20)), "tokscope 3 masked");
        // Only the must-stay parts are left, and they overflow: cut, marked.
        let cut = fit(parts(), sep(), 12);
        assert_eq!(text(&cut), "tokscope 3 …");
        assert_eq!(cut.width(), 12);
    }

    #[test]
    fn a_long_form_can_go_before_a_less_important_part() {
        let style = Style::default();
        let parts = || {
            vec![
                Part::text(3, "reasons a, b, c, d", style).or_at(0, vec![Span::raw("a, +3")]),
                Part::text(1, "calls/s", style),
            ]
        };
        let sep = || Span::raw(" · ");
        // Too narrow for both long: the long reasons go first (rank 3), calls/s stays.
        assert_eq!(text(&fit(parts(), sep(), 20)), "a, +3 · calls/s");
        assert_eq!(
            text(&fit(parts(), sep(), 40)),
            "reasons a, b, c, d · calls/s"
        );
    }

    #[test]
    fn wide_characters_are_cut_on_their_boundary() {
        let spans = clip_spans(vec![Span::raw("ab漢字cd")], 5);
        let line = Line::from(spans);
        assert_eq!(text(&line), "ab漢…");
        assert!(line.width() <= 5);
    }
}
