//! What rebuilding a growing records file can remember from one build to the next: the
//! digests of cumulative sequences (by call id) and the answers of prefix checks (by the
//! token arrays they compared).

use crate::hash::HashMap;
use std::sync::{Arc, Mutex};

use super::digest::{
    Resume, digest_encoded, digest_many, digest_many_encoded_from, digest_prefix, encode_onto,
    finish_encoded, hex,
};
use crate::store::TokenRecord;
use crate::store::seq::TokenSeq;

/// Digests of records' cumulative sequences and answers of prefix checks, remembered across
/// rebuilds of one growing records file.
///
/// Digests are keyed by call id, and hold no tokens: only the first record of an id is ever
/// digested (later ones are dropped as duplicates before), an appended record never changes
/// which record is first, nor that record's cumulative sequence (a delta's is built from its
/// ancestors, each the first of its id). So they stay sound while the file only grows —
/// even after its lines are dropped and read again (a rollout cooled and warmed). Clear them
/// when the file is truncated or replaced. Each is also checked against the sequence's
/// length and the digest its record recorded.
#[derive(Default)]
pub struct DigestMemo {
    digests: Mutex<HashMap<String, MemoEntry>>,
    /// Whether a prompt starts with a parent's cumulative sequence, by the token arrays
    /// both are made of (a full-prompt record's link is otherwise a comparison of every
    /// token of its prompt, on every rebuild).
    prefixes: Mutex<HashMap<(ChunkKey, ChunkKey), PrefixEntry>>,
    /// The cumulative sequence of the call a live rollout's last append placed (the likely
    /// parent of its next), copied into one array: see [`DigestMemo::follow`].
    newest: Mutex<Option<Contiguous>>,
}

/// A sequence and a contiguous copy of its tokens, kept encoded as the digest hashes them
/// (8 bytes a token, big-endian: [`encode_onto`]).
struct Contiguous {
    seq: TokenSeq,
    encoded: Vec<u8>,
    /// The call whose cumulative sequence it is, when it was placed by an append: its digest
    /// may be computed ahead of its child ([`hash_ahead`]).
    call: Option<Arc<TokenRecord>>,
    /// Where the digest of the sequence of this length (its first tokens: the call's, or a
    /// parent's once a child extended the copy) stopped, hashed ahead in part (see
    /// [`hash_ahead`]): the rest is hashed from there. Taken only for a sequence of the
    /// same arrays and that length, whose message it is.
    resume: Option<(usize, Resume)>,
}

impl Contiguous {
    /// Where the digest of the copy's first `len` tokens stopped, if it was hashed ahead in
    /// part (the copy's first tokens are the same arrays whatever it grew by since).
    fn resume_for(&self, len: usize) -> Option<Resume> {
        self.resume
            .filter(|&(of, _)| of == len && len <= self.seq.len())
            .map(|(_, resume)| resume)
    }
}

/// Opaque: a cache, whose contents say nothing about the build that used it (two equal
/// builds print equal whatever each remembered).
impl std::fmt::Debug for DigestMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestMemo").finish_non_exhaustive()
    }
}

/// A digest remembered for a call: its cumulative sequence's length, the digest its record
/// recorded (if any), and the digest computed. Both are checked before it is used again: a
/// rollout id reused by a new attempt with the same call ids has other records.
type MemoEntry = (usize, Option<[u8; 32]>, [u8; 32]);

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

/// Append the tokens of `seq` past its first `start` to `encoded`, as the digest encodes
/// them.
fn encode_after(seq: &TokenSeq, start: usize, encoded: &mut Vec<u8>) {
    encoded.reserve(seq.len().saturating_sub(start) * 8);
    seq.for_each_after(start, |tokens| encode_onto(tokens, encoded));
}

/// Compute ahead the digests the next appends' link checks will ask for: each memo's newest
/// call's, not remembered yet, hashed from its contiguous copy, several at once
/// ([`digest_many_encoded_from`]), and only once there are `at_least` of them. The watcher
/// calls it once a burst's changes are sent: the rollouts share the SHA rounds, and the
/// hashing is off the path from a write to the screen. A call that gets no child costs one
/// digest for nothing.
///
/// What it did: [`HashedAhead::Waiting`] with the memos (their places in `memos`) whose
/// digests wait for more, when there were fewer than `at_least`; [`HashedAhead::Carried`]
/// with those left part-hashed once fewer lanes would be full than the call began with
/// (they go on from there at the next call, or with the link check that asks for one first,
/// on the way to the screen).
pub fn hash_ahead(memos: &[&DigestMemo], at_least: usize) -> HashedAhead {
    hash_ahead_from(memos, at_least, wide_from())
}

