//! Writing the shown rollout's report or rebuilt response to a file — never into a store.

use std::path::{Path, PathBuf};

use tokscope_core::verdict::Analysis;

/// What to export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportKind {
    /// The report (SPEC §6 JSON).
    Report,
    /// The rebuilt response.
    Response,
}

/// Why an export was not written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// No rollout is open.
    #[error("no rollout selected")]
    NoRollout,
    /// The path names no file.
    #[error("no file name in that path")]
    NoFileName,
    /// The directory could not be resolved.
    #[error("{path}: {reason}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The target is inside a token store.
    #[error("refusing to write inside a token-store directory; choose a path outside the store")]
    InsideStore,
    /// The build failed: no rebuilt response.
    #[error("this rollout has no rebuilt response (the build failed)")]
    NoResponse,
    /// The file exists (overwrite only when confirmed).
    #[error("{0} exists")]
    Exists(PathBuf),
    /// The destination is a symlink: never written through.
    #[error("{0} is a symlink; refusing to write through it")]
    Symlink(PathBuf),
    /// The destination exists and is not a regular file (a FIFO, device or directory).
    #[error("{0} is not a regular file; choose another path")]
    NotRegular(PathBuf),
    /// Writing failed.
    #[error("{path}: {reason}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The file name offered for an export, in the current directory.
pub(crate) fn default_file_name(rollout_id: &str, what: ExportKind) -> String {
    let kind = match what {
        ExportKind::Report => "report",
        ExportKind::Response => "response",
    };
    format!("{rollout_id}.{kind}.json")
}

