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
use crate::ui::{Theme, draw};

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
        app.update(Message::Resize(size.width, size.height));
        let theme = Theme::from_env();
        let mut dirty = true;
        let mut last_draw = Instant::now();
        while !app.quit {
            // Ages and highlights move with the clock: redraw at least twice a second.
            if dirty || last_draw.elapsed() >= Duration::from_millis(500) {
                terminal.draw(|frame| draw(frame, &app, theme))?;
                last_draw = Instant::now();
                dirty = false;
            }
            // Input first, and never behind a rebuild: those run on the watcher thread.
            if event::poll(Duration::from_millis(30))? {
                match event::read()? {
                    Event::Key(key) if key.kind != KeyEventKind::Release => {
                        app.update(Message::Key(key));
                    }
                    Event::Mouse(mouse) => app.update(Message::Mouse(mouse)),
                    Event::Resize(width, height) => {
                        terminal.resize(Rect::new(0, 0, width, height))?;
                        app.update(Message::Resize(width, height));
                    }
                    _ => {}
                }
                dirty = true;
            }
            if let Some(watch) = &watch {
                let changes: Vec<_> = watch.events.try_iter().collect();
                if !changes.is_empty() {
                    app.apply(changes);
                    dirty = true;
                }
            }
            dirty |= app.tick(Instant::now());
        }
        Ok(())
    })();
    restore();
    let _ = std::panic::take_hook();
    result
}
