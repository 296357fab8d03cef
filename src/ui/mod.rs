//! Drawing: a pure function of the application state. One module per pane.

pub mod bars;
mod causes;
mod compare;
pub mod fit;
pub mod gaps;
pub mod graph;
pub mod help;
pub mod inspector;
pub mod keys;
pub mod layout;
pub mod list;
mod memo;
pub mod mouse;
pub mod prose;
pub mod strings;
pub mod theme;
mod timeline;
pub mod tokens;
pub mod tree;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders};

use strum::IntoEnumIterator;

use crate::app::{App, Tab};
use memo::Slot;
pub use theme::Theme;
use tokscope_core::text::sanitize;

/// What drawing measured that the app needs to scroll right.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drawn {
    /// Lines of the inspector's text as wrapped, when it was drawn.
    pub inspector_lines: Option<usize>,
    /// Where the inspector search's matches are, when one targets it.
    pub inspector_matches: Option<Vec<usize>>,
    /// Lines of the help and the rows it shows, when it was drawn.
    pub help: Option<(usize, usize)>,
    /// The panes' sizes, when they differ from what the app knows (after a zoom).
    pub viewport: Option<crate::app::Viewport>,
}

impl Drawn {
    /// The messages that report the measures to the app.
    pub fn messages(self) -> impl Iterator<Item = crate::app::Message> {
        use crate::app::Message;
        let viewport = self.viewport.map(Message::Resize);
        let inspector = self.inspector_lines.map(Message::InspectorMeasured);
        let matches = self.inspector_matches.map(Message::InspectorMatches);
        let help = self
            .help
            .map(|(lines, rows)| Message::HelpMeasured { lines, rows });
        viewport
            .into_iter()
            .chain(inspector)
            .chain(matches)
            .chain(help)
    }
}

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, app: &App, theme: Theme) -> Drawn {
    let zoom = app.zoomed();
    let areas = layout::areas_for(frame.area(), zoom);
    let mut drawn = Drawn::default();
    let viewport = layout::viewport_for(frame.area(), zoom);
    if viewport != app.viewport {
        drawn.viewport = Some(viewport);
    }
    bars::draw_header(frame, app, theme, areas.header);
    bars::draw_health(frame, app, theme, areas.health);
    // A zoomed screen leaves the other panes empty: not drawn.
    let shown = |rect: ratatui::layout::Rect| !rect.is_empty();
    if shown(areas.list) {
        list::draw(frame, app, theme, areas.list);
    }
    // The open rollout's panes, built again only when what they show may have changed.
    let key = memo::PaneKey::of(app, theme);
    if shown(areas.tree) {
        memo::kept_or_drawn(frame, Slot::Tree, &key, areas.tree, |frame| {
            tree::draw(frame, app, theme, areas.tree);
            None
        });
    }
    if shown(areas.tokens) {
        memo::kept_or_drawn(frame, Slot::Tokens, &key, areas.tokens, |frame| {
            tokens::draw(frame, app, theme, areas.tokens);
            None
        });
    }
    if shown(areas.detail) {
        draw_tab(frame, app, theme, areas.detail, &key, &mut drawn);
    }
    bars::draw_status(frame, app, theme, areas.status);
    if app.timeline.is_some() {
        timeline::draw(frame, app, theme, &areas);
    }
    if app.causes.is_some() {
        causes::draw(frame, app, theme);
    }
    if app.beside.is_some() {
        compare::draw(frame, app, theme);
    }
    if app.show_help {
        drawn.help = Some(help::draw(frame, app, theme));
    }
    drawn
}

/// Draw the tab shown in the bottom-right place (what drawing measured goes into `drawn`).
fn draw_tab(
    frame: &mut Frame,
    app: &App,
    theme: Theme,
    area: Rect,
    key: &memo::PaneKey,
    drawn: &mut Drawn,
) {
    match app.detail {
        Tab::Inspector => {
            // (The inspector's rendering is always kept with its measure.)
            let (lines, matches) = memo::kept_or_drawn(frame, Slot::Detail, key, area, |frame| {
                Some(inspector::draw(frame, app, theme, area))
            })
            .unwrap_or_else(|| inspector::draw(frame, app, theme, area));
            drawn.inspector_lines = Some(lines);
            drawn.inspector_matches = matches;
        }
        Tab::Gaps => gaps::draw(frame, app, theme, area),
        Tab::Graph => graph::draw(frame, app, theme, area),
    }
}

/// The inspector's text for the open rollout, a line each (what `/` searches in it).
pub fn inspector_text(app: &App) -> String {
    inspector::lines(app, Theme { color: false })
        .iter()
        .map(|line| {
            let mut text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            text.push('\n');
            text
        })
        .collect()
}

