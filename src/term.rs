//! The terminal side of the explorer: raw mode, the event loop, and the terminal restored on
//! every way out — quit, a signal (INT, TERM, HUP, QUIT), a lost terminal, a panic.

use std::io::{Stdout, Write, stdout};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;

use crate::app::{App, Message};
use crate::ui::layout::viewport_for;
use crate::ui::{Drawn, Theme, draw, keys, mouse};
use tokscope_core::live::StoreEvent;
use tokscope_core::live::replay::Judge;
use tokscope_core::live::watch::Watch;

/// The signals that end the explorer (with the terminal restored).
pub(crate) const SIGNALS: [i32; 4] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGQUIT,
];

/// How the explorer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The user quit.
    Quit,
    /// A signal arrived (its number).
    Signal(i32),
    /// The terminal went away (input closed or failing).
    TerminalLost,
    /// A background thread (watcher, loader) panicked: the view would silently stop
    /// following the stores, so the explorer ends and says why.
    WorkerFailed,
}

impl Ended {
    /// The conventional exit status: 0, 128 + the signal, or 129 (as after a hangup) when
    /// the terminal is gone.
    pub fn status(self) -> u8 {
        match self {
            Ended::Quit => 0,
            Ended::Signal(signal) => u8::try_from(128 + signal).unwrap_or(128),
            Ended::TerminalLost => 128 + 1,
            Ended::WorkerFailed => 101,
        }
    }
}

/// The first background thread's panic message, kept until the screen is restored (printing
/// it into the alternate screen would garble the display and be drawn over).
static WORKER_PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

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

/// Whether standard input is still a working terminal (a hung-up one fails `tcgetattr`).
fn terminal_alive() -> bool {
    // SAFETY: `termios` is plain data; tcgetattr only writes into it.
    let mut termios: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd 0 and a valid pointer to a termios.
    unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut termios) == 0 }
}

