//! Every key binding, in one list, and the translation of terminal keys into the app's
//! messages. The help overlay and the status bar are drawn from the same list.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use std::sync::LazyLock;

use strum::IntoEnumIterator;

use crate::app::pane::KeyScope;
use crate::app::{Action, App, Message, Mode, Tab, TextKey};

/// Where a binding applies.
#[derive(Clone)]
pub(crate) struct Binding {
    /// Keys shown in help, first is the main one.
    pub keys: &'static [&'static str],
    /// The action.
    pub action: Action,
    /// Where it applies.
    pub scope: KeyScope,
    /// What it does.
    pub help: &'static str,
}

/// The single list of bindings (one per line, as a table).
#[rustfmt::skip]
const FIRST: &[Binding] = &[
    Binding { keys: &["q", "Ctrl-C"], action: Action::Quit, scope: KeyScope::Global, help: "quit" },
    Binding { keys: &["?"], action: Action::Help, scope: KeyScope::Global, help: "show / hide this help" },
    Binding { keys: &["Esc"], action: Action::Dismiss, scope: KeyScope::Global, help: "close help · clear the message and the divergence" },
    Binding { keys: &["Z"], action: Action::ToggleZone, scope: KeyScope::Global, help: "times in UTC / local time" },
    Binding { keys: &["C"], action: Action::Causes, scope: KeyScope::Global, help: "causes: masked rollouts grouped by cause" },
    Binding { keys: &["W"], action: Action::Timeline, scope: KeyScope::Global, help: "timeline: the run over time (← → move, [ ] bucket width; the list follows)" },
    Binding { keys: &["Tab"], action: Action::NextPane, scope: KeyScope::Global, help: "next pane" },
    Binding { keys: &["Shift-Tab"], action: Action::PrevPane, scope: KeyScope::Global, help: "previous pane" },
];

/// The bindings after the tabs' (which come from each tab's spec).
#[rustfmt::skip]
const AFTER_TABS: &[Binding] = &[
    Binding { keys: &["f"], action: Action::Zoom, scope: KeyScope::Global, help: "zoom: the focused pane full screen / back" },
    Binding { keys: &["k", "↑"], action: Action::Up, scope: KeyScope::Global, help: "up" },
    Binding { keys: &["j", "↓"], action: Action::Down, scope: KeyScope::Global, help: "down" },
    Binding { keys: &["h", "←"], action: Action::Left, scope: KeyScope::Tokens, help: "previous token" },
    Binding { keys: &["l", "→"], action: Action::Right, scope: KeyScope::Tokens, help: "next token" },
    Binding { keys: &["PgUp", "Ctrl-U"], action: Action::PageUp, scope: KeyScope::Global, help: "page up" },
    Binding { keys: &["PgDn", "Ctrl-D"], action: Action::PageDown, scope: KeyScope::Global, help: "page down" },
    Binding { keys: &["g", "Home"], action: Action::Top, scope: KeyScope::Global, help: "first" },
    Binding { keys: &["G", "End"], action: Action::Bottom, scope: KeyScope::Global, help: "last" },
    Binding { keys: &["Enter"], action: Action::Enter, scope: KeyScope::Global, help: "list: open · tree: divergence · gaps, graph: go to the call" },
    Binding { keys: &["z"], action: Action::ToggleCollapse, scope: KeyScope::Tree, help: "collapse / expand subtree" },
    Binding { keys: &["/"], action: Action::Filter, scope: KeyScope::Global, help: "search the focused pane (the list: filter it)" },
    Binding { keys: &["y"], action: Action::Yank, scope: KeyScope::Global, help: "yank (OSC 52): rollout id, full call id, token ids, record JSON" },
    Binding { keys: &["Y"], action: Action::YankText, scope: KeyScope::Global, help: "yank as text: decoded tokens, gap, observation JSON" },
    Binding { keys: &["n"], action: Action::SearchNext, scope: KeyScope::Global, help: "next match" },
    Binding { keys: &["N"], action: Action::SearchPrev, scope: KeyScope::Global, help: "previous match" },
    Binding { keys: &["m"], action: Action::MaskedOnly, scope: KeyScope::List, help: "masked only" },
    Binding { keys: &["r"], action: Action::CycleReason, scope: KeyScope::List, help: "cycle mask reason filter" },
    Binding { keys: &["s"], action: Action::SortNext, scope: KeyScope::List, help: "sort by next column" },
    Binding { keys: &["S"], action: Action::SortReverse, scope: KeyScope::List, help: "reverse sort" },
    Binding { keys: &["F"], action: Action::Flips, scope: KeyScope::List, help: "compare mode: the flips only / every rollout (Enter: A beside B)" },
    Binding { keys: &["]"], action: Action::NextBoundary, scope: KeyScope::Tokens, help: "next call boundary" },
    Binding { keys: &["["], action: Action::PrevBoundary, scope: KeyScope::Tokens, help: "previous call boundary" },
    Binding { keys: &[">"], action: Action::NextLowProb, scope: KeyScope::Tokens, help: "next low-probability token" },
    Binding { keys: &["<"], action: Action::PrevLowProb, scope: KeyScope::Tokens, help: "previous low-probability token" },
    Binding { keys: &["v"], action: Action::Mark, scope: KeyScope::Tokens, help: "mark: start a token range to yank (again: clear)" },
    Binding { keys: &["c"], action: Action::CycleChain, scope: KeyScope::Tokens, help: "show next chain" },
    Binding { keys: &["T"], action: Action::ToggleText, scope: KeyScope::Tokens, help: "ids → decoded cells → flowing text (with a tokenizer)" },
    Binding { keys: &["d"], action: Action::Divergence, scope: KeyScope::Global, help: "divergence of the selected call (tokens: the call under the cursor; gaps: the gap's)" },
    Binding { keys: &["t"], action: Action::PinTerminal, scope: KeyScope::Global, help: "what-if: pin selected call as terminal" },
    Binding { keys: &["a"], action: Action::ToggleAttributed, scope: KeyScope::Global, help: "what-if: toggle mask_incomplete_when_attributed" },
    Binding { keys: &["x"], action: Action::ClearWhatIf, scope: KeyScope::Global, help: "clear what-if" },
    Binding { keys: &["e"], action: Action::ExportReport, scope: KeyScope::Global, help: "export report JSON" },
    Binding { keys: &["E"], action: Action::ExportResponse, scope: KeyScope::Global, help: "export rebuilt response JSON" },
    Binding { keys: &["Space"], action: Action::Pause, scope: KeyScope::Live, help: "live: pause / resume · replay: play / pause" },
    Binding { keys: &["R"], action: Action::ToggleReplay, scope: KeyScope::Live, help: "replay on / off" },
    Binding { keys: &[","], action: Action::StepBack, scope: KeyScope::Live, help: "replay: one call back" },
    Binding { keys: &["."], action: Action::StepForward, scope: KeyScope::Live, help: "replay: one call forward" },
    Binding { keys: &["1"], action: Action::Speed1, scope: KeyScope::Live, help: "replay: play at 1×" },
    Binding { keys: &["2"], action: Action::Speed10, scope: KeyScope::Live, help: "replay: play at 10×" },
    Binding { keys: &["3"], action: Action::Speed100, scope: KeyScope::Live, help: "replay: play at 100×" },
    Binding { keys: &["I"], action: Action::SkipIdle, scope: KeyScope::Live, help: "replay: skip idle gaps (the clock jumps to the next write) on / off" },
    Binding { keys: &[":"], action: Action::Command, scope: KeyScope::Global, help: "command: :rollout ID :call ID :pos N :chain N :causes :timeline (replay: :N :+s :-s :@s)" },
];

