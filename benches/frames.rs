//! Frame times with a huge rollout open: a 10,000-call tree whose main chain holds about a
//! million tokens (delta records). Each step is a key as the user types it, then one frame
//! drawn into a 200×50 test backend; the figure is the time of update + draw, per step.
//!
//! Run with `cargo bench --bench frames`. Target: every frame ≤ 16 ms.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokscope::app::App;
use tokscope::verdict::VerdictOptions;
use tokscope_testkit::{Rng, linear_rollout};

const CALLS: usize = 10_000;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    // About 100 tokens between calls: a chain of ~1M tokens, stored as deltas (no lineage, so
    // writing it does not hash every cumulative sequence).
    let mut rollout = linear_rollout("huge", CALLS, &mut Rng::new(5), 64, true, false);
    rollout.frozen = true;
    rollout.write(dir.path()).unwrap();
    let stores = vec![dir.path().to_path_buf()];
    let started = Instant::now();
    let analyses = tokscope::load::analyze_all(
        &tokscope::load::locate(&stores, &[]).unwrap(),
        &VerdictOptions::default(),
    );
    let tokens = analyses[0].build.as_ref().map_or(0, |b| {
        b.main_chain()
            .and_then(|c| c.links.last())
            .map_or(0, |link| b.nodes[link.node].cumulative.len())
    });
    println!(
        "rollout: {CALLS} calls, main chain {tokens} tokens, analyzed in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let (width, height) = (200, 50);
    let viewport = tokscope::ui::layout::viewport(ratatui::layout::Rect::new(0, 0, width, height));
    let mut app = App::new(stores, analyses, VerdictOptions::default(), viewport);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let theme = tokscope::ui::Theme::from_env();
    let mut frame = |app: &mut App| -> Duration {
        let start = Instant::now();
        let mut drawn = tokscope::ui::Drawn::default();
        terminal
            .draw(|f| drawn = tokscope::ui::draw(f, app, theme))
            .unwrap();
        for message in drawn.messages() {
            app.update(message);
        }
        start.elapsed()
    };
    let first = frame(&mut app);
    println!("first frame: {:.1} ms", first.as_secs_f64() * 1e3);
    let keys: Vec<(&str, KeyCode)> = vec![
        ("tab → tree", KeyCode::Tab),
        ("down", KeyCode::Down),
        ("page down", KeyCode::PageDown),
        ("end of the tree", KeyCode::Char('G')),
        ("up", KeyCode::Up),
        ("tab → tokens", KeyCode::Tab),
        ("right", KeyCode::Right),
        ("page down", KeyCode::PageDown),
        ("end of the chain", KeyCode::Char('G')),
        ("start of the chain", KeyCode::Char('g')),
        ("next low-probability token", KeyCode::Char('n')),
        ("tab → inspector", KeyCode::Tab),
        ("end of the inspector", KeyCode::Char('G')),
        ("tab → gaps", KeyCode::Tab),
        ("tab → graph", KeyCode::Tab),
    ];
    let mut worst = first;
    for (name, code) in keys {
        let start = Instant::now();
        if let Some(message) =
            tokscope::ui::keys::message_for(&app, KeyEvent::new(code, KeyModifiers::NONE))
        {
            app.update(message);
        }
        let update = start.elapsed();
        let draw = frame(&mut app);
        let total = update + draw;
        worst = worst.max(total);
        println!(
            "{name:<28} update {:>6.2} ms  draw {:>6.2} ms",
            update.as_secs_f64() * 1e3,
            draw.as_secs_f64() * 1e3
        );
    }
    // Idle: nothing moves, so the event loop draws nothing (see App::animating).
    println!(
        "worst step {:.1} ms (target 16 ms); idle: animating = {}",
        worst.as_secs_f64() * 1e3,
        app.animating()
    );
}
