//! Colors and text styles. With `NO_COLOR` set, only modifiers (bold, dim, reverse…) are used.

use ratatui::style::{Color, Modifier, Style};

use tokscope_core::verdict::{LiveStatus, Verdict};

/// The style set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// Whether colors may be used.
    pub color: bool,
}

impl Theme {
    /// Colors unless `NO_COLOR` is set to a non-empty value.
    pub fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    /// Border of a pane.
    pub(crate) fn border(self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            self.fg(Color::DarkGray)
        }
    }

    /// The selected row.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// Secondary text.
    pub(crate) fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    /// Headings inside panes.
    pub(crate) fn heading(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// Problems.
    pub fn problem(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    /// Good news.
    pub fn good(self) -> Style {
        self.fg(Color::Green)
    }

    /// A verdict badge.
    pub fn verdict(self, status: LiveStatus, verdict: Verdict) -> Style {
        match (status, verdict) {
            (LiveStatus::Final, Verdict::Masked) | (LiveStatus::AtRisk, _) => self.problem(),
            (LiveStatus::Final, _) => self.good().add_modifier(Modifier::BOLD),
            (LiveStatus::Waiting, _) => self.dim(),
            (LiveStatus::Pending, _) => self.fg(Color::Magenta),
            (LiveStatus::Good, _) => self.fg(Color::Blue),
        }
    }

    /// A quarantined call: struck through.
    pub fn quarantined(self) -> Style {
        Style::new().add_modifier(Modifier::CROSSED_OUT | Modifier::DIM)
    }

    /// Root prompt tokens.
    pub(crate) fn root_prompt(self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::ITALIC)
    }

    /// Environment (interstitial) tokens.
    pub fn environment(self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::DIM)
    }

    /// Generated tokens of the `n`-th call on the chain (alternating, to see boundaries).
    pub fn generated(self, n: usize) -> Style {
        let color = if n.is_multiple_of(2) {
            Color::Green
        } else {
            Color::Cyan
        };
        self.fg(color).add_modifier(Modifier::BOLD)
    }

    /// Extra emphasis for a generated token by its probability.
    pub fn probability(self, style: Style, log_prob: f64, low: f64) -> Style {
        if log_prob < low {
            if self.color {
                style.bg(Color::Red).fg(Color::White)
            } else {
                style.add_modifier(Modifier::UNDERLINED)
            }
        } else if log_prob < 0.5f64.ln() && self.color {
            style.bg(Color::Rgb(70, 60, 0))
        } else {
            style
        }
    }

    /// Something that just changed (live monitoring, replay).
    pub fn fresh(self) -> Style {
        self.fg(Color::LightGreen)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    /// The token under the cursor.
    pub fn cursor(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }
}
