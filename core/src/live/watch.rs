//! The watcher thread: file-system events (or polling) in, rebuilt rollouts out.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

use super::{LiveStore, StoreEvent};
use crate::memory::{GIVE_BACK_EVERY, GiveBack};
use crate::store::RolloutLocation;
use crate::verdict::VerdictOptions;

/// How changes are noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchMode {
    /// File-system change events (inotify on Linux).
    Events,
    /// Look every so often (for file systems without change events, like network mounts).
    Poll(Duration),
    /// Read once and do not follow (`--no-watch`): only the UI's requests are answered.
    Once,
}

/// What wakes the watcher thread.
enum Input {
    /// File-system events: one burst (several when the source gathers them, see
    /// [`StoreWatcher`]).
    Fs(Vec<notify::Result<notify::Event>>),
    /// A request of the UI.
    Ui(Request),
}

/// What the UI asks of the watcher.
enum Request {
    /// The UI looks at these rollouts now.
    Focus(Vec<RolloutLocation>),
    /// The UI wants a replay timeline over these rollouts.
    Timeline(Vec<RolloutLocation>),
}

/// Answer a request of the UI; `false` when the UI is gone.
fn answer(request: Request, store: &mut LiveStore, sender: &Sender<StoreEvent>) -> bool {
    match request {
        Request::Focus(rollouts) => send_all(sender, Ok(store.set_focus(rollouts))),
        Request::Timeline(rollouts) => sender
            .send(StoreEvent::Timeline(Box::new(store.timeline(rollouts))))
            .is_ok(),
    }
}

/// Settings of a watch.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Events or polling.
    pub mode: WatchMode,
    /// After the first event of a burst, wait this long for more before rebuilding (50 ms
    /// by default: half a store frame. Each wake-up of the watcher costs, a burst's changes
    /// to one rollout cost one rebuild, and the rollouts of one burst have their digests
    /// hashed together: at 200 appends a second, 25 ms took 1.12 reads an append and
    /// hashed 82% of the digests beside another, 50 ms 1.06 and 97%, 8% less CPU for
    /// 13 ms more from a write to the screen, p50 86 ms).
    pub coalesce: Duration,
    /// How rollouts are judged.
    pub verdict: VerdictOptions,
    /// Rollout rows outside the store directories (those inside are found and followed).
    pub rows: Vec<PathBuf>,
    /// Rollout rows of one store each: `(store, rows path)` (`--compare`'s `--rollouts-a`).
    pub store_rows: Vec<(PathBuf, PathBuf)>,
    /// Take no change events even in [`WatchMode::Events`]: poll every directory as when
    /// events cannot be had (`TOKSCOPE_NO_EVENTS`; the fallback, tried on purpose).
    pub no_events: bool,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            mode: WatchMode::Events,
            coalesce: Duration::from_millis(50),
            verdict: VerdictOptions::default(),
            rows: Vec::new(),
            store_rows: Vec::new(),
            no_events: false,
        }
    }
}

/// A running watch. Dropping it stops the thread.
pub struct Watch {
    /// Rebuilt rollouts and errors, in the order they happened.
    pub events: Receiver<StoreEvent>,
    inputs: Sender<Input>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Make a replay timeline over `rollouts` (the app's, in its order): answered with
    /// [`StoreEvent::Timeline`].
    pub fn replay(&self, rollouts: Vec<RolloutLocation>) {
        let _ = self.inputs.send(Input::Ui(Request::Timeline(rollouts)));
    }

    /// The UI looks at `rollouts` now (the explorer asks for what its panes show): their full
    /// analyses are sent as [`StoreEvent::Detail`], now and whenever they change.
    pub fn focus(&self, rollouts: Vec<RolloutLocation>) {
        let _ = self.inputs.send(Input::Ui(Request::Focus(rollouts)));
    }
}

impl Drop for Watch {
    /// Stop the thread; wait for it briefly, never for a read stuck on a dead file system
    /// (quitting must not hang: the thread is then left to end with the process).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let deadline = Instant::now() + Duration::from_millis(500);
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// Start watching `dirs`. The first events are the initial scan, then [`StoreEvent::Ready`].
pub fn watch(dirs: Vec<PathBuf>, options: WatchOptions) -> Watch {
    let (sender, events) = mpsc::channel();
    let (inputs, received) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let fs_inputs = inputs.clone();
    let thread = std::thread::Builder::new()
        .name("tokscope-watch".into())
        .stack_size(crate::pool::WORKER_STACK)
        .spawn(move || run(dirs, options, sender, (fs_inputs, received), thread_stop))
        .expect("spawn the watcher thread");
    Watch {
        events,
        inputs,
        stop,
        thread: Some(thread),
    }
}

fn send_all(
    sender: &Sender<StoreEvent>,
    result: Result<Vec<StoreEvent>, crate::store::StoreDirError>,
) -> bool {
    match result {
        Ok(changes) => changes.into_iter().all(|event| sender.send(event).is_ok()),
        Err(error) => sender.send(StoreEvent::Error(error.to_string())).is_ok(),
    }
}

/// Whether each followed directory is still the directory it was.
struct Presence {
    dirs: Vec<(PathBuf, Option<(u64, u64)>)>,
    checked: Instant,
}

/// How often a directory's presence is checked.
const PRESENCE_EVERY: Duration = Duration::from_millis(500);

fn identity(dir: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir)
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| (m.dev(), m.ino()))
}

