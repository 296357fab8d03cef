//! Incremental reading of one file: only new bytes of a growing file are read; truncation,
//! replacement (a new inode) and deletion are detected and answered with a full re-read.
//! A records file is followed without holding its bytes: once its lines are parsed, only its
//! last complete line (the next append's likely parent) and an unfinished line after it are
//! kept, and the file stays open to read a line again by offset.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::SystemTime;

use super::line_pool;
use crate::store::open::{open_regular, read_more_at, read_up_to, recycle, spare_buffer};
use crate::store::read::RecordsBytes;

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
    /// The file cannot be read (see [`FileTail::error`]).
    Failed,
}

/// What identifies a version of a file without opening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    identity: (u64, u64),
    len: u64,
    modified: Option<SystemTime>,
    /// Inode change time: a `chmod` that makes a file readable changes only this.
    changed: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            identity: (meta.dev(), meta.ino()),
            len: meta.len(),
            modified: meta.modified().ok(),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// Bytes a file's fingerprint covers (the first record's id, times and digest).
const HEAD_BYTES: usize = 4 << 10;

/// A hash of `bytes` for telling file versions apart (not an adversary's: the files are the
/// writer's), a word at a time: taken at every append of a followed file, SipHash over 4 KiB
/// was a visible part of an append's cost.
fn hash_of(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |hash: u64, word: u64| (hash.rotate_left(23) ^ word).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    let mut hash = mix(0, bytes.len() as u64);
    for word in &mut words {
        hash = mix(hash, u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    hash = mix(hash, u64::from_le_bytes(last));
    // Spread the last word's bits over the whole hash. (Each round above is a bijection of
    // the state, so a change to one word always changes it; this last step is not, which
    // only a collision of two whole heads could show.)
    (hash ^ (hash >> 29)).wrapping_mul(K) ^ (hash >> 32)
}

/// The fingerprint of a file's first bytes.
fn fingerprint(data: &[u8]) -> (usize, u64) {
    let len = data.len().min(HEAD_BYTES);
    (len, hash_of(&data[..len]))
}

/// The fingerprint of the first bytes of an open file `len` bytes long.
fn fingerprint_of(file: &File, len: u64) -> std::io::Result<(usize, u64)> {
    use std::os::unix::fs::FileExt;
    // On the stack: taken at every append, it must not churn the heap.
    let mut bytes = [0; HEAD_BYTES];
    let bytes = &mut bytes[..(len as usize).min(HEAD_BYTES)];
    file.read_exact_at(bytes, 0)?;
    Ok(fingerprint(bytes))
}

/// Read from the start of `file` into `buffer` until it is full or the file ends; how many
/// bytes were read.
fn read_at_most(file: &File, buffer: &mut [u8]) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buffer.len() {
        match file.read_at(&mut buffer[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Whether `now` is the file `before` was, at least as long.
fn continues(before: Option<Stamp>, now: Option<Stamp>) -> bool {
    before
        .zip(now)
        .is_some_and(|(before, now)| before.identity == now.identity && now.len >= before.len)
}

/// The most room made up front for one read of a followed file (more is read as it comes).
const MAX_READ: usize = 1 << 30;

/// `bytes` in a buffer of about their size: out of one far larger than they need (a spare
/// buffer that held a whole file, say) they are copied into a pooled buffer, or a fresh one.
fn fitted(bytes: Vec<u8>) -> Vec<u8> {
    if line_pool::fits(bytes.capacity(), bytes.len()) {
        return bytes;
    }
    let mut copy = line_pool::take(bytes.len()).unwrap_or_else(|| line_pool::fresh(bytes.len()));
    copy.extend_from_slice(&bytes);
    recycle(bytes);
    copy
}

/// A file followed by offset.
#[derive(Debug)]
pub struct FileTail {
    path: PathBuf,
    /// Whether the file only ever grows (records, intents, sentinel); others are re-read whole.
    append_only: bool,
    /// The version read last (or that failed last).
    stamp: Option<Stamp>,
    /// The bytes from `base` to the end read (`None`: no file, or not readable).
    data: Option<Vec<u8>>,
    /// Offset of `data` in the file: 0, unless [`FileTail::settle`] dropped parsed bytes.
    base: u64,
    /// A settled file's last complete line, kept aside (its offset and bytes): the next
    /// append's likely parent, whose tokens the append shares by comparing bytes. Kept in a
    /// buffer of its own, so that an append is read into an empty buffer (no old bytes
    /// moved, no buffer grown) and becomes the kept line by a swap.
    kept: Option<(u64, Vec<u8>)>,
    /// Settled files ([`FileTail::records`]) stay open while followed: an append is read
    /// without opening the file again, and a parsed line is read again by offset.
    settles: bool,
    /// The file kept open: a settled or append-only one's, while it is the file read.
    handle: Option<File>,
    /// The bytes were dropped ([`FileTail::forget`]); the stamp still says what was read.
    cold: bool,
    /// The last whole read was of the file read before, not shorter: what was known of its
    /// bytes still holds, if it only grows.
    continued: bool,
    /// A fingerprint of the first bytes of the version read: how many, and their hash. (An
    /// inode number can be reused by a file created after one was deleted.)
    head: Option<(usize, u64)>,
    /// Read the file even if its stamp is unchanged ([`FileTail::reload`]).
    force: bool,
    error: Option<String>,
    /// Bytes read in total (for figures).
    pub bytes_read: u64,
}

impl FileTail {
    /// Whether the file was there when last looked at.
    pub fn present(&self) -> bool {
        self.stamp.is_some()
    }

    /// Follow `path`.
    pub fn new(path: PathBuf, append_only: bool) -> FileTail {
        FileTail {
            path,
            append_only,
            stamp: None,
            data: None,
            base: 0,
            kept: None,
            settles: false,
            handle: None,
            cold: false,
            continued: false,
            head: None,
            force: false,
            error: None,
            bytes_read: 0,
        }
    }

    /// Follow a records file: its bytes are dropped once parsed (`settle`).
    pub fn records(path: PathBuf) -> FileTail {
        FileTail {
            settles: true,
            ..FileTail::new(path, true)
        }
    }

    /// The bytes known so far (`None`: the file does not exist or cannot be read); of a
    /// settled file, only those from where its parsing must resume.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.data.as_deref()
    }

    /// The bytes at hand as a records read sees them: from their offset on, the last complete
    /// line before them kept aside, the file open for the other bytes before.
    pub(crate) fn view(&self) -> Option<RecordsBytes<'_>> {
        self.data.as_deref().map(|fresh| RecordsBytes {
            fresh,
            base: self.base as usize,
            kept: self
                .kept
                .as_ref()
                .map(|(at, bytes)| (*at as usize, bytes.as_slice())),
            file: self.handle.as_ref(),
        })
    }

    /// The last complete line kept aside once its file's lines were parsed, if any.
    pub fn kept_line(&self) -> Option<&[u8]> {
        self.kept.as_ref().map(|(_, bytes)| bytes.as_slice())
    }

    /// Every line before offset `resume` is parsed: drop their bytes, but for the last
    /// complete line when it starts at `keep_from` (a settled file only; see
    /// [`LineCache::keep_from`](crate::store::read::LineCache::keep_from)).
    pub(crate) fn settle(&mut self, keep_from: u64, resume: u64) {
        let Some(data) = self.data.as_mut().filter(|_| self.settles) else {
            return;
        };
        let end = self.base + data.len() as u64;
        let resume = resume.clamp(self.base, end);
        let done = (resume - self.base) as usize;
        if keep_from < self.base {
            // The line kept before is still the last complete one (no line was completed,
            // so nothing was parsed past `base`).
            debug_assert_eq!(done, 0, "a completed line would be the last one");
            data.drain(..done);
        } else if keep_from < resume {
            let start = (keep_from - self.base) as usize;
            let spare = self.kept.take().map(|(_, bytes)| bytes);
            let line = if start == 0 {
                // The bytes read are the new last line (and what follows it, unfinished):
                // the buffer becomes the kept line, the old kept line's buffer takes the rest.
                let mut rest = spare.unwrap_or_default();
                rest.clear();
                rest.extend_from_slice(&data[done..]);
                data.truncate(done);
                let line = std::mem::replace(data, rest);
                if data.is_empty() {
                    // The line before's buffer, free: for the next append, of any rollout.
                    line_pool::give(std::mem::take(data));
                }
                line
            } else {
                // Several lines read at once: the last one copied aside.
                let mut line = spare.unwrap_or_default();
                line.clear();
                line.extend_from_slice(&data[start..done]);
                data.drain(..done);
                line
            };
            self.kept = Some((keep_from, fitted(line)));
        } else {
            // No line kept (none complete, or too long to hold).
            if let Some((_, bytes)) = self.kept.take() {
                line_pool::give(bytes);
            }
            data.drain(..done);
        }
        self.base = resume;
        // An empty read buffer goes back to the thread's spare (the next read, of whichever
        // rollout, goes into it); an unfinished line keeps a buffer of its own size.
        if data.is_empty() {
            recycle(std::mem::take(data));
        } else {
            *data = fitted(std::mem::take(data));
        }
    }

    /// Memory the bytes hold (their buffers' capacity).
    pub fn held_bytes(&self) -> usize {
        self.data.as_ref().map_or(0, Vec::capacity)
            + self.kept.as_ref().map_or(0, |(_, bytes)| bytes.capacity())
    }

    /// Why the file cannot be read, when it cannot.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Drop the bytes (the rollout is no longer followed closely); the stamp is kept, so
    /// an unchanged file is still not opened, and a changed one is read whole again.
    pub(crate) fn forget(&mut self) {
        self.handle = None;
        if let Some((_, bytes)) = self.kept.take() {
            line_pool::give(bytes);
        }
        if let Some(data) = self.data.take() {
            recycle(data);
            self.base = 0;
            self.cold = true;
        }
    }

    /// Whether the last whole read was of the same file as before, grown or not: what was
    /// known of its earlier bytes still holds if it only grows (an append-only file).
    pub(crate) fn continued(&self) -> bool {
        self.continued
    }

    /// Whether the bytes were dropped and must be read again before they are used.
    pub(crate) fn is_cold(&self) -> bool {
        self.cold
    }

    /// Read a file whose bytes were dropped again, whole; the change since it was dropped.
    pub(crate) fn reload(&mut self) -> Change {
        if !self.cold {
            return self.refresh();
        }
        let before = self.stamp;
        self.force = true;
        let change = self.refresh();
        self.force = false;
        match change {
            // Read whole again: a change only if the file is not the version read before.
            Change::Reread if before == self.stamp => Change::None,
            change => change,
        }
    }

    /// Bring the bytes up to date with the file. An unchanged file (same inode, size and
    /// modification time) is not opened at all; a changed one is opened without blocking
    /// and read only if it is a regular file, up to its size at open.
    pub(crate) fn refresh(&mut self) -> Change {
        let stamp = match std::fs::metadata(&self.path) {
            Ok(meta) => Stamp::of(&meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return self.gone(),
            Err(e) => return self.failed(None, &e),
        };
        if self.stamp == Some(stamp) && !self.force {
            return Change::None;
        }
        self.cold = false;
        // A settled file's handle is used again while the path names the same file.
        let kept = self.handle.take().filter(|_| {
            self.stamp
                .is_some_and(|known| known.identity == stamp.identity)
        });
        let (file, stamp) = match kept {
            Some(file) => (file, stamp),
            None => match open_regular(&self.path) {
                Ok(Some((file, meta))) => (file, Stamp::of(&meta)),
                Ok(None) => return self.gone(),
                Err(e) => return self.failed(Some(stamp), &e),
            },
        };
        match self.read(&file, stamp) {
            Ok(change) => {
                // A file that only grows is kept open too: its next append is read without
                // opening it again (the writer appends an intent for every call).
                if self.settles || self.append_only {
                    self.handle = Some(file);
                }
                change
            }
            Err(e) => self.failed(Some(stamp), &e),
        }
    }

    fn read(&mut self, file: &File, stamp: Stamp) -> std::io::Result<Change> {
        let known = self.base + self.data.as_ref().map_or(0, |d| d.len() as u64);
        let same_file =
            self.data.is_some() && self.stamp.is_some_and(|s| s.identity == stamp.identity);
        self.error = None;
        let grown = same_file && self.append_only && stamp.len > known;
        // A file no longer than its fingerprint's bytes (an intents file, most often) is read
        // whole: the check of its head, its new bytes and its new fingerprint in one read.
        if grown
            && stamp.len <= HEAD_BYTES as u64
            && let Some(change) = self.read_small(file, stamp, known)?
        {
            return Ok(change);
        }
        // Grown, and still the version read (its first bytes unchanged: a file truncated and
        // written again longer between two looks is not an append).
        if grown && stamp.len > HEAD_BYTES as u64 && self.head_holds(file)? {
            let wanted = usize::try_from(stamp.len - known)
                .unwrap_or(usize::MAX)
                .min(MAX_READ);
            let data = self.data.get_or_insert_with(Vec::new);
            if data.capacity() == 0 && self.settles {
                // A pooled buffer of the line's size if there is one (the line is then kept
                // as read, not copied), else the thread's spare.
                *data = line_pool::take(wanted).unwrap_or_else(spare_buffer);
            }
            if data.is_empty() && data.capacity() < wanted {
                // A fresh allocation (a reallocation would copy the old capacity), with room
                // for the next lines, which grow as a conversation does.
                recycle(std::mem::take(data));
                data.try_reserve_exact(wanted.saturating_add(wanted / 4).min(MAX_READ))
                    .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
            }
            let read = read_more_at(file, known, stamp.len - known, data)? as u64;
            self.bytes_read += read;
            self.stamp = Some(stamp);
            if self.head.is_none_or(|(len, _)| len < HEAD_BYTES) {
                self.head = Some(fingerprint_of(file, known + read)?);
            }
            return Ok(if read > 0 {
                Change::Appended
            } else {
                Change::None
            });
        }
        // A settled file whose times changed, not its size: unchanged if it is still the file
        // read (its parsed lines stay; a write's time may come before its size).
        if same_file && self.settles && stamp.len == known && self.head_holds(file)? {
            self.stamp = Some(stamp);
            return Ok(Change::None);
        }
        // New, truncated, replaced or rewritten in place: read it whole (as it was at open).
        let data = read_up_to(file, stamp.len)?;
        self.continued = continues(self.stamp, Some(stamp))
            && self
                .head
                .is_some_and(|(len, hash)| data.len() >= len && hash_of(&data[..len]) == hash);
        self.head = Some(fingerprint(&data));
        self.bytes_read += data.len() as u64;
        let unchanged = self.base == 0 && self.data.as_deref() == Some(&data[..]);
        if let Some(old) = self.data.replace(data) {
            recycle(old);
        }
        if let Some((_, bytes)) = self.kept.take() {
            line_pool::give(bytes);
        }
        self.base = 0;
        self.stamp = Some(stamp);
        Ok(if unchanged {
            Change::None
        } else {
            Change::Reread
        })
    }

    /// The append to a file of at most [`HEAD_BYTES`] (`stamp.len`, of which `known` were
    /// read before), from one read of the whole file; `None` if it is not the version read
    /// (its head changed, or it is shorter than what was read).
    fn read_small(
        &mut self,
        file: &File,
        stamp: Stamp,
        known: u64,
    ) -> std::io::Result<Option<Change>> {
        let mut whole = [0; HEAD_BYTES];
        let got = read_at_most(file, &mut whole[..stamp.len as usize])?;
        let whole = &whole[..got];
        let holds = self.head.is_some_and(|(len, hash)| {
            got as u64 >= known && got >= len && hash_of(&whole[..len]) == hash
        });
        if !holds {
            return Ok(None);
        }
        let fresh = &whole[known as usize..];
        let data = self.data.get_or_insert_with(Vec::new);
        data.extend_from_slice(fresh);
        self.bytes_read += fresh.len() as u64;
        self.stamp = Some(stamp);
        self.head = Some(fingerprint(whole));
        Ok(Some(if fresh.is_empty() {
            Change::None
        } else {
            Change::Appended
        }))
    }

    /// Whether the open file still begins with the bytes the fingerprint was taken of.
    fn head_holds(&self, file: &File) -> std::io::Result<bool> {
        let Some(head) = self.head else {
            return Ok(false);
        };
        match fingerprint_of(file, head.0 as u64) {
            Ok(now) => Ok(now == head),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Forget the version read: its bytes, handle and fingerprint; whether it had bytes.
    fn drop_version(&mut self) -> bool {
        self.base = 0;
        if let Some((_, bytes)) = self.kept.take() {
            line_pool::give(bytes);
        }
        self.handle = None;
        self.continued = false;
        self.head = None;
        self.data.take().is_some()
    }

    fn gone(&mut self) -> Change {
        let existed =
            self.drop_version() | self.error.take().is_some() || std::mem::take(&mut self.cold);
        self.stamp = None;
        if existed {
            Change::Removed
        } else {
            Change::None
        }
    }

    /// The file cannot be read: keep the error (reported again only when it changes).
    fn failed(&mut self, stamp: Option<Stamp>, error: &std::io::Error) -> Change {
        let message = error.to_string();
        let repeat = self.error.as_deref() == Some(message.as_str()) && self.stamp == stamp;
        self.drop_version();
        self.cold = false;
        self.stamp = stamp;
        self.error = Some(message);
        if repeat { Change::None } else { Change::Failed }
    }
}

#[cfg(test)]
mod tests;