/// Write `analysis`'s report or rebuilt response to `path` (relative to the current
/// directory). Refuses any place inside one of `stores` (the parent directory resolved), a
/// symlink as the file (never followed, even if it appears meanwhile), and an existing file
/// unless `overwrite`. Returns the path written.
pub fn export(
    analysis: &Analysis,
    stores: &[PathBuf],
    what: ExportKind,
    path: &Path,
    overwrite: bool,
) -> Result<PathBuf, ExportError> {
    let directory_error = |path: &Path, error: std::io::Error| ExportError::Directory {
        path: path.to_path_buf(),
        reason: error.to_string(),
    };
    if path.as_os_str().is_empty() || path.to_string_lossy().trim().is_empty() {
        return Err(ExportError::NoFileName);
    }
    let target = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| directory_error(Path::new("."), e))?
            .join(path)
    };
    let file_name = target.file_name().ok_or(ExportError::NoFileName)?;
    let parent = target.parent().ok_or(ExportError::NoFileName)?;
    let parent = parent
        .canonicalize()
        .map_err(|e| directory_error(parent, e))?;
    // By device and inode (a bind mount or another path to a store is the store), and any
    // directory that holds token files (a store not on the command line).
    if super::output::check_outside_stores(&parent, stores).is_err() {
        return Err(ExportError::InsideStore);
    }
    let json = match what {
        ExportKind::Report => serde_json::to_vec_pretty(&analysis.report()),
        ExportKind::Response => match &analysis.response {
            Some(response) => serde_json::to_vec_pretty(response),
            None => return Err(ExportError::NoResponse),
        },
    };
    let final_path = parent.join(file_name);
    let write_error = |reason: String| ExportError::Write {
        path: final_path.clone(),
        reason,
    };
    let json = json.map_err(|e| write_error(e.to_string()))?;
    match std::fs::symlink_metadata(&final_path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(ExportError::Symlink(final_path));
        }
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(ExportError::NotRegular(final_path));
        }
        Ok(_) if !overwrite => return Err(ExportError::Exists(final_path)),
        Ok(meta) => {
            // Replace by rename: the old name's inode (perhaps hard-linked elsewhere) is
            // never truncated or written, and readers see the old or the new file whole. The
            // replacement keeps the replaced file's permissions.
            return super::output::replace(
                &parent,
                &file_name.to_string_lossy(),
                &json,
                Some(meta.permissions()),
            )
            .map_err(|e| write_error(e.to_string()));
        }
        Err(_) => {}
    }
    super::output::create(&parent, &file_name.to_string_lossy(), &json).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            ExportError::Symlink(final_path.clone())
        } else if e.kind() == std::io::ErrorKind::AlreadyExists {
            ExportError::Exists(final_path.clone())
        } else {
            write_error(e.to_string())
        }
    })?;
    Ok(final_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Analysis {
        tokscope_testkit::demo_analyses()
            .into_iter()
            .find(|a| a.response.is_some())
            .expect("a demo rollout with a rebuilt response")
    }

    #[test]
    fn writes_outside_stores_and_refuses_inside() {
        let analysis = demo();
        let out = tempfile::tempdir().expect("temp dir");
        let store = tempfile::tempdir().expect("temp dir");
        let written = export(
            &analysis,
            &[store.path().to_path_buf()],
            ExportKind::Response,
            &out.path().join("r.json"),
            false,
        )
        .expect("written");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&written).expect("read back")).expect("json");
        assert_eq!(json["object"], "response");
        let refused = export(
            &analysis,
            &[store.path().to_path_buf()],
            ExportKind::Report,
            &store.path().join("x.json"),
            true,
        );
        assert_eq!(refused, Err(ExportError::InsideStore));
        assert!(!store.path().join("x.json").exists());
        assert!(matches!(
            export(
                &analysis,
                &[],
                ExportKind::Report,
                Path::new("/nonexistent-dir/x.json"),
                false
            ),
            Err(ExportError::Directory { .. })
        ));
        assert_eq!(
            default_file_name("r-1", ExportKind::Report),
            "r-1.report.json"
        );
        // An existing file is kept unless overwriting was confirmed.
        let again = export(&analysis, &[], ExportKind::Response, &written, false);
        assert_eq!(again, Err(ExportError::Exists(written.clone())));
        export(&analysis, &[], ExportKind::Report, &written, true).expect("overwritten");
        // A symlink (here into a "store" file) is never written through, even confirmed.
        let target = store.path().join("s.tokens.state.json");
        std::fs::write(&target, b"{}").expect("state");
        let link = out.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        for overwrite in [false, true] {
            let refused = export(&analysis, &[], ExportKind::Report, &link, overwrite);
            assert_eq!(refused, Err(ExportError::Symlink(link.clone())));
        }
        assert_eq!(std::fs::read(&target).expect("state"), b"{}");
    }

    #[test]
    fn overwrite_replaces_the_name_not_the_file() {
        let analysis = demo();
        let out = tempfile::tempdir().expect("temp dir");
        let store = tempfile::tempdir().expect("temp dir");
        // A hard link to a store file: confirming the overwrite must not touch the store.
        let kept = store.path().join("s.tokens.jsonl");
        std::fs::write(&kept, b"kept\n").expect("store file");
        let linked = out.path().join("linked.json");
        std::fs::hard_link(&kept, &linked).expect("hard link");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&linked, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        export(&analysis, &[], ExportKind::Report, &linked, true).expect("replaced");
        let mode = std::fs::metadata(&linked)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "the replaced file's permissions are kept"
        );
        assert_eq!(std::fs::read(&kept).expect("store file"), b"kept\n");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&linked).expect("read back")).expect("json");
        assert!(json.is_object());
        let leftovers: Vec<_> = std::fs::read_dir(out.path())
            .expect("list")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temporary file left behind");
        // A FIFO is refused, confirmed or not, and never opened (opening would block).
        let fifo = out.path().join("pipe.json");
        tokscope_testkit::mkfifo(&fifo);
        for overwrite in [false, true] {
            let refused = export(&analysis, &[], ExportKind::Report, &fifo, overwrite);
            assert_eq!(refused, Err(ExportError::NotRegular(fifo.clone())));
        }
    }
}