/// An age for people: `3.1 s`, `4 min`, `2.5 h`, `3 d`.
pub(crate) fn age(seconds: f64) -> String {
    match seconds {
        s if s < 60.0 => format!("{s:.1} s"),
        s if s < 3600.0 => format!("{:.0} min", s / 60.0),
        s if s < 86_400.0 => format!("{:.1} h", s / 3600.0),
        s => format!("{:.0} d", s / 86_400.0),
    }
}

/// A `width` × `height` rectangle centered in `area` (an overlay's place).
pub(crate) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let (width, height) = (width.min(area.width), height.min(area.height));
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

/// A bordered block titled for a pane, highlighted when focused.
pub(crate) fn pane_block(title: String, focused: bool, theme: Theme) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(format!(" {title} "), theme.border(focused)))
}

/// A pane title fitted to the pane: its ` · `-separated facts are left out from the last,
/// whole, never cut inside a word.
pub(crate) fn fit_title(title: &str, area: ratatui::layout::Rect) -> String {
    let parts = title
        .split(" · ")
        .enumerate()
        .map(|(i, part)| {
            fit::Part::text(
                u8::try_from(i).unwrap_or(u8::MAX),
                part,
                ratatui::style::Style::new(),
            )
        })
        .collect();
    let room = usize::from(area.width.saturating_sub(4));
    fit::fit(parts, Span::raw(" · "), room)
        .spans
        .iter()
        .map(|s| s.content.as_ref())
        .collect()
}

/// The bottom-right pane's block, titled with the tab strip of the three panes that share
/// the place: each with its key, the shown one highlighted and titled `title`.
pub(crate) fn detail_block(title: String, app: &App, theme: Theme) -> Block<'static> {
    let focused = app.focus.is_tab();
    let mut tabs = vec![Span::styled(" ", theme.border(focused))];
    for tab in Tab::iter() {
        let key = keys::key_for(app, crate::app::Action::ShowTab(tab)).unwrap_or_default();
        let (text, style) = if tab == app.detail {
            (title.clone(), theme.border(focused).patch(theme.selected()))
        } else {
            (tab.spec().label.to_owned(), theme.dim())
        };
        tabs.push(Span::styled(format!("{key} {text}"), style));
        tabs.push(Span::styled(" │ ", theme.border(focused)));
    }
    tabs.pop();
    tabs.push(Span::styled(" ", theme.border(focused)));
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(ratatui::text::Line::from(tabs))
}

/// Cut a string to `width` characters, marking the cut. Looks at no more than `width + 1`
/// characters, however long the text (a record field can be hundreds of megabytes).
pub(crate) fn clip(text: &str, width: usize) -> String {
    match text.char_indices().nth(width) {
        None => text.to_owned(),
        Some(_) => {
            let cut = text
                .char_indices()
                .nth(width.saturating_sub(1))
                .map_or(text.len(), |(at, _)| at);
            format!("{}…", &text[..cut])
        }
    }
}

/// A JSON value as text, at most about `max` bytes of it: serializing stops there (a huge
/// value costs no more than a small one).
pub(crate) fn preview(value: &impl serde::Serialize, max: usize) -> String {
    struct Capped {
        out: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Capped {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let room = self.max.saturating_sub(self.out.len());
            if room == 0 {
                return Err(std::io::Error::other("enough"));
            }
            let taken = bytes.len().min(room);
            self.out.extend_from_slice(&bytes[..taken]);
            Ok(taken)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut capped = Capped {
        out: Vec::new(),
        max: max + 4,
    };
    let complete = serde_json::to_writer(&mut capped, value).is_ok();
    let text = String::from_utf8_lossy(&capped.out);
    if complete {
        clip(&text, max)
    } else {
        format!("{}…", clip(&text, max).trim_end_matches('…'))
    }
}

/// A call id without its rollout prefix (`0-1-a1-c003-58b3` → `c003-58b3`).
pub(crate) fn short_call<'a>(call: &'a str, rollout_id: &str) -> std::borrow::Cow<'a, str> {
    let short = call
        .strip_prefix(rollout_id)
        .and_then(|rest| rest.strip_prefix('-'))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(call);
    sanitize(short)
}

#[cfg(test)]
mod tests {
    #[test]
    fn clips_and_previews_stay_bounded() {
        assert_eq!(super::clip("abcdef", 4), "abc…");
        assert_eq!(super::clip("abc", 4), "abc");
        assert_eq!(super::clip("ééé", 3), "ééé");
        let big = serde_json::json!({"text": "x".repeat(10_000_000)});
        let shown = super::preview(&big, 50);
        assert!(shown.chars().count() <= 51, "{shown}");
        assert!(shown.starts_with("{\"text\":\"xxx") && shown.ends_with('…'));
        assert_eq!(super::preview(&serde_json::json!([1, 2]), 50), "[1,2]");
    }
}

#[cfg(test)]
mod kept_tests;
