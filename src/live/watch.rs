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
use crate::verdict::VerdictOptions;

/// How changes are noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchMode {
    /// File-system change events (inotify on Linux).
    Events,
    /// Look every so often (for file systems without change events, like network mounts).
    Poll(Duration),
}

/// Settings of a watch.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Events or polling.
    pub mode: WatchMode,
    /// After the first event of a burst, wait this long for more before rebuilding.
    pub coalesce: Duration,
    /// How rollouts are judged.
    pub verdict: VerdictOptions,
    /// Rollout rows outside the store directories (those inside are found and followed).
    pub rows: Vec<PathBuf>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            mode: WatchMode::Events,
            coalesce: Duration::from_millis(5),
            verdict: VerdictOptions::default(),
            rows: Vec::new(),
        }
    }
}

/// A running watch. Dropping it stops the thread.
pub struct Watch {
    /// Rebuilt rollouts and errors, in the order they happened.
    pub events: Receiver<StoreEvent>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
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
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("tokscope-watch".into())
        .spawn(move || run(dirs, options, sender, thread_stop))
        .expect("spawn the watcher thread");
    Watch {
        events,
        stop,
        thread: Some(thread),
    }
}

fn send_all(
    sender: &Sender<StoreEvent>,
    result: Result<Vec<crate::verdict::Analysis>, crate::store::StoreDirError>,
) -> bool {
    match result {
        Ok(changes) => changes
            .into_iter()
            .all(|analysis| sender.send(StoreEvent::Updated(Box::new(analysis))).is_ok()),
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

/// Report directories gone or back; follow the ones back anew (events mode re-subscribes).
fn send_presence(
    sender: &Sender<StoreEvent>,
    presence: &mut Presence,
    watcher: Option<&mut notify::RecommendedWatcher>,
    store: &mut LiveStore,
) -> bool {
    let (gone, back) = presence.check();
    if gone.is_empty() && back.is_empty() {
        return true;
    }
    if let Some(watcher) = watcher {
        for dir in &back {
            let _ = watcher.unwatch(dir);
            if let Err(error) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                let _ = sender.send(StoreEvent::Error(format!(
                    "{}: cannot watch ({error})",
                    dir.display()
                )));
            }
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

fn run(
    dirs: Vec<PathBuf>,
    options: WatchOptions,
    sender: Sender<StoreEvent>,
    stop: Arc<AtomicBool>,
) {
    // Which directories are followed, taken first: one renamed during the first scan is
    // then seen to go.
    let mut presence = Presence::new(&dirs);
    let mut store =
        LiveStore::with_rows(dirs.clone(), options.verdict.clone(), options.rows.clone());
    // Subscribe before the first scan, so nothing written during it is missed.
    let (fs_sender, fs_events) = mpsc::channel::<notify::Result<notify::Event>>();
    let mut watcher = match options.mode {
        WatchMode::Events => match notify::recommended_watcher(move |event| {
            let _ = fs_sender.send(event);
        }) {
            Ok(watcher) => Some(watcher),
            Err(error) => {
                let _ = sender.send(StoreEvent::Error(format!(
                    "cannot watch for changes ({error}); use --poll MS"
                )));
                None
            }
        },
        WatchMode::Poll(_) => None,
    };
    if let Some(watcher) = watcher.as_mut() {
        for dir in &dirs {
            if let Err(error) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                let _ = sender.send(StoreEvent::Error(format!(
                    "{}: cannot watch ({error})",
                    dir.display()
                )));
            }
        }
    }
    if !send_all(&sender, store.rescan()) {
        return;
    }
    if let Some(message) = store.rows_message() {
        let _ = sender.send(StoreEvent::Error(message));
    }
    if sender.send(StoreEvent::Ready).is_err() {
        return;
    }
    match options.mode {
        WatchMode::Poll(interval) => {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(interval);
                if !send_presence(&sender, &mut presence, None, &mut store) {
                    return;
                }
                // Compared with the stamp taken when the rows were read, not when polling
                // began: a rows file written in between is not missed.
                if store.rows_moved() && !send_rows(&sender, &mut store) {
                    return;
                }
                if !send_all(&sender, store.rescan()) {
                    return;
                }
            }
        }
        WatchMode::Events => {
            while !stop.load(Ordering::Relaxed) {
                // Deleting or renaming a watched directory ends its events: check it directly.
                if !send_presence(&sender, &mut presence, watcher.as_mut(), &mut store) {
                    return;
                }
                let first = match fs_events.recv_timeout(Duration::from_millis(100)) {
                    Ok(event) => event,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                // Coalesce the burst.
                let mut batch = vec![first];
                let deadline = Instant::now() + options.coalesce;
                while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                    match fs_events.recv_timeout(left) {
                        Ok(event) => batch.push(event),
                        Err(_) => break,
                    }
                }
                let mut rescan = false;
                let mut rows_changed = false;
                let mut dirty = BTreeSet::new();
                for event in batch {
                    match event {
                        Ok(event) if event.need_rescan() => rescan = true,
                        // Opening and reading files (ours included!) is no change: reacting to
                        // it would make every refresh trigger the next one.
                        Ok(event) if matches!(event.kind, notify::EventKind::Access(_)) => {}
                        Ok(event) => {
                            rows_changed |= event.paths.iter().any(|p| store.is_rows_file(p));
                            dirty.extend(event.paths.iter().filter_map(|p| store.location_of(p)));
                        }
                        Err(_) => rescan = true,
                    }
                }
                if rows_changed && !send_rows(&sender, &mut store) {
                    return;
                }
                let ok = if rescan {
                    send_all(&sender, store.rescan())
                } else {
                    dirty.iter().all(|location| match store.refresh(location) {
                        Some(analysis) => {
                            sender.send(StoreEvent::Updated(Box::new(analysis))).is_ok()
                        }
                        None => true,
                    })
                };
                if !ok {
                    return;
                }
            }
        }
    }
}
