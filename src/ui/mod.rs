//! Drawing: a pure function of the application state. One module per pane.

pub mod gaps;
pub mod graph;
pub mod help;
pub mod inspector;
pub mod keys;
pub mod layout;
pub mod list;
pub mod mouse;
pub mod strings;
pub mod theme;
pub mod tokens;
pub mod tree;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::app::{Action, App, Mode, Pane};
use crate::text::sanitize;
use keys::{BINDINGS, Scope};
pub use theme::Theme;

/// What drawing measured that the app needs to scroll right.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drawn {
    /// Lines of the inspector's text as wrapped, when it was drawn.
    pub inspector_lines: Option<usize>,
}

impl Drawn {
    /// The messages that report the measures to the app.
    pub fn messages(self) -> impl Iterator<Item = crate::app::Message> {
        self.inspector_lines
            .map(crate::app::Message::InspectorMeasured)
            .into_iter()
    }
}

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, app: &App, theme: Theme) -> Drawn {
    let areas = layout::areas(frame.area());
    let mut drawn = Drawn::default();
    draw_header(frame, app, theme, areas.header);
    draw_health(frame, app, theme, areas.health);
    list::draw(frame, app, theme, areas.list);
    tree::draw(frame, app, theme, areas.tree);
    tokens::draw(frame, app, theme, areas.tokens);
    match app.detail {
        Pane::Gaps => gaps::draw(frame, app, theme, areas.detail),
        Pane::Graph => graph::draw(frame, app, theme, areas.detail),
        _ => drawn.inspector_lines = Some(inspector::draw(frame, app, theme, areas.detail)),
    }
    draw_status(frame, app, theme, areas.status);
    if app.show_help {
        help::draw(frame, theme);
    }
    drawn
}

/// A bordered block titled for a pane, highlighted when focused.
pub(crate) fn pane_block(title: String, focused: bool, theme: Theme) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(format!(" {title} "), theme.border(focused)))
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

