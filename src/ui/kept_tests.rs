//! The open rollout's panes kept for their revision draw what building them draws.
//!
//! Random sequences of what the explorer is told — keys, text typed into its prompts (filter,
//! search, `:` commands), the watcher's news of other rollouts and of the open one, answers to
//! what it asks for (analyses, a replay's timeline), the clock, resizes — each followed by a
//! frame drawn with the kept renderings and one drawn from nothing: the two must be the same
//! cells. Half the runs start from a loaded store, half as the live explorer does, from
//! nothing while the first scan is under way (paused or not, replaying or not). The panes must
//! also be kept most of the time while only other rollouts change, or this would prove
//! nothing.

use std::path::Path;
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use strum::IntoEnumIterator;

use super::{Theme, draw, memo};
use crate::app::{Action, App, Message, Mode, Tab, TextKey, Viewport};
use tokscope_core::live::StoreEvent;
use tokscope_core::verdict::{Analysis, VerdictOptions};
use tokscope_testkit::Rng;

fn analyses() -> Vec<Analysis> {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store");
    let locations = tokscope_core::load::locate(&[store], &[]).unwrap();
    tokscope_core::load::analyze_all(&locations, &VerdictOptions::default())
}

/// Draw `app` into `terminal`: the cells, and what drawing measured for the app.
fn frame(app: &App, terminal: &mut Terminal<TestBackend>) -> (Buffer, super::Drawn) {
    let mut drawn = super::Drawn::default();
    terminal
        .draw(|frame| drawn = draw(frame, app, Theme { color: true }))
        .unwrap();
    (terminal.backend().buffer().clone(), drawn)
}

/// What the explorer is told next: mostly news of other rollouts (a run being written).
fn next_message(
    rng: &mut Rng,
    app: &App,
    analyses: &[Analysis],
    at: &mut std::time::Instant,
) -> Message {
    let open = app
        .view
        .as_ref()
        .map(|view| app.rollouts[view.index].location.clone());
    // Everything but leaving and what writes outside the app (the clipboard, files).
    let actions: Vec<Action> = Action::iter()
        .filter(|action| {
            !matches!(
                action,
                Action::Quit
                    | Action::Yank
                    | Action::YankText
                    | Action::ExportReport
                    | Action::ExportResponse
            )
        })
        .chain(Tab::iter().map(Action::ShowTab))
        .collect();
    if app.mode != Mode::Normal && rng.range(0, 10) < 8 {
        // A prompt is open: mostly typing into it (letters and digits of the demo store's
        // ids, a `:` command's words), at times editing, accepting or leaving it.
        const TYPED: &[char] = &['a', 'e', 'r', 't', '1', '2', '0', '-', ' ', ':', '+'];
        return Message::Text(match rng.range(0, 20) {
            0 => TextKey::Backspace,
            1 => TextKey::DeleteWord,
            2 => TextKey::ClearLine,
            3 => TextKey::Submit,
            4 => TextKey::Cancel,
            _ => TextKey::Char(TYPED[rng.range(0, TYPED.len() as u64) as usize]),
        });
    }
    match rng.range(0, 100) {
        0..=39 => {
            // A change to another rollout.
            let other = &analyses[rng.range(0, analyses.len() as u64) as usize];
            if Some(&other.capture.location) == open.as_ref() {
                return Message::Store(vec![StoreEvent::Progress { read: 1, total: 2 }]);
            }
            if rng.range(0, 2) == 0 {
                Message::Store(vec![StoreEvent::updated(other)])
            } else {
                Message::Store(vec![StoreEvent::Detail(Box::new(other.clone()))])
            }
        }
        40..=49 => {
            // The open rollout changed: another rollout's analysis under its name.
            let Some(open) = open else {
                return Message::Store(vec![StoreEvent::updated(&analyses[0])]);
            };
            let mut changed = analyses[rng.range(0, analyses.len() as u64) as usize].clone();
            changed.capture.location = open;
            if rng.range(0, 2) == 0 {
                Message::Store(vec![StoreEvent::updated(&changed)])
            } else {
                Message::Store(vec![StoreEvent::Detail(Box::new(changed))])
            }
        }
        50..=59 => {
            *at += Duration::from_millis(rng.range(50, 4000));
            Message::Tick(*at)
        }
        // Live: pausing and resuming the view (or, replaying, playing and pausing) often
        // enough that the news held back while paused are seen too.
        60..=64 if app.live.watching => Message::Action(Action::Pause),
        _ => Message::Action(actions[rng.range(0, actions.len() as u64) as usize]),
    }
}

