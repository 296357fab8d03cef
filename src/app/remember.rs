//! What the explorer remembers of a set of stores between sessions (the rollout, the tab, the
//! token mode), taken from the app and given back to it. The state file that holds it is the
//! configuration's (`config::State`).

use serde::{Deserialize, Serialize};

use super::{App, Tab, TokenText};

/// What is remembered of one set of stores.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Remembered {
    /// The selected rollout.
    pub rollout: Option<String>,
    /// The bottom-right tab, by its configuration name (`inspector`, `gaps`, `graph`).
    pub tab: Option<String>,
    /// The token pane's mode: `ids`, `cells` or `prose`.
    pub tokens: Option<String>,
}

impl App {
    /// What the app shows now, to remember.
    pub fn remembered(&self) -> Remembered {
        Remembered {
            rollout: self
                .list
                .selected_rollout()
                .map(|i| self.rollouts[i].rollout_id().to_owned())
                .or_else(|| self.restore.clone()),
            tab: Some(self.detail.pane().spec().name.to_owned()),
            tokens: Some(self.token_text.name().to_owned()),
        }
    }

    /// Show what was remembered: the tab and the token mode at once, the rollout once listed.
    pub fn restore(&mut self, what: &Remembered) {
        if let Some(tab) = what.tab.as_deref().and_then(Tab::named) {
            self.detail = tab;
        }
        if self.detok.is_some()
            && let Some(mode) = what.tokens.as_deref().and_then(TokenText::named)
        {
            self.token_text = mode;
        }
        self.restore_rollout(what.rollout.clone());
    }
}