/// [`hash_ahead`], sixteen lanes at a time from `wide_from` messages on (`None`: never).
pub(crate) fn hash_ahead_from(
    memos: &[&DigestMemo],
    at_least: usize,
    wide_from: Option<usize>,
) -> HashedAhead {
    // Each memo once: its copy is locked while the digests are hashed.
    let mut distinct: Vec<(usize, &DigestMemo)> = Vec::with_capacity(memos.len());
    for (at, &memo) in memos.iter().enumerate() {
        if !distinct.iter().any(|(_, seen)| std::ptr::eq(*seen, memo)) {
            distinct.push((at, memo));
        }
    }
    let mut guards: Vec<_> = distinct
        .iter()
        .map(|&(at, memo)| (at, memo, memo.newest()))
        .collect();
    // (Their places in `guards`.)
    let wanted: Vec<usize> = guards
        .iter()
        .enumerate()
        .filter_map(|(place, (_, memo, newest))| {
            let kept = newest.as_ref()?;
            // A child's link check asks for its parent's digest only when the parent
            // recorded one.
            let call = kept
                .call
                .as_ref()
                .filter(|call| call.digest.as_deref().is_some_and(|d| !d.is_empty()))?;
            let known = memo
                .digests()
                .get(&call.model_call_id)
                .is_some_and(|entry| same_call(entry, call, &kept.seq));
            (!known).then_some(place)
        })
        .collect();
    if wanted.is_empty() {
        return HashedAhead::Hashed;
    }
    if wanted.len() < at_least {
        return HashedAhead::Waiting(wanted.iter().map(|&place| guards[place].0).collect());
    }
    let kept = |place: usize| guards[place].2.as_ref().expect("wanted: kept");
    let bodies: Vec<&[u8]> = wanted
        .iter()
        .map(|&place| &kept(place).encoded[..kept(place).seq.len() * 8])
        .collect();
    let starts: Vec<Option<Resume>> = wanted
        .iter()
        .map(|&place| kept(place).resume_for(kept(place).seq.len()))
        .collect();
    let hashed = digest_many_encoded_from(&bodies, &starts, wide_from, true);
    crate::work::count(|work| {
        work.tokens_hashed_contiguous += (bodies.iter().zip(&hashed))
            .filter(|(_, hashed)| hashed.is_ok())
            .map(|(body, _)| body.len() as u64 / 8)
            .sum::<u64>()
    });
    let mut carried = Vec::new();
    for (&place, hashed) in wanted.iter().zip(hashed) {
        let (at, memo, newest) = &mut guards[place];
        let kept = newest.as_mut().expect("wanted: kept");
        match hashed {
            Ok(digest) => {
                let call = Arc::clone(kept.call.as_ref().expect("wanted: a call"));
                memo.remember(&call, &kept.seq, &digest);
                kept.resume = None;
            }
            Err(resume) => {
                kept.resume = Some((kept.seq.len(), resume));
                carried.push(*at);
            }
        }
    }
    if carried.is_empty() {
        HashedAhead::Hashed
    } else {
        HashedAhead::Carried(carried)
    }
}

/// What [`hash_ahead`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum HashedAhead {
    /// Every digest asked for is remembered now (none may have been).
    Hashed,
    /// Too few to hash yet: the places in the memos given of those whose digests wait (a
    /// memo given twice at its first place).
    Waiting(Vec<usize>),
    /// Hashed, but for those left once fewer lanes were full than at the start: they stopped
    /// where they were, and go on beside the next ones (the places in the memos given). A
    /// link check that asks for one first hashes the rest of it.
    Carried(Vec<usize>),
}

/// How many digests [`hash_ahead`] should wait for before it hashes them: sixteen where
/// sixteen lanes hash faster than the SHA extensions (`lanes::wide`), so that their lanes
/// are full; else one (each is hashed as soon as its rollout changes, beside those of the
/// rollouts changed with it).
pub fn hash_ahead_batch() -> usize {
    if wide_from().is_some() {
        super::lanes::wide::WIDE_LANES
    } else {
        1
    }
}

