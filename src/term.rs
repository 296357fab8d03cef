//! The terminal side of the explorer: raw mode, the event loop, restoring the terminal on
//! exit, on Ctrl-C and on panic.

use std::io::{Stdout, stdout};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;

use std::time::{Duration, Instant};

use crate::app::{App, Message};
use crate::live::watch::Watch;
use crate::ui::layout::viewport;
use crate::ui::{Drawn, Theme, draw, keys, mouse};

/// Put the terminal back as it was (idempotent; errors ignored: nothing else can be done).
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        LeaveAlternateScreen,
        DisableMouseCapture,
        crossterm::cursor::Show
    );
}

/// Run the explorer until the user quits; with a watch, apply its changes as they come.
pub fn run(mut app: App, watch: Option<Watch>) -> std::io::Result<()> {
    enable_raw_mode()?;
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous_hook(info);
    }));
    let result = (|| {
        execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
        let mut terminal: Terminal<CrosstermBackend<Stdout>> =
            Terminal::new(CrosstermBackend::new(stdout()))?;
        terminal.clear()?;
        let size = terminal.size()?;
        app.update(Message::Resize(viewport(Rect::new(
            0,
            0,
            size.width,
            size.height,
        ))));
        let theme = Theme::from_env();
        let mut dirty = true;
        let mut last_draw = Instant::now();
        while !app.quit {
            // Ages and highlights move with the clock: redraw at least twice a second.
            if dirty || last_draw.elapsed() >= Duration::from_millis(500) {
                let mut drawn = Drawn::default();
                terminal.draw(|frame| drawn = draw(frame, &app, theme))?;
                last_draw = Instant::now();
                dirty = false;
                for message in drawn.messages() {
                    dirty |= app.update(message);
                }
            }
            // Input first, and never behind a rebuild: those run on the watcher thread.
            if event::poll(Duration::from_millis(30))? {
                let message = match event::read()? {
                    Event::Key(key) if key.kind != KeyEventKind::Release => {
                        keys::message_for(&app, key)
                    }
                    Event::Mouse(mouse) => mouse::message_for(&app, mouse),
                    Event::Resize(width, height) => {
                        let area = Rect::new(0, 0, width, height);
                        terminal.resize(area)?;
                        Some(Message::Resize(viewport(area)))
                    }
                    _ => None,
                };
                if let Some(message) = message {
                    dirty |= app.update(message);
                }
            }
            if let Some(watch) = &watch {
                let changes: Vec<_> = watch.events.try_iter().collect();
                if !changes.is_empty() {
                    dirty |= app.update(Message::Store(changes));
                }
            }
            dirty |= app.update(Message::Tick(Instant::now()));
        }
        Ok(())
    })();
    restore();
    let _ = std::panic::take_hook();
    result
}