impl Presence {
    fn new(dirs: &[PathBuf]) -> Presence {
        Presence {
            dirs: dirs.iter().map(|d| (d.clone(), identity(d))).collect(),
            checked: Instant::now(),
        }
    }

    /// Directories gone and directories back since the last check (at most every
    /// [`PRESENCE_EVERY`]). A directory replaced by another at the same path is both.
    fn check(&mut self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let (mut gone, mut back) = (Vec::new(), Vec::new());
        if self.checked.elapsed() < PRESENCE_EVERY {
            return (gone, back);
        }
        self.checked = Instant::now();
        for (dir, known) in &mut self.dirs {
            let now = identity(dir);
            if now == *known {
                continue;
            }
            if known.is_some() {
                gone.push(dir.clone());
            }
            if now.is_some() {
                back.push(dir.clone());
            }
            *known = now;
        }
        (gone, back)
    }
}

/// How often a directory whose change events cannot be had is polled instead.
pub const FALLBACK_POLL: Duration = Duration::from_secs(1);

/// The followed directories whose change events cannot be had, polled instead.
#[derive(Default)]
struct Unwatched {
    dirs: Vec<PathBuf>,
    polled: Option<Instant>,
}

impl Unwatched {
    /// Subscribe to `dir`'s events; when that fails, poll it (and say so). A directory that
    /// does not exist (yet) is no failure: its appearance is seen by the presence check.
    fn watch(
        &mut self,
        watcher: Option<&mut StoreWatcher>,
        dir: &std::path::Path,
        sender: &Sender<StoreEvent>,
    ) {
        let reason = match watcher {
            None => "no change events on this system".to_owned(),
            Some(watcher) => {
                let _ = watcher.unwatch(dir);
                match watcher.watch(dir, RecursiveMode::NonRecursive) {
                    Ok(()) => {
                        self.dirs.retain(|d| d != dir);
                        return;
                    }
                    Err(_) if !dir.exists() => return,
                    Err(error) => error.to_string(),
                }
            }
        };
        if !self.dirs.iter().any(|d| d == dir) {
            self.dirs.push(dir.to_path_buf());
            let _ = sender.send(StoreEvent::Polling {
                dir: dir.to_path_buf(),
                reason,
            });
        }
    }

    /// Whether the polled directories are due a rescan now.
    fn due(&mut self) -> bool {
        if self.dirs.is_empty() {
            return false;
        }
        let due = self.polled.is_none_or(|at| at.elapsed() >= FALLBACK_POLL);
        if due {
            self.polled = Some(Instant::now());
        }
        due
    }
}

/// Report directories gone or back; follow the ones back anew (events mode re-subscribes,
/// and polls a directory it cannot subscribe to).
fn send_presence(
    sender: &Sender<StoreEvent>,
    presence: &mut Presence,
    mut watcher: Option<&mut StoreWatcher>,
    unwatched: &mut Unwatched,
    store: &mut LiveStore,
    give_back: &mut GiveBack,
) -> bool {
    let (gone, back) = presence.check();
    if gone.is_empty() && back.is_empty() {
        return true;
    }
    // (The store is listed again: work that may free memory.)
    give_back.worked();
    if watcher.is_some() {
        for dir in &back {
            unwatched.watch(watcher.as_deref_mut(), dir, sender);
        }
    }
    let events = gone
        .into_iter()
        .map(StoreEvent::StoreGone)
        .chain(back.into_iter().map(StoreEvent::StoreBack));
    for event in events {
        if sender.send(event).is_err() {
            return false;
        }
    }
    send_all(sender, store.rescan())
}

