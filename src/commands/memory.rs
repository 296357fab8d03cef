//! How a batch command's process treats the memory it frees.

/// Keep the memory a batch command frees in the process for its next rollout.
///
/// `build`, `check`, `why` and `diff` read rollouts one after another into buffers of
/// megabytes (the files, the token arrays, the reports). glibc hands large freed blocks back
/// to the system (an `munmap`, a trimmed heap) and the next rollout faults fresh zeroed
/// pages in again; on a virtual machine the host backs each of those pages once more. On a
/// 2,000-rollout store that was a third of `build`'s CPU (`read` 50 µs a call against 9 µs
/// with the memory kept). The process is short-lived and its peak is the rollout in hand, so
/// keeping the freed memory costs a few megabytes of resident set. Only glibc has these
/// knobs; elsewhere the allocator's defaults stand. The explorer keeps the defaults: it
/// lives for hours and should give back what a large rollout once needed.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets two allocator thresholds; any thread may call it.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX);
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Bytes free inside the process's heaps (not given back to the system).
    fn kept_free_bytes() -> usize {
        // SAFETY: `mallinfo2` only reads the allocator's statistics.
        unsafe { libc::mallinfo2() }.fordblks
    }

    #[test]
    fn freed_blocks_stay_in_the_process() {
        super::keep_freed_memory();
        // Larger than glibc's largest default mmap threshold (32 MiB): without the setting
        // this block is mapped on its own and unmapped when freed (and it fits in a
        // thread arena's 64 MiB heap).
        let block = vec![1u8; 40 << 20];
        std::hint::black_box(&block);
        drop(block);
        let free = kept_free_bytes();
        assert!(
            free >= 40 << 20,
            "a freed 40 MiB block went back to the system ({free} bytes free in the heaps)"
        );
    }
}
