//! Opening store files safely: read-only, never blocking, only regular files, never more
//! bytes than the file had when it was opened, and without touching its access time.
//!
//! Anything else — a FIFO, a device such as `/dev/zero`, a directory, a socket, a symlink
//! loop — is an error that names what the path is, so the rollout is reported instead of
//! hanging or exhausting memory.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a path is, when it is not a regular file.
fn kind_of(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// The error for a path that is not a regular file.
pub(crate) fn not_regular(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({what}); refusing to read it"),
    )
}

/// The open flag that leaves a file's access time alone: Linux's `O_NOATIME`; elsewhere none
/// (macOS has no such flag, and the plain non-blocking open is what remains).
#[cfg(target_os = "linux")]
const NO_ACCESS_TIME: i32 = libc::O_NOATIME;
#[cfg(not(target_os = "linux"))]
const NO_ACCESS_TIME: i32 = 0;

/// Open `path` read-only without blocking (a FIFO with no writer opens at once), without
/// updating its access time where permitted, and only if it is a regular file. `Ok(None)`
/// when it does not exist. Returns the file and its metadata at open.
pub(crate) fn open_regular(path: &Path) -> io::Result<Option<(File, Metadata)>> {
    let open = |flags: i32| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(path)
    };
    let quiet = libc::O_NONBLOCK | NO_ACCESS_TIME | libc::O_CLOEXEC;
    let file = match open(quiet) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // O_NOATIME needs ownership of the file; without it, a plain non-blocking open.
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            match open(libc::O_NONBLOCK | libc::O_CLOEXEC) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if let Some(what) = kind_of(&meta) {
        return Err(not_regular(what));
    }
    Ok(Some((file, meta)))
}

/// Read at most `limit` bytes of an open file from its start (the size it had at open: a
/// file that grows meanwhile is read up to there, the rest on the next read).
pub(crate) fn read_up_to(file: &File, limit: u64) -> io::Result<Vec<u8>> {
    let size = usize::try_from(limit).unwrap_or(0).min(1 << 30);
    // Small files get a buffer of their own size (a state file may be kept for long).
    let mut data = Vec::new();
    if size >= SPARE_FROM {
        let spare = SPARE.take();
        // Not a buffer much larger than the file: a kept file would hold its whole capacity.
        if spare.capacity() <= size.saturating_mul(2) {
            data = spare;
        } else {
            SPARE.set(spare);
        }
    }
    data.clear();
    data.reserve_exact(size);
    read_more_at(file, 0, limit, &mut data)?;
    Ok(data)
}

/// Append at most `limit` bytes of an open file from byte `offset` on to `data` (the file's
/// position is neither used nor moved); the bytes read. The room is made first, in one step
/// (amortized, as a line written in many pieces is read in many): grown while reading, a
/// 100 KB append took five reallocations, each copying what was read into fresh pages. Each
/// read asks for all that is left: `read_to_end` asks for 8 KiB first and doubles, five
/// system calls for a 100 KB append and a sixth to see the end. Room that cannot be had is
/// an error, as `read_to_end`'s own growth reports it, not an abort.
pub(crate) fn read_more_at(
    file: &File,
    offset: u64,
    limit: u64,
    data: &mut Vec<u8>,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let out_of_memory = |_| io::Error::from(io::ErrorKind::OutOfMemory);
    data.try_reserve(usize::try_from(limit).unwrap_or(0).min(1 << 30))
        .map_err(out_of_memory)?;
    let start = data.len();
    let mut read: u64 = 0;
    while read < limit {
        let left = limit - read;
        if data.spare_capacity_mut().is_empty() {
            // Past the room made first (over 1 GiB): more, as much again at most.
            let more = left.min(data.len().max(1 << 20) as u64) as usize;
            data.try_reserve(more).map_err(out_of_memory)?;
        }
        let room = data.spare_capacity_mut();
        let asked = room.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let at: libc::off_t = offset
            .checked_add(read)
            .and_then(|at| at.try_into().ok())
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `room` is at least `asked` bytes of the vector's spare capacity, which
        // `pread` may write; only the count it returns is then taken as initialized.
        let got = unsafe { libc::pread(file.as_raw_fd(), room.as_mut_ptr().cast(), asked, at) };
        if got < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        if got == 0 {
            break;
        }
        // SAFETY: `pread` wrote `got` (at most `asked`) bytes right after the vector's length.
        unsafe { data.set_len(data.len() + got as usize) };
        read += got as u64;
    }
    Ok(data.len() - start)
}

/// Bytes of a read buffer a thread keeps for its next read.
const SPARE_KEPT: usize = 8 << 20;
/// Files from this size on are read into the kept buffer.
const SPARE_FROM: usize = 64 << 10;

