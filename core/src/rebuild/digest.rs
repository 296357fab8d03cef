//! The token-sequence digest (SPEC §4).
//!
//! `sha256(b"nemo-gym-tokens" ++ [1] ++ u64_be(count) ++ u64_be(token)*)`, except that the
//! empty sequence hashes the domain alone. A negative id cannot be encoded: the build checks
//! for one where the reference digests ([`TokenSeq::first_negative`]) and fails as it does.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use super::lanes::wide::{self, WIDE_LANES};
use super::lanes::{LANES, State, compress_many};
use crate::store::seq::TokenSeq;

mod queue;

pub(crate) use queue::Resume;
use queue::{encoded_blocks, hash_messages};

const DOMAIN: &[u8] = b"nemo-gym-tokens";
const DIGEST_VERSION: u8 = 1;
/// Tokens encoded per hasher update; large enough to amortize the call, small enough for L1.
const BATCH: usize = 1024;

/// Digest of a token slice.
pub fn digest(tokens: &[u64]) -> String {
    digest_chunks(tokens.len(), &[tokens])
}

/// Digest of the first `n` tokens of `seq` (of all of it when `n >= len`).
pub(crate) fn digest_prefix(seq: &TokenSeq, n: usize) -> String {
    let n = n.min(seq.len());
    digest_chunks(n, &seq.prefix_chunks(n))
}

#[cfg(test)]
thread_local! {
    static COMPUTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Steps of the sixteen lanes taken with fewer lanes full than their call began with.
    static SHORT_STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Digests this thread computed since the last call (tests of the work done).
#[cfg(test)]
pub(crate) fn take_digests_computed() -> usize {
    COMPUTED.replace(0)
}

/// What the digest hashes before `count` tokens: the domain, then (unless there are none)
/// the version and the count.
fn header(count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    header_into(&mut out, count);
    out
}

/// [`header`], appended to `out`.
fn header_into(out: &mut Vec<u8>, count: usize) {
    out.extend_from_slice(DOMAIN);
    if count > 0 {
        out.push(DIGEST_VERSION);
        out.extend_from_slice(&(count as u64).to_be_bytes());
    }
}

/// Digest of `count` tokens delivered as consecutive chunks.
fn digest_chunks(count: usize, chunks: &[&[u64]]) -> String {
    #[cfg(test)]
    COMPUTED.set(COMPUTED.get() + 1);
    crate::work::count(|work| work.tokens_hashed += count as u64);
    let mut hasher = Sha256::new();
    hasher.update(header(count));
    if count > 0 {
        let mut buffer = [0u8; BATCH * 8];
        chunks
            .iter()
            .take(PREFETCH_AHEAD)
            .for_each(|chunk| prefetch_start(chunk));
        for (index, chunk) in chunks.iter().enumerate() {
            if let Some(ahead) = chunks.get(index + PREFETCH_AHEAD) {
                prefetch_start(ahead);
            }
            for batch in chunk.chunks(BATCH) {
                let bytes = &mut buffer[..batch.len() * 8];
                encode(batch, bytes);
                hasher.update(bytes);
            }
        }
    }
    hex(&hasher.finalize())
}

/// Append `tokens` to `out` as the digest encodes them (8 bytes each, big-endian): a
/// sequence kept encoded is hashed by [`digest_encoded`] with no encoding pass of its own.
pub(crate) fn encode_onto(tokens: &[u64], out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + tokens.len() * 8, 0);
    encode(tokens, &mut out[at..]);
}

/// Digest of the tokens `encoded` holds ([`encode_onto`]'s bytes, a whole number of tokens):
/// the same as [`digest`] of the tokens themselves.
pub(crate) fn digest_encoded(encoded: &[u8]) -> String {
    debug_assert_eq!(encoded.len() % 8, 0, "whole tokens");
    let count = encoded.len() / 8;
    #[cfg(test)]
    COMPUTED.set(COMPUTED.get() + 1);
    crate::work::count(|work| work.tokens_hashed += count as u64);
    let mut hasher = Sha256::new();
    hasher.update(header(count));
    hasher.update(encoded);
    hex(&hasher.finalize())
}

