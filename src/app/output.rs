//! Writing tokscope's own files (exports, the remembered state) without ever writing into a
//! store: a directory that is a store — by device and inode, so a bind mount or another path
//! to it is seen, or because it holds token files — is refused, and a file is written under a
//! fresh random name (created exclusively, never through a symlink), synced, then renamed
//! into place, so nothing half-written or predictable is ever left where a reader looks.

use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a directory cannot be written into.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The directory is one of the stores shown (or inside one), whatever path names it.
    #[error("{0} is inside a token store; choose a path outside the store")]
    InsideStore(PathBuf),
    /// The directory holds token files: it is a store.
    #[error("{0} holds token files (a store); choose a path outside any store")]
    HoldsTokenFiles(PathBuf),
}

/// The device and inode of `path`, if it exists.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Refuse `dir` (an existing directory, resolved) when it, or a directory above it, is one of
/// `stores` (compared by device and inode), or when it holds a token file.
pub fn check_outside_stores(dir: &Path, stores: &[PathBuf]) -> Result<(), Refusal> {
    let stores: Vec<(u64, u64)> = stores.iter().filter_map(|s| identity(s)).collect();
    for ancestor in dir.ancestors() {
        if identity(ancestor).is_some_and(|id| stores.contains(&id)) {
            return Err(Refusal::InsideStore(dir.to_path_buf()));
        }
    }
    if holds_token_files(dir) {
        return Err(Refusal::HoldsTokenFiles(dir.to_path_buf()));
    }
    Ok(())
}

/// Whether `dir` holds a file named like a token-store file (`<id>.tokens.jsonl`, a lock…).
fn holds_token_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            entry.file_name().to_str().is_some_and(|name| {
                tokscope_core::store::layout::classify(name).is_some()
                    || name.ends_with(".tokens.lock")
            })
        })
    })
}

/// A name no other process can have guessed: the file name, the process, the time and the
/// standard library's random hash keys.
fn fresh_name(file_name: &str) -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!(".{file_name}.tokscope-{:016x}.tmp", hasher.finish())
}

/// Create `path` (never an existing name, never through a symlink), write `bytes`, sync.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Create `dir/file_name` with `bytes`, never over an existing file: written under a fresh
/// name, synced, then linked to its name (which fails if the name is taken), so a failure
/// (a full disk) leaves nothing, not an empty or partial file.
pub fn create(dir: &Path, file_name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let temporary = dir.join(fresh_name(file_name));
    let target = dir.join(file_name);
    let made = write_new(&temporary, bytes).and_then(|()| std::fs::hard_link(&temporary, &target));
    let _ = std::fs::remove_file(&temporary);
    made.map(|()| target)
}

/// Put `bytes` at `dir/file_name` whole: written under a fresh name, synced, renamed over
/// (an old file's inode, perhaps hard-linked elsewhere, is never written). With
/// `permissions`, the new file gets them. Nothing is left behind when it fails.
pub fn replace(
    dir: &Path,
    file_name: &str,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<PathBuf> {
    let temporary = dir.join(fresh_name(file_name));
    let target = dir.join(file_name);
    let written = write_new(&temporary, bytes)
        .and_then(|()| match permissions {
            Some(permissions) => std::fs::set_permissions(&temporary, permissions),
            None => Ok(()),
        })
        .and_then(|()| std::fs::rename(&temporary, &target));
    match written {
        Ok(()) => Ok(target),
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_refused_by_identity_and_by_its_files() {
        let root = tempfile::tempdir().expect("temp dir");
        let store = root.path().join("store");
        std::fs::create_dir(&store).expect("store");
        // Another path to the same directory (a symlink here; a bind mount is the same
        // device and inode).
        let other = root.path().join("other");
        std::os::unix::fs::symlink(&store, &other).expect("symlink");
        let inside = store.join("sub");
        std::fs::create_dir(&inside).expect("sub");
        assert!(matches!(
            check_outside_stores(&other, std::slice::from_ref(&store)),
            Err(Refusal::InsideStore(_))
        ));
        assert!(check_outside_stores(&inside, std::slice::from_ref(&store)).is_err());
        // A store not on the command line: it holds token files.
        let unnamed = root.path().join("unnamed");
        std::fs::create_dir(&unnamed).expect("unnamed");
        std::fs::write(unnamed.join("r1.tokens.lock"), b"").expect("lock");
        assert!(matches!(
            check_outside_stores(&unnamed, &[]),
            Err(Refusal::HoldsTokenFiles(_))
        ));
        assert_eq!(check_outside_stores(root.path(), &[store]), Ok(()));
    }

    #[test]
    fn a_replacement_is_whole_and_leaves_nothing_when_it_fails() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = replace(dir.path(), "state.json", b"{}", None).expect("written");
        assert_eq!(std::fs::read(&path).expect("read"), b"{}");
        // A directory where the file goes: the rename fails, no temporary file stays.
        std::fs::create_dir(dir.path().join("taken")).expect("dir");
        assert!(replace(dir.path(), "taken", b"{}", None).is_err());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // A symlink planted at a temporary name is never followed: names are fresh.
        assert_ne!(fresh_name("state.json"), fresh_name("state.json"));
        // Created, never over a file, nothing left when the name is taken.
        let made = create(dir.path(), "new.json", b"[]").expect("created");
        assert_eq!(std::fs::read(&made).expect("read"), b"[]");
        assert!(
            create(dir.path(), "new.json", b"{}").is_err(),
            "never over a file"
        );
        assert_eq!(std::fs::read(&made).expect("read"), b"[]");
        let after: usize = std::fs::read_dir(dir.path()).expect("list").count();
        assert_eq!(after, 3, "no temporary file left");
    }
}
