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

use crate::app::{App, Message};
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

/// Run the explorer until the user quits.
pub fn run(mut app: App) -> std::io::Result<()> {
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
        while !app.quit {
            terminal.draw(|frame| draw(frame, &app, theme))?;
            match event::read()? {
                Event::Key(key) if key.kind != KeyEventKind::Release => {
                    app.update(Message::Key(key))
                }
                Event::Mouse(mouse) => app.update(Message::Mouse(mouse)),
                Event::Resize(width, height) => {
                    terminal.resize(Rect::new(0, 0, width, height))?;
                    app.update(Message::Resize(width, height));
                }
                _ => {}
            }
        }
        Ok(())
    })();
    restore();
    let _ = std::panic::take_hook();
    result
}