thread_local! {
    /// A buffer done with, for this thread's next read: reading a store's files one after
    /// another into fresh allocations costs a page fault (and zeroing) per 4 KiB of every
    /// file, about a tenth of reading a 2 GB store.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Hand back a buffer [`read_up_to`] returned, once its bytes are no longer needed.
pub(crate) fn recycle(buffer: Vec<u8>) {
    if buffer.capacity() <= SPARE_KEPT {
        SPARE.with(|spare| {
            let kept = spare.take();
            // Keep the larger of the two: the next file is likely as large.
            spare.set(if kept.capacity() >= buffer.capacity() {
                kept
            } else {
                buffer
            });
        });
    }
}

/// This thread's spare read buffer (empty; with its capacity), for bytes held only briefly.
pub(crate) fn spare_buffer() -> Vec<u8> {
    let mut spare = SPARE.take();
    spare.clear();
    spare
}

/// Read a whole regular file as it was at open; `Ok(None)` when it does not exist.
pub(crate) fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match open_regular(path)? {
        Some((file, meta)) => read_up_to(&file, meta.len()).map(Some),
        None => Ok(None),
    }
}

/// Read a regular file given on the command line (a rows file, a tokenizer), refusing one
/// larger than `max_bytes` before reading it.
pub fn read_argument_file(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    let Some((file, meta)) = open_regular(path)? else {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no such file"));
    };
    if meta.len() > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} bytes, more than the {} this file can be",
                meta.len(),
                max_bytes
            ),
        ));
    }
    read_up_to(&file, meta.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_bytes_are_read_into_room_made_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("a.tokens.jsonl");
        std::fs::write(&path, vec![b'x'; 100_000]).expect("write");
        let file = File::open(&path).expect("open");
        let mut data = b"abc".to_vec();
        data.shrink_to_fit();
        assert_eq!(
            read_more_at(&file, 0, 60_000, &mut data).expect("read"),
            60_000
        );
        // Grown as it was read, the buffer would have doubled past what it holds.
        assert_eq!(
            data.capacity(),
            60_003,
            "room made once, for what was asked"
        );
        // Asked for more than is there: what is there.
        assert_eq!(
            read_more_at(&file, 60_000, 60_000, &mut data).expect("read"),
            40_000
        );
        assert_eq!(data.len(), 100_003);
        assert!(data[3..].iter().all(|&b| b == b'x'));
    }

    #[test]
    fn bytes_are_read_from_the_offset_asked_leaving_the_position_alone() {
        use std::io::Read;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("a.tokens.jsonl");
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).expect("write");
        let mut file = File::open(&path).expect("open");
        let mut data = Vec::new();
        assert_eq!(
            read_more_at(&file, 1_000, 200_000, &mut data).expect("read"),
            200_000
        );
        assert_eq!(data, bytes[1_000..201_000]);
        // Past the end: nothing; across it: what is there.
        assert_eq!(
            read_more_at(&file, 400_000, 10, &mut data).expect("read"),
            0
        );
        assert_eq!(
            read_more_at(&file, 299_990, 100, &mut data).expect("read"),
            10
        );
        assert_eq!(data[200_000..], bytes[299_990..]);
        // The file's own position is where it was.
        let mut first = [0u8; 4];
        file.read_exact(&mut first).expect("read");
        assert_eq!(first, bytes[..4]);
        assert_eq!(read_up_to(&file, 5).expect("read"), bytes[..5]);
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("a.tokens.jsonl");
        std::fs::write(&file, b"{}\n").expect("write");
        assert_eq!(read_regular(&file).expect("read"), Some(b"{}\n".to_vec()));
        assert_eq!(
            read_regular(&dir.path().join("none")).expect("absent"),
            None
        );
        let error = read_regular(dir.path()).expect_err("a directory");
        assert!(error.to_string().contains("a directory"), "{error}");
        let fifo = dir.path().join("f.tokens.jsonl");
        tokscope_testkit::mkfifo(&fifo);
        let error = read_regular(&fifo).expect_err("a FIFO, and no hang");
        assert!(error.to_string().contains("a FIFO"), "{error}");
        let zero = dir.path().join("z.tokens.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let error = read_regular(&zero).expect_err("a device");
        assert!(error.to_string().contains("character device"), "{error}");
        let looped = dir.path().join("l.tokens.jsonl");
        std::os::unix::fs::symlink(&looped, &looped).expect("symlink");
        assert!(read_regular(&looped).is_err());
        let big = read_argument_file(&file, 2).expect_err("too big");
        assert!(big.to_string().contains("more than"), "{big}");
    }
}
