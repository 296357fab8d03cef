//! How a batch command's process treats the memory it frees.

/// Keep the memory a batch command frees in the process for its next rollout; whether the
/// allocator took the setting.
///
/// `build`, `check`, `why` and `diff` read rollouts one after another into buffers of
/// megabytes (the files, the token arrays, the reports). glibc hands large freed blocks back
/// to the system (an `munmap`, a trimmed heap) and the next rollout faults fresh zeroed
/// pages in again; on a virtual machine the host backs each of those pages once more. On a
/// 2,000-rollout store that was a third of `build`'s CPU (`read` 50 µs a call against 9 µs
/// with the memory kept). The process is short-lived and its peak is the rollouts in hand,
/// so keeping the freed memory costs little resident set. Only glibc has these knobs;
/// elsewhere the allocator's defaults stand. The explorer keeps the defaults: it lives for
/// hours and should give back what a large rollout once needed.
///
/// Older glibc refuses an mmap threshold above 32 MiB: then 32 MiB is asked for. The trim
/// threshold is set only once an mmap threshold is taken, because setting either one turns
/// glibc's own raising of the mmap threshold off, and 128 KiB fixed is worse than the default.
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets allocator thresholds. glibc documents it as unsafe to
        // call while other threads allocate: `commands::run` calls it before any thread of
        // its own is started.
        unsafe {
            let taken = [1 << 30, 32 << 20]
                .into_iter()
                .any(|bytes| libc::mallopt(libc::M_MMAP_THRESHOLD, bytes) == 1);
            taken && libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Bytes the allocator holds in blocks mapped on their own (given back when freed).
    fn mapped_bytes() -> usize {
        // SAFETY: `mallinfo2` only reads the allocator's statistics.
        unsafe { libc::mallinfo2() }.hblkhd
    }

    #[test]
    fn large_blocks_come_from_the_heap_not_their_own_mapping() {
        // (The process's other test runs no allocator setting.)
        assert!(super::keep_freed_memory(), "glibc took the thresholds");
        let before = mapped_bytes();
        // Far above glibc's first mmap threshold (128 KiB), below the lowest the setting may
        // fall back to (32 MiB): by default this block is mapped on its own, and unmapped
        // when freed.
        let block = vec![1u8; 24 << 20];
        std::hint::black_box(&block);
        let during = mapped_bytes();
        drop(block);
        assert!(
            during < before + (24 << 20),
            "a 24 MiB block was mapped on its own ({before} mapped bytes before, {during} with it)"
        );
    }
}
