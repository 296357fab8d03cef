//! Every key binding, in one list, and the translation of terminal keys into the app's
//! messages. The help overlay and the status bar are drawn from the same list.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{Action, App, Message, Mode, TextKey};

/// Where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Everywhere.
    Global,
    /// Rollout list.
    List,
    /// Chain tree.
    Tree,
    /// Token provenance.
    Tokens,
    /// Live monitoring and replay.
    Live,
}

/// One binding.
pub(crate) struct Binding {
    /// Keys shown in help, first is the main one.
    pub keys: &'static [&'static str],
    /// The action.
    pub action: Action,
    /// Where it applies.
    pub scope: Scope,
    /// What it does.
    pub help: &'static str,
}

/// The single list of bindings (one per line, as a table).
#[rustfmt::skip]
pub(crate) const BINDINGS: &[Binding] = &[
    Binding { keys: &["q", "Ctrl-C"], action: Action::Quit, scope: Scope::Global, help: "quit" },
    Binding { keys: &["?"], action: Action::Help, scope: Scope::Global, help: "show / hide this help" },
    Binding { keys: &["Esc"], action: Action::Dismiss, scope: Scope::Global, help: "close help · clear the message and the divergence" },
    Binding { keys: &["Tab"], action: Action::NextPane, scope: Scope::Global, help: "next pane" },
    Binding { keys: &["Shift-Tab"], action: Action::PrevPane, scope: Scope::Global, help: "previous pane" },
    Binding { keys: &["i"], action: Action::ShowInspector, scope: Scope::Global, help: "inspector tab (bottom right)" },
    Binding { keys: &["p"], action: Action::ShowGaps, scope: Scope::Global, help: "gaps tab: what was not observed or joined" },
    Binding { keys: &["o"], action: Action::ShowGraph, scope: Scope::Global, help: "observation graph tab" },
    Binding { keys: &["f"], action: Action::Zoom, scope: Scope::Global, help: "zoom: the focused pane full screen / back" },
    Binding { keys: &["k", "↑"], action: Action::Up, scope: Scope::Global, help: "up" },
    Binding { keys: &["j", "↓"], action: Action::Down, scope: Scope::Global, help: "down" },
    Binding { keys: &["h", "←"], action: Action::Left, scope: Scope::Tokens, help: "previous token" },
    Binding { keys: &["l", "→"], action: Action::Right, scope: Scope::Tokens, help: "next token" },
    Binding { keys: &["PgUp", "Ctrl-U"], action: Action::PageUp, scope: Scope::Global, help: "page up" },
    Binding { keys: &["PgDn", "Ctrl-D"], action: Action::PageDown, scope: Scope::Global, help: "page down" },
    Binding { keys: &["g", "Home"], action: Action::Top, scope: Scope::Global, help: "first" },
    Binding { keys: &["G", "End"], action: Action::Bottom, scope: Scope::Global, help: "last" },
    Binding { keys: &["Enter"], action: Action::Enter, scope: Scope::Global, help: "list: open · tree: divergence · gaps, graph: go to the call" },
    Binding { keys: &["z"], action: Action::ToggleCollapse, scope: Scope::Tree, help: "collapse / expand subtree" },
    Binding { keys: &["/"], action: Action::Filter, scope: Scope::Global, help: "search the focused pane (the list: filter it)" },
    Binding { keys: &["y"], action: Action::Yank, scope: Scope::Global, help: "yank (OSC 52): rollout id, full call id, token ids, record JSON" },
    Binding { keys: &["Y"], action: Action::YankText, scope: Scope::Global, help: "yank as text: decoded tokens, gap, observation JSON" },
    Binding { keys: &["n"], action: Action::SearchNext, scope: Scope::Global, help: "next match" },
    Binding { keys: &["N"], action: Action::SearchPrev, scope: Scope::Global, help: "previous match" },
    Binding { keys: &["m"], action: Action::MaskedOnly, scope: Scope::List, help: "masked only" },
    Binding { keys: &["r"], action: Action::CycleReason, scope: Scope::List, help: "cycle mask reason filter" },
    Binding { keys: &["s"], action: Action::SortNext, scope: Scope::List, help: "sort by next column" },
    Binding { keys: &["S"], action: Action::SortReverse, scope: Scope::List, help: "reverse sort" },
    Binding { keys: &["]"], action: Action::NextBoundary, scope: Scope::Tokens, help: "next call boundary" },
    Binding { keys: &["["], action: Action::PrevBoundary, scope: Scope::Tokens, help: "previous call boundary" },
    Binding { keys: &[">"], action: Action::NextLowProb, scope: Scope::Tokens, help: "next low-probability token" },
    Binding { keys: &["<"], action: Action::PrevLowProb, scope: Scope::Tokens, help: "previous low-probability token" },
    Binding { keys: &["v"], action: Action::Mark, scope: Scope::Tokens, help: "mark: start a token range to yank (again: clear)" },
    Binding { keys: &["c"], action: Action::CycleChain, scope: Scope::Tokens, help: "show next chain" },
    Binding { keys: &["T"], action: Action::ToggleText, scope: Scope::Tokens, help: "ids → decoded cells → flowing text (with a tokenizer)" },
    Binding { keys: &["d"], action: Action::Divergence, scope: Scope::Global, help: "divergence of the selected call (tokens: the call under the cursor; gaps: the gap's)" },
    Binding { keys: &["t"], action: Action::PinTerminal, scope: Scope::Global, help: "what-if: pin selected call as terminal" },
    Binding { keys: &["a"], action: Action::ToggleAttributed, scope: Scope::Global, help: "what-if: toggle mask_incomplete_when_attributed" },
    Binding { keys: &["x"], action: Action::ClearWhatIf, scope: Scope::Global, help: "clear what-if" },
    Binding { keys: &["e"], action: Action::ExportReport, scope: Scope::Global, help: "export report JSON" },
    Binding { keys: &["E"], action: Action::ExportResponse, scope: Scope::Global, help: "export rebuilt response JSON" },
    Binding { keys: &["Space"], action: Action::Pause, scope: Scope::Live, help: "live: pause / resume · replay: play / pause" },
    Binding { keys: &["R"], action: Action::ToggleReplay, scope: Scope::Live, help: "replay on / off" },
    Binding { keys: &[","], action: Action::StepBack, scope: Scope::Live, help: "replay: one call back" },
    Binding { keys: &["."], action: Action::StepForward, scope: Scope::Live, help: "replay: one call forward" },
    Binding { keys: &["1"], action: Action::Speed1, scope: Scope::Live, help: "replay: play at 1×" },
    Binding { keys: &["2"], action: Action::Speed10, scope: Scope::Live, help: "replay: play at 10×" },
    Binding { keys: &["3"], action: Action::Speed100, scope: Scope::Live, help: "replay: play at 100×" },
    Binding { keys: &[":"], action: Action::Command, scope: Scope::Global, help: "command: :rollout ID :call ID :pos N :chain N (replay: :N :+s)" },
];