/// Digests of sequences kept encoded ([`encode_onto`]'s bytes, a whole number of tokens
/// each), hashed together ([`queue::hash_messages`]: sixteen lanes at a time where they pay),
/// each from where `starts` says its hashing stopped before (`None`: its start): what
/// [`digest_encoded`] of each gives, in order. With `carry_tail`, those left once fewer lanes
/// would be full than the call began with are not finished: where each stopped comes back
/// instead ([`Resume`]), to go on beside the next ones.
pub(crate) fn digest_many_encoded_from(
    bodies: &[&[u8]],
    starts: &[Option<Resume>],
    wide_from: Option<usize>,
    carry_tail: bool,
) -> Vec<Result<String, Resume>> {
    let messages: Vec<Vec<Cow<'_, [u8]>>> =
        bodies.iter().map(|body| encoded_blocks(body)).collect();
    let hashed = hash_messages(&messages, starts, wide_from, carry_tail);
    // Counted as the digests are made: a message carried is counted when it is finished.
    let finished: Vec<usize> = (0..bodies.len()).filter(|&at| hashed[at].is_ok()).collect();
    #[cfg(test)]
    COMPUTED.set(COMPUTED.get() + finished.len());
    let tokens: usize = finished.iter().map(|&at| bodies[at].len() / 8).sum();
    crate::work::count(|work| work.tokens_hashed += tokens as u64);
    hashed
        .into_iter()
        .map(|hashed| hashed.map(|digest| hex(&digest)))
        .collect()
}

/// The digest of a sequence kept encoded whose hashing stopped at `resume`: its message's
/// blocks from there on (what [`digest_encoded`] of it gives).
pub(crate) fn finish_encoded(body: &[u8], resume: Resume) -> String {
    match digest_many_encoded_from(&[body], &[Some(resume)], None, false).pop() {
        Some(Ok(digest)) => digest,
        _ => unreachable!("one message, finished: nothing is carried"),
    }
}

/// SHA-256's padding after a message of `len` bytes whose last bytes `out` holds: a one
/// bit, zeros, the length in bits; whole blocks in all.
fn pad(out: &mut Vec<u8>, len: u64) {
    out.push(0x80);
    let zeros = (64 + 56 - out.len() % 64) % 64;
    out.resize(out.len() + zeros, 0);
    out.extend_from_slice(&(len * 8).to_be_bytes());
}

/// One interleaved step: from each lane's `pending` bytes (whole blocks; none for a lane done
/// or waiting) hash as many as the lane with the fewest has, into its state: sixteen lanes
/// at once when at least `wide_from` have bytes, else up to [`LANES`] at a time. Those bytes,
/// how many lanes hashed them beside another and whether sixteen at once, or `None` when no
/// lane has any.
fn compress_step(
    states: &mut [State],
    pending: &[&[u8]],
    wide_from: Option<usize>,
) -> Option<(usize, usize, bool)> {
    // At most sixteen lanes (the queue's), so on the stack: a step is taken for every run's
    // end in any lane, dozens a burst.
    debug_assert!(pending.len() <= WIDE_LANES);
    let mut lanes = [0usize; WIDE_LANES];
    let mut count = 0;
    for lane in (0..pending.len()).filter(|&lane| !pending[lane].is_empty()) {
        lanes[count] = lane;
        count += 1;
    }
    let active = &lanes[..count];
    let step = active.iter().map(|&lane| pending[lane].len()).min()?;
    let wide = wide_from.is_some_and(|from| active.len() >= from && active.len() <= WIDE_LANES);
    if wide {
        // Lanes without a message hash the first one's bytes again, for nothing.
        let mut hashing: [State; WIDE_LANES] =
            std::array::from_fn(|at| active.get(at).map_or(State::new(), |&lane| states[lane]));
        let blocks: [&[u8]; WIDE_LANES] = std::array::from_fn(|at| {
            &pending[active.get(at).copied().unwrap_or(active[0])][..step]
        });
        wide::compress(&mut hashing, blocks);
        for (&lane, state) in active.iter().zip(hashing) {
            states[lane] = state;
        }
    } else {
        let mut shared = 0;
        for group in active.chunks(LANES) {
            if group.len() > 1 {
                shared += group.len();
            }
            let mut hashing = [State::new(); LANES];
            let mut blocks: [&[u8]; LANES] = [&[]; LANES];
            for (at, &lane) in group.iter().enumerate() {
                hashing[at] = states[lane];
                blocks[at] = &pending[lane][..step];
            }
            let (hashing, blocks) = (&mut hashing[..group.len()], &blocks[..group.len()]);
            compress_many(hashing, blocks);
            for (&lane, state) in group.iter().zip(hashing.iter()) {
                states[lane] = *state;
            }
        }
        return Some((step, shared, false));
    }
    Some((step, active.len(), true))
}