/// From how many digests on [`hash_ahead`] hashes sixteen at once (`None`: never; measured
/// once, see `lanes::wide::min_lanes`).
pub(crate) fn wide_from() -> Option<usize> {
    super::lanes::wide::min_lanes()
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
    /// The digests (still usable after a panic elsewhere poisoned the lock).
    fn digests(&self) -> std::sync::MutexGuard<'_, HashMap<String, MemoEntry>> {
        self.digests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The prefix answers (still usable after a panic elsewhere poisoned the lock).
    fn prefixes(&self) -> std::sync::MutexGuard<'_, HashMap<(ChunkKey, ChunkKey), PrefixEntry>> {
        self.prefixes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The contiguous copy of the newest call's sequence (still usable after a panic
    /// elsewhere poisoned the lock).
    fn newest(&self) -> std::sync::MutexGuard<'_, Option<Contiguous>> {
        self.newest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A live rollout's append placed a call whose cumulative sequence is `cumulative`: keep
    /// its tokens in one array, for the digest its child's link check will ask for.
    ///
    /// A cumulative sequence is a rope of its calls' arrays, a few dozen scattered over the
    /// heap and last read at the previous append, long out of the caches: hashing one of
    /// 18,000 tokens read that way took 150 us on this project's machine against 105 us
    /// from one array (the hardware's prefetching starts anew at every array). The copy is
    /// extended by the new call's tokens alone when the sequence is built on the arrays of
    /// the one copied before (the parent's, most often); else copied whole.
    pub(crate) fn follow(&self, call: Option<&Arc<TokenRecord>>, cumulative: &TokenSeq) {
        let mut newest = self.newest();
        match newest.as_mut() {
            Some(kept) if kept.seq.is_same(cumulative) => {}
            Some(kept) if cumulative.starts_with_same_arrays(&kept.seq) => {
                encode_after(cumulative, kept.seq.len(), &mut kept.encoded);
                kept.seq = cumulative.clone();
            }
            _ => {
                let mut encoded = newest.take().map(|kept| kept.encoded).unwrap_or_default();
                encoded.clear();
                encode_after(cumulative, 0, &mut encoded);
                *newest = Some(Contiguous {
                    seq: cumulative.clone(),
                    encoded,
                    call: None,
                    resume: None,
                });
            }
        }
        if let Some(kept) = newest.as_mut() {
            kept.call = call.cloned();
        }
    }

    /// The digest of `sequence`, from the contiguous copy when the sequence is the one
    /// copied or starts it (the same arrays, so the same tokens); else from its arrays.
    fn digest_of(&self, sequence: &TokenSeq) -> String {
        let newest = self.newest();
        match newest.as_ref().filter(|kept| {
            kept.encoded.len() >= sequence.len() * 8
                && (kept.seq.is_same(sequence) || kept.seq.starts_with_same_arrays(sequence))
        }) {
            Some(kept) => {
                crate::work::count(|work| work.tokens_hashed_contiguous += sequence.len() as u64);
                let body = &kept.encoded[..sequence.len() * 8];
                match kept.resume_for(sequence.len()) {
                    // Hashed ahead in part: the rest.
                    Some(resume) => finish_encoded(body, resume),
                    None => digest_encoded(body),
                }
            }
            None => digest_prefix(sequence, sequence.len()),
        }
    }

    /// Bytes held for the next append (the contiguous copy).
    pub fn held_bytes(&self) -> usize {
        self.newest()
            .as_ref()
            .map_or(0, |kept| kept.encoded.capacity())
    }

    /// The digest of `record`'s cumulative sequence `cumulative` (`record` is the first of
    /// its call id).
    fn digest(&self, record: &TokenRecord, cumulative: &TokenSeq) -> String {
        if let Some((_, _, digest)) = self
            .digests()
            .get(&record.model_call_id)
            .filter(|entry| same_call(entry, record, cumulative))
        {
            return hex(digest);
        }
        let digest = self.digest_of(cumulative);
        self.remember(record, cumulative, &digest);
        digest
    }

    fn remember(&self, record: &TokenRecord, cumulative: &TokenSeq, digest: &str) {
        if let Some(raw) = unhex(digest) {
            let recorded = record.digest.as_deref().and_then(unhex);
            self.digests().insert(
                record.model_call_id.clone(),
                (cumulative.len(), recorded, raw),
            );
        }
    }

    /// Compute the digests of `wanted` (records, each the first of its call id, with their
    /// cumulative sequences) not remembered yet, up to four at once ([`digest_many`]): a
    /// build's link checks then find them remembered. A single one missing is left for when
    /// it is asked: no other digest would share its rounds.
    pub(crate) fn prefetch(&self, wanted: &[(&TokenRecord, &TokenSeq)]) {
        let missing: Vec<&(&TokenRecord, &TokenSeq)> = {
            let digests = self.digests();
            wanted
                .iter()
                .filter(|(record, cumulative)| {
                    digests
                        .get(&record.model_call_id)
                        .is_none_or(|entry| !same_call(entry, record, cumulative))
                })
                .collect()
        };
        if missing.len() < 2 {
            return;
        }
        let sequences: Vec<(&TokenSeq, usize)> = missing
            .iter()
            .map(|&&(_, cumulative)| (cumulative, cumulative.len()))
            .collect();
        for (&&(record, cumulative), digest) in missing.iter().zip(digest_many(&sequences)) {
            self.remember(record, cumulative, &digest);
        }
    }

    /// Whether `seq` starts with `prefix`, remembered by the token arrays they are made of.
    pub(crate) fn starts_with(&self, seq: &TokenSeq, prefix: &TokenSeq) -> bool {
        let (Some(a), Some(b)) = (seq.few_chunks(FEW_CHUNKS), prefix.few_chunks(FEW_CHUNKS)) else {
            return seq.starts_with(prefix);
        };
        let key = (chunk_key(&a), chunk_key(&b));
        let mut prefixes = self.prefixes();
        if let Some((_, _, answer)) = prefixes.get(&key) {
            return *answer;
        }
        let answer = seq.starts_with(prefix);
        prefixes.insert(key, (a, b, answer));
        answer
    }

    /// Forget the prefix answers, which hold token arrays (the rollout is cooled; its
    /// digests, which hold none, stay).
    pub fn cool(&self) {
        self.prefixes().clear();
        *self.newest() = None;
    }

    /// Forget everything (the file was truncated or replaced).
    pub fn clear(&self) {
        self.digests().clear();
        self.prefixes().clear();
        *self.newest() = None;
    }

    /// Number of digests remembered.
    pub fn len(&self) -> usize {
        self.digests().len()
    }

    /// Whether no digest is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether `entry` was remembered for this very call: the same length, the same recorded
/// digest.
fn same_call(entry: &MemoEntry, record: &TokenRecord, cumulative: &TokenSeq) -> bool {
    entry.0 == cumulative.len() && entry.1 == record.digest.as_deref().and_then(unhex)
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (slot, pair) in out.iter_mut().zip(text.as_bytes().chunks(2)) {
        let digit = |b: u8| (b as char).to_digit(16);
        *slot = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
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

    #[test]
    fn digests_hashed_ahead_are_those_the_next_link_checks_ask_for() {
        use crate::rebuild::test_records::record;
        // A call as the writer records it: with its cumulative sequence's length and digest.
        let recorded = |id: &str, prompt: &[i64], generation: &[i64]| {
            let tokens: Vec<u64> = prompt.iter().chain(generation).map(|&t| t as u64).collect();
            let line = format!(
                r#"{{"cum_len":{},"digest":"{}","generation_log_probs":{:?},"generation_token_ids":{generation:?},"model_call_id":"{id}","parent_call_id":"p","parent_resolution":"resolved","prompt_token_ids":{prompt:?},"rollout_id":"r"}}"#,
                tokens.len(),
                crate::rebuild::digest::digest(&tokens),
                vec![-0.5; generation.len()],
            );
            Arc::new(TokenRecord::parse(line.as_bytes()).expect("a valid record"))
        };
        let cumulative_of = |call: &TokenRecord| {
            call.prompt_token_ids
                .append_ids(call.generation_token_ids.clone(), false)
        };
        // Three rollouts, each with a newest call placed by an append; one more whose newest
        // call recorded no digest (no link check asks for it) and one copied without a call:
        // nothing to hash ahead for either.
        let memos: Vec<DigestMemo> = (0..5).map(|_| DigestMemo::default()).collect();
        let calls: Vec<(Arc<TokenRecord>, TokenSeq)> = (0..3i64)
            .map(|r| {
                let prompt: Vec<i64> = (0..300 + 50 * r).collect();
                let call = recorded(&format!("c{r}"), &prompt, &[7, 8, 9]);
                let cumulative = cumulative_of(&call);
                (call, cumulative)
            })
            .collect();
        for (memo, (call, cumulative)) in memos.iter().zip(&calls) {
            memo.follow(Some(call), cumulative);
        }
        let unrecorded = record("u", Some("p"), &[1, 2, 3], &[4]);
        memos[3].follow(Some(&unrecorded), &cumulative_of(&unrecorded));
        memos[4].follow(None, &calls[0].1);
        let all: Vec<&DigestMemo> = memos.iter().collect();
        let expected_digests: Vec<String> = calls
            .iter()
            .map(|(_, cumulative)| digest_prefix(cumulative, cumulative.len()))
            .collect();
        crate::work::take();
        // Asked to wait for four: the three with a digest to hash wait (memos 3 and 4 have
        // none: an unrecorded digest, no call).
        assert_eq!(hash_ahead(&all, 4), HashedAhead::Waiting(vec![0, 1, 2]));
        assert_eq!(crate::work::take().tokens_hashed, 0, "nothing hashed yet");
        assert_eq!(hash_ahead(&all, 3), HashedAhead::Hashed);
        let work = crate::work::take();
        let expected: usize = calls.iter().map(|(_, c)| c.len()).sum();
        assert_eq!(work.tokens_hashed, expected as u64, "the three calls, once");
        assert_eq!(work.tokens_hashed_contiguous, expected as u64);
        assert!(work.tokens_hashed_together > 0, "hashed side by side");
        assert!(work.tokens_hashed_together <= work.tokens_hashed);
        // The link checks find them: nothing hashed, each its own digest.
        for ((memo, (call, cumulative)), expected) in
            memos.iter().zip(&calls).zip(&expected_digests)
        {
            assert_eq!(&memo.digest(call, cumulative), expected);
        }
        assert_eq!(crate::work::take().tokens_hashed, 0, "remembered");
        // Nothing new: nothing hashed again, nothing waits.
        assert_eq!(hash_ahead(&all, 4), HashedAhead::Hashed);
        assert_eq!(crate::work::take().tokens_hashed, 0);
        // A memo given twice is hashed for once (and not locked twice).
        let (call, cumulative) = &calls[0];
        let again = DigestMemo::default();
        again.follow(Some(call), cumulative);
        hash_ahead(&[&again, &again], 1);
        assert_eq!(crate::work::take().tokens_hashed, cumulative.len() as u64);
    }

    #[test]
    fn the_newest_calls_sequence_is_hashed_from_its_contiguous_copy() {
        let ids = |from: u64, count: u64| -> Arc<[u64]> { (from..from + count).collect() };
        // A chain as appends build it: each prompt on its parent's arrays, then its own.
        let mut chain = vec![TokenSeq::from_chunk(ids(0, 700))];
        for call in 1..6u64 {
            let parent = chain.last().unwrap();
            chain.push(
                parent
                    .append(ids(1_000 * call, 50))
                    .append(ids(1_000 * call + 500, 90)),
            );
        }
        let memo = DigestMemo::default();
        for (at, cumulative) in chain.iter().enumerate() {
            memo.follow(None, cumulative);
            assert!(memo.held_bytes() >= cumulative.len() * 8);
            crate::work::take();
            // The newest, and an earlier one it is built on: both from the copy.
            for seq in [cumulative, &chain[at / 2]] {
                assert_eq!(memo.digest_of(seq), digest_prefix(seq, seq.len()));
            }
            let work = crate::work::take();
            let asked = (cumulative.len() + chain[at / 2].len()) as u64;
            assert_eq!(work.tokens_hashed_contiguous, asked, "call {at}");
        }
        // Equal tokens in other arrays: not taken for the copied sequence.
        let other = TokenSeq::from(chain[2].to_vec());
        crate::work::take();
        assert_eq!(memo.digest_of(&other), digest_prefix(&other, other.len()));
        assert_eq!(crate::work::take().tokens_hashed_contiguous, 0);
        // A sequence on other arrays is copied whole, then hashed from that copy.
        memo.follow(None, &other);
        crate::work::take();
        assert_eq!(memo.digest_of(&other), digest_prefix(&other, other.len()));
        assert_eq!(
            crate::work::take().tokens_hashed_contiguous,
            other.len() as u64
        );
        memo.cool();
        assert_eq!(memo.held_bytes(), 0, "cooled: the copy is dropped");
    }

    #[test]
    fn digests_fetched_ahead_are_hashed_together_and_each_its_own() {
        let records: Vec<TokenRecord> = (0..5u64)
            .map(|i| {
                let ids: Vec<u64> = (0..3_000 + 500 * i).map(|t| t * 7 + i).collect();
                let line = format!(
                    r#"{{"generation_log_probs":[],"generation_token_ids":[],"model_call_id":"c{i}","parent_resolution":"root","prompt_token_ids":{ids:?},"rollout_id":"r"}}"#
                );
                TokenRecord::parse(line.as_bytes()).expect("a valid record")
            })
            .collect();
        let wanted: Vec<(&TokenRecord, &TokenSeq)> =
            records.iter().map(|r| (r, &r.prompt_token_ids)).collect();
        let memo = DigestMemo::default();
        crate::work::take();
        memo.prefetch(&wanted[..1]);
        assert!(memo.is_empty(), "one alone is left for when it is asked");
        memo.prefetch(&wanted);
        let work = crate::work::take();
        let total: usize = records.iter().map(|r| r.prompt_token_ids.len()).sum();
        assert_eq!(work.tokens_hashed, total as u64);
        // Four share their rounds (a group of like lengths), the fifth hashes alone; each
        // lane's header and padding count too, so the shared part is within a few tokens.
        let shared = work.tokens_hashed_together as f64 / total as f64;
        assert!(
            shared > 0.6,
            "{shared:.2} of the tokens hashed beside another digest"
        );
        assert_eq!(memo.len(), 5);
        for (record, cumulative) in wanted {
            assert_eq!(
                memo.digest(record, cumulative),
                digest_prefix(cumulative, cumulative.len())
            );
        }
        assert_eq!(
            crate::work::take().tokens_hashed,
            total as u64,
            "checked above only"
        );
    }

    #[test]
    fn digests_left_part_hashed_go_on_from_where_they_stopped() {
        let recorded = |id: &str, tokens: usize| {
            let prompt: Vec<u64> = (0..tokens as u64).map(|t| t * 31 + tokens as u64).collect();
            let mut all = prompt.clone();
            all.push(5);
            let line = format!(
                r#"{{"cum_len":{},"digest":"{}","generation_log_probs":[-0.5],"generation_token_ids":[5],"model_call_id":"{id}","parent_call_id":"p","parent_resolution":"resolved","prompt_token_ids":{prompt:?},"rollout_id":"r"}}"#,
                all.len(),
                crate::rebuild::digest::digest(&all),
            );
            let call = Arc::new(TokenRecord::parse(line.as_bytes()).expect("a valid record"));
            let cumulative = call
                .prompt_token_ids
                .append_ids(call.generation_token_ids.clone(), false);
            (call, cumulative)
        };
        let calls: Vec<_> = (0..5)
            .map(|r| recorded(&format!("c{r}"), 200 + 900 * r))
            .collect();
        // A rollout's memo each, following its call.
        let following = || -> Vec<DigestMemo> {
            let memos: Vec<DigestMemo> = (0..5).map(|_| DigestMemo::default()).collect();
            for (memo, (call, cumulative)) in memos.iter().zip(&calls) {
                memo.follow(Some(call), cumulative);
            }
            memos
        };
        let memos = following();
        let all: Vec<&DigestMemo> = memos.iter().collect();
        let digests: Vec<String> = calls
            .iter()
            .map(|(_, cumulative)| digest_prefix(cumulative, cumulative.len()))
            .collect();
        let expected = |at: usize| digests[at].clone();
        crate::work::take();
        // Sixteen lanes from two messages on, five of them: the lanes run only while all
        // five are full, so the shortest is finished and the other four carried,
        // part-hashed.
        let HashedAhead::Carried(carried) = hash_ahead_from(&all, 1, Some(2)) else {
            panic!("the longest are carried")
        };
        assert_eq!(carried, vec![1, 2, 3, 4]);
        assert_eq!(crate::work::take().tokens_hashed, calls[0].1.len() as u64);
        // The link check asking for one hashes the rest (counted whole: one digest made).
        let (call, cumulative) = &calls[4];
        assert_eq!(memos[4].digest(call, cumulative), expected(4));
        assert_eq!(crate::work::take().tokens_hashed, cumulative.len() as u64);
        assert_eq!(memos[0].digest(&calls[0].0, &calls[0].1), expected(0));
        assert_eq!(crate::work::take().tokens_hashed, 0, "hashed ahead");
        for at in 1..4 {
            assert_eq!(memos[at].digest(&calls[at].0, &calls[at].1), expected(at));
        }
        // Memos following the calls, hashed ahead: the four longest carried, as above.
        let carried = || -> Vec<DigestMemo> {
            let memos = following();
            let all: Vec<&DigestMemo> = memos.iter().collect();
            let hashed = hash_ahead_from(&all, 1, Some(2));
            assert_eq!(hashed, HashedAhead::Carried(vec![1, 2, 3, 4]));
            memos
        };
        // Carried again, then taken on by the next rounds (each finishes the shortest of
        // those left, the lanes then no longer full): the same digests.
        let again = carried();
        let all: Vec<&DigestMemo> = again.iter().collect();
        for left in (1..4).rev() {
            let HashedAhead::Carried(carried) = hash_ahead_from(&all, 1, Some(2)) else {
                panic!("{left} carried")
            };
            assert_eq!(carried, (5 - left..5).collect::<Vec<_>>());
        }
        assert_eq!(hash_ahead_from(&all, 1, Some(2)), HashedAhead::Hashed);
        crate::work::take();
        for at in 0..5 {
            assert_eq!(again[at].digest(&calls[at].0, &calls[at].1), expected(at));
        }
        assert_eq!(crate::work::take().tokens_hashed, 0, "finished ahead");
        // A child placed on the carried call's arrays (the copy extended, as an append
        // does): its own digest starts from the beginning, and the parent's, asked for
        // after, still goes on from where it stopped.
        let third = carried();
        let all: Vec<&DigestMemo> = third.iter().collect();
        let child_cumulative = cumulative.append_ids(Arc::from(vec![9u64; 700]), false);
        let (child, _) = recorded("c5", 1);
        third[4].follow(Some(&child), &child_cumulative);
        assert_eq!(hash_ahead_from(&all, 1, None), HashedAhead::Hashed);
        let child_digest = digest_prefix(&child_cumulative, child_cumulative.len());
        assert_eq!(
            third[4].digest(&child, &child_cumulative),
            child_digest,
            "the child's, hashed ahead whole"
        );
        assert_eq!(third[4].digest_of(cumulative), expected(4), "the parent's");
    }

    #[test]
    fn digests_are_remembered_by_call_id_through_cooling_and_checked_by_length() {
        let record = |id: &str, ids: Vec<u64>| {
            let line = format!(
                r#"{{"generation_log_probs":[],"generation_token_ids":[],"model_call_id":"{id}","parent_resolution":"root","prompt_token_ids":{ids:?},"rollout_id":"r"}}"#
            );
            TokenRecord::parse(line.as_bytes()).expect("a valid record")
        };
        let memo = DigestMemo::default();
        let first = record("a", vec![1, 2, 3]);
        let cumulative = first.prompt_token_ids.clone();
        let expected = digest_prefix(&cumulative, 3);
        assert_eq!(memo.digest(&first, &cumulative), expected);
        memo.cool();
        // The same call read again (other arrays, same tokens): remembered, not recomputed.
        let again = record("a", vec![1, 2, 3]);
        assert_eq!(memo.digest(&again, &again.prompt_token_ids), expected);
        assert_eq!(memo.len(), 1);
        // Another length under the same id is not taken for it.
        let longer = record("a", vec![1, 2, 3, 4]);
        let digest = memo.digest(&longer, &longer.prompt_token_ids);
        assert_eq!(digest, digest_prefix(&longer.prompt_token_ids, 4));
        // The same call id and length in another attempt (other recorded digest): computed.
        let attempt = TokenRecord::parse(
            br#"{"digest":"0000000000000000000000000000000000000000000000000000000000000000","generation_log_probs":[],"generation_token_ids":[],"model_call_id":"a","parent_resolution":"root","prompt_token_ids":[7,8,9,10],"rollout_id":"r"}"#,
        )
        .expect("a valid record");
        let digest = memo.digest(&attempt, &attempt.prompt_token_ids);
        assert_eq!(digest, digest_prefix(&attempt.prompt_token_ids, 4));
        memo.clear();
        assert!(memo.is_empty());
        assert_eq!(hex(&unhex(&expected).unwrap()), expected);
        assert_eq!(unhex("not hex"), None);
    }
}
