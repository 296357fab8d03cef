//! What the user can ask of the app: the command vocabulary the key bindings (in
//! `ui::keys`) and the mouse map onto.

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Close the help, clear the message and the divergence.
    Dismiss,
    /// Leave the explorer.
    Quit,
    /// Show or hide the key list.
    Help,
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
    /// Open the `:` command line (go to a rollout, call, position, chain; replay jumps).
    Command,
    /// Show (and focus) the inspector in the bottom-right place.
    ShowInspector,
    /// Show (and focus) the gaps in the bottom-right place.
    ShowGaps,
    /// Show (and focus) the observation graph in the bottom-right place.
    ShowGraph,
    /// Give the focused pane the whole screen, or give it back.
    Zoom,
}

impl Action {
    /// Every action (the configuration names them; tests check each has a key).
    pub const ALL: [Action; 49] = [
        Action::Dismiss,
        Action::Quit,
        Action::Help,
        Action::NextPane,
        Action::PrevPane,
        Action::Up,
        Action::Down,
        Action::Left,
        Action::Right,
        Action::PageUp,
        Action::PageDown,
        Action::Top,
        Action::Bottom,
        Action::Enter,
        Action::ToggleCollapse,
        Action::Filter,
        Action::Yank,
        Action::YankText,
        Action::Mark,
        Action::SearchNext,
        Action::SearchPrev,
        Action::MaskedOnly,
        Action::CycleReason,
        Action::SortNext,
        Action::SortReverse,
        Action::NextBoundary,
        Action::PrevBoundary,
        Action::NextLowProb,
        Action::PrevLowProb,
        Action::CycleChain,
        Action::ToggleText,
        Action::Divergence,
        Action::PinTerminal,
        Action::ToggleAttributed,
        Action::ClearWhatIf,
        Action::ExportReport,
        Action::ExportResponse,
        Action::Pause,
        Action::ToggleReplay,
        Action::StepBack,
        Action::StepForward,
        Action::Speed1,
        Action::Speed10,
        Action::Speed100,
        Action::Command,
        Action::ShowInspector,
        Action::ShowGaps,
        Action::ShowGraph,
        Action::Zoom,
    ];

    /// The action's name in the configuration file: `next_pane` for `NextPane`.
    pub fn name(self) -> String {
        let mut name = String::new();
        for (i, c) in format!("{self:?}").chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                name.push('_');
            }
            name.push(c.to_ascii_lowercase());
        }
        name
    }

    /// The action a configuration name stands for.
    pub fn named(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == name)
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
        for action in Action::ALL {
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
