//! Buffers for the lines followed records files keep, handed from one rollout to the next.
//!
//! A hot rollout keeps its last complete line (the next append's likely parent). Each append
//! replaces it: read into a buffer of the line's size, the new line is kept as read, and the
//! old line's buffer is given back here for the next append, of whichever rollout. Appends
//! are then read into memory already in use: a fresh allocation for every line (or a copy out
//! of a larger read buffer into one) costs a page fault per 4 KiB, which was a tenth of what
//! an append cost. Rollouts live for a few dozen calls, so buffers of their own would be fresh
//! memory for much of their lives; a pool shared by the thread's rollouts stays warm.

use std::cell::RefCell;

use crate::store::open::recycle;

/// Buffers the pool keeps.
const POOLED: usize = 8;

/// Buffers larger than this go to the thread's spare read buffer, not to the pool: with
/// [`POOLED`], what a thread's pool may hold (a training run's lines are ~100 KB).
const POOLED_CAPACITY: usize = 1 << 20;

/// Capacity a buffer may have beyond four times the line it holds: small lines share buffers
/// of this size rather than each allocating their own.
const SMALL_LINE_ROOM: usize = 64 << 10;

thread_local! {
    // Per thread: the watcher reads on one; tests read on many at once.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Whether a buffer of `capacity` may hold `len` bytes for long: large enough, and not far
/// larger (what it holds beyond the bytes is memory kept for nothing).
pub(crate) fn fits(capacity: usize, len: usize) -> bool {
    capacity >= len && capacity <= (4 * len).max(SMALL_LINE_ROOM)
}

/// An empty buffer of the pool's that fits `len` bytes (the smallest that does), if any.
pub(crate) fn take(len: usize) -> Option<Vec<u8>> {
    POOL.with_borrow_mut(|pool| {
        let (at, _) = pool
            .iter()
            .enumerate()
            .filter(|(_, buffer)| fits(buffer.capacity(), len))
            .min_by_key(|(_, buffer)| buffer.capacity())?;
        Some(pool.swap_remove(at))
    })
}

/// A new buffer for a line of `len` bytes, when the pool has none that fits: of the next
/// power of two (for lines the pool takes). Made to a line's exact size, a buffer given back
/// was too small for its own rollout's next line, longer as its conversation is, and for the
/// longest rollouts' lines every time; of a power of two, it fits every line from a quarter
/// to all of its size ([`fits`]), so lines of any size are read again into a few sizes of
/// buffer that the pool hands round. A miss costs fresh pages, at the heap's top.
pub(crate) fn fresh(len: usize) -> Vec<u8> {
    let capacity = if len <= POOLED_CAPACITY {
        len.next_power_of_two()
    } else {
        len
    };
    Vec::with_capacity(capacity)
}

/// Give back a kept line's buffer, its bytes no longer needed. When the pool is full its
/// smallest buffer goes (lines grow as a conversation does); a buffer larger than a line's
/// goes to the thread's spare read buffer instead.
pub(crate) fn give(mut buffer: Vec<u8>) {
    if buffer.capacity() > POOLED_CAPACITY {
        return recycle(buffer);
    }
    if buffer.capacity() == 0 {
        return;
    }
    buffer.clear();
    POOL.with_borrow_mut(|pool| {
        if pool.len() == POOLED {
            let (smallest, least) = pool
                .iter()
                .enumerate()
                .map(|(at, kept)| (at, kept.capacity()))
                .min_by_key(|&(_, capacity)| capacity)
                .expect("a full pool");
            if least >= buffer.capacity() {
                return;
            }
            pool.swap_remove(smallest);
        }
        pool.push(buffer);
    });
}

/// Capacities of the buffers in this thread's pool, in no order (for tests).
#[cfg(test)]
pub(crate) fn capacities() -> Vec<usize> {
    POOL.with_borrow(|pool| pool.iter().map(Vec::capacity).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_serves_the_next_line_of_about_its_size() {
        let buffer = Vec::<u8>::with_capacity(300 << 10);
        let at = buffer.as_ptr();
        give(buffer);
        assert!(take(1 << 20).is_none(), "too small for a longer line");
        assert!(take(10 << 10).is_none(), "far larger than a short line");
        let taken = take(200 << 10).expect("a line of about its size");
        assert_eq!((taken.as_ptr(), taken.len()), (at, 0));
        assert!(take(200 << 10).is_none(), "taken once");
    }

    #[test]
    fn a_fresh_buffer_fits_longer_lines_up_to_a_power_of_two() {
        for len in [1, 4095, 100_000, 131_072, 131_073, POOLED_CAPACITY] {
            let buffer = fresh(len);
            assert!(fits(buffer.capacity(), len), "{len}");
            assert!(buffer.capacity().is_power_of_two(), "{len}");
            // A longer line, up to the power of two, fits the same buffer.
            assert!(fits(buffer.capacity(), buffer.capacity()));
        }
        // A line longer than the pool takes gets a buffer of its size.
        assert_eq!(fresh(POOLED_CAPACITY + 1).capacity(), POOLED_CAPACITY + 1);
    }

    #[test]
    fn the_smallest_fitting_buffer_is_taken_and_the_smallest_dropped_when_full() {
        for kib in [100, 40, 120, 30] {
            give(Vec::with_capacity(kib << 10));
        }
        assert_eq!(take(90 << 10).unwrap().capacity(), 100 << 10);
        for kib in 1..=8 {
            give(Vec::with_capacity((200 + kib) << 10));
        }
        let mut kept = capacities();
        kept.sort_unstable();
        assert_eq!(
            kept,
            (1..=8).map(|kib| (200 + kib) << 10).collect::<Vec<_>>()
        );
        // Smaller than all it holds: not kept. Larger than a line's: not either.
        give(Vec::with_capacity(10 << 10));
        give(Vec::with_capacity(2 << 20));
        assert_eq!(capacities().len(), POOLED);
        assert!(!capacities().contains(&(10 << 10)));
        assert!(!capacities().contains(&(2 << 20)));
    }
}
