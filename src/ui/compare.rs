//! Compare mode's side-by-side view: one rollout in run A and run B, their verdicts, and the
//! tokens of both around the position where they part — the masked side's failing call
//! beside the other side's delivered chain, token by token (decoded with a tokenizer).

use ratatui::Frame;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{Theme, clip, pane_block, strings};
use crate::app::App;
use tokscope_core::compare::beside::{Beside, Parting, SideTokens, Which, beside};
use tokscope_core::store::TokenValue;
use tokscope_core::text::sanitize;
use tokscope_core::verdict::Summary;

/// Tokens shown on each side of the position.
const CONTEXT: usize = 6;

/// Width of A's column.
const COLUMN: usize = 34;

fn side_name(which: Which) -> &'static str {
    match which {
        Which::A => "A",
        Which::B => "B",
    }
}

/// `A  store  id  frozen  MASKED  first reason`.
fn verdict_line(label: &str, summary: &Summary) -> String {
    let reason = summary
        .first_reason()
        .map_or_else(String::new, |r| r.to_string());
    format!(
        "{label}  {}  {}  {}  {}  {}",
        sanitize(&summary.location.dir.display().to_string()),
        sanitize(summary.rollout_id()),
        summary.lifecycle.name(),
        super::list::badge(summary.live_status(), summary.verdict),
        sanitize(&reason)
    )
}

fn parting_line(shown: &Beside) -> String {
    match (&shown.parting, shown.position) {
        (Parting::BrokenLink { side, call }, Some(p)) => format!(
            "{}'s call {} stops agreeing with what it claims at token {p}; beside it, the other \
             run at the same position",
            side_name(*side),
            sanitize(call)
        ),
        (Parting::ChainsDiffer, Some(p)) => {
            format!("the main chains differ first at token {p}")
        }
        (Parting::OneEnds, Some(p)) => {
            format!("one main chain ends at token {p}; the other goes on")
        }
        (Parting::Agree(n), _) => format!("the main chains are the same {n} tokens"),
        _ => "a side has no chain to compare (no build)".into(),
    }
}

/// A token's id and, with a tokenizer, its text.
fn cell(app: &App, token: Option<&TokenValue>) -> String {
    match token {
        None => "·".into(),
        Some(token) => match &app.detok {
            Some(detok) => format!(
                "{token:<8} {}",
                clip(&super::tokens::visible(&detok.piece(*token)), 20)
            ),
            None => token.to_string(),
        },
    }
}

/// The rows of tokens: one position a row, A's token beside B's.
fn token_rows(app: &App, shown: &Beside, a: &SideTokens, b: &SideTokens) -> Vec<(String, bool)> {
    let rows = a.tokens.len().max(b.tokens.len());
    (0..rows)
        .map(|i| {
            let position = shown.start + i;
            let (x, y) = (a.tokens.get(i), b.tokens.get(i));
            let mark = if Some(position) == shown.position {
                "▸"
            } else if x != y {
                "≠"
            } else {
                " "
            };
            (
                format!(
                    "{position:>9}{mark} {:<COLUMN$} {}",
                    cell(app, x),
                    cell(app, y)
                ),
                Some(position) == shown.position,
            )
        })
        .collect()
}

/// Draw the view centered on the screen.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme) {
    let Some(view) = app.beside else {
        return;
    };
    let area = frame.area();
    let width = area.width.min(140);
    let inner = usize::from(width.saturating_sub(2));
    let line = |text: String, style: Style| Line::from(Span::styled(clip(&text, inner), style));
    let (a, b) = (&app.rollouts[view.a], &app.rollouts[view.b]);
    let mut lines = vec![
        line(
            verdict_line("A", a),
            theme.verdict(a.live_status(), a.verdict),
        ),
        line(
            verdict_line("B", b),
            theme.verdict(b.live_status(), b.verdict),
        ),
        Line::from(""),
    ];
    match (app.details.get(view.a), app.details.get(view.b)) {
        (Some(analysis_a), Some(analysis_b)) => {
            let shown = beside(analysis_a, analysis_b, CONTEXT);
            // The sentence wrapped (the only line that may be longer than the view).
            let sentence = parting_line(&shown);
            let width = inner.max(20);
            let mut rest = sentence.as_str();
            while !rest.is_empty() {
                let cut = if rest.chars().count() <= width {
                    rest.len()
                } else {
                    let limit = rest
                        .char_indices()
                        .nth(width)
                        .map_or(rest.len(), |(i, _)| i);
                    rest[..limit].rfind(' ').filter(|&i| i > 0).unwrap_or(limit)
                };
                lines.push(line(rest[..cut].to_owned(), theme.heading()));
                rest = rest[cut..].trim_start();
            }
            if let (Some(side_a), Some(side_b)) = (&shown.a, &shown.b) {
                let heading_a = format!("A: {} ({} tokens)", side_a.what, side_a.len);
                let heading_b = format!("B: {} ({} tokens)", side_b.what, side_b.len);
                lines.push(line(
                    format!(
                        "{:>10} {:<COLUMN$} {heading_b}",
                        "position",
                        clip(&heading_a, COLUMN)
                    ),
                    theme.dim(),
                ));
                for (text, here) in token_rows(app, &shown, side_a, side_b) {
                    let style = if here {
                        theme.problem()
                    } else {
                        Style::default()
                    };
                    lines.push(line(text, style));
                }
            }
        }
        _ => lines.push(line(strings::BESIDE_READING.into(), theme.dim())),
    }
    let title = format!(
        "{} · {} · {}",
        strings::TITLE_BESIDE,
        sanitize(a.rollout_id()),
        strings::BESIDE_KEYS
    );
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = super::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let block = pane_block(title, true, theme);
    let inside = block.inner(popup);
    frame.render_widget(block, popup);
    frame.render_widget(Paragraph::new(lines), inside);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_without_a_chain_is_said() {
        let shown = Beside {
            parting: Parting::Nothing,
            position: None,
            start: 0,
            a: None,
            b: None,
        };
        assert!(parting_line(&shown).contains("no chain"));
    }
}