/// The name of a key event as the binding list and the configuration write it (`q`,
/// `Ctrl-C`, `Space`, `PgUp`…), if it is one the explorer knows.
pub fn key_name(key: KeyEvent) -> Option<String> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let name = match key.code {
        KeyCode::Char(c) if ctrl => return Some(format!("Ctrl-{}", c.to_ascii_uppercase())),
        KeyCode::Char(' ') => "Space",
        KeyCode::Char(c) => return Some(c.to_string()),
        KeyCode::F(n) => return Some(format!("F{n}")),
        KeyCode::Tab => "Tab",
        KeyCode::BackTab => "Shift-Tab",
        KeyCode::Up => "↑",
        KeyCode::Down => "↓",
        KeyCode::Left => "←",
        KeyCode::Right => "→",
        KeyCode::PageUp => "PgUp",
        KeyCode::PageDown => "PgDn",
        KeyCode::Home => "Home",
        KeyCode::End => "End",
        KeyCode::Enter => "Enter",
        KeyCode::Esc => "Esc",
        _ => return None,
    };
    Some(name.to_owned())
}

/// Whether `name` is a key name [`key_name`] can produce (for checking the configuration).
pub fn is_key_name(name: &str) -> bool {
    let named = [
        "Space",
        "Tab",
        "Shift-Tab",
        "↑",
        "↓",
        "←",
        "→",
        "PgUp",
        "PgDn",
        "Home",
        "End",
        "Enter",
        "Esc",
    ];
    let single = name.chars().count() == 1;
    let ctrl = name
        .strip_prefix("Ctrl-")
        .is_some_and(|c| c.chars().count() == 1);
    let function = name
        .strip_prefix('F')
        .and_then(|n| n.parse::<u8>().ok())
        .is_some_and(|n| (1..=24).contains(&n));
    single || ctrl || function || named.contains(&name)
}

/// The action bound to a key event, if any (the built-in list only).
#[cfg(test)]
pub(crate) fn action_for(key: KeyEvent) -> Option<Action> {
    lookup(&key_name(key)?)
}

/// The action bound to a key event: the user's keys first, then the built-in list.
fn action_in(app: &App, key: KeyEvent) -> Option<Action> {
    let name = key_name(key)?;
    app.keys
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, action)| *action)
        .or_else(|| lookup(&name))
}

fn lookup(name: &str) -> Option<Action> {
    BINDINGS
        .iter()
        .find(|b| b.keys.contains(&name))
        .map(|b| b.action)
}