/// Rows changed: send every rollout judged anew, then what the rows file holds that is worth
/// saying (a re-run appended, a malformed line).
fn send_rows(sender: &Sender<StoreEvent>, store: &mut LiveStore) -> bool {
    if !send_all(sender, Ok(store.rows_changed())) {
        return false;
    }
    match store.rows_message() {
        Some(message) => sender.send(StoreEvent::Error(message)).is_ok(),
        None => true,
    }
}

/// Polls the store: the rows file if it moved, then every rollout that may grow. Only a
/// poll that found a change counts as work for `give_back` (an idle or failed poll frees
/// nothing).
/// Whether the UI still listens.
fn send_poll(sender: &Sender<StoreEvent>, store: &mut LiveStore, give_back: &mut GiveBack) -> bool {
    // Compared with the stamp taken when the rows were read, not when polling began: a rows
    // file written in between is not missed.
    if store.rows_moved() {
        give_back.worked();
        if !send_rows(sender, store) {
            return false;
        }
    }
    let polled = store.poll();
    // (A listing that failed read nothing: no work either.)
    if matches!(&polled, Ok(changes) if !changes.is_empty()) {
        give_back.worked();
    }
    let sent = send_all(sender, polled);
    // The changes are on their way to the screen: now the next appends' digests.
    store.hash_ahead();
    sent
}

/// Whether `event` may end a directory's watch: the directory itself removed or renamed
/// (the paths say which).
fn ends_a_watch(event: &notify::Event) -> bool {
    matches!(
        event.kind,
        notify::EventKind::Remove(_)
            | notify::EventKind::Modify(notify::event::ModifyKind::Name(_))
    )
}

/// The change events' source: on Linux inotify asked only for changes (see
/// [`super::inotify`]), gathering each burst for the coalescing window itself, elsewhere
/// notify's own, one event at a time.
#[cfg(target_os = "linux")]
type StoreWatcher = super::inotify::ChangeWatcher;
#[cfg(not(target_os = "linux"))]
type StoreWatcher = notify::RecommendedWatcher;

/// Whether the events' source hands on a burst only once its coalescing window is over (the
/// watcher then need not wait for the rest itself).
const SOURCE_GATHERS: bool = cfg!(target_os = "linux");

