//! How the process treats the memory it frees: kept for the next rollout while rollouts are
//! read one after another, given back when a long-lived process has been quiet a while.
//!
//! Reading a store means buffers of megabytes, one rollout after another: the file, its
//! token arrays, its report. glibc hands large freed blocks back to the system (an `munmap`,
//! a trimmed heap) and the next rollout faults fresh zeroed pages in again; on a virtual
//! machine the host backs each of those pages once more. On a 2,000-rollout store that was a
//! third of `build`'s CPU (`read` 50 µs a call into given-back memory, 9 µs into kept
//! memory), and 15% of the explorer's first scan. So every command keeps what it frees
//! ([`keep_freed_memory`]): large blocks come from the heap, and a heap keeps what is free
//! at its end while that stays under [`KEPT_AT_TOP`] (a free that takes it past gives all
//! of it back but glibc's 128 KiB pad, in a thread's heap as in the main one). The
//! processes that live for hours (the explorer, `check --follow`) also give back the free
//! pages inside the heaps from the watcher's thread ([`GiveBack`]): once the first scan is
//! done, then at most every [`GIVE_BACK_EVERY`] while anything is going on. Only glibc has
//! these knobs; elsewhere the allocator's defaults stand and both are no-ops.

use std::time::{Duration, Instant};

/// Free memory at a heap's end below which it is kept (glibc's trim threshold): a free that
/// leaves more there gives it all back but the 128 KiB pad, and the next rollout faults it in
/// again. Above one rollout's buffers at the shapes measured: `build` of 24 rollouts of
/// 9.5 MB took 0.28–0.34 s at 32 MiB as with no limit (0.26–0.32 s), 0.34–0.35 s at 16 MiB
/// and 0.35–0.40 s at 8 MiB (the system time doubled); rollouts of 1–2 MB were as fast at
/// 8 MiB. Below a thread's heap (64 MiB), which no limit kept from ever shrinking (glibc
/// 2.26 and later).
pub const KEPT_AT_TOP: usize = 32 << 20;

