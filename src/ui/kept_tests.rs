//! The open rollout's panes kept for their revision draw what building them draws.
//!
//! Random sequences of what the explorer is told — keys, the watcher's news of other rollouts
//! and of the open one, the clock, resizes — each followed by a frame drawn with the kept
//! renderings and one drawn from nothing: the two must be the same cells. The panes must also
//! be kept most of the time while only other rollouts change, or this would prove nothing.

use std::path::Path;
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use strum::IntoEnumIterator;

use super::{Theme, draw, memo};
use crate::app::{Action, App, Message, Tab, Viewport};
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
    let actions: Vec<Action> = Action::iter()
        .filter(|action| {
            !matches!(
                action,
                Action::Quit
                    | Action::Yank
                    | Action::YankText
                    | Action::ExportReport
                    | Action::ExportResponse
                    | Action::Command
                    | Action::Filter
                    | Action::Timeline
                    | Action::ToggleReplay
            )
        })
        .chain(Tab::iter().map(Action::ShowTab))
        .collect();
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
        _ => Message::Action(actions[rng.range(0, actions.len() as u64) as usize]),
    }
}

#[test]
fn kept_panes_draw_what_building_them_draws() {
    let analyses = analyses();
    let (mut reused, mut frames) = (0, 0);
    for seed in 0..12u64 {
        let mut rng = Rng::new(500 + seed);
        let mut app = App::new(
            vec![],
            analyses.clone(),
            VerdictOptions::default(),
            Viewport::default(),
        );
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let mut at = app.now;
        for step in 0..150 {
            let message = next_message(&mut rng, &app, &analyses, &mut at);
            let what = format!("seed {seed} step {step}: {message:?}");
            app.update(message);
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
    // Most frames copy the tree, the tokens and the inspector as kept, or this proves nothing.
    assert!(reused > frames, "{reused} panes copied in {frames} frames");
}