/// Watch standard input for a hang-up (the terminal closed). crossterm's reader loops on
/// the empty reads of a hung-up terminal and never returns; when that happens this thread
/// sets `lost` and puts an empty non-blocking pipe in place of standard input, so the
/// reader gets "would block", returns, and the loop can end.
fn watch_hangup(lost: Arc<AtomicBool>, done: Arc<AtomicBool>) {
    std::thread::Builder::new()
        .name("tokscope-tty".into())
        .spawn(move || {
            while !done.load(Ordering::Relaxed) {
                // No events asked: poll reports only hang-up and errors, so this sleeps.
                let mut poll = libc::pollfd {
                    fd: libc::STDIN_FILENO,
                    events: 0,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                let ready = unsafe { libc::poll(&mut poll, 1, 200) };
                if ready > 0 && poll.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
                {
                    lost.store(true, Ordering::Relaxed);
                    if let Some(read_end) = nonblocking_pipe() {
                        // SAFETY: dup2 of a valid fd onto fd 0 is atomic.
                        unsafe {
                            libc::dup2(read_end, libc::STDIN_FILENO);
                        }
                    }
                    return;
                }
            }
        })
        .ok();
}

/// The escape sequence (OSC 52, crossterm's command) with which the terminal, even over SSH,
/// puts `text` on the system clipboard. It carries any payload: the text is base64-encoded.
pub fn clipboard_sequence(text: &str) -> String {
    let mut sequence = String::new();
    let command = crossterm::clipboard::CopyToClipboard::to_clipboard_from(text);
    // Writing into a String cannot fail.
    let _ = crossterm::Command::write_ansi(&command, &mut sequence);
    sequence
}

/// The read end of a new pipe, non-blocking and closed on exec (its write end stays open, so
/// a read finds nothing rather than an end of file).
#[cfg(target_os = "linux")]
fn nonblocking_pipe() -> Option<i32> {
    let mut pipe = [0; 2];
    // SAFETY: a valid array of two fds.
    let made = unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    (made == 0).then_some(pipe[0])
}

/// The read end of a new pipe, non-blocking and closed on exec.
#[cfg(not(target_os = "linux"))]
fn nonblocking_pipe() -> Option<i32> {
    portable_nonblocking_pipe()
}

/// A non-blocking pipe where there is no `pipe2` (it is Linux's): `pipe`, then the flags one
/// by one. Built on Linux too, for its test.
#[cfg(any(test, not(target_os = "linux")))]
fn portable_nonblocking_pipe() -> Option<i32> {
    let mut pipe = [0; 2];
    // SAFETY: a valid array of two fds, then fcntl on the fds just made.
    unsafe {
        if libc::pipe(pipe.as_mut_ptr()) != 0 {
            return None;
        }
        for fd in pipe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        let flags = libc::fcntl(pipe[0], libc::F_GETFL);
        libc::fcntl(pipe[0], libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Some(pipe[0])
}

/// Run the explorer until the user quits, a signal arrives or the terminal goes away; with a
/// watch, apply its changes as they come. The terminal is restored in every case; the app is
/// handed back (what it shows is remembered for the next session).
pub fn run(mut app: App, watch: Option<Watch>, theme: Theme) -> std::io::Result<(Ended, App)> {
    let signal = Arc::new(AtomicUsize::new(0));
    for number in SIGNALS {
        signal_hook::flag::register_usize(number, Arc::clone(&signal), number as usize)?;
    }
    enable_raw_mode()?;
    let previous_hook = std::panic::take_hook();
    let ui_thread = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui_thread {
            restore();
            previous_hook(info);
        } else if let Ok(mut slot) = WORKER_PANIC.lock() {
            // Kept for after the restore; the event loop ends on it.
            slot.get_or_insert_with(|| info.to_string());
        }
    }));
    let lost = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    watch_hangup(Arc::clone(&lost), Arc::clone(&done));
    let result = event_loop(&mut app, watch.as_ref(), theme, &signal, &lost);
    done.store(true, Ordering::Relaxed);
    restore();
    let _ = std::panic::take_hook();
    if let Some(message) = WORKER_PANIC.lock().ok().and_then(|mut slot| slot.take()) {
        eprintln!(
            "tokscope: a background thread failed, so the explorer stopped: {}",
            tokscope_core::text::sanitize(&message)
        );
    }
    result.map(|ended| (ended, app))
}

/// Whether a background thread has panicked.
fn worker_failed() -> bool {
    WORKER_PANIC.lock().map_or(true, |slot| slot.is_some())
}

/// Changes from the store (and the clock) are drawn at most this often; what the user does is
/// drawn at once. A store written by hundreds of calls a second would otherwise cost a frame
/// per input poll, and nobody reads a list that changes faster than this.
pub const STORE_FRAME: Duration = Duration::from_millis(100);

/// When the event loop draws: at once after input, at most every [`STORE_FRAME`] after
/// changes from the store or the clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct FramePacer {
    last: Option<Instant>,
    input: bool,
    store: bool,
}

impl FramePacer {
    /// The user's input changed what is shown (`changed` as [`App::update`] returned it).
    pub fn input(&mut self, changed: bool) {
        self.input |= changed;
    }

    /// The store or the clock changed what is shown.
    pub fn store(&mut self, changed: bool) {
        self.store |= changed;
    }

    /// Apply the watcher's `events` (`apply` says whether they changed what is shown): drawn
    /// with the next store frame, except what the user waits for — a rollout's analysis
    /// while its panes say it is being read (`awaited`: [`App::loading`]), a replay
    /// timeline — and the end of the first scan, shown at once.
    pub fn store_events(
        &mut self,
        events: Vec<StoreEvent>,
        awaited: bool,
        apply: impl FnOnce(Vec<StoreEvent>) -> bool,
    ) {
        let at_once = events.iter().any(|event| match event {
            StoreEvent::Ready | StoreEvent::Timeline(_) => true,
            StoreEvent::Detail(_) => awaited,
            _ => false,
        });
        self.changed(apply(events), at_once);
    }

    /// Something other than input `changed` what is shown: drawn at once, or with the next
    /// store frame.
    pub fn changed(&mut self, changed: bool, at_once: bool) {
        if at_once {
            self.input(changed);
        } else {
            self.store(changed);
        }
    }