/// Answer what `app` asks the watcher for, as the watcher would: the analyses it looks at
/// (in a live app; a loaded one holds them all) and a replay's timeline. Only at times for
/// the analyses (`answer`), so the panes are seen waiting for them too.
fn answer(app: &mut App, analyses: &[Analysis], answer: bool) {
    if let Some(wanted) = app.replay_request() {
        let timeline =
            tokscope_core::live::replay::Replay::from_store(wanted, VerdictOptions::default());
        app.update(Message::Store(vec![StoreEvent::Timeline(Box::new(
            timeline,
        ))]));
    }
    if answer && let Some(wanted) = app.detail_requests() {
        let details = wanted
            .iter()
            .filter_map(|l| analyses.iter().find(|a| a.capture.location == *l))
            .map(|a| StoreEvent::Detail(Box::new(a.clone())))
            .collect();
        app.update(Message::Store(details));
    }
}

/// The app a run starts from: for even seeds the loaded demo store, for odd ones the live
/// explorer before its first scan has sent anything (the scan's news come as messages).
fn app_for(seed: u64, analyses: &[Analysis], store: &Path) -> App {
    if seed.is_multiple_of(2) {
        App::new(
            vec![],
            analyses.to_vec(),
            VerdictOptions::default(),
            Viewport::default(),
        )
    } else {
        App::new_live(
            vec![store.to_path_buf()],
            VerdictOptions::default(),
            Viewport::default(),
        )
    }
}

#[test]
fn kept_panes_draw_what_building_them_draws() {
    let analyses = analyses();
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store");
    let (mut reused, mut frames) = (0, 0);
    let mut modes = std::collections::BTreeSet::new();
    for seed in 0..12u64 {
        let mut rng = Rng::new(500 + seed);
        let mut app = app_for(seed, &analyses, &store);
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let mut at = app.now;
        for step in 0..120 {
            let message = if step == 60 && !seed.is_multiple_of(2) {
                // The first scan is done (its news of each rollout came at random before).
                Message::Store(vec![StoreEvent::Ready])
            } else {
                next_message(&mut rng, &app, &analyses, &mut at)
            };
            let what = format!("seed {seed} step {step}: {message:?}");
            app.update(message);
            answer(&mut app, &analyses, rng.range(0, 3) > 0);
            modes.insert(format!(
                "{}{}{}{}",
                match app.mode {
                    Mode::Normal => "normal",
                    Mode::Filter => "filter",
                    Mode::Command(_) => "command",
                    Mode::Search(_) => "search",
                    _ => "other",
                },
                if app.replay.is_some() { " replay" } else { "" },
                if app.live.paused { " paused" } else { "" },
                if app.loading() { " loading" } else { "" },
            ));
            if rng.range(0, 50) == 0 {
                // The terminal resized (the frame tells the app its new panes).
                let (width, height) = [(120, 40), (100, 30), (160, 48)][rng.range(0, 3) as usize];
                terminal.backend_mut().resize(width, height);
                terminal.autoresize().unwrap();
            }
            memo::take_reused();
            let (kept, drawn) = frame(&app, &mut terminal);
            reused += memo::take_reused();
            frames += 1;
            let fresh = memo::without_kept(|| frame(&app, &mut terminal));
            assert_eq!((&kept, &drawn), (&fresh.0, &fresh.1), "{what}");
            for message in drawn.messages() {
                app.update(message);
            }
        }
    }
    // Many frames copy the tree, the tokens or the inspector as kept (without the keeping,
    // none would), or this proves nothing.
    assert!(
        reused * 2 > frames,
        "{reused} panes copied in {frames} frames"
    );
    // And the runs reached the modes the panes are drawn in.
    for wanted in ["filter", "command", "search", "replay", "paused", "loading"] {
        assert!(
            modes.iter().any(|mode| mode.contains(wanted)),
            "no frame drawn while {wanted}: {modes:?}"
        );
    }
}

