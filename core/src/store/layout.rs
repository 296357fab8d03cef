//! File naming and rollout discovery (SPEC §2).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Suffix of the token records file.
pub(crate) const RECORDS_SUFFIX: &str = ".tokens.jsonl";
/// Suffix of the dispatch intents file.
pub(crate) const INTENTS_SUFFIX: &str = ".tokens.intents";
/// Suffix of the incomplete sentinel.
pub(crate) const INCOMPLETE_SUFFIX: &str = ".tokens.incomplete";
/// Suffix of the atomically replaced state file.
pub(crate) const STATE_SUFFIX: &str = ".tokens.state.json";
/// Suffix of the writers' lock file (never opened by this program).
pub(crate) const LOCK_SUFFIX: &str = ".tokens.lock";

/// The files a rollout may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    /// `<rid>.tokens.jsonl`
    Records,
    /// `<rid>.tokens.intents`
    Intents,
    /// `<rid>.tokens.incomplete`
    Incomplete,
    /// `<rid>.tokens.state.json`
    State,
}

impl FileKind {
    /// Every kind, in display order.
    pub(crate) const ALL: [FileKind; 4] = [
        FileKind::Records,
        FileKind::Intents,
        FileKind::Incomplete,
        FileKind::State,
    ];

    /// The file-name suffix of this kind.
    pub fn suffix(self) -> &'static str {
        match self {
            FileKind::Records => RECORDS_SUFFIX,
            FileKind::Intents => INTENTS_SUFFIX,
            FileKind::Incomplete => INCOMPLETE_SUFFIX,
            FileKind::State => STATE_SUFFIX,
        }
    }
}

/// Whether `id` is a valid rollout id: non-empty ASCII letters, digits, `.`, `_`, `-`.
pub(crate) fn is_valid_rollout_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Split a file name into its rollout id and kind; `None` for anything that is not a rollout
/// data file (lock files, the writer's `.tokens-state-*` temporaries, foreign files).
pub fn classify(file_name: &str) -> Option<(&str, FileKind)> {
    FileKind::ALL.into_iter().find_map(|kind| {
        let id = file_name.strip_suffix(kind.suffix())?;
        is_valid_rollout_id(id).then_some((id, kind))
    })
}

/// One rollout found in a store directory.
#[derive(Clone, Debug, Eq, PartialOrd, Ord)]
pub struct RolloutLocation {
    /// The store directory.
    pub dir: PathBuf,
    /// The rollout id.
    pub id: String,
}

// Compared often (the rollouts followed, looked at, kept hot): the ids first, and the
// directories' bytes before their components (what `Path`'s equality walks).
impl PartialEq for RolloutLocation {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && (self.dir.as_os_str() == other.dir.as_os_str() || self.dir == other.dir)
    }
}

impl std::hash::Hash for RolloutLocation {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.dir.hash(state);
        self.id.hash(state);
    }
}

impl RolloutLocation {
    /// Path of one of this rollout's files.
    pub fn path(&self, kind: FileKind) -> PathBuf {
        self.dir.join(format!("{}{}", self.id, kind.suffix()))
    }
}

/// A store directory that cannot be listed.
#[derive(Debug)]
pub struct StoreDirError {
    /// The directory.
    pub dir: PathBuf,
    /// What went wrong.
    pub source: std::io::Error,
}

impl fmt::Display for StoreDirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = match self.source.kind() {
            std::io::ErrorKind::NotFound => "no such directory; pass the token-store directory",
            std::io::ErrorKind::PermissionDenied => "permission denied; check the directory mode",
            _ => "cannot list it",
        };
        write!(f, "{}: {hint} ({})", self.dir.display(), self.source)
    }
}

impl std::error::Error for StoreDirError {}

/// List the rollouts of one store directory, sorted by id: every valid id with a records,
/// intents, sentinel, state or lock file (the writers' `.tokens-state-*` temporaries and
/// foreign files are skipped).
pub fn discover(dir: &Path) -> Result<Vec<RolloutLocation>, StoreDirError> {
    let err = |source| StoreDirError {
        dir: dir.to_path_buf(),
        source,
    };
    let mut ids: BTreeMap<String, ()> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // A lock file alone is a rollout that was cleared (the writer keeps its lock): listed,
        // shown as cleared, never opened.
        let lock_only = name
            .strip_suffix(LOCK_SUFFIX)
            .filter(|id| is_valid_rollout_id(id));
        if let Some(id) = classify(name).map(|(id, _)| id).or(lock_only) {
            ids.insert(id.to_owned(), ());
        }
    }
    Ok(ids
        .into_keys()
        .map(|id| RolloutLocation {
            dir: dir.to_path_buf(),
            id,
        })
        .collect())
}

/// Natural order for rollout ids: digit runs compare by value (`0-2` before `0-10`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, _) => return std::cmp::Ordering::Less,
            (_, None) => return std::cmp::Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                // ASCII digits: the bytes compare as the numbers' text does.
                let trim = |digits: &'_ [u8]| -> usize {
                    digits.iter().take_while(|d| **d == b'0').count()
                };
                let na = &a[trim(&a[..da])..da];
                let nb = &b[trim(&b[..db])..db];
                let ord = na.len().cmp(&nb.len()).then(na.cmp(nb));
                if ord != std::cmp::Ordering::Equal {
                    return ord;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_ids() {
        assert!(is_valid_rollout_id("0-1-a2"));
        assert!(is_valid_rollout_id("task_7.attempt-2"));
        assert!(!is_valid_rollout_id(""));
        assert!(!is_valid_rollout_id("a b"));
        assert!(!is_valid_rollout_id("é"));
        assert!(!is_valid_rollout_id("a/b"));
    }

    #[test]
    fn file_classification() {
        assert_eq!(classify("r1.tokens.jsonl"), Some(("r1", FileKind::Records)));
        assert_eq!(
            classify("r1.tokens.intents"),
            Some(("r1", FileKind::Intents))
        );
        assert_eq!(
            classify("r1.tokens.incomplete"),
            Some(("r1", FileKind::Incomplete))
        );
        assert_eq!(
            classify("r1.tokens.state.json"),
            Some(("r1", FileKind::State))
        );
        assert_eq!(classify("r1.tokens.lock"), None);
        assert_eq!(classify(".tokens-state-abc123"), None);
        assert_eq!(classify("bad id.tokens.jsonl"), None);
        assert_eq!(classify(".tokens.jsonl"), None);
        assert_eq!(classify("rows.jsonl"), None);
    }

    #[test]
    fn a_lone_lock_file_is_a_cleared_rollout() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("gone.tokens.lock"), b"").unwrap();
        std::fs::write(dir.path().join(".tokens-state-x1"), b"{}").unwrap();
        std::fs::write(dir.path().join("live.tokens.jsonl"), b"").unwrap();
        std::fs::write(dir.path().join("live.tokens.lock"), b"").unwrap();
        let ids: Vec<String> = discover(dir.path())
            .unwrap()
            .into_iter()
            .map(|l| l.id)
            .collect();
        assert_eq!(ids, vec!["gone", "live"]);
    }

    #[test]
    fn natural_order() {
        let mut ids = vec!["0-10-a1", "0-2-a0", "0-1-a1", "1-0-a0", "0-02-a0"];
        ids.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            ids,
            vec!["0-1-a1", "0-2-a0", "0-02-a0", "0-10-a1", "1-0-a0"]
        );
    }
}
