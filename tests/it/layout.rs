//! The screen at every size: the one-line bars drop whole facts (never a word cut in two),
//! the help scrolls, the bottom-right tab strip and zoom. Snapshots at 80×24, 120×40 and
//! 200×50.

use crate::common;
use crate::common::{key, keys, screen, send};

use std::path::PathBuf;

use crossterm::event::KeyCode;
use tokscope::app::{App, Message, Pane, Tab};
use tokscope_core::verdict::VerdictOptions;

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 50)];

fn app(size: (u16, u16)) -> App {
    let stores = vec![PathBuf::from("tests/fixtures/conformance/store-1-0")];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    App::new(stores, analyses, options, common::viewport(size.0, size.1))
}

fn resized(app: &mut App, width: u16, height: u16) {
    send(app, Message::Resize(common::viewport(width, height)));
}

fn row(screen: &str, n: usize) -> &str {
    screen.lines().nth(n).unwrap_or_default()
}

#[test]
fn snapshot_layouts_at_three_sizes() {
    for size in SIZES {
        let mut app = app(size);
        keys(&mut app, "jj");
        key(&mut app, KeyCode::Tab);
        insta::assert_snapshot!(format!("layout_{}x{}", size.0, size.1), screen(&app));
    }
}

/// The masked reasons of the store, as the health strip names them.
fn reason_codes(app: &App) -> Vec<String> {
    app.health
        .masked_by_reason
        .keys()
        .map(|code| code.to_string())
        .collect()
}

#[test]
fn bars_drop_whole_facts_at_every_width() {
    let mut app = app((120, 40));
    let codes = reason_codes(&app);
    assert!(codes.len() >= 3, "{codes:?}");
    for width in (40..=260).step_by(7) {
        resized(&mut app, width, 30);
        let shown = screen(&app);
        let (header, health, status) = (row(&shown, 0), row(&shown, 1), row(&shown, 29));
        for line in [header, health, status] {
            assert!(
                line.chars().count() <= usize::from(width),
                "{width}: {line}"
            );
        }
        // A reason is named whole or not at all: no word is the start of a code only.
        let reasons = health
            .split("masked or at risk: ")
            .nth(1)
            .and_then(|rest| rest.split(" · ").next())
            .unwrap_or_default();
        for word in reasons.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let cut = codes
                .iter()
                .any(|code| code.starts_with(word) && code.len() > word.len() && word.len() > 2);
            assert!(
                !cut || codes.iter().any(|code| code == word),
                "{width}: {word} is a cut reason in {health}"
            );
        }
        // The masked count and the way out always stay.
        assert!(header.contains("masked"), "{width}: {header}");
        assert!(status.ends_with("q quit"), "{width}: {status}");
        assert!(status.contains("? help"), "{width}: {status}");
        if width >= 200 {
            // Wide: the other facts get room (the reasons beyond two give way first).
            assert!(
                !health.contains('…') && health.contains("calls/s"),
                "{health}"
            );
        }
    }
}

#[test]
fn the_token_cursor_line_keeps_mask_and_probability_when_narrow() {
    for size in [(80, 24), (120, 40)] {
        let mut app = app(size);
        key(&mut app, KeyCode::Enter);
        key(&mut app, KeyCode::Tab);
        // A generated token: the first low-probability one.
        keys(&mut app, ">");
        let shown = screen(&app);
        let cursor = shown
            .lines()
            .find(|l| l.contains("pos "))
            .expect("the cursor line");
        assert!(cursor.contains("mask 1"), "{size:?}: {cursor}");
        assert!(
            cursor.contains("lp ") || cursor.contains("logprob "),
            "{size:?}: {cursor}"
        );
    }
}

#[test]
fn help_scrolls_at_80x24_and_closes_on_any_other_key() {
    let mut app = app((80, 24));
    keys(&mut app, "?");
    let first = screen(&app);
    assert!(first.contains("j/k PgUp/PgDn g/G scroll"), "{first}");
    assert!(first.contains("everywhere") && !first.contains("mouse"));
    key(&mut app, KeyCode::Char('G'));
    let last = screen(&app);
    assert!(
        last.contains("wheel") && last.contains("tab strip"),
        "{last}"
    );
    assert!(!last.contains("everywhere"));
    let top = app.help.top();
    keys(&mut app, "k");
    assert_eq!(app.help.top(), top - 1, "one line up from the end at once");
    key(&mut app, KeyCode::PageUp);
    key(&mut app, KeyCode::PageUp);
    key(&mut app, KeyCode::PageUp);
    assert_eq!(app.help.top(), 0);
    assert!(app.show_help);
    keys(&mut app, "x");
    assert!(!app.show_help, "any other key closes");
    assert!(
        app.view.as_ref().unwrap().what_if.is_none(),
        "and does nothing else"
    );
    // Wide enough: two columns, everything at once.
    let mut wide = self::app((200, 50));
    keys(&mut wide, "?");
    let shown = screen(&wide);
    assert!(shown.contains("everywhere") && shown.contains("tab strip"));
    assert!(!shown.contains("j/k PgUp/PgDn g/G scroll"));
}

#[test]
fn tab_keys_show_the_bottom_right_panes() {
    let mut app = app((120, 40));
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "p");
    assert_eq!((app.focus, app.detail), (Pane::Gaps, Tab::Gaps));
    let shown = screen(&app);
    assert!(shown.contains("i inspector │ p gaps ("), "{shown}");
    keys(&mut app, "o");
    assert_eq!((app.focus, app.detail), (Pane::Graph, Tab::Graph));
    keys(&mut app, "i");
    assert_eq!((app.focus, app.detail), (Pane::Inspector, Tab::Inspector));
}

#[test]
fn zoom_gives_the_focused_pane_the_screen_and_back() {
    let mut app = app((120, 40));
    let normal = app.viewport;
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "f");
    assert_eq!(app.zoomed(), Some(Pane::Tree));
    // Header, health strip, status bar and the tree's borders: 5 rows.
    assert_eq!(app.viewport.tree_rows, 40 - 5);
    let shown = screen(&app);
    assert!(!shown.contains("rollouts 3"), "no list while zoomed");
    // Tab moves the zoom with the focus.
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.zoomed(), Some(Pane::Tokens));
    assert!(app.viewport.token_rows > normal.token_rows);
    keys(&mut app, "f");
    assert_eq!(app.zoomed(), None);
    assert_eq!(app.viewport, normal);
}
