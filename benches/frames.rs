//! Frame times with a huge rollout open: a 10,000-call tree whose main chain holds about a
//! million tokens (delta records). Each step is a key as the user types it, then one frame
//! drawn into a 200×50 test backend; the figure is the time of update + draw, per step.
//!
//! Run with `cargo bench --bench frames`. Target: every frame ≤ 16 ms. Searches over the whole
//! chain (nothing found: every token looked at) are reported too; they run once per Enter.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokscope::app::App;
use tokscope_core::verdict::VerdictOptions;
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
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
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
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    let detok = tokscope_core::detok::Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
    let mut app =
        App::new(stores, analyses, VerdictOptions::default(), viewport).with_tokenizer(detok);
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
    // Each step: the keys typed (a prompt's last key is Enter), then one frame.
    let typed = |text: &str| -> Vec<KeyCode> {
        text.chars()
            .map(|c| {
                if c == '\n' {
                    KeyCode::Enter
                } else {
                    KeyCode::Char(c)
                }
            })
            .collect()
    };
    let keys: Vec<(&str, Vec<KeyCode>)> = vec![
        ("tab → tree", vec![KeyCode::Tab]),
        ("down", vec![KeyCode::Down]),
        ("page down", vec![KeyCode::PageDown]),
        ("end of the tree", vec![KeyCode::Char('G')]),
        ("up", vec![KeyCode::Up]),
        ("search the tree (whole)", typed("/no-such-call\n")),
        ("tab → tokens", vec![KeyCode::Tab]),
        ("right", vec![KeyCode::Right]),
        ("page down", vec![KeyCode::PageDown]),
        ("end of the chain", vec![KeyCode::Char('G')]),
        ("start of the chain", vec![KeyCode::Char('g')]),
        ("next low-probability token", vec![KeyCode::Char('>')]),
        ("search ids (whole chain)", typed("/4294967295 1\n")),
        ("search text (whole chain)", typed("/zzqqxx\n")),
        (":pos 500000", typed(":pos 500000\n")),
        ("flowing text (T: cells → prose)", typed("T")),
        ("down in flowing text", vec![KeyCode::Down]),
        ("end in flowing text", vec![KeyCode::Char('G')]),
        ("yank a call's tokens", typed("y")),
        ("tab → inspector", vec![KeyCode::Tab]),
        ("end of the inspector", vec![KeyCode::Char('G')]),
        ("search the inspector", typed("/digest\n")),
        ("tab → gaps", vec![KeyCode::Tab]),
        ("tab → graph", vec![KeyCode::Tab]),
        ("zoom", typed("f")),
    ];
    let mut worst = first;
    for (name, codes) in keys {
        let start = Instant::now();
        for code in codes {
            if let Some(message) =
                tokscope::ui::keys::message_for(&app, KeyEvent::new(code, KeyModifiers::NONE))
            {
                app.update(message);
            }
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