    /// Whether to draw now.
    pub fn due(&self, now: Instant) -> bool {
        self.input
            || (self.store
                && self
                    .last
                    .is_none_or(|last| now.saturating_duration_since(last) >= STORE_FRAME))
    }

    /// A frame was drawn at `now`: everything noted so far is on the screen.
    pub fn drawn(&mut self, now: Instant) {
        *self = FramePacer {
            last: Some(now),
            input: false,
            store: false,
        };
    }

    /// When the last frame was drawn.
    pub fn last_drawn(&self) -> Option<Instant> {
        self.last
    }
}

fn event_loop(
    app: &mut App,
    watch: Option<&Watch>,
    theme: Theme,
    signal: &AtomicUsize,
    lost: &AtomicBool,
) -> std::io::Result<Ended> {
    execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(stdout()))?;
    terminal.clear()?;
    let size = terminal.size()?;
    let screen = Rect::new(0, 0, size.width, size.height);
    app.update(Message::Resize(viewport_for(screen, app.zoomed())));
    let mut pacer = FramePacer::default();
    pacer.input(true);
    let mut last_check = Instant::now();
    // The replay worker, started with the first replay step.
    let mut judge: Option<Judge> = None;
    loop {
        if app.quit {
            return Ok(Ended::Quit);
        }
        let received = signal.load(Ordering::Relaxed);
        if received != 0 {
            return Ok(Ended::Signal(i32::try_from(received).unwrap_or(0)));
        }
        if worker_failed() {
            return Ok(Ended::WorkerFailed);
        }
        if last_check.elapsed() >= Duration::from_secs(1) {
            last_check = Instant::now();
            if !terminal_alive() {
                return Ok(Ended::TerminalLost);
            }
        }
        // Ages and highlights move with the clock: then redraw twice a second; an idle
        // screen is not redrawn at all.
        let now = Instant::now();
        let clock = app.animating()
            && pacer.last_drawn().is_none_or(|last| {
                now.saturating_duration_since(last) >= Duration::from_millis(500)
            });
        if pacer.due(now) || clock {
            let mut drawn = Drawn::default();
            if terminal
                .draw(|frame| drawn = draw(frame, app, theme))
                .is_err()
            {
                return Ok(Ended::TerminalLost);
            }
            pacer.drawn(now);
            for message in drawn.messages() {
                pacer.input(app.update(message));
            }
        }
        // Input first, and never behind a rebuild: those run on the watcher thread.
        match event::poll(Duration::from_millis(30)) {
            Err(_) => return Ok(Ended::TerminalLost),
            Ok(false) => {}
            Ok(true) => {
                let message = match event::read() {
                    Err(_) => return Ok(Ended::TerminalLost),
                    Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                        keys::message_for(app, key)
                    }
                    Ok(Event::Mouse(event)) => mouse::message_for(app, event),
                    Ok(Event::Resize(width, height)) => {
                        let area = Rect::new(0, 0, width, height);
                        terminal.resize(area)?;
                        Some(Message::Resize(viewport_for(area, app.zoomed())))
                    }
                    Ok(_) => None,
                };
                if let Some(message) = message {
                    pacer.input(app.update(message));
                }
                if let Some(text) = app.take_clipboard() {
                    let mut out = stdout();
                    let _ = out.write_all(clipboard_sequence(&text).as_bytes());
                    let _ = out.flush();
                }
            }
        }
        if lost.load(Ordering::Relaxed) {
            return Ok(Ended::TerminalLost);
        }
        if let Some(watch) = watch {
            let changes: Vec<_> = watch.events.try_iter().collect();
            if !changes.is_empty() {
                let awaited = app.loading();
                pacer.store_events(changes, awaited, |events| {
                    app.update(Message::Store(events))
                });
            }
            if let Some(rollouts) = app.detail_requests() {
                watch.focus(rollouts);
            }
            if let Some(rollouts) = app.replay_request() {
                watch.replay(rollouts);
            }
        }
        // A replay the user plays is drawn step by step; the clock's other changes (ages,
        // highlights) with the store's.
        let replaying = app.replay.is_some();
        pacer.changed(app.update(Message::Tick(Instant::now())), replaying);
        // What a replay step changed is judged again on the replay worker, and shown at once.
        if let Some(request) = app.take_judge_request() {
            judge.get_or_insert_with(Judge::start).send(request);
        }
        if let Some(judge) = &judge {
            for results in judge.results() {
                pacer.input(app.update(Message::Judged(results)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_drawn_at_once_and_store_changes_at_most_every_store_frame() {
        let start = Instant::now();
        let mut pacer = FramePacer::default();
        assert!(!pacer.due(start), "nothing changed: nothing drawn");
        pacer.store(true);
        assert!(pacer.due(start), "the first frame is not held back");
        pacer.drawn(start);
        pacer.store(true);
        let soon = start + STORE_FRAME / 2;
        assert!(
            !pacer.due(soon),
            "a store change waits for the next store frame"
        );
        pacer.input(false);
        assert!(!pacer.due(soon), "input that changed nothing draws nothing");
        pacer.input(true);
        assert!(pacer.due(soon), "input is drawn at once");
        pacer.drawn(soon);
        assert!(!pacer.due(soon + STORE_FRAME), "all drawn: nothing due");
        pacer.store(true);
        assert!(!pacer.due(soon + STORE_FRAME / 2));
        assert!(
            pacer.due(soon + STORE_FRAME),
            "then drawn when its frame comes"
        );
        assert_eq!(pacer.last_drawn(), Some(soon));
        pacer.drawn(soon);
        let progress = || vec![StoreEvent::Progress { read: 1, total: 2 }];
        pacer.store_events(progress(), true, |_| true);
        assert!(!pacer.due(soon), "progress waits for its frame");
        let analysis = || {
            let location = tokscope_core::store::RolloutLocation {
                dir: "d".into(),
                id: "r".into(),
            };
            let capture = tokscope_core::store::Capture::unborn(location);
            let analysis = tokscope_core::verdict::analyze(capture, &Default::default());
            vec![StoreEvent::Detail(Box::new(analysis))]
        };
        pacer.store_events(analysis(), false, |_| true);
        assert!(
            !pacer.due(soon),
            "a changed analysis nobody waits for: its frame"
        );
        pacer.store_events(analysis(), true, |_| true);
        assert!(pacer.due(soon), "the analysis the panes wait for: at once");
        pacer.drawn(soon);
        pacer.store_events(vec![StoreEvent::Ready], false, |_| true);
        assert!(
            pacer.due(soon),
            "the end of the first scan is shown at once"
        );
    }

    #[test]
    fn the_portable_pipe_is_nonblocking_and_closed_on_exec() {
        for read_end in [
            super::nonblocking_pipe(),
            super::portable_nonblocking_pipe(),
        ] {
            let fd = read_end.expect("a pipe");
            // SAFETY: fcntl and read on the fd just made.
            let (status, descriptor, read) = unsafe {
                let mut byte = 0u8;
                (
                    libc::fcntl(fd, libc::F_GETFL),
                    libc::fcntl(fd, libc::F_GETFD),
                    libc::read(fd, (&raw mut byte).cast(), 1),
                )
            };
            assert_ne!(status & libc::O_NONBLOCK, 0, "non-blocking");
            assert_ne!(descriptor & libc::FD_CLOEXEC, 0, "closed on exec");
            assert_eq!(read, -1, "nothing to read, and no wait");
        }
    }

    #[test]
    fn the_clipboard_sequence_is_osc_52_with_base64() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(
                super::clipboard_sequence(plain),
                format!("\x1b]52;c;{encoded}\x1b\\")
            );
        }
        // Control bytes and a terminator in the payload stay inside the base64.
        let hostile = super::clipboard_sequence("id\x1b[201~\n\x07");
        assert_eq!(hostile.matches('\x1b').count(), 2, "{hostile:?}");
    }
}
