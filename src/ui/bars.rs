//! The one-line bars: the header (mode and store-wide counts), the health strip and the
//! status bar (prompt, notice or key hints). Each is a list of ranked parts fitted to the
//! width ([`super::fit`]), so a narrow terminal drops the least important facts whole
//! instead of cutting words.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::Paragraph;

use super::fit::{Part, fit};
use super::keys::{BINDINGS, key_for};
use super::{Theme, strings};
use strum::IntoEnumIterator;

use crate::app::pane::{Enter, KeyScope};
use crate::app::{Action, App, Mode, Tab};
use tokscope_core::text::{count, sanitize, thousands};

fn separator(theme: Theme) -> Span<'static> {
    Span::styled(" · ", theme.dim())
}

fn percent(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 * 100.0 / of as f64
    }
}

/// The mode badge: replay position, store gone, paused, live or reading.
fn mode_badge(app: &App, theme: Theme) -> Option<Part> {
    if let Some(replay) = &app.replay {
        let r = &replay.replay;
        let offset = replay
            .clock(app.now)
            .zip(r.start())
            .map_or(0.0, |(t, s)| t - s);
        let play = match replay.playing {
            Some(speed) => format!("▶ {speed}×"),
            None => "❚❚".into(),
        };
        let judging = if replay.pending.is_empty() {
            String::new()
        } else {
            format!(" ⇢ judging {}", thousands(replay.pending.len()))
        };
        let style = theme.heading().patch(theme.selected());
        // The store's own time beside the offset, to line up with the trainer's logs.
        let wall = replay
            .clock(app.now)
            .and_then(|t| tokscope_core::text::moment(t, app.zone))
            .map_or(String::new(), |t| format!(" {t}"));
        let long = format!(
            "⏮ REPLAY call {}/{} +{offset:.1}s{wall} {play}{judging} ",
            thousands(r.position()),
            thousands(r.len())
        );
        let short = format!("⏮ {}/{} {play} ", r.position(), r.len());
        return Some(Part::text(0, long, style).or_text(short, style).badge());
    }
    let live = &app.live;
    let (text, style) = if live.watching {
        if let Some(dir) = live.gone.iter().next() {
            (
                format!("⚠ STORE GONE {} ", sanitize(&dir.display().to_string())),
                theme.problem().patch(theme.selected()),
            )
        } else if app.replay_pending() {
            (strings::READING_FOR_REPLAY.to_owned(), theme.dim())
        } else if live.paused {
            (
                format!(
                    "❚❚ PAUSED · {} held ",
                    count(live.pending.len(), "change", "changes")
                ),
                theme.heading().patch(theme.selected()),
            )
        } else if live.ready && !live.polled.is_empty() {
            (
                "● LIVE (polling) ".to_owned(),
                theme.good().patch(theme.selected()),
            )
        } else if live.ready {
            ("● LIVE ".to_owned(), theme.good().patch(theme.selected()))
        } else {
            (strings::reading(live.progress), theme.dim())
        }
    } else if !live.ready && live.progress.is_some() {
        (strings::reading(live.progress), theme.dim())
    } else {
        return None;
    };
    Some(Part::text(0, format!("{text} "), style).badge())
}

/// Header: name, mode, alarm, then the counts, most important first to stay.
pub(crate) fn draw_header(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let t = &app.health;
    let mut parts = vec![Part::text(0, format!(" {} ", strings::APP), theme.heading()).badge()];
    parts.extend(mode_badge(app, theme));
    if t.alarm(app.max_mask_fraction, app.min_frozen) {
        let style = theme.problem().patch(theme.selected());
        let fraction = t.frozen_masked_fraction() * 100.0;
        let limit = app.max_mask_fraction.unwrap_or(0.0) * 100.0;
        parts.push(
            Part::text(
                0,
                format!("ALARM masked {fraction:.0}% of frozen > {limit:.0}% "),
                style,
            )
            .or_text(format!("ALARM {fraction:.0}% > {limit:.0}% "), style)
            .badge(),
        );
    }
    match &app.comparison {
        Some(comparison) => parts.extend(compare_parts(comparison, theme)),
        None => parts.extend(tally_parts(app, theme)),
    }
    parts.push(
        Part::text(
            3,
            format!(
                "{} (+{} in flight)",
                count(t.calls, "call", "calls"),
                thousands(t.in_flight)
            ),
            Style::default(),
        )
        .or_text(count(t.calls, "call", "calls"), Style::default()),
    );
    parts.push(
        Part::text(
            4,
            format!(
                "{} captured, {} delivered",
                count(t.tokens_captured, "generated token", "generated tokens"),
                thousands(t.tokens_delivered)
            ),
            Style::default(),
        )
        .or_text(
            format!(
                "{} generated, {} delivered",
                thousands(t.tokens_captured),
                thousands(t.tokens_delivered)
            ),
            Style::default(),
        )
        .or_text(
            format!("{} generated", thousands(t.tokens_captured)),
            Style::default(),
        ),
    );
    if !app.stores.is_empty() {
        let stores: Vec<String> = app.stores.iter().map(|s| s.display().to_string()).collect();
        parts.push(Part::text(
            5,
            sanitize(&stores.join(", ")).into_owned(),
            theme.dim(),
        ));
    }
    let line = fit(parts, separator(theme), usize::from(area.width));
    frame.render_widget(Paragraph::new(line), area);
}

