//! Change events from inotify that ask only for changes, read a burst at a time.
//!
//! notify's inotify backend also asks for `IN_OPEN`, so every open of a file in a store
//! is an event: the writer opens four files a call (lock, intents, records, its state
//! aside), and every refresh of ours opens the rollout's files again. Next to a writer at
//! 200 calls/s its thread took more CPU than the rebuilding it woke up (measured in the
//! scale benchmark). This watcher implements notify's [`Watcher`] with a mask of changes
//! only (contents, names, attributes, the directory itself), and reads what arrived within
//! a gathering window of the first event at once, handing the burst on whole
//! ([`ChangeWatcher::gathering`]): a writer's calls within the window — each an intent, a
//! record and a state — come as one wake-up of the reader and one of its receiver, not a
//! dozen of each (every wake-up of a thread costs a context switch, and those were most of
//! this thread's CPU next to a writer at 200 calls/s).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use notify::event::{
    CreateKind, DataChange, Event, EventKind, Flag, MetadataKind, ModifyKind, RemoveKind,
    RenameMode,
};
use notify::{Config, EventHandler, RecursiveMode, Watcher, WatcherKind};

/// What a watched directory reports: what changes a file's bytes or the directory's names.
const CHANGES: WatchMask = WatchMask::CREATE
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::DELETE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF);

/// How long after a first event the rest of its burst is awaited before reading (notify's
/// per-event interface; [`ChangeWatcher::gathering`] takes its own window).
pub(crate) const GATHER: Duration = Duration::from_millis(5);

/// Events read in one burst.
pub(crate) type Burst = Vec<notify::Result<Event>>;

/// How often the reader looks whether it should stop.
const WAKE_MS: i32 = 200;

/// Watched directories by descriptor.
type Paths = Arc<Mutex<HashMap<WatchDescriptor, PathBuf>>>;