/// Chunks whose start is asked for ahead of their turn (see [`prefetch_start`]).
const PREFETCH_AHEAD: usize = 2;

/// Ask for the first KiB of `tokens` to be brought into the cache. A sequence is a few dozen
/// chunks of a few hundred ids each, scattered over the heap and last touched at the
/// rollout's previous append: the encoding stalled at the start of each chunk, before the
/// hardware's own prefetching caught on. Measured in the live benchmark: a parent's digest
/// 130–135 µs against 140–157 µs (four alternating runs).
#[inline]
fn prefetch_start(tokens: &[u64]) {
    #[cfg(target_arch = "x86_64")]
    for line in tokens.chunks(8).take(16) {
        // SAFETY: a prefetch is a hint that cannot fault; the address is a live slice's.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = tokens;
}

/// Write `tokens` as 8-byte big-endian integers into `out` (8 bytes a token).
fn encode(tokens: &[u64], out: &mut [u8]) {
    // Four tokens a step, fixed-size arrays: no bounds check inside the step.
    let mut slots = out.chunks_exact_mut(32);
    let mut fours = tokens.chunks_exact(4);
    for (slot, four) in (&mut slots).zip(&mut fours) {
        let slot: &mut [u8; 32] = slot.try_into().expect("32 bytes");
        let four: &[u64; 4] = four.try_into().expect("4 tokens");
        for (bytes, token) in slot.chunks_exact_mut(8).zip(four) {
            bytes.copy_from_slice(&token.to_be_bytes());
        }
    }
    for (slot, token) in slots
        .into_remainder()
        .chunks_exact_mut(8)
        .zip(fours.remainder())
    {
        slot.copy_from_slice(&token.to_be_bytes());
    }
}

/// Digests of the first `n` tokens of each sequence, computed several at once (up to
/// [`LANES`] on the SHA extensions, [`WIDE_LANES`] where that is faster, see `lanes`): what a
/// call of [`digest_prefix`] each gives, in the same order.
pub(crate) fn digest_many(wanted: &[(&TokenSeq, usize)]) -> Vec<String> {
    #[cfg(test)]
    COMPUTED.set(COMPUTED.get() + wanted.len());
    let hashed: usize = wanted.iter().map(|(seq, n)| (*n).min(seq.len())).sum();
    crate::work::count(|work| work.tokens_hashed += hashed as u64);
    // Sequences of like lengths hashed together: a lane whose message ends early leaves
    // the others to go on with fewer lanes.
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&i| wanted[i].1.min(wanted[i].0.len()));
    let mut out = vec![String::new(); wanted.len()];
    let wide_from = wide::min_lanes().filter(|&from| wanted.len() >= from);
    let lanes = if wide_from.is_some() {
        WIDE_LANES
    } else {
        LANES
    };
    for group in order.chunks(lanes) {
        let items: Vec<(&TokenSeq, usize)> = group.iter().map(|&i| wanted[i]).collect();
        for (&i, digest) in group.iter().zip(digest_group(&items, wide_from)) {
            out[i] = hex(&digest);
        }
    }
    out
}

/// The digests of up to [`WIDE_LANES`] sequences' prefixes, hashed together while more than
/// one is left (sixteen at once while at least `wide_from` are).
fn digest_group(items: &[(&TokenSeq, usize)], wide_from: Option<usize>) -> Vec<[u8; 32]> {
    /// Bytes encoded per lane before hashing them (a multiple of the block size).
    const WINDOW: usize = 16 << 10;
    let lanes = items.len();
    debug_assert!(lanes <= WIDE_LANES);
    let mut messages: Vec<Message> = items.iter().map(|&(seq, n)| Message::new(seq, n)).collect();
    let mut states = vec![State::new(); lanes];
    let mut windows: Vec<Vec<u8>> = (0..lanes)
        .map(|_| Vec::with_capacity(WINDOW + 128))
        .collect();
    // Bytes of each window hashed so far; whether each message's last bytes are encoded.
    let mut hashed = vec![0usize; lanes];
    let mut ended = vec![false; lanes];
    // Bytes hashed while another lane was hashing too (header and padding included), and of
    // those sixteen lanes at a time.
    let (mut together, mut wide_bytes) = (0usize, 0usize);
    loop {
        for lane in 0..lanes {
            if hashed[lane] == windows[lane].len() && !ended[lane] {
                windows[lane].clear();
                hashed[lane] = 0;
                ended[lane] = messages[lane].fill(&mut windows[lane], WINDOW);
            }
        }
        // What each lane has at hand (whole blocks: windows and their padding are).
        let pending: Vec<&[u8]> = (0..lanes)
            .map(|lane| &windows[lane][hashed[lane]..])
            .collect();
        let Some((step, lanes_hashed, wide)) = compress_step(&mut states, &pending, wide_from)
        else {
            break;
        };
        if wide {
            wide_bytes += step * lanes_hashed;
        }
        for (lane, done) in hashed.iter_mut().enumerate() {
            if !pending[lane].is_empty() {
                *done += step;
            }
        }
        together += step * lanes_hashed;
    }
    crate::work::count(|work| {
        work.tokens_hashed_together += (together / 8) as u64;
        work.tokens_hashed_wide += (wide_bytes / 8) as u64;
    });
    states.iter().map(State::bytes).collect()
}