/// Keep the memory the process frees for its next allocations (not handed back to the
/// system as it is freed, while less than [`KEPT_AT_TOP`] is free at a heap's end); whether
/// the allocator took the setting.
///
/// Older glibc refuses an mmap threshold above 32 MiB: then 32 MiB is asked for. The trim
/// threshold is set only once an mmap threshold is taken, because setting either one turns
/// glibc's own raising of the mmap threshold off, and 128 KiB fixed is worse than the default.
///
/// # Safety
///
/// No other thread may be running (glibc's `mallopt` is not safe while other threads
/// allocate): call it first thing in `main`.
pub unsafe fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets allocator thresholds; the caller guarantees that no
        // other thread allocates meanwhile.
        unsafe {
            let taken = [1 << 30, 32 << 20]
                .into_iter()
                .any(|bytes| libc::mallopt(libc::M_MMAP_THRESHOLD, bytes) == 1);
            taken && libc::mallopt(libc::M_TRIM_THRESHOLD, KEPT_AT_TOP as libc::c_int) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// Hand the memory the process holds free back to the system now: the free pages inside
/// every heap, and the main heap's free end (a thread's heap gives its end back by itself,
/// beyond [`KEPT_AT_TOP`]); whether any was.
pub fn give_back_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `malloc_trim` takes each arena's lock; it only releases free pages.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// How often at most a long-lived process gives its freed memory back while it works (each
/// time, the pages its next allocations touch are faulted in again).
pub const GIVE_BACK_EVERY: Duration = Duration::from_secs(10);

/// When a long-lived process gives its freed memory back: after work, no more often than
/// its interval, never while nothing happened since the last time.
#[derive(Debug)]
pub struct GiveBack {
    every: Duration,
    last: Instant,
    worked: bool,
}

impl GiveBack {
    /// Giving back at most every `every`, the first time `every` after now.
    pub fn every(every: Duration) -> GiveBack {
        GiveBack {
            every,
            last: Instant::now(),
            worked: false,
        }
    }

    /// Something was done that may have freed memory.
    pub fn worked(&mut self) {
        self.worked = true;
    }

    /// Whether memory is due to be given back at `now` (it is then counted as given back).
    pub fn due(&mut self, now: Instant) -> bool {
        let due = self.worked && now.saturating_duration_since(self.last) >= self.every;
        if due {
            self.worked = false;
            self.last = now;
        }
        due
    }

    /// Give the freed memory back if it is due now (the watcher's loop calls this each turn).
    pub fn tick(&mut self) {
        if self.due(Instant::now()) {
            give_back_freed_memory();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_given_back_after_work_at_most_once_an_interval() {
        let start = Instant::now();
        let mut give_back = GiveBack {
            every: Duration::from_secs(10),
            last: start,
            worked: false,
        };
        let at = |s: u64| start + Duration::from_secs(s);
        assert!(!give_back.due(at(30)), "nothing happened: nothing to give");
        give_back.worked();
        assert!(!give_back.due(at(5)), "within the interval");
        assert!(give_back.due(at(10)));
        assert!(!give_back.due(at(11)), "given back already");
        give_back.worked();
        assert!(
            !give_back.due(at(19)),
            "the interval counts from the last time"
        );
        assert!(give_back.due(at(20)));
        assert!(!give_back.due(at(40)), "nothing since");
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    mod glibc {
        use super::super::*;

        /// Bytes the allocator holds in blocks mapped on their own (given back when freed).
        fn mapped_bytes() -> usize {
            // SAFETY: `mallinfo2` only reads the allocator's statistics.
            unsafe { libc::mallinfo2() }.hblkhd
        }

        /// This process's resident set, in bytes (`VmRSS`, counted in KiB whatever the page
        /// size). It allocates nothing: a heap allocation here would land after the block
        /// the test frees and change where it goes.
        fn resident_bytes() -> usize {
            use std::io::Read;
            let mut status = [0u8; 8192];
            let read = std::fs::File::open("/proc/self/status")
                .and_then(|mut file| file.read(&mut status))
                .expect("status");
            let kib: usize = std::str::from_utf8(&status[..read])
                .ok()
                .and_then(|text| text.lines().find_map(|l| l.strip_prefix("VmRSS:")))
                .and_then(|value| value.trim().strip_suffix("kB"))
                .and_then(|kib| kib.trim().parse().ok())
                .expect("VmRSS in kB");
            kib << 10
        }

        /// Set in the process the test runs itself in.
        const ALONE: &str = "TOKSCOPE_MEMORY_TEST_ALONE";

        // One test for both: the setting is the whole process's, and the second half needs it.
        // It runs in a process of its own: other tests' allocations would take the freed
        // block, and glibc's settings are not to be changed while other threads allocate.
        #[test]
        fn freed_blocks_are_kept_in_the_heap_until_given_back() {
            if std::env::var_os(ALONE).is_none() {
                let name = format!(
                    "{}::freed_blocks_are_kept_in_the_heap_until_given_back",
                    module_path!().split_once("::").map_or("", |(_, path)| path)
                );
                let output = std::process::Command::new(std::env::current_exe().expect("exe"))
                    .args(["--exact", &name, "--test-threads=1", "--nocapture"])
                    .env(ALONE, "1")
                    // The environment's own allocator settings (one arena, a top pad, other
                    // thresholds: common in containers) would change what is measured.
                    .env_remove("MALLOC_ARENA_MAX")
                    .env_remove("MALLOC_TOP_PAD_")
                    .env_remove("MALLOC_TRIM_THRESHOLD_")
                    .env_remove("MALLOC_MMAP_THRESHOLD_")
                    .env_remove("GLIBC_TUNABLES")
                    .output()
                    .expect("the test run alone");
                let text = String::from_utf8_lossy(&output.stdout).into_owned()
                    + &String::from_utf8_lossy(&output.stderr);
                assert!(output.status.success(), "alone: {text}");
                assert!(text.contains("1 passed"), "the test ran alone: {text}");
                return;
            }
            // SAFETY: the test's thread is the only one allocating (run alone, one thread).
            assert!(unsafe { keep_freed_memory() }, "glibc took the thresholds");
            const BLOCK: usize = 24 << 20;
            let before = mapped_bytes();
            // Far above glibc's first mmap threshold (128 KiB), below the lowest the setting
            // may fall back to (32 MiB) and a thread's heap (64 MiB): by default this block
            // is mapped on its own, and unmapped when freed.
            let block = std::hint::black_box(vec![1u8; BLOCK]);
            let during = mapped_bytes();
            assert!(
                during < before + BLOCK,
                "a 24 MiB block was mapped on its own ({before} mapped bytes before, {during} with it)"
            );
            // Something after it, so that freed it lies inside the heap, not at its end.
            let block_end = block.as_ptr_range().end as usize;
            let mut guards = Vec::with_capacity(64);
            while guards
                .last()
                .is_none_or(|guard: &Vec<u8>| (guard.as_ptr() as usize) < block_end)
            {
                assert!(guards.len() < 64, "no allocation landed after the block");
                guards.push(std::hint::black_box(vec![2u8; 64 << 10]));
            }
            let held = resident_bytes();
            drop(block);
            let kept = resident_bytes();
            assert!(
                kept + (8 << 20) > held,
                "the freed block stayed resident ({held} bytes with it, {kept} after)"
            );
            assert!(give_back_freed_memory(), "something was given back");
            let given = resident_bytes();
            assert!(
                given + (16 << 20) < kept,
                "giving back released the freed block ({kept} bytes before, {given} after)"
            );
            // At a heap's end, more than KEPT_AT_TOP freed goes back at once (all of it but
            // the pad): here in a thread's own heap, which giving back does not shrink.
            std::thread::spawn(|| {
                const AT_END: usize = KEPT_AT_TOP + (8 << 20);
                let block = std::hint::black_box(vec![3u8; AT_END]);
                let held = resident_bytes();
                drop(block);
                let after = resident_bytes();
                assert!(
                    after + AT_END - (2 << 20) < held,
                    "a thread's heap shrank as it freed ({held} bytes with the block, {after} after)"
                );
            })
            .join()
            .expect("the thread's check");
            drop(guards);
        }
    }
}
