//! Incremental reading of one file: only new bytes of a growing file are read; truncation,
//! replacement (a new inode) and deletion are detected and answered with a full re-read.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::store::read::open_quiet;

/// What a refresh found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Nothing new.
    None,
    /// New bytes at the end.
    Appended,
    /// Read again from the start (new file, truncated, replaced or rewritten).
    Reread,
    /// The file disappeared.
    Removed,
}

/// A file followed by offset.
#[derive(Clone, Debug)]
pub struct FileTail {
    path: PathBuf,
    /// Whether the file only ever grows (records, intents, sentinel); others are re-read whole.
    append_only: bool,
    identity: Option<(u64, u64)>,
    modified: Option<SystemTime>,
    data: Option<Vec<u8>>,
    /// Bytes read in total (for figures).
    pub bytes_read: u64,
}

impl FileTail {
    /// Follow `path`.
    pub fn new(path: PathBuf, append_only: bool) -> FileTail {
        FileTail {
            path,
            append_only,
            identity: None,
            modified: None,
            data: None,
            bytes_read: 0,
        }
    }

    /// The bytes known so far (`None`: the file does not exist).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.data.as_deref()
    }

    /// Bring the bytes up to date with the file.
    pub fn refresh(&mut self) -> std::io::Result<Change> {
        let Some(mut file) = open_quiet(&self.path)? else {
            let existed = self.data.take().is_some();
            self.identity = None;
            self.modified = None;
            return Ok(if existed {
                Change::Removed
            } else {
                Change::None
            });
        };
        let meta = file.metadata()?;
        let identity = (meta.dev(), meta.ino());
        let modified = meta.modified().ok();
        let len = meta.len();
        let known = self.data.as_ref().map_or(0, |d| d.len() as u64);
        let same_file = self.identity == Some(identity) && self.data.is_some();
        if same_file && len == known && modified == self.modified {
            return Ok(Change::None);
        }
        if same_file && self.append_only && len > known {
            file.seek(SeekFrom::Start(known))?;
            let data = self.data.get_or_insert_with(Vec::new);
            let read = file.take(len - known).read_to_end(data)? as u64;
            self.bytes_read += read;
            self.modified = modified;
            return Ok(if read > 0 {
                Change::Appended
            } else {
                Change::None
            });
        }
        // New, truncated, replaced or rewritten in place: read it whole.
        let mut data = Vec::with_capacity(len as usize);
        file.read_to_end(&mut data)?;
        self.bytes_read += data.len() as u64;
        let unchanged = self.data.as_deref() == Some(&data[..]);
        self.data = Some(data);
        self.identity = Some(identity);
        self.modified = modified;
        Ok(if unchanged {
            Change::None
        } else {
            Change::Reread
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_appends_truncation_replacement_and_removal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut tail = FileTail::new(path.clone(), true);
        assert_eq!(tail.refresh().unwrap(), Change::None);
        std::fs::write(&path, b"one\n").unwrap();
        assert_eq!(tail.refresh().unwrap(), Change::Reread);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"two\n").unwrap();
        assert_eq!(tail.refresh().unwrap(), Change::Appended);
        assert_eq!(tail.bytes(), Some(&b"one\ntwo\n"[..]));
        assert_eq!(tail.bytes_read, 8, "only new bytes are read");
        std::fs::write(&path, b"x\n").unwrap(); // truncated and rewritten
        assert_eq!(tail.refresh().unwrap(), Change::Reread);
        assert_eq!(tail.bytes(), Some(&b"x\n"[..]));
        let other = dir.path().join("g");
        std::fs::write(&other, b"replaced\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(tail.refresh().unwrap(), Change::Reread);
        assert_eq!(tail.bytes(), Some(&b"replaced\n"[..]));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(tail.refresh().unwrap(), Change::Removed);
        assert_eq!(tail.bytes(), None);
        assert_eq!(tail.refresh().unwrap(), Change::None);
    }
}