/// The change events' source, its bursts sent as [`Input::Fs`] with the events that change
/// nothing left out.
fn store_watcher(sender: Sender<Input>, coalesce: Duration) -> notify::Result<StoreWatcher> {
    let keep = |mut burst: Vec<notify::Result<notify::Event>>| {
        burst.retain(|event| !is_no_change(event));
        burst
    };
    #[cfg(target_os = "linux")]
    {
        StoreWatcher::gathering(coalesce, move |burst| {
            let burst = keep(burst);
            if !burst.is_empty() {
                let _ = sender.send(Input::Fs(burst));
            }
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = coalesce;
        StoreWatcher::new(
            move |event| {
                let burst = keep(vec![event]);
                if !burst.is_empty() {
                    let _ = sender.send(Input::Fs(burst));
                }
            },
            notify::Config::default(),
        )
    }
}

/// Events that change nothing a reader sees, dropped where they arrive so they do not wake
/// the watcher: opening, reading and closing files (ours included: every refresh opens
/// some, and reacting to that would make each refresh trigger the next), and the writer's
/// state written aside before its rename (the rename is the change).
fn is_no_change(event: &notify::Result<notify::Event>) -> bool {
    let Ok(event) = event else { return false };
    if event.need_rescan() {
        return false;
    }
    let aside = |path: &PathBuf| {
        path.file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with(".tokens-state-"))
    };
    matches!(event.kind, notify::EventKind::Access(_))
        || (!event.paths.is_empty()
            && event.paths.iter().all(aside)
            && !matches!(
                event.kind,
                notify::EventKind::Modify(notify::event::ModifyKind::Name(_))
            ))
}

fn run(
    dirs: Vec<PathBuf>,
    options: WatchOptions,
    sender: Sender<StoreEvent>,
    (fs_sender, inputs): (Sender<Input>, Receiver<Input>),
    stop: Arc<AtomicBool>,
) {
    // Which directories are followed, taken first: one renamed during the first scan is
    // then seen to go.
    let mut presence = Presence::new(&dirs);
    let mut store =
        LiveStore::with_rows(dirs.clone(), options.verdict.clone(), options.rows.clone())
            .with_store_rows(options.store_rows.clone());
    store.set_following(!matches!(options.mode, WatchMode::Once));
    // Subscribe before the first scan, so nothing written during it is missed. Where change
    // events cannot be had (no watcher: the instance limit; a directory: the watch limit),
    // the directory is polled instead: never blind.
    let mut unwatched = Unwatched::default();
    let mut watcher = match options.mode {
        WatchMode::Events if !options.no_events => {
            store_watcher(fs_sender, options.coalesce).map_err(|error| error.to_string())
        }
        WatchMode::Events => Err("change events turned off".to_owned()),
        WatchMode::Poll(_) | WatchMode::Once => Err(String::new()),
    };
    if matches!(options.mode, WatchMode::Events) {
        for dir in &dirs {
            match watcher.as_mut() {
                Ok(watcher) => unwatched.watch(Some(watcher), dir, &sender),
                Err(reason) => {
                    unwatched.dirs.push(dir.clone());
                    let _ = sender.send(StoreEvent::Polling {
                        dir: dir.clone(),
                        reason: format!("cannot watch for changes ({reason})"),
                    });
                }
            }
        }
    }
    let mut watcher = watcher.ok();
    // File-system events and replay requests that arrive during the first scan wait; what
    // the UI looks at is read first.
    let mut held = Vec::new();
    let mut replay = None;
    let scanned = store.first_scan(&mut |event| sender.send(event).is_ok(), &mut || {
        let mut focus = None;
        for input in inputs.try_iter() {
            match input {
                Input::Ui(Request::Focus(rollouts)) => focus = Some(rollouts),
                Input::Ui(Request::Timeline(rollouts)) => replay = Some(rollouts),
                Input::Fs(burst) => held.extend(burst),
            }
        }
        focus
    });
    match scanned {
        Ok(true) => {}
        Ok(false) => return,
        Err(error) => {
            let _ = sender.send(StoreEvent::Error(error.to_string()));
        }
    }
    // What changed during the first scan comes as the events held meanwhile (they were
    // subscribed to before it), or with the next poll: the store is not read twice.
    if let Some(message) = store.rows_message() {
        let _ = sender.send(StoreEvent::Error(message));
    }
    if sender.send(StoreEvent::Ready).is_err() {
        return;
    }
    // What the first scan freed (it reads the whole store) is given back now; later work's,
    // every so often.
    crate::memory::give_back_freed_memory();
    let mut give_back = GiveBack::every(GIVE_BACK_EVERY);
    if let Some(rollouts) = replay
        && !answer(Request::Timeline(rollouts), &mut store, &sender)
    {
        return;
    }
    match options.mode {
        WatchMode::Once => {
            while !stop.load(Ordering::Relaxed) {
                give_back.tick();
                match inputs.recv_timeout(Duration::from_millis(100)) {
                    Ok(Input::Ui(request)) => {
                        give_back.worked();
                        if !answer(request, &mut store, &sender) {
                            return;
                        }
                    }
                    Ok(Input::Fs(_)) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        }
        WatchMode::Poll(interval) => {
            while !stop.load(Ordering::Relaxed) {
                give_back.tick();
                // Sleep the interval, answering the UI's requests meanwhile.
                let deadline = Instant::now() + interval;
                while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                    match inputs.recv_timeout(left) {
                        Ok(Input::Ui(request)) => {
                            give_back.worked();
                            if !answer(request, &mut store, &sender) {
                                return;
                            }
                        }
                        Ok(Input::Fs(_)) => {}
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                if !send_presence(
                    &sender,
                    &mut presence,
                    None,
                    &mut unwatched,
                    &mut store,
                    &mut give_back,
                ) {
                    return;
                }
                if !send_poll(&sender, &mut store, &mut give_back) {
                    return;
                }
            }
        }
        WatchMode::Events => {
            // Kept between bursts: a burst's events are many, and a fresh vector for them
            // each time was a large allocation per burst (the allocator tidying its bins).
            let mut batch = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                give_back.tick();
                // Deleting or renaming a watched directory ends its events: check it directly.
                if !send_presence(
                    &sender,
                    &mut presence,
                    watcher.as_mut(),
                    &mut unwatched,
                    &mut store,
                    &mut give_back,
                ) {
                    return;
                }
                // Directories without change events are polled.
                if unwatched.due() && !send_poll(&sender, &mut store, &mut give_back) {
                    return;
                }
                let first = if held.is_empty() {
                    match inputs.recv_timeout(Duration::from_millis(100)) {
                        Ok(input) => input,
                        Err(RecvTimeoutError::Timeout) => continue,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                } else {
                    // The events held during the first scan, a burst already.
                    Input::Fs(std::mem::take(&mut held))
                };
                give_back.worked();
                // (Not holding a rescan's peak of events for the watcher's whole life.)
                batch.shrink_to(1024);
                let mut requests = Vec::new();
                let mut take = |input: Input| match input {
                    Input::Fs(burst) => batch.extend(burst),
                    Input::Ui(request) => requests.push(request),
                };
                let event_first = matches!(first, Input::Fs(_));
                take(first);
                // A source that does not gather: asleep for the whole window, then everything
                // that came (waking for each event of a burst cost more than the events).
                if event_first && !SOURCE_GATHERS {
                    std::thread::sleep(options.coalesce);
                }
                inputs.try_iter().for_each(&mut take);
                for request in requests {
                    if !answer(request, &mut store, &sender) {
                        return;
                    }
                }
                let mut rescan = false;
                let mut rows_changed = false;
                let mut dirty = BTreeSet::new();
                let mut lost = BTreeSet::new();
                for event in batch.drain(..) {
                    match event {
                        Ok(event) if event.need_rescan() => rescan = true,
                        // (Accesses never come: `is_no_change` drops them where they arrive.)
                        Ok(event) => {
                            rows_changed |= event.paths.iter().any(|p| store.is_rows_file(p));
                            dirty.extend(event.paths.iter().filter_map(|p| store.location_of(p)));
                            // A followed directory deleted or renamed: its watch is gone, even
                            // if one is back already under its path with its inode (ext4
                            // reuses it), which the presence check cannot tell from the old.
                            if ends_a_watch(&event) {
                                let followed =
                                    event.paths.iter().filter(|p| store.is_followed_dir(p));
                                lost.extend(followed.cloned());
                            }
                        }
                        Err(_) => rescan = true,
                    }
                }
                for dir in &lost {
                    // Subscribed again when it is there; else the presence check reports it
                    // gone, and back when it is.
                    unwatched.watch(watcher.as_mut(), dir, &sender);
                    rescan = true;
                }
                if rows_changed && !send_rows(&sender, &mut store) {
                    return;
                }
                let ok = if rescan {
                    send_all(&sender, store.rescan())
                } else {
                    dirty
                        .iter()
                        .all(|location| send_all(&sender, Ok(store.refresh(location))))
                };
                if !ok {
                    return;
                }
                // The changes are on their way to the screen: now the digests the next
                // appends will need, while their sequences are still in the caches.
                store.hash_ahead();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_poll_that_finds_something_counts_as_work_to_give_memory_back_after() {
        let dir = tempfile::tempdir().unwrap();
        let writer = tokscope_testkit::RunWriter::new(dir.path());
        writer.rollout("done", 2, false, true).unwrap();
        writer.begin_call("live", "live-c0").unwrap();
        let mut store = LiveStore::new(vec![dir.path().to_path_buf()], Default::default());
        store.first_scan(&mut |_| true, &mut || None).unwrap();
        // A directory time an hour old is trusted: an idle poll lists nothing again.
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(dir.path())
            .and_then(|d| d.set_modified(hour_ago))
            .unwrap();
        store.listed = store.dir_times();
        let (sender, events) = mpsc::channel();
        let later = Instant::now() + Duration::from_secs(3600);
        let mut give_back = GiveBack::every(Duration::ZERO);
        for _ in 0..3 {
            assert!(send_poll(&sender, &mut store, &mut give_back));
        }
        assert!(events.try_recv().is_err(), "nothing changed");
        assert!(!give_back.due(later), "idle polls are no work");
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("live.tokens.intents"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"live-c1\n"))
            .unwrap();
        assert!(send_poll(&sender, &mut store, &mut give_back));
        assert!(events.try_recv().is_ok(), "the append is seen");
        assert!(give_back.due(later), "a poll that read is work");
    }
}