/// The masked (or at-risk) reasons, as many as `shown` and how many more.
fn reasons_form(reasons: &[String], shown: usize, theme: Theme) -> Vec<Span<'static>> {
    let mut text = reasons[..shown].join(", ");
    if shown < reasons.len() {
        if shown > 0 {
            text.push_str(", ");
        }
        text.push_str(&format!("+{} more (C)", reasons.len() - shown));
    }
    vec![
        Span::styled("masked or at risk: ", theme.dim()),
        Span::styled(text, theme.problem()),
    ]
}

/// Health strip: why rollouts are masked (never cut mid-name), parents, supply, delivery.
pub(crate) fn draw_health(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let h = &app.health;
    let mut reasons: Vec<(&&str, &usize)> = h.masked_by_reason.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let reasons: Vec<String> = reasons
        .iter()
        .map(|(code, n)| format!("{code} {}", thousands(**n)))
        .collect();
    let reasons_part = if reasons.is_empty() {
        Part::spans(
            0,
            vec![
                Span::styled("masked or at risk: ", theme.dim()),
                Span::styled("none", theme.good()),
            ],
        )
    } else {
        // Fewer reasons, then only the count: shortened whole, never cut inside a name. Past
        // the first two, the reasons give way before the other facts.
        let rank = |shown: usize| if shown > 2 { 3 } else { 0 };
        (0..reasons.len()).rev().fold(
            Part::spans(
                rank(reasons.len()),
                reasons_form(&reasons, reasons.len(), theme),
            ),
            |part, shown| part.or_at(rank(shown), reasons_form(&reasons, shown, theme)),
        )
    };
    let decisions: Vec<String> = h
        .parent_decisions
        .iter()
        .map(|(d, n)| format!("{d} {}", thousands(*n)))
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
    let label = |text: &'static str| Span::styled(text, theme.dim());
    let parts = vec![
        Part::text(0, " ", theme.dim()).badge(),
        reasons_part,
        // The whole minute of activity is the first to go; its last seconds stay.
        Part::spans(
            4,
            vec![
                label("calls/s "),
                Span::styled(sparkline(&h.calls_per_second), theme.good()),
            ],
        )
        .or_at(
            1,
            vec![
                label("calls/s "),
                Span::styled(
                    sparkline(&h.calls_per_second[h.calls_per_second.len().saturating_sub(12)..]),
                    theme.good(),
                ),
            ],
        ),
        Part::spans(2, vec![label("parents: "), Span::raw(decisions.join(", "))]),
        Part::spans(
            3,
            vec![
                label("delivered <25/50/75/100/all "),
                Span::raw(format!("{}/{}/{}/{}/{}", b[0], b[1], b[2], b[3], b[4])),
            ],
        ),
        Part::spans(4, vec![label("prefix supplied "), Span::raw(supplied)]),
    ];
    let line = fit(parts, separator(theme), usize::from(area.width));
    frame.render_widget(Paragraph::new(line), area);
}

/// A prompt: its label, the text typed (the end of it kept when long) and how to leave.
fn prompt(label: String, typed: &str, hint: &'static str, theme: Theme) -> Vec<Part> {
    let typed = sanitize(typed).into_owned();
    vec![
        Part::text(0, label, theme.heading()).badge(),
        Part::text(0, format!("{typed}▏"), Style::default()).badge(),
        Part::text(1, format!(" {hint}"), theme.dim()),
    ]
}