fn draw_header(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let t = &app.health;
    let percent = |n: usize, of: usize| {
        if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        }
    };
    let mut spans = vec![Span::styled(format!(" {} ", strings::APP), theme.heading())];
    if let Some(replay) = &app.replay {
        let r = &replay.replay;
        let offset = replay
            .clock(app.now)
            .zip(r.start())
            .map_or(0.0, |(t, s)| t - s);
        let mut play = match replay.playing {
            Some(speed) => format!("▶ {speed}×"),
            None => "❚❚".into(),
        };
        if !replay.pending.is_empty() {
            play.push_str(&format!(" ⇢ judging {}", replay.pending.len()));
        }
        spans.push(Span::styled(
            format!(
                "⏮ REPLAY call {}/{} +{offset:.1}s {play} ",
                r.position(),
                r.len()
            ),
            theme.heading().patch(theme.selected()),
        ));
        spans.push(Span::raw(" "));
    } else if app.live.watching {
        let live = &app.live;
        if let Some(dir) = live.gone.iter().next() {
            spans.push(Span::styled(
                format!("⚠ STORE GONE {} ", sanitize(&dir.display().to_string())),
                theme.problem().patch(theme.selected()),
            ));
        } else if app.replay_pending() {
            spans.push(Span::styled(strings::READING_FOR_REPLAY, theme.dim()));
        } else if live.paused {
            spans.push(Span::styled(
                format!("❚❚ PAUSED · {} changes waiting ", live.pending.len()),
                theme.heading().patch(theme.selected()),
            ));
        } else if live.ready {
            spans.push(Span::styled(
                "● LIVE ",
                theme.good().patch(theme.selected()),
            ));
        } else {
            spans.push(Span::styled(strings::reading(live.progress), theme.dim()));
        }
        spans.push(Span::raw(" "));
    } else if !app.live.ready && app.live.progress.is_some() {
        spans.push(Span::styled(
            strings::reading(app.live.progress),
            theme.dim(),
        ));
        spans.push(Span::raw(" "));
    }
    if t.alarm(app.max_mask_fraction, app.min_frozen) {
        spans.push(Span::styled(
            format!(
                "ALARM masked {:.0}% of frozen > {:.0}% ",
                t.frozen_masked_fraction() * 100.0,
                app.max_mask_fraction.unwrap_or(0.0) * 100.0
            ),
            theme.problem().patch(theme.selected()),
        ));
        spans.push(Span::raw(" "));
    }
    // Final verdicts as `build` counts them; live rollouts apart: at risk, waiting, the rest.
    let count = crate::text::count;
    spans.push(Span::raw(format!(
        "{} · ",
        count(t.rollouts, "rollout", "rollouts")
    )));
    spans.push(Span::styled(
        format!(
            "{} masked ({:.0}% of frozen)",
            t.masked,
            percent(t.frozen_masked, t.frozen)
        ),
        theme.problem(),
    ));
    if t.at_risk > 0 {
        spans.push(Span::raw(" · "));
        spans.push(Span::styled(
            format!("{} at risk", t.at_risk),
            theme.problem(),
        ));
    }
    spans.push(Span::raw(format!(
        " · {} live ({} waiting) · {} (+{} in flight) · {} captured, {} delivered",
        crate::text::thousands(t.live),
        crate::text::thousands(t.waiting),
        count(t.calls, "call", "calls"),
        crate::text::thousands(t.in_flight),
        count(t.tokens_captured, "token", "tokens"),
        crate::text::thousands(t.tokens_delivered)
    )));
    if !app.stores.is_empty() {
        let stores: Vec<String> = app.stores.iter().map(|s| s.display().to_string()).collect();
        spans.push(Span::styled(
            format!(" · {}", sanitize(&stores.join(", "))),
            theme.dim(),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_health(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let h = &app.health;
    let mut reasons: Vec<(&&str, &usize)> = h.masked_by_reason.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1));
    let reasons: Vec<String> = reasons
        .iter()
        .map(|(code, n)| format!("{code} {n}"))
        .collect();
    let decisions: Vec<String> = h
        .parent_decisions
        .iter()
        .map(|(d, n)| format!("{d} {n}"))
        .collect();
    let supplied = if h.prefix_requested == 0 {
        "-".to_string()
    } else {
        format!(
            "{:.0}%",
            h.prefix_supplied as f64 * 100.0 / h.prefix_requested as f64
        )
    };
    let b = h.delivered_buckets;
    let spans = vec![
        Span::styled(" masked or at risk: ", theme.dim()),
        Span::styled(
            if reasons.is_empty() {
                "none".into()
            } else {
                reasons.join(", ")
            },
            theme.problem(),
        ),
        Span::styled(" · parents: ", theme.dim()),
        Span::raw(decisions.join(", ")),
        Span::styled(" · prefix supplied ", theme.dim()),
        Span::raw(supplied),
        Span::styled(" · delivered <25/50/75/100/all ", theme.dim()),
        Span::raw(format!("{}/{}/{}/{}/{}", b[0], b[1], b[2], b[3], b[4])),
        Span::styled(" · calls/s ", theme.dim()),
        Span::styled(sparkline(&h.calls_per_second), theme.good()),
    ];
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_status(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let line = match &app.mode {
        Mode::Filter => Line::from(vec![
            Span::styled("filter: /", theme.heading()),
            Span::raw(sanitize(&app.list.filter).into_owned()),
            Span::styled("▏ Enter keep · Esc clear", theme.dim()),
        ]),
        Mode::Jump(text) => Line::from(vec![
            Span::styled(strings::JUMP_PROMPT, theme.heading()),
            Span::raw(sanitize(text).into_owned()),
            Span::styled("▏ Enter jump · Esc cancel", theme.dim()),
        ]),
        Mode::Export { what, path } => Line::from(vec![
            Span::styled(strings::export_prompt(*what), theme.heading()),
            Span::raw(sanitize(path).into_owned()),
            Span::styled("▏ Enter write · Esc cancel", theme.dim()),
        ]),
        Mode::ConfirmOverwrite { path, .. } => Line::from(vec![
            Span::styled(
                format!(
                    "{} exists — overwrite? ",
                    sanitize(&path.display().to_string())
                ),
                theme.heading(),
            ),
            Span::styled("y overwrite · any other key keeps it", theme.dim()),
        ]),
        Mode::Normal => match &app.message {
            Some(notice) => Line::from(Span::styled(
                sanitize(&strings::notice(notice)).into_owned(),
                theme.heading(),
            )),
            None => Line::from(Span::styled(hints(app.focus), theme.dim())),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// A one-line sparkline of `values`.
pub(crate) fn sparkline(values: &[u64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().max().unwrap_or(0);
    values
        .iter()
        .map(|&v| {
            if max == 0 || v == 0 {
                ' '
            } else {
                BARS[((v * 7) / max) as usize]
            }
        })
        .collect()
}

/// Key hints for the focused pane, from the binding list.
pub(crate) fn hints(focus: Pane) -> String {
    let scope = match focus {
        Pane::List => Scope::List,
        Pane::Tree => Scope::Tree,
        Pane::Tokens => Scope::Tokens,
        _ => Scope::Global,
    };
    let mut parts: Vec<String> = BINDINGS
        .iter()
        .filter(|b| b.scope == scope && scope != Scope::Global)
        .map(|b| format!("{} {}", b.keys[0], b.help))
        .collect();
    const ALWAYS: [Action; 6] = [
        Action::NextPane,
        Action::Enter,
        Action::Divergence,
        Action::PinTerminal,
        Action::Help,
        Action::Quit,
    ];
    parts.extend(
        ALWAYS
            .iter()
            .filter_map(|action| BINDINGS.iter().find(|b| b.action == *action))
            .map(|b| format!("{} {}", b.keys[0], b.help)),
    );
    parts.join(" · ")
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

    #[test]
    fn sparkline_scales_to_the_peak() {
        assert_eq!(super::sparkline(&[0, 1, 2, 4]), " ▂▄█");
        assert_eq!(super::sparkline(&[0, 0]), "  ");
    }
}
