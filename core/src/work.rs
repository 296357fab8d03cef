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
    /// Of those, tokens hashed beside other sequences (several digests' rounds interleaved,
    /// see `rebuild::lanes`).
    pub tokens_hashed_together: u64,
    /// Of those, tokens hashed sixteen sequences at once (on AVX-512, where that is faster
    /// than the SHA extensions; see `rebuild::lanes::wide`).
    pub tokens_hashed_wide: u64,
    /// Of those, tokens hashed from a live rollout's contiguous copy of its newest call's
    /// sequence (see `rebuild::memo::DigestMemo::follow`).
    pub tokens_hashed_contiguous: u64,
    /// Calls whose parent link the builder checked.
    pub calls_linked: u64,
    /// Rollouts built from all their records.
    pub full_builds: u64,
    /// Builds extended by appended records instead.
    pub extended_builds: u64,
    /// Rollouts a watcher looked at again (each read of what changed in its files).
    pub refreshes: u64,
    /// Bytes of lines parsed before read again from their file by offset (a new line's
    /// parent whose bytes were not at hand).
    pub bytes_reread: u64,
    /// Steps of a main chain projected into response items (not lent by the rollout's
    /// previous projection).
    pub steps_projected: u64,
    /// Lines a read of the records file went over to gather its records (a live read takes
    /// the previous read's records over and goes over the new lines alone).
    pub lines_gathered: u64,
    /// Response items the projection's checks (usage, contiguity) went over: those of the
    /// steps not lent by the previous projection.
    pub items_checked: u64,
    /// Call nodes (or chain links) gone over by a pass over a whole build: its chains'
    /// facts and notes made again, the steps a projection shares with the one before it
    /// looked for. An append whose call is placed last, on the last chain, with the same
    /// main chain (an agent going on) costs none (see `rebuild::extend` and
    /// `rebuild::project`).
    pub nodes_walked: u64,
    /// Entries of a state file's index of line digests built into a map (needed only for
    /// lines past the index; a live append's state covers its line, see
    /// `store::state::EntryIndex`).
    pub index_entries_built: u64,
    /// Bytes of state files that hold an index and went through the JSON parser whole (the
    /// reference's own index, plain, is checked by a scan and only the rest is parsed; see
    /// `store::state`).
    pub index_bytes_parsed: u64,
}

/// Fields of [`Work`], in the order of [`Work::fields`].
const FIELDS: usize = 16;

impl Work {
    /// Nothing done.
    const NONE: Work = Work::from_fields([0; FIELDS]);

    /// Its counts, field by field (the one place that lists them).
    const fn fields(self) -> [u64; FIELDS] {
        [
            self.records_parsed,
            self.tokens_hashed,
            self.tokens_hashed_together,
            self.tokens_hashed_wide,
            self.tokens_hashed_contiguous,
            self.calls_linked,
            self.full_builds,
            self.extended_builds,
            self.refreshes,
            self.bytes_reread,
            self.steps_projected,
            self.lines_gathered,
            self.items_checked,
            self.nodes_walked,
            self.index_entries_built,
            self.index_bytes_parsed,
        ]
    }

    const fn from_fields(fields: [u64; FIELDS]) -> Work {
        let [
            records_parsed,
            tokens_hashed,
            tokens_hashed_together,
            tokens_hashed_wide,
            tokens_hashed_contiguous,
            calls_linked,
            full_builds,
            extended_builds,
            refreshes,
            bytes_reread,
            steps_projected,
            lines_gathered,
            items_checked,
            nodes_walked,
            index_entries_built,
            index_bytes_parsed,
        ] = fields;
        Work {
            records_parsed,
            tokens_hashed,
            tokens_hashed_together,
            tokens_hashed_wide,
            tokens_hashed_contiguous,
            calls_linked,
            full_builds,
            extended_builds,
            refreshes,
            bytes_reread,
            steps_projected,
            lines_gathered,
            items_checked,
            nodes_walked,
            index_entries_built,
            index_bytes_parsed,
        }
    }
}

thread_local! {
    static WORK: Cell<Work> = const { Cell::new(Work::NONE) };
}

/// The process's counts, by field of [`Work::fields`].
static TOTAL: [AtomicU64; FIELDS] = [const { AtomicU64::new(0) }; FIELDS];

/// The work every thread of the process did so far.
pub fn process_total() -> Work {
    Work::from_fields(std::array::from_fn(|field| {
        TOTAL[field].load(Ordering::Relaxed)
    }))
}

impl std::ops::Sub for Work {
    type Output = Work;

    fn sub(self, earlier: Work) -> Work {
        let (now, before) = (self.fields(), earlier.fields());
        Work::from_fields(std::array::from_fn(|field| now[field] - before[field]))
    }
}

/// The work this thread did since the last call, and start counting again.
pub fn take() -> Work {
    WORK.replace(Work::NONE)
}

/// Count some work on this thread.
pub(crate) fn count(add: impl FnOnce(&mut Work)) {
    WORK.with(|cell| {
        let before = cell.get();
        let mut work = before;
        add(&mut work);
        cell.set(work);
        for (total, added) in TOTAL.iter().zip((work - before).fields()) {
            if added > 0 {
                total.fetch_add(added, Ordering::Relaxed);
            }
        }
    });
}