/// Status bar: the open prompt, else the notice, else the focused pane's key hints.
pub(crate) fn draw_status(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let parts = match &app.mode {
        Mode::Filter => prompt(
            "filter: /".into(),
            &app.list.filter,
            "Enter keep · Esc clear",
            theme,
        ),
        Mode::Command(text) => prompt(
            strings::COMMAND_PROMPT.into(),
            text,
            if app.replay.is_some() {
                strings::COMMAND_HINT_REPLAY
            } else {
                strings::COMMAND_HINT
            },
            theme,
        ),
        Mode::Search(text) => prompt(
            format!("search {}: /", strings::pane_name(app.focus)),
            text,
            "Enter search · Esc cancel · then n / N",
            theme,
        ),
        Mode::Export { what, path } => prompt(
            strings::export_prompt(*what).into(),
            path,
            "Enter write · Esc cancel",
            theme,
        ),
        Mode::ConfirmOverwrite { path, .. } => vec![
            Part::text(
                0,
                format!(
                    "{} exists — overwrite? ",
                    sanitize(&path.display().to_string())
                ),
                theme.heading(),
            )
            .badge(),
            Part::text(0, "y overwrite", theme.good()).badge(),
            Part::text(1, " · any other key keeps it", theme.dim()),
        ],
        Mode::Normal => match &app.message {
            Some(notice) => vec![Part::text(
                0,
                sanitize(&strings::notice(notice)).into_owned(),
                theme.heading(),
            )],
            None => hints(app)
                .into_iter()
                .map(|(rank, hint)| Part::text(rank, hint, theme.dim()))
                .collect(),
        },
    };
    let line = fit(parts, separator(theme), usize::from(area.width));
    frame.render_widget(Paragraph::new(line), area);
}

/// Key hints for the focused pane, from its spec and the keys in force (the user's
/// included), ranked: help and quit always stay, then moving between panes, then the pane's
/// own keys in the list's order.
pub(crate) fn hints(app: &App) -> Vec<(u8, String)> {
    let focus = app.focus;
    let spec = focus.spec();
    let hint = |b: &super::keys::Binding| {
        key_for(app, b.action).map(|key| format!("{key} {}", short_help(b.action, b.help)))
    };
    let mut hints: Vec<(u8, String)> = BINDINGS
        .iter()
        .filter(|b| b.scope == spec.scope && spec.scope != KeyScope::Global)
        // Compare mode's key is hinted only in compare mode.
        .filter(|b| b.action != Action::Flips || app.comparison.is_some())
        .filter_map(hint)
        .enumerate()
        .map(|(i, hint)| (4 + i.min(200) as u8, hint))
        .collect();
    let enter = match spec.enter {
        Enter::Open => Some(strings::ENTER_OPEN),
        Enter::Divergence => Some(strings::ENTER_DIVERGENCE),
        Enter::GoToCall => Some(strings::ENTER_GO_TO_CALL),
        Enter::Nothing => None,
    };
    hints.extend(enter.map(|what| (2, format!("Enter {what}"))));
    const ALWAYS: [(Action, u8); 6] = [
        (Action::NextPane, 1),
        (Action::Zoom, 3),
        (Action::Divergence, 3),
        (Action::PinTerminal, 250),
        (Action::Help, 0),
        (Action::Quit, 0),
    ];
    // Where Enter already is the divergence, `d` is not repeated.
    let always = ALWAYS
        .iter()
        .filter(|(action, _)| !(spec.enter == Enter::Divergence && *action == Action::Divergence));
    hints.extend(always.filter_map(|(action, rank)| {
        BINDINGS
            .iter()
            .find(|b| b.action == *action)
            .and_then(hint)
            .map(|hint| (*rank, hint))
    }));
    if app.replay.is_some() {
        // The mode's keys first: in replay they are what moves the screen.
        let key = |action| key_for(app, action).unwrap_or_default();
        let replay = [
            format!("{} {}", key(Action::Pause), strings::HINT_PLAY),
            format!(
                "{} {} {}",
                key(Action::StepBack),
                key(Action::StepForward),
                strings::HINT_STEP
            ),
            format!(
                "{}/{}/{} {}",
                key(Action::Speed1),
                key(Action::Speed10),
                key(Action::Speed100),
                strings::HINT_SPEED
            ),
            format!(
                "{} {}",
                key(Action::ToggleReplay),
                strings::HINT_LEAVE_REPLAY
            ),
        ];
        hints.extend(replay.into_iter().map(|hint| (1, hint)));
    }
    if focus.is_tab() {
        let keys: Vec<String> = Tab::iter()
            .filter_map(|tab| key_for(app, Action::ShowTab(tab)))
            .collect();
        hints.insert(0, (2, format!("{} {}", keys.join("/"), strings::TABS)));
    }
    hints
}

