//! What the user can ask of the app: the command vocabulary the key bindings (in
//! `ui::keys`) and the mouse map onto.

use strum::{EnumIter, IntoEnumIterator, IntoStaticStr};

use super::Tab;

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Action {
    /// Close the help, clear the message and the divergence.
    Dismiss,
    /// Leave the explorer.
    Quit,
    /// Show or hide the key list.
    Help,
    /// Show or hide the causes view (masked rollouts grouped by cause).
    Causes,
    /// Compare mode: the flips only, or every rollout.
    Flips,
    /// Show or hide the timeline view (the run over time; the list follows its cursor).
    Timeline,
    /// Focus the next pane.
    NextPane,
    /// Focus the previous pane.
    PrevPane,
    /// Move up one row.
    Up,
    /// Move down one row.
    Down,
    /// Move left (previous token).
    Left,
    /// Move right (next token).
    Right,
    /// Up one page.
    PageUp,
    /// Down one page.
    PageDown,
    /// First row.
    Top,
    /// Last row.
    Bottom,
    /// Open / jump to what is selected.
    Enter,
    /// Collapse or expand the selected tree node.
    ToggleCollapse,
    /// Type a filter for the rollout list, or a search of the focused pane.
    Filter,
    /// Copy the selection (ids, JSON) to the clipboard.
    Yank,
    /// Copy the selection as text (decoded tokens).
    YankText,
    /// Token pane: set or clear the mark that starts a range.
    Mark,
    /// The next match of the search.
    SearchNext,
    /// The previous match of the search.
    SearchPrev,
    /// Show masked rollouts only.
    MaskedOnly,
    /// Cycle through the mask reasons present.
    CycleReason,
    /// Sort the list by the next column.
    SortNext,
    /// Reverse the sort.
    SortReverse,
    /// Next call boundary in the token stream.
    NextBoundary,
    /// Previous call boundary in the token stream.
    PrevBoundary,
    /// Next generated token below the probability threshold.
    NextLowProb,
    /// Previous generated token below the probability threshold.
    PrevLowProb,
    /// Show the next chain in the token pane.
    CycleChain,
    /// Show token ids or decoded text in the token pane.
    ToggleText,
    /// Show where the selected call's prompt diverges.
    Divergence,
    /// Pin the selected call as the terminal (what-if).
    PinTerminal,
    /// Toggle `mask_incomplete_when_attributed` (what-if).
    ToggleAttributed,
    /// Drop the what-if and show the rollout as built.
    ClearWhatIf,
    /// Write the selected rollout's report to a file.
    ExportReport,
    /// Write the rebuilt response to a file.
    ExportResponse,
    /// Live: pause / resume the view. Replay: play / pause.
    Pause,
    /// Enter or leave replay.
    ToggleReplay,
    /// Replay: one call back.
    StepBack,
    /// Replay: one call forward.
    StepForward,
    /// Replay: play at 1×.
    Speed1,
    /// Replay: play at 10×.
    Speed10,
    /// Replay: play at 100×.
    Speed100,
    /// Replay: skip idle gaps while playing (on by default), or not.
    SkipIdle,
    /// Show times in UTC or in local time.
    ToggleZone,
    /// Open the `:` command line (go to a rollout, call, position, chain; replay jumps).
    Command,
    /// Show (and focus) a tab of the bottom-right place.
    ShowTab(Tab),
    /// Give the focused pane the whole screen, or give it back.
    Zoom,
}

impl Action {
    /// Every action, in declaration order (one [`Action::ShowTab`] for each tab).
    pub fn all() -> impl Iterator<Item = Action> {
        Action::iter().flat_map(|action| match action {
            Action::ShowTab(_) => Tab::iter().map(Action::ShowTab).collect::<Vec<_>>(),
            other => vec![other],
        })
    }

    /// The name in the configuration's `[keys]` table: `next_pane`, `quit`, `show_gaps`…
    pub fn name(self) -> String {
        match self {
            Action::ShowTab(tab) => format!("show_{}", tab.pane().spec().name),
            other => <&'static str>::from(other).to_owned(),
        }
    }

    /// The action named `name`.
    pub fn named(name: &str) -> Option<Action> {
        Action::all().find(|a| a.name() == name)
    }
}

/// A key while a prompt (filter, jump, export path) is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextKey {
    /// Type a character.
    Char(char),
    /// Delete the last character.
    Backspace,
    /// Delete the last word.
    DeleteWord,
    /// Clear the line.
    ClearLine,
    /// Accept.
    Submit,
    /// Leave the prompt.
    Cancel,
}

/// Apply a prompt edit to `line`.
pub fn edit(line: &mut String, key: TextKey) {
    match key {
        TextKey::Char(c) => line.push(c),
        TextKey::Backspace => {
            line.pop();
        }
        TextKey::DeleteWord => {
            let kept = line.trim_end().len();
            line.truncate(kept);
            // After the last whitespace character, whatever its width in bytes.
            let cut = line
                .char_indices()
                .rfind(|(_, c)| c.is_whitespace())
                .map_or(0, |(at, c)| at + c.len_utf8());
            line.truncate(cut);
        }
        TextKey::ClearLine => line.clear(),
        TextKey::Submit | TextKey::Cancel => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_snake_case_and_round_trip() {
        assert_eq!(Action::NextPane.name(), "next_pane");
        assert_eq!(Action::Quit.name(), "quit");
        assert_eq!(Action::ShowTab(Tab::Gaps).name(), "show_gaps");
        assert_eq!(
            Action::named("show_inspector"),
            Some(Action::ShowTab(Tab::Inspector))
        );
        for action in Action::all() {
            assert_eq!(Action::named(&action.name()), Some(action));
        }
        assert_eq!(Action::named("no_such_action"), None);
    }

    #[test]
    fn prompt_editing() {
        let mut line = String::new();
        for c in "export to a.json".chars() {
            edit(&mut line, TextKey::Char(c));
        }
        edit(&mut line, TextKey::Backspace);
        assert_eq!(line, "export to a.jso");
        edit(&mut line, TextKey::DeleteWord);
        assert_eq!(line, "export to ");
        edit(&mut line, TextKey::DeleteWord);
        assert_eq!(line, "export ");
        edit(&mut line, TextKey::ClearLine);
        assert_eq!(line, "");
        edit(&mut line, TextKey::DeleteWord);
        assert_eq!(line, "");
        // Wide whitespace (an ideographic space) is cut on its boundary.
        let mut wide = "a\u{3000}b".to_owned();
        edit(&mut wide, TextKey::DeleteWord);
        assert_eq!(wide, "a\u{3000}");
    }
}