/// A [`Watcher`] on inotify that asks only for changes.
pub(crate) struct ChangeWatcher {
    watches: Watches,
    paths: Paths,
    by_path: HashMap<PathBuf, WatchDescriptor>,
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ChangeWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeWatcher")
            .field("dirs", &self.by_path.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn lock(paths: &Paths) -> std::sync::MutexGuard<'_, HashMap<WatchDescriptor, PathBuf>> {
    paths.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ChangeWatcher {
    /// A watcher whose reader, woken by a first event, waits `gather` for the rest of the
    /// burst, reads it all and hands it to `deliver` at once (nothing when every event of it
    /// changed nothing a reader sees).
    pub(crate) fn gathering(
        gather: Duration,
        mut deliver: impl FnMut(Burst) + Send + 'static,
    ) -> notify::Result<Self> {
        let mut inotify = Inotify::init().map_err(notify::Error::io)?;
        let watches = inotify.watches();
        let paths: Paths = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (reader_paths, reader_stop) = (Arc::clone(&paths), Arc::clone(&stop));
        let reader = std::thread::Builder::new()
            .name("tokscope-inotify".into())
            .spawn(move || {
                let mut buffer = vec![0u8; 64 << 10];
                while !reader_stop.load(Ordering::Relaxed) {
                    if !readable(&inotify) {
                        continue;
                    }
                    std::thread::sleep(gather);
                    let burst = read_all(&mut inotify, &mut buffer, &reader_paths);
                    if !burst.is_empty() {
                        deliver(burst);
                    }
                }
            })
            .map_err(notify::Error::io)?;
        Ok(ChangeWatcher {
            watches,
            paths,
            by_path: HashMap::new(),
            stop,
            reader: Some(reader),
        })
    }
}

impl Watcher for ChangeWatcher {
    fn new<F: EventHandler>(mut handler: F, _config: Config) -> notify::Result<Self> {
        ChangeWatcher::gathering(GATHER, move |burst| {
            for event in burst {
                handler.handle_event(event);
            }
        })
    }

    fn watch(&mut self, path: &Path, _mode: RecursiveMode) -> notify::Result<()> {
        // Held while adding, so the reader never sees the descriptor before its path.
        let mut paths = lock(&self.paths);
        let descriptor = self.watches.add(path, CHANGES).map_err(|error| {
            let kind = if error.raw_os_error() == Some(libc::ENOSPC) {
                notify::ErrorKind::MaxFilesWatch
            } else if error.kind() == std::io::ErrorKind::NotFound {
                notify::ErrorKind::PathNotFound
            } else {
                notify::ErrorKind::Io(error)
            };
            notify::Error::new(kind).add_path(path.to_path_buf())
        })?;
        paths.insert(descriptor.clone(), path.to_path_buf());
        self.by_path.insert(path.to_path_buf(), descriptor);
        Ok(())
    }

    fn unwatch(&mut self, path: &Path) -> notify::Result<()> {
        let descriptor = self
            .by_path
            .remove(path)
            .ok_or_else(|| notify::Error::watch_not_found().add_path(path.to_path_buf()))?;
        lock(&self.paths).remove(&descriptor);
        // The kernel may have dropped it already (the directory deleted).
        let _ = self.watches.remove(descriptor);
        Ok(())
    }

    fn kind() -> WatcherKind {
        WatcherKind::Inotify
    }
}

impl Drop for ChangeWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Whether events wait to be read, waiting up to [`WAKE_MS`].
fn readable(inotify: &Inotify) -> bool {
    let mut wanted = libc::pollfd {
        fd: inotify.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the length given.
    let ready = unsafe { libc::poll(&mut wanted, 1, WAKE_MS) };
    ready > 0 && wanted.revents & libc::POLLIN != 0
}

/// Read every event waiting.
fn read_all(inotify: &mut Inotify, buffer: &mut [u8], paths: &Paths) -> Burst {
    let mut burst = Vec::new();
    loop {
        match inotify.read_events(buffer) {
            Ok(events) => {
                let paths = lock(paths);
                let mut any = false;
                for event in events {
                    any = true;
                    burst.extend(to_notify(&paths, event.wd, event.mask, event.name).map(Ok));
                }
                if !any {
                    return burst;
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return burst,
            Err(error) => {
                burst.push(Err(notify::Error::io(error)));
                // Not a spin on a broken descriptor.
                std::thread::sleep(Duration::from_millis(WAKE_MS as u64));
                return burst;
            }
        }
    }
}

/// One inotify event as notify words it (what the watcher thread reads), `None` for what
/// changes nothing (a watch removed, a directory not watched any more).
fn to_notify(
    paths: &HashMap<WatchDescriptor, PathBuf>,
    descriptor: WatchDescriptor,
    mask: EventMask,
    name: Option<&OsStr>,
) -> Option<Event> {
    if mask.contains(EventMask::Q_OVERFLOW) {
        // Events were lost: everything must be looked at again.
        return Some(Event::new(EventKind::Other).set_flag(Flag::Rescan));
    }
    let dir = paths.get(&descriptor)?;
    let folder = mask.contains(EventMask::ISDIR);
    let kind = if mask.contains(EventMask::CREATE) {
        EventKind::Create(if folder {
            CreateKind::Folder
        } else {
            CreateKind::File
        })
    } else if mask.contains(EventMask::MODIFY) {
        EventKind::Modify(ModifyKind::Data(DataChange::Any))
    } else if mask.contains(EventMask::ATTRIB) {
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any))
    } else if mask.contains(EventMask::MOVED_FROM) {
        EventKind::Modify(ModifyKind::Name(RenameMode::From))
    } else if mask.contains(EventMask::MOVED_TO) {
        EventKind::Modify(ModifyKind::Name(RenameMode::To))
    } else if mask.contains(EventMask::DELETE) {
        EventKind::Remove(if folder {
            RemoveKind::Folder
        } else {
            RemoveKind::File
        })
    } else if mask.contains(EventMask::DELETE_SELF) {
        EventKind::Remove(RemoveKind::Folder)
    } else if mask.contains(EventMask::MOVE_SELF) {
        EventKind::Modify(ModifyKind::Name(RenameMode::Any))
    } else if mask.contains(EventMask::IGNORED) {
        // The kernel dropped the watch (its directory deleted, or on another file system
        // unmounted): as good as removed. (One we removed ourselves is no longer in `paths`.)
        EventKind::Remove(RemoveKind::Folder)
    } else {
        return None;
    };
    let path = name.map_or_else(|| dir.clone(), |name| dir.join(name));
    Some(Event::new(kind).add_path(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events of `dir` while `act` runs, as the watcher thread would get them.
    fn events_of(dir: &Path, act: impl FnOnce()) -> Vec<Event> {
        let (sender, receiver) = std::sync::mpsc::channel();
        let mut watcher = ChangeWatcher::new(
            move |event: notify::Result<Event>| {
                let _ = sender.send(event);
            },
            Config::default(),
        )
        .unwrap();
        watcher.watch(dir, RecursiveMode::NonRecursive).unwrap();
        act();
        let mut events = Vec::new();
        while let Ok(event) = receiver.recv_timeout(Duration::from_millis(300)) {
            events.push(event.unwrap());
        }
        events
    }

    #[test]
    fn reports_changes_and_not_opens() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        std::fs::write(dir.join("a.tokens.jsonl"), "x\n").unwrap();
        let events = events_of(dir, || {
            // Reads are no change.
            for _ in 0..5 {
                std::fs::read(dir.join("a.tokens.jsonl")).unwrap();
            }
            std::fs::write(dir.join(".tokens-state-a"), "{}").unwrap();
            std::fs::rename(dir.join(".tokens-state-a"), dir.join("a.tokens.state.json")).unwrap();
            std::fs::remove_file(dir.join("a.tokens.jsonl")).unwrap();
        });
        let seen: Vec<(EventKind, String)> = events
            .iter()
            .map(|e| {
                let name = e.paths[0]
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                (e.kind, name)
            })
            .collect();
        assert!(
            seen.iter()
                .all(|(kind, _)| !matches!(kind, EventKind::Access(_))),
            "{seen:?}"
        );
        let has = |kind: EventKind, name: &str| seen.iter().any(|s| s == &(kind, name.into()));
        assert!(
            has(EventKind::Create(CreateKind::File), ".tokens-state-a"),
            "{seen:?}"
        );
        assert!(
            has(
                EventKind::Modify(ModifyKind::Name(RenameMode::To)),
                "a.tokens.state.json"
            ),
            "{seen:?}"
        );
        assert!(
            has(EventKind::Remove(RemoveKind::File), "a.tokens.jsonl"),
            "{seen:?}"
        );
    }

    #[test]
    fn a_directory_not_watched_reports_nothing_and_unwatching_twice_is_an_error() {
        let temp = tempfile::tempdir().unwrap();
        let mut watcher =
            ChangeWatcher::new(|_: notify::Result<Event>| {}, Config::default()).unwrap();
        let missing = temp.path().join("missing");
        let error = watcher
            .watch(&missing, RecursiveMode::NonRecursive)
            .unwrap_err();
        assert!(
            matches!(error.kind, notify::ErrorKind::PathNotFound),
            "{error}"
        );
        watcher
            .watch(temp.path(), RecursiveMode::NonRecursive)
            .unwrap();
        watcher.unwatch(temp.path()).unwrap();
        assert!(watcher.unwatch(temp.path()).is_err());
    }
}