/// The few words a hint uses for an action whose help text is long.
fn short_help(action: Action, help: &'static str) -> &'static str {
    match action {
        Action::Help => "help",
        Action::Zoom => "zoom",
        Action::Divergence => "divergence",
        Action::PinTerminal => "pin as terminal",
        _ => help,
    }
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

/// The header's counts of the rollouts by standing.
fn tally_parts(app: &App, theme: Theme) -> Vec<Part> {
    let t = &app.health;
    let mut parts = Vec::new();
    // One count for every surface (the rollouts by standing): final verdicts as `build`
    // counts them, retired ones delivered; live rollouts apart: at risk, waiting, the rest.
    let tally = &t.tally;
    parts.push(Part::text(
        1,
        count(tally.rollouts(), "rollout", "rollouts"),
        Style::default(),
    ));
    let share = if tally.judged() == 0 {
        "none frozen yet".to_owned()
    } else {
        format!("{:.0}% of frozen", percent(tally.masked, tally.judged()))
    };
    parts.push(
        Part::text(
            0,
            format!("{} masked ({share})", thousands(tally.masked)),
            theme.problem(),
        )
        .or_text(
            format!("{} masked", thousands(tally.masked)),
            theme.problem(),
        ),
    );
    if tally.at_risk > 0 {
        parts.push(Part::text(
            0,
            format!("{} at risk", thousands(tally.at_risk)),
            theme.problem(),
        ));
    }
    parts.push(
        Part::text(
            1,
            format!(
                "{} live ({} waiting)",
                thousands(tally.live_total()),
                thousands(tally.waiting)
            ),
            Style::default(),
        )
        .or_text(
            format!("{} live", thousands(tally.live_total())),
            Style::default(),
        ),
    );
    // In replay, a rollout whose first call has not come yet has no files: not "cleared".
    let cleared = if app.replay.is_some() {
        0
    } else {
        tally.cleared
    };
    for (n, what) in [(tally.retired, "retired"), (cleared, "cleared")] {
        if n > 0 {
            parts.push(Part::text(
                3,
                format!("{} {what}", thousands(n)),
                Style::default(),
            ));
        }
    }
    parts
}

/// Compare mode's header counts, each run's apart (the two runs' sums would mean nothing).
fn compare_parts(comparison: &crate::app::Comparison, theme: Theme) -> Vec<Part> {
    let mut parts = Vec::new();
    for (label, side) in [("A", &comparison.counts[0]), ("B", &comparison.counts[1])] {
        parts.push(
            Part::text(
                2,
                format!(
                    "{label}: {}, {} masked, {} at risk",
                    count(side.rollouts, "rollout", "rollouts"),
                    thousands(side.masked),
                    thousands(side.at_risk)
                ),
                Style::default(),
            )
            .or_at(
                1,
                vec![Span::raw(format!(
                    "{label}: {} masked, {} at risk",
                    thousands(side.masked),
                    thousands(side.at_risk)
                ))],
            ),
        );
    }
    // The flips stay whatever the width (their short form at the least).
    let diff = &comparison.diff;
    let (fixed, broke) = (diff.fixed().count(), diff.broke().count());
    let (gone, new) = (diff.only_a.len(), diff.only_b.len());
    parts.push(
        Part::text(
            0,
            format!("{fixed} masked → ok, {broke} ok → masked, {gone} gone, {new} new"),
            theme.problem(),
        )
        .or_text(
            format!("flips: {fixed} →ok {broke} →masked {gone} gone {new} new"),
            theme.problem(),
        ),
    );
    parts
}

#[cfg(test)]
mod tests {
    #[test]
    fn sparkline_scales_to_the_peak() {
        assert_eq!(super::sparkline(&[0, 1, 2, 4]), " ▂▄█");
        assert_eq!(super::sparkline(&[0, 0]), "  ");
    }
}
