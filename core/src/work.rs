//! The work this thread did, counted: records parsed, tokens hashed, calls linked, builds
//! made whole or extended. The tests of live cost assert on it (an append must cost its own
//! line, not its rollout's), and the benchmarks print it.
//!
//! Thread-local, so tests running side by side do not see each other's work; a count is a
//! plain add, cheap enough to stay in release builds.

use std::cell::Cell;

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
}

thread_local! {
    static WORK: Cell<Work> = const { Cell::new(Work {
        records_parsed: 0,
        tokens_hashed: 0,
        calls_linked: 0,
        full_builds: 0,
        extended_builds: 0,
    }) };
}

/// The work this thread did since the last call, and start counting again.
pub fn take() -> Work {
    WORK.replace(Work::default())
}

/// Count some work on this thread.
pub(crate) fn count(add: impl FnOnce(&mut Work)) {
    WORK.with(|cell| {
        let mut work = cell.get();
        add(&mut work);
        cell.set(work);
    });
}