/// The app over the demo store, its first rollout open, and a frame of it.
fn opened(analyses: Vec<Analysis>) -> (App, Terminal<TestBackend>) {
    let mut app = App::new(
        vec![],
        analyses,
        VerdictOptions::default(),
        crate::ui::layout::viewport_for(ratatui::layout::Rect::new(0, 0, 120, 40), None),
    );
    let terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    assert!(app.view.is_some(), "the first rollout opens");
    app.update(Message::Action(Action::NextPane));
    (app, terminal)
}

fn text(buffer: &Buffer) -> String {
    buffer.content().iter().map(|cell| cell.symbol()).collect()
}

#[test]
fn new_calls_stop_standing_out_when_the_clock_says_so_though_the_panes_are_kept() {
    let full = analyses();
    let (app, _) = opened(full.clone());
    let open = app.rollouts[app.view.as_ref().unwrap().index]
        .location
        .clone();
    // The open rollout as it was one call earlier, then its last call comes.
    let mut before: Vec<Analysis> = full.clone();
    let at = before
        .iter()
        .position(|a| a.capture.location == open)
        .unwrap();
    let grown = before[at].clone();
    let mut capture = grown.capture.clone();
    capture.records.truncate(capture.records.len() - 1);
    before[at] = tokscope_core::verdict::analyze(capture, &VerdictOptions::default());
    let (mut app, mut terminal) = opened(before);
    frame(&app, &mut terminal);
    app.update(Message::Store(vec![StoreEvent::Detail(Box::new(grown))]));
    let (shown, _) = frame(&app, &mut terminal);
    assert!(text(&shown).contains('✦'), "the new call stands out");
    // Another rollout changes: the panes are kept, the new call still stands out.
    let other = full.iter().find(|a| a.capture.location != open).unwrap();
    app.update(Message::Store(vec![StoreEvent::updated(other)]));
    memo::take_reused();
    let (kept, _) = frame(&app, &mut terminal);
    assert!(memo::take_reused() >= 2, "the tree and tokens are kept");
    assert!(text(&kept).contains('✦'));
    // The highlight's time is up: drawn again without it.
    let later = app.now + crate::app::HIGHLIGHT * 2;
    app.update(Message::Tick(later));
    let (faded, _) = frame(&app, &mut terminal);
    assert!(!text(&faded).contains('✦'), "the highlight faded");
    assert_eq!(faded, memo::without_kept(|| frame(&app, &mut terminal)).0);
}

#[test]
fn the_causes_view_follows_its_rows_as_rollouts_change_under_it() {
    let analyses = analyses();
    let (mut app, mut terminal) = opened(analyses.clone());
    app.update(Message::Action(Action::Causes));
    let rows = app.cause_rows().len();
    assert!(rows > 1, "the demo store has causes: {rows}");
    app.update(Message::Action(Action::Bottom));
    frame(&app, &mut terminal);
    // Every masked rollout turns clean (another's clean summary under its name): the groups go.
    let clean = analyses
        .iter()
        .find(|a| a.verdict == tokscope_core::verdict::Verdict::Ok && !a.mask_sample)
        .expect("a clean rollout");
    let events = analyses
        .iter()
        .map(|a| {
            let mut summary = tokscope_core::verdict::Summary::of(clean);
            summary.location = a.capture.location.clone();
            StoreEvent::Updated(Box::new(summary))
        })
        .collect();
    app.update(Message::Store(events));
    assert!(app.cause_rows().len() < rows);
    let view = app.causes.as_ref().expect("still open");
    assert!(view.rows.selected() < app.cause_rows().len().max(1));
    let (drawn, _) = frame(&app, &mut terminal);
    assert_eq!(drawn, memo::without_kept(|| frame(&app, &mut terminal)).0);
}
