//! The help overlay, drawn from the single list of key bindings: two columns when the
//! terminal is wide enough, one otherwise, scrolled with the moving keys.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::keys::BINDINGS;
use super::{Theme, pane_block, strings};
use crate::app::App;
use crate::app::pane::KeyScope;

/// Width of the keys column.
const KEYS: usize = 13;
/// Narrowest column that shows a binding's text whole on most lines.
const COLUMN: usize = 56;

/// A heading and its lines.
type Section = (&'static str, Vec<(String, &'static str)>);

fn sections(app: &App) -> Vec<Section> {
    let bindings = |scope: KeyScope| {
        BINDINGS
            .iter()
            .filter(|b| b.scope == scope)
            .map(|b| (b.keys.join(" "), b.help))
            .collect::<Vec<_>>()
    };
    let mut all = vec![
        ("everywhere", bindings(KeyScope::Global)),
        ("rollout list", bindings(KeyScope::List)),
        ("chain tree", bindings(KeyScope::Tree)),
        ("tokens", bindings(KeyScope::Tokens)),
        ("live and replay", bindings(KeyScope::Live)),
        (
            "mouse",
            strings::HELP_MOUSE
                .iter()
                .map(|(what, help)| ((*what).to_owned(), *help))
                .collect(),
        ),
    ];
    if !app.keys.is_empty() {
        // The configuration's keys, which come before the built-in ones.
        let yours = app
            .keys
            .iter()
            .map(|(key, action)| {
                let help = BINDINGS
                    .iter()
                    .find(|b| b.action == *action)
                    .map_or("", |b| b.help);
                (key.clone(), help)
            })
            .collect();
        all.insert(0, ("your keys (config.toml)", yours));
    }
    all
}

/// `text` in lines of at most `width` characters, broken between words (a word longer than
/// the width is cut into pieces): nothing of a description is lost.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(word.drain(..width).collect());
        }
        let word: String = word.into_iter().collect();
        let needed = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if needed > width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

fn lines(sections: &[Section], width: usize, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (name, entries) in sections {
        lines.push(Line::from(Span::styled(*name, theme.heading())));
        for (keys, help) in entries {
            // Long descriptions wrap under themselves, never cut.
            for (i, text) in wrap(help, width.saturating_sub(KEYS + 3))
                .into_iter()
                .enumerate()
            {
                let keys = if i == 0 { keys.as_str() } else { "" };
                lines.push(Line::from(vec![
                    Span::styled(format!("  {keys:<KEYS$} "), theme.good()),
                    Span::raw(text),
                ]));
            }
        }
    }
    lines
}

/// Draw the overlay centered on the screen; returns its lines and the rows it shows.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme) -> (usize, usize) {
    let area = frame.area();
    let width = area.width.min(124);
    let inner_width = usize::from(width.saturating_sub(2));
    let all = sections(app);
    // Two columns when each can be wide enough, split where the sections balance.
    let columns: Vec<Vec<Line<'static>>> = if inner_width >= 2 * COLUMN {
        // The section boundary that makes the taller column shortest.
        let half = inner_width / 2;
        let split = (1..all.len())
            .min_by_key(|&at| {
                let left = lines(&all[..at], half, theme).len();
                let right = lines(&all[at..], half, theme).len();
                (left.max(right), at)
            })
            .unwrap_or(1);
        vec![
            lines(&all[..split], half, theme),
            lines(&all[split..], half, theme),
        ]
    } else {
        vec![lines(&all, inner_width, theme)]
    };
    let longest = columns.iter().map(Vec::len).max().unwrap_or(0);
    let height = area.height.min(longest as u16 + 2);
    let popup = super::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let rows = usize::from(height.saturating_sub(2));
    let title = if longest > rows {
        strings::TITLE_HELP_SCROLL
    } else {
        strings::TITLE_HELP
    };
    let block = pane_block(title.into(), true, theme);
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let column_width = inner.width / columns.len() as u16;
    let top = app.help.top().min(longest.saturating_sub(rows));
    for (i, column) in columns.into_iter().enumerate() {
        let rect = Rect::new(
            inner.x + column_width * i as u16,
            inner.y,
            column_width,
            inner.height,
        );
        let shown: Vec<Line> = column.into_iter().skip(top).take(rows).collect();
        frame.render_widget(Paragraph::new(shown), rect);
    }
    (longest, rows)
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn descriptions_wrap_between_words_and_lose_nothing() {
        let text = "list: open · tree: divergence · gaps, graph: go to the call";
        let lines = wrap(text, 20);
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(
            wrap("abcdefghijklmnopqrstuvwxyz", 10).concat(),
            "abcdefghijklmnopqrstuvwxyz"
        );
        assert_eq!(wrap("", 10), [""]);
    }
}
