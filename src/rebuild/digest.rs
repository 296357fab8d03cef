//! The token-sequence digest (SPEC §4).
//!
//! `sha256(b"nemo-gym-tokens" ++ [1] ++ u64_be(count) ++ u64_be(token)*)`, except that the
//! empty sequence hashes the domain alone. A negative id cannot be encoded: the build checks
//! for one where the reference digests ([`TokenSeq::first_negative`]) and fails as it does.

use sha2::{Digest, Sha256};

use super::seq::TokenSeq;

const DOMAIN: &[u8] = b"nemo-gym-tokens";
const DIGEST_VERSION: u8 = 1;
/// Tokens encoded per hasher update; large enough to amortize the call, small enough for L1.
const BATCH: usize = 1024;

/// Digest of a token slice.
pub fn digest(tokens: &[u64]) -> String {
    digest_chunks(tokens.len(), std::iter::once(tokens))
}

/// Digest of the first `n` tokens of `seq` (of all of it when `n >= len`).
pub(crate) fn digest_prefix(seq: &TokenSeq, n: usize) -> String {
    let n = n.min(seq.len());
    digest_chunks(n, seq.chunks_up_to(n))
}

#[cfg(test)]
thread_local! {
    static COMPUTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Digests this thread computed since the last call (tests of the work done).
#[cfg(test)]
pub(crate) fn take_digests_computed() -> usize {
    COMPUTED.replace(0)
}

/// Digest of `count` tokens delivered as consecutive chunks.
fn digest_chunks<'a>(count: usize, chunks: impl Iterator<Item = &'a [u64]>) -> String {
    #[cfg(test)]
    COMPUTED.set(COMPUTED.get() + 1);
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    if count > 0 {
        hasher.update([DIGEST_VERSION]);
        hasher.update((count as u64).to_be_bytes());
        let mut buffer = [0u8; BATCH * 8];
        for chunk in chunks {
            for batch in chunk.chunks(BATCH) {
                let bytes = &mut buffer[..batch.len() * 8];
                // Four tokens a step, fixed-size arrays: no bounds check inside the step.
                let mut slots = bytes.chunks_exact_mut(32);
                let mut tokens = batch.chunks_exact(4);
                for (slot, four) in (&mut slots).zip(&mut tokens) {
                    let slot: &mut [u8; 32] = slot.try_into().expect("32 bytes");
                    let four: &[u64; 4] = four.try_into().expect("4 tokens");
                    for (bytes, token) in slot.chunks_exact_mut(8).zip(four) {
                        bytes.copy_from_slice(&token.to_be_bytes());
                    }
                }
                for (slot, token) in slots
                    .into_remainder()
                    .chunks_exact_mut(8)
                    .zip(tokens.remainder())
                {
                    slot.copy_from_slice(&token.to_be_bytes());
                }
                hasher.update(bytes);
            }
        }
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
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