/// The message a key sends to the app: text editing while a prompt is open, else the action
/// bound to it. With the help shown, the moving keys scroll it and any other key closes it
/// (`q` still quits).
pub fn message_for(app: &App, key: KeyEvent) -> Option<Message> {
    if app.mode != Mode::Normal {
        return text_key(key).map(Message::Text);
    }
    let action = action_in(app, key);
    if app.show_help {
        // Moving keys scroll the help; any other key closes it (`q` still quits).
        return Some(Message::Action(match action {
            Some(
                action @ (Action::Quit
                | Action::Up
                | Action::Down
                | Action::PageUp
                | Action::PageDown
                | Action::Top
                | Action::Bottom),
            ) => action,
            _ => Action::Dismiss,
        }));
    }
    action.map(Message::Action)
}

/// A key as prompt editing: characters, Backspace, Ctrl-U (clear), Ctrl-W (delete a word),
/// Enter, Esc.
fn text_key(key: KeyEvent) -> Option<TextKey> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    Some(match key.code {
        KeyCode::Char('u') if ctrl => TextKey::ClearLine,
        KeyCode::Char('w') if ctrl => TextKey::DeleteWord,
        KeyCode::Char('c') if ctrl => TextKey::Cancel,
        KeyCode::Char(c) if !ctrl => TextKey::Char(c),
        KeyCode::Backspace => TextKey::Backspace,
        KeyCode::Enter => TextKey::Submit,
        KeyCode::Esc => TextKey::Cancel,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_has_a_key() {
        use Action::*;
        // Exhaustive on purpose: a new action without a key fails to compile here.
        let check = |action: Action| match action {
            Dismiss | Quit | Help | NextPane | PrevPane | Up | Down | Left | Right | PageUp
            | PageDown | Top | Bottom | Enter | ToggleCollapse | Filter | MaskedOnly
            | CycleReason | SortNext | SortReverse | NextBoundary | PrevBoundary | NextLowProb
            | PrevLowProb | CycleChain | ToggleText | Divergence | PinTerminal
            | ToggleAttributed | ClearWhatIf | ExportReport | ExportResponse | Pause
            | ToggleReplay | StepBack | StepForward | Speed1 | Speed10 | Speed100 | Command
            | ShowInspector | ShowGaps | ShowGraph | Zoom | SearchNext | SearchPrev | Yank
            | YankText | Mark => BINDINGS.iter().any(|b| b.action == action),
        };
        for action in [
            Dismiss,
            Quit,
            Help,
            NextPane,
            PrevPane,
            Up,
            Down,
            Left,
            Right,
            PageUp,
            PageDown,
            Top,
            Bottom,
            Enter,
            ToggleCollapse,
            Filter,
            MaskedOnly,
            CycleReason,
            SortNext,
            SortReverse,
            NextBoundary,
            PrevBoundary,
            NextLowProb,
            PrevLowProb,
            CycleChain,
            ToggleText,
            Divergence,
            PinTerminal,
            ToggleAttributed,
            ClearWhatIf,
            ExportReport,
            ExportResponse,
            Pause,
            ToggleReplay,
            StepBack,
            StepForward,
            Speed1,
            Speed10,
            Speed100,
            Command,
            ShowInspector,
            ShowGaps,
            ShowGraph,
            Zoom,
            SearchNext,
            SearchPrev,
            Yank,
            YankText,
            Mark,
        ] {
            assert!(check(action), "{action:?} has no key");
            assert!(
                Action::ALL.contains(&action),
                "{action:?} missing from Action::ALL"
            );
        }
        assert_eq!(Action::ALL.len(), 49);
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = std::collections::HashSet::new();
        for binding in BINDINGS {
            for key in binding.keys {
                assert!(seen.insert(*key), "{key} bound twice");
            }
        }
    }

    #[test]
    fn keys_resolve() {
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        assert_eq!(action_for(key(KeyCode::Char('q'))), Some(Action::Quit));
        assert_eq!(
            action_for(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for(key(KeyCode::Char('c'))),
            Some(Action::CycleChain)
        );
        assert_eq!(action_for(key(KeyCode::Down)), Some(Action::Down));
        assert_eq!(action_for(key(KeyCode::Char('G'))), Some(Action::Bottom));
        assert_eq!(action_for(key(KeyCode::BackTab)), Some(Action::PrevPane));
        assert_eq!(
            action_for(key(KeyCode::Char('z'))),
            Some(Action::ToggleCollapse)
        );
        assert_eq!(action_for(key(KeyCode::Char(' '))), Some(Action::Pause));
        assert_eq!(action_for(key(KeyCode::Char('Q'))), None);
    }
}
