//! What rebuilding a growing records file can remember from one build to the next: the
//! digests of cumulative sequences and the answers of prefix checks, keyed by the token
//! arrays they were computed from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::digest::digest_prefix;
use super::seq::TokenSeq;
use crate::store::TokenRecord;

/// Digests of records' cumulative sequences, remembered across rebuilds.
///
/// Sound only while the records file only grows: an appended record never changes an earlier
/// one, nor (first record wins) which record an id names, so a record's cumulative sequence —
/// even a delta's, built from its ancestors — never changes. Clear it when the file is
/// truncated or replaced. Entries hold the token arrays they are keyed by, so an address is
/// never reused for other tokens while its entry lives.
#[derive(Debug, Default)]
pub struct DigestMemo {
    entries: Mutex<HashMap<(usize, usize), MemoEntry>>,
    /// Whether a prompt starts with a parent's cumulative sequence, by the token arrays
    /// both are made of (a full-prompt record's link is otherwise a comparison of every
    /// token of its prompt, on every rebuild).
    prefixes: Mutex<HashMap<(ChunkKey, ChunkKey), PrefixEntry>>,
}

type MemoEntry = (TokenSeq, Arc<[u64]>, String);
/// Addresses and lengths of a sequence's token arrays.
type ChunkKey = Vec<(usize, usize)>;
/// The arrays of both sequences (kept alive, so no address is reused) and the answer.
type PrefixEntry = (Vec<Arc<[u64]>>, Vec<Arc<[u64]>>, bool);

/// Whether `seq` starts with `prefix`, through the memo when there is one.
pub(crate) fn starts_with(memo: Option<&DigestMemo>, seq: &TokenSeq, prefix: &TokenSeq) -> bool {
    // Most prompts are built on their parent's arrays: then pointers answer.
    if seq.starts_with_same_arrays(prefix) {
        return true;
    }
    match memo {
        Some(memo) => memo.starts_with(seq, prefix),
        None => seq.starts_with(prefix),
    }
}

/// Sequences made of more arrays than this are compared directly (a delta chain's prompt
/// shares its parent's nodes, so the comparison is a pointer check anyway).
const FEW_CHUNKS: usize = 4;

fn chunk_key(chunks: &[Arc<[u64]>]) -> ChunkKey {
    chunks
        .iter()
        .map(|c| (Arc::as_ptr(c) as *const u64 as usize, c.len()))
        .collect()
}

impl DigestMemo {
    /// The entries (still usable after a panic elsewhere poisoned the lock).
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<(usize, usize), MemoEntry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The digest of `record`'s cumulative sequence `cumulative`.
    ///
    /// Keyed by the prompt's last node and the generation's array: a prompt's node may be
    /// another record's (an empty prompt is 0; a prompt repeating a parent whose generation
    /// is empty ends in the parent's node), but each record's generation array is its own.
    fn digest(&self, record: &TokenRecord, cumulative: &TokenSeq) -> String {
        let key = (
            record.prompt_token_ids.addr(),
            Arc::as_ptr(&record.generation_token_ids) as *const u64 as usize,
        );
        if let Some((_, _, digest)) = self.entries().get(&key) {
            return digest.clone();
        }
        let digest = digest_prefix(cumulative, cumulative.len());
        let entry = (
            record.prompt_token_ids.clone(),
            record.generation_token_ids.clone(),
            digest.clone(),
        );
        self.entries().insert(key, entry);
        digest
    }

    /// Whether `seq` starts with `prefix`, remembered by the token arrays they are made of.
    pub(crate) fn starts_with(&self, seq: &TokenSeq, prefix: &TokenSeq) -> bool {
        let (Some(a), Some(b)) = (seq.few_chunks(FEW_CHUNKS), prefix.few_chunks(FEW_CHUNKS)) else {
            return seq.starts_with(prefix);
        };
        let key = (chunk_key(&a), chunk_key(&b));
        let mut prefixes = self
            .prefixes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, _, answer)) = prefixes.get(&key) {
            return *answer;
        }
        let answer = seq.starts_with(prefix);
        prefixes.insert(key, (a, b, answer));
        answer
    }

    /// Forget everything (the records file was truncated or replaced).
    pub fn clear(&self) {
        self.entries().clear();
        self.prefixes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// Number of digests remembered.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The digest of a record's cumulative sequence, through the memo when there is one.
pub(crate) fn cumulative_digest(
    memo: Option<&DigestMemo>,
    record: &TokenRecord,
    cumulative: &TokenSeq,
) -> String {
    match memo {
        Some(memo) => memo.digest(record, cumulative),
        None => digest_prefix(cumulative, cumulative.len()),
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;

    #[test]
    fn remembered_prefix_answers_equal_direct_ones() {
        let memo = DigestMemo::default();
        let prompt: Arc<[u64]> = Arc::from(vec![1, 2, 3, 4, 5]);
        let other: Arc<[u64]> = Arc::from(vec![1, 2, 9, 4, 5]);
        let parent = TokenSeq::from_chunk(Arc::from(vec![1, 2])).append(Arc::from(vec![3]));
        for seq in [TokenSeq::from_chunk(prompt), TokenSeq::from_chunk(other)] {
            let direct = seq.starts_with(&parent);
            assert_eq!(memo.starts_with(&seq, &parent), direct);
            assert_eq!(memo.starts_with(&seq, &parent), direct, "remembered");
        }
        assert_eq!(memo.prefixes.lock().unwrap().len(), 2);
        memo.clear();
        assert!(memo.prefixes.lock().unwrap().is_empty());
    }
}