/// A sequence's encoded bytes followed by SHA-256's padding, a window at a time.
struct Message<'a> {
    header: Vec<u8>,
    chunks: Vec<&'a [u64]>,
    /// The next token: its chunk, and its place there.
    chunk: usize,
    at: usize,
    /// Bytes of the message (for the padding's length field).
    len: u64,
}

impl<'a> Message<'a> {
    fn new(seq: &'a TokenSeq, n: usize) -> Message<'a> {
        let n = n.min(seq.len());
        let header = header(n);
        Message {
            len: (header.len() + 8 * n) as u64,
            header,
            chunks: seq.prefix_chunks(n),
            chunk: 0,
            at: 0,
        }
    }

    /// Append the next bytes to `out` until it holds `window` bytes (a multiple of 64 and
    /// of 8), or the message ends: then with its padding (up to 72 bytes past `window`).
    /// Whether the message ended.
    fn fill(&mut self, out: &mut Vec<u8>, window: usize) -> bool {
        out.append(&mut self.header);
        while let Some(chunk) = self.chunks.get(self.chunk) {
            let room = window.saturating_sub(out.len()) / 8;
            if room == 0 {
                return false;
            }
            let take = room.min(chunk.len() - self.at);
            let from = out.len();
            out.resize(from + take * 8, 0);
            encode(&chunk[self.at..self.at + take], &mut out[from..]);
            self.at += take;
            if self.at == chunk.len() {
                self.chunk += 1;
                self.at = 0;
            }
        }
        pad(out, self.len);
        true
    }
}

/// Lowercase hex, as digests are written.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sequence_hashes_the_domain_alone() {
        // sha256(b"nemo-gym-tokens"), as the reference computes it.
        let expected = hex(&Sha256::digest(DOMAIN));
        assert_eq!(digest(&[]), expected);
        assert_eq!(
            digest(&[]),
            "2e222d36d0c6ae1db1ec18b3f96d9a46df5db61b40137bbfbac4cdf0acde9763"
        );
    }

    #[test]
    fn known_sequences() {
        // Values computed with the reference `compute_digest`.
        assert_eq!(
            digest(&[1, 2, 3]),
            "bf99633051449f0f3248b4995a7c8468b9561d7732447341916085f12ff9ff54"
        );
    }

    #[test]
    fn encoding_layout() {
        let mut manual = Vec::new();
        manual.extend_from_slice(DOMAIN);
        manual.push(1);
        manual.extend_from_slice(&2u64.to_be_bytes());
        manual.extend_from_slice(&7u64.to_be_bytes());
        manual.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(digest(&[7, u64::MAX]), hex(&Sha256::digest(&manual)));
    }

    #[test]
    fn a_sequence_kept_encoded_hashes_as_its_tokens() {
        let tokens: Vec<u64> = (0..3000u64)
            .map(|i| (i * 0x9e37_79b9) ^ (i << 40))
            .collect();
        // Encoded in pieces of every remainder modulo the four-token step.
        let mut encoded = Vec::new();
        let mut at = 0;
        for piece in 1..200 {
            let end = (at + piece).min(tokens.len());
            encode_onto(&tokens[at..end], &mut encoded);
            at = end;
        }
        encode_onto(&tokens[at..], &mut encoded);
        assert_eq!(encoded.len(), tokens.len() * 8);
        for n in [0, 1, 3, 4, 5, 1023, 1024, 1025, 3000] {
            assert_eq!(
                digest_encoded(&encoded[..n * 8]),
                digest(&tokens[..n]),
                "{n}"
            );
        }
    }

    /// `tokens` as [`encode_onto`] writes them.
    fn encoded(tokens: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_onto(tokens, &mut out);
        out
    }

    #[test]
    fn encoded_sequences_at_once_are_each_its_own() {
        // Lengths around the header's first block (40 bytes of body fill it) and the
        // padding's (a body ending past 56 bytes of a block takes one more).
        let lengths = [100usize, 1000, 0, 1, 4, 5, 6, 7, 12, 13, 4096, 5000, 9];
        let sequences: Vec<Vec<u64>> = lengths
            .iter()
            .map(|&n| {
                (0..n as u64)
                    .map(|i| (i * 7919) ^ ((n as u64) << 32))
                    .collect()
            })
            .collect();
        let encoded: Vec<Vec<u8>> = sequences.iter().map(|tokens| encoded(tokens)).collect();
        for group in [1, 2, 3, 4, 5, 9, lengths.len()] {
            let bodies: Vec<&[u8]> = encoded[..group].iter().map(Vec::as_slice).collect();
            crate::work::take();
            let digests: Vec<String> =
                digest_many_encoded_from(&bodies, &vec![None; group], wide::min_lanes(), false)
                    .into_iter()
                    .map(|digest| digest.ok().expect("nothing carried"))
                    .collect();
            let work = crate::work::take();
            for (tokens, got) in sequences.iter().zip(&digests) {
                assert_eq!(
                    got,
                    &digest(tokens),
                    "{} tokens in a group of {group}",
                    tokens.len()
                );
            }
            if group > 1 {
                assert!(work.tokens_hashed_together > 0, "a group of {group}");
            }
        }
    }

    #[test]
    fn messages_hashed_sixteen_at_a_time_are_each_its_own() {
        // Lanes refilled as messages of all lengths end (a header-only one, bodies ending
        // around a block's padding, long ones), from every count on which the wide lanes
        // may start; where this CPU has no AVX-512 they hash one after the other, and the
        // digests must not change either.
        let mut rng = tokscope_testkit::Rng::new(23);
        let lengths: Vec<usize> = (0..40)
            .map(|i| match i % 5 {
                0 => rng.range(0, 8) as usize,
                1 => rng.range(5, 16) as usize,
                _ => rng.range(16, 3000) as usize,
            })
            .collect();
        let sequences: Vec<Vec<u64>> = lengths.iter().map(|&n| rng.tokens(n)).collect();
        let encoded: Vec<Vec<u8>> = sequences.iter().map(|tokens| encoded(tokens)).collect();
        for (count, wide_from) in [
            (40, Some(2)),
            (17, Some(16)),
            (16, Some(16)),
            (15, Some(16)),
            (33, Some(10)),
            (12, Some(10)),
            (40, None),
        ] {
            let messages: Vec<Vec<Cow<'_, [u8]>>> = encoded[..count]
                .iter()
                .map(|body| encoded_blocks(body))
                .collect();
            let fresh = vec![None; count];
            crate::work::take();
            SHORT_STEPS.set(0);
            let digests = hash_messages(&messages, &fresh, wide_from, false);
            let work = crate::work::take();
            // Finishing, the lanes run down to `wide_from` (emptier than they began).
            assert_eq!(
                SHORT_STEPS.replace(0) > 0,
                wide_from.is_some_and(|from| count >= from && from < WIDE_LANES),
                "{count} messages, wide from {wide_from:?}"
            );
            for (tokens, got) in sequences.iter().zip(&digests) {
                let Ok(got) = got else {
                    panic!("finished unless asked to carry")
                };
                assert_eq!(
                    hex(got),
                    digest(tokens),
                    "{} tokens of {count}, wide from {wide_from:?}",
                    tokens.len()
                );
            }
            // Asked to carry what is left once sixteen lanes ran: each one left goes on
            // from where it stopped, alone or beside the others, to the same digest.
            let carried = hash_messages(&messages, &fresh, wide_from, true);
            // Carrying, never a step with fewer lanes full than the call began with.
            assert_eq!(
                SHORT_STEPS.replace(0),
                0,
                "{count} carried, wide from {wide_from:?}"
            );
            let starts: Vec<Option<Resume>> = carried.iter().map(|c| c.err()).collect();
            let resumed = hash_messages(&messages, &starts, wide_from, false);
            let mut stopped = 0;
            for (at, tokens) in sequences[..count].iter().enumerate() {
                let want = digest(tokens);
                match carried[at] {
                    Ok(got) => assert_eq!(hex(&got), want),
                    Err(resume) => {
                        stopped += 1;
                        assert_eq!(finish_encoded(&encoded[at], resume), want, "{at}");
                    }
                }
                assert_eq!(resumed[at].map(|got| hex(&got)).ok(), Some(want));
            }
            assert_eq!(
                stopped > 0,
                wide_from.is_some_and(|from| count >= from),
                "{count} messages, wide from {wide_from:?}: the tail is carried"
            );
            assert_eq!(
                work.tokens_hashed_wide > 0,
                wide_from.is_some_and(|from| count >= from),
                "{count} messages, wide from {wide_from:?}"
            );
            assert!(work.tokens_hashed_wide <= work.tokens_hashed_together);
        }
    }

    #[test]
    fn digests_at_once_are_each_its_own() {
        let mut next = 7u64;
        let mut token = || {
            next = next
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            next >> 40
        };
        // Lengths around the empty sequence, the block and the window (2,045 tokens fill
        // the first window after the header), in ropes of several chunks.
        let lengths = [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 40, 2040, 2044, 2045, 2046, 4093, 5000,
        ];
        let seqs: Vec<TokenSeq> = lengths
            .iter()
            .map(|&len| {
                let ids: Vec<u64> = (0..len).map(|_| token()).collect();
                let cut = len / 3;
                TokenSeq::from(ids[..cut].to_vec()).append(ids[cut..].to_vec().into())
            })
            .collect();
        for a in &seqs {
            for b in &seqs {
                for (n, m) in [(a.len(), b.len()), (a.len() / 2, b.len().saturating_sub(1))] {
                    let digests = digest_many(&[(a, n), (b, m)]);
                    assert_eq!(digests[0], digest_prefix(a, n), "{} of {}", n, a.len());
                    assert_eq!(digests[1], digest_prefix(b, m), "{} of {}", m, b.len());
                }
            }
        }
        // Sixteen lanes from every count on they may start at, lanes ending at different
        // windows (on a CPU without AVX-512 they hash one after the other).
        for wide_from in [2, 10, 16] {
            for count in [wide_from, WIDE_LANES] {
                let items: Vec<(&TokenSeq, usize)> = (0..count)
                    .map(|i| {
                        let seq = &seqs[(i * 5 + 3) % seqs.len()];
                        (seq, seq.len() - (i % 2).min(seq.len()))
                    })
                    .collect();
                crate::work::take();
                let digests = digest_group(&items, Some(wide_from));
                assert!(
                    crate::work::take().tokens_hashed_wide > 0,
                    "{count} from {wide_from}"
                );
                for (&(seq, n), digest) in items.iter().zip(&digests) {
                    assert_eq!(
                        hex(digest),
                        digest_prefix(seq, n),
                        "{count} from {wide_from}"
                    );
                }
            }
        }
        // Groups of every size up to past two groups, lengths mixed, each as alone.
        for count in 1..=2 * WIDE_LANES + 1 {
            let wanted: Vec<(&TokenSeq, usize)> = (0..count)
                .map(|i| {
                    let seq = &seqs[(i * 7 + count) % seqs.len()];
                    (seq, seq.len() - (i % 3).min(seq.len()))
                })
                .collect();
            let digests = digest_many(&wanted);
            for (&(seq, n), digest) in wanted.iter().zip(&digests) {
                assert_eq!(
                    *digest,
                    digest_prefix(seq, n),
                    "{count} at once, {n} tokens"
                );
            }
        }
    }

    #[test]
    fn prefix_digest_matches_slice_digest_across_chunks() {
        let tokens: Vec<u64> = (0..5000).collect();
        let seq = TokenSeq::from(tokens[..1500].to_vec())
            .append(tokens[1500..1501].to_vec().into())
            .append(tokens[1501..].to_vec().into());
        for n in [0, 1, 1024, 1500, 1501, 1502, 4999, 5000, 9000] {
            assert_eq!(
                digest_prefix(&seq, n),
                digest(&tokens[..n.min(5000)]),
                "n={n}"
            );
        }
    }
}
