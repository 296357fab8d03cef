//! The work this thread did, counted: records parsed, tokens hashed, calls linked, builds
//! made whole or extended. The tests of live cost assert on it (an append must cost its own
//! line, not its rollout's), and the benchmarks print it.
//!
//! Counted per thread, so tests running side by side do not see each other's work
//! ([`take`]), and for the process ([`process_total`]: what a benchmark reads of its
//! watcher thread); a count is an add, cheap enough to stay in release builds.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Work done, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Record lines parsed into records.
    pub records_parsed: u64,
    /// Tokens encoded into a token-sequence digest.
    pub tokens_hashed: u64,
    /// Calls whose parent link the builder checked.
    pub calls_linked: u64,
    /// Rollouts built from all their records.
    pub full_builds: u64,
    /// Builds extended by appended records instead.
    pub extended_builds: u64,
    /// Rollouts a watcher looked at again (each read of what changed in its files).
    pub refreshes: u64,
}

thread_local! {
    static WORK: Cell<Work> = const { Cell::new(Work {
        records_parsed: 0,
        tokens_hashed: 0,
        calls_linked: 0,
        full_builds: 0,
        extended_builds: 0,
        refreshes: 0,
    }) };
}

/// The process's counts, by field of [`Work`].
static TOTAL: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// The work every thread of the process did so far.
pub fn process_total() -> Work {
    let [
        records_parsed,
        tokens_hashed,
        calls_linked,
        full_builds,
        extended_builds,
        refreshes,
    ] = std::array::from_fn(|field| TOTAL[field].load(Ordering::Relaxed));
    Work {
        records_parsed,
        tokens_hashed,
        calls_linked,
        full_builds,
        extended_builds,
        refreshes,
    }
}

impl std::ops::Sub for Work {
    type Output = Work;

    fn sub(self, earlier: Work) -> Work {
        Work {
            records_parsed: self.records_parsed - earlier.records_parsed,
            tokens_hashed: self.tokens_hashed - earlier.tokens_hashed,
            calls_linked: self.calls_linked - earlier.calls_linked,
            full_builds: self.full_builds - earlier.full_builds,
            extended_builds: self.extended_builds - earlier.extended_builds,
            refreshes: self.refreshes - earlier.refreshes,
        }
    }
}

/// The work this thread did since the last call, and start counting again.
pub fn take() -> Work {
    WORK.replace(Work::default())
}

/// Count some work on this thread.
pub(crate) fn count(add: impl FnOnce(&mut Work)) {
    WORK.with(|cell| {
        let before = cell.get();
        let mut work = before;
        add(&mut work);
        cell.set(work);
        let fields = [
            work.records_parsed - before.records_parsed,
            work.tokens_hashed - before.tokens_hashed,
            work.calls_linked - before.calls_linked,
            work.full_builds - before.full_builds,
            work.extended_builds - before.extended_builds,
            work.refreshes - before.refreshes,
        ];
        for (total, added) in TOTAL.iter().zip(fields) {
            if added > 0 {
                total.fetch_add(added, Ordering::Relaxed);
            }
        }
    });
}