/// Every built-in binding, in the help's order: the first global keys, one for each tab
/// (from its spec), then the rest.
pub(crate) static BINDINGS: LazyLock<Vec<Binding>> = LazyLock::new(|| {
    let tabs = Tab::iter().map(|tab| {
        let spec = tab.spec();
        Binding {
            keys: std::slice::from_ref(&spec.key),
            action: Action::ShowTab(tab),
            scope: KeyScope::Global,
            help: spec.help,
        }
    });
    FIRST
        .iter()
        .map(Binding::clone)
        .chain(tabs)
        .chain(AFTER_TABS.iter().map(Binding::clone))
        .collect()
});

/// The keys in force for `action`: the user's (from the configuration) first, then the
/// built-in keys the user did not take for another action.
pub(crate) fn keys_for(app: &App, action: Action) -> Vec<String> {
    let mut keys: Vec<String> = app
        .keys
        .iter()
        .filter(|(_, a)| *a == action)
        .map(|(key, _)| key.clone())
        .collect();
    let taken = |key: &str| app.keys.iter().any(|(k, a)| k == key && *a != action);
    for binding in BINDINGS.iter().filter(|b| b.action == action) {
        for key in binding.keys {
            if !taken(key) && !keys.iter().any(|k| k == key) {
                keys.push((*key).to_owned());
            }
        }
    }
    keys
}

/// The first key in force for `action` (none when the user took every one).
pub(crate) fn key_for(app: &App, action: Action) -> Option<String> {
    keys_for(app, action).into_iter().next()
}

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
        // `Action::all` is derived from the enum: a new action without a key fails here.
        let all: Vec<Action> = Action::all().collect();
        for action in &all {
            assert!(
                BINDINGS.iter().any(|b| b.action == *action),
                "{action:?} has no key"
            );
        }
        let unique: std::collections::HashSet<&Action> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "each action once");
        for tab in Tab::iter() {
            assert!(
                all.contains(&Action::ShowTab(tab)),
                "{tab:?} has its action"
            );
        }
        assert!(all.contains(&Action::Quit) && all.contains(&Action::Zoom));
    }

    #[test]
    fn keys_in_force_put_the_users_first_and_drop_what_they_took() {
        let analyses = tokscope_testkit::demo_analyses();
        let viewport = crate::app::Viewport::default();
        let mut app = App::new(Vec::new(), analyses, Default::default(), viewport);
        assert_eq!(keys_for(&app, Action::Quit), ["q", "Ctrl-C"]);
        // The README's own example: zoom on `q`.
        app.keys = vec![("q".to_owned(), Action::Zoom)];
        assert_eq!(keys_for(&app, Action::Quit), ["Ctrl-C"]);
        assert_eq!(keys_for(&app, Action::Zoom), ["q", "f"]);
        assert_eq!(key_for(&app, Action::Quit).as_deref(), Some("Ctrl-C"));
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = std::collections::HashSet::new();
        for binding in BINDINGS.iter() {
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
