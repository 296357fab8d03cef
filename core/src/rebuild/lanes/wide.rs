//! SHA-256 of sixteen messages at once, on AVX-512: each 512-bit register holds one state
//! word (or one message word) of all sixteen.
//!
//! Where the SHA extensions' round instruction is limited by how often it may start, not by
//! its latency (Intel's cores here: four messages interleaved 86 us a message of 149 KiB,
//! one alone 107 us), interleaving does little; the rounds written out in vector
//! instructions, sixteen messages a register, take 59 us a message. That pays only with most
//! lanes full, and not on every CPU (where 512-bit instructions run as two halves, the SHA
//! extensions stay faster), so whether and from how many messages on is measured once, on
//! the machine itself ([`min_lanes`]).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{LANES, State, compress_many};

/// Messages hashed at once.
pub(crate) const WIDE_LANES: usize = 16;

/// From how many messages on hashing them sixteen at once is the faster here (`None`: never,
/// or no AVX-512). Measured the first time it is asked: sixteen 8 KiB messages at once
/// against four at a time on the SHA extensions, the best of five runs each (~1 ms in all).
pub(crate) fn min_lanes() -> Option<usize> {
    static MIN_LANES: OnceLock<Option<usize>> = OnceLock::new();
    *MIN_LANES.get_or_init(|| {
        if !supported() {
            return None;
        }
        let message = vec![0x5au8; 8 << 10];
        let best = |hash: &dyn Fn()| {
            (0..5)
                .map(|_| {
                    let started = Instant::now();
                    hash();
                    started.elapsed()
                })
                .min()
                .unwrap_or(Duration::MAX)
        };
        let wide = best(&|| {
            let mut states = [State::new(); WIDE_LANES];
            compress(&mut states, [&message[..]; WIDE_LANES]);
            std::hint::black_box(states);
        });
        let narrow = best(&|| {
            for _ in 0..WIDE_LANES / LANES {
                let mut states = [State::new(); LANES];
                compress_many(&mut states, &[&message[..]; LANES]);
                std::hint::black_box(states);
            }
        });
        // A step of sixteen lanes costs `wide`, whatever number of them is in use; each
        // message hashed narrow costs a sixteenth of `narrow`.
        let lanes = (wide.as_secs_f64() * WIDE_LANES as f64 / narrow.as_secs_f64().max(1e-9))
            .floor() as usize
            + 1;
        (lanes <= WIDE_LANES).then_some(lanes.max(2))
    })
}

/// Whether this CPU has the instructions [`compress`] uses.
pub(crate) fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Hash `blocks[i]` (whole 64-byte blocks, as many in each) into `states[i]`, sixteen
/// messages at once. Without AVX-512 (see [`supported`]), one after the other.
pub(crate) fn compress(states: &mut [State; WIDE_LANES], blocks: [&[u8]; WIDE_LANES]) {
    // Checked always: the vector loads read every lane as long as the first one.
    assert!(
        blocks
            .iter()
            .all(|b| b.len() == blocks[0].len() && b.len() % 64 == 0),
        "sixteen lanes of whole blocks, as many in each"
    );
    #[cfg(target_arch = "x86_64")]
    if supported() {
        // SAFETY: the CPU has AVX-512F and AVX-512BW (checked just above); the blocks are
        // whole and as many in each (asserted above).
        unsafe { avx512::compress(states, blocks) };
        return;
    }
    for (state, blocks) in states.iter_mut().zip(blocks) {
        state.compress(blocks);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::{K, State};
    use super::WIDE_LANES;

    /// Blocks ahead of the one being hashed that each lane's bytes are asked for: sixteen
    /// streams at once, last touched at their rollouts' appends, are more than the
    /// hardware's prefetching follows. Measured in the live benchmark (three alternating
    /// pairs): a digest 57–64 µs an append against 63–72 µs without; 4 or 16 ahead no
    /// different from 8.
    const PREFETCH_AHEAD: usize = 8;

    /// Rows to columns: word `j` of register `i` becomes word `i` of register `j`.
    #[target_feature(enable = "avx512f")]
    fn transpose(rows: [__m512i; 16]) -> [__m512i; 16] {
        // 32-bit words, then 64-bit pairs, interleaved within each 128-bit quarter: quarter
        // `q` of `pairs[4k + m]` holds word `4q + m` of rows 4k..4k+4.
        let mut words = [_mm512_setzero_si512(); 16];
        for k in 0..8 {
            words[2 * k] = _mm512_unpacklo_epi32(rows[2 * k], rows[2 * k + 1]);
            words[2 * k + 1] = _mm512_unpackhi_epi32(rows[2 * k], rows[2 * k + 1]);
        }
        let mut pairs = [_mm512_setzero_si512(); 16];
        for k in 0..4 {
            pairs[4 * k] = _mm512_unpacklo_epi64(words[4 * k], words[4 * k + 2]);
            pairs[4 * k + 1] = _mm512_unpackhi_epi64(words[4 * k], words[4 * k + 2]);
            pairs[4 * k + 2] = _mm512_unpacklo_epi64(words[4 * k + 1], words[4 * k + 3]);
            pairs[4 * k + 3] = _mm512_unpackhi_epi64(words[4 * k + 1], words[4 * k + 3]);
        }
        // Then the quarters, a 4 × 4 transpose of 128-bit parts for each `m`.
        let mut columns = [_mm512_setzero_si512(); 16];
        for m in 0..4 {
            let low01 = _mm512_shuffle_i32x4::<0x44>(pairs[m], pairs[4 + m]);
            let high01 = _mm512_shuffle_i32x4::<0xEE>(pairs[m], pairs[4 + m]);
            let low23 = _mm512_shuffle_i32x4::<0x44>(pairs[8 + m], pairs[12 + m]);
            let high23 = _mm512_shuffle_i32x4::<0xEE>(pairs[8 + m], pairs[12 + m]);
            columns[m] = _mm512_shuffle_i32x4::<0x88>(low01, low23);
            columns[4 + m] = _mm512_shuffle_i32x4::<0xDD>(low01, low23);
            columns[8 + m] = _mm512_shuffle_i32x4::<0x88>(high01, high23);
            columns[12 + m] = _mm512_shuffle_i32x4::<0xDD>(high01, high23);
        }
        columns
    }

    /// `a ^ b ^ c`.
    #[target_feature(enable = "avx512f")]
    fn xor3(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
        _mm512_ternarylogic_epi32::<0x96>(a, b, c)
    }

    /// `a + b + c + d`.
    #[target_feature(enable = "avx512f")]
    fn add4(a: __m512i, b: __m512i, c: __m512i, d: __m512i) -> __m512i {
        _mm512_add_epi32(_mm512_add_epi32(a, b), _mm512_add_epi32(c, d))
    }

    /// The schedule's next word in place of `w[t]` (`t` below 16: the word sixteen before it).
    #[target_feature(enable = "avx512f")]
    fn schedule(w: &mut [__m512i; 16], t: usize) {
        let w15 = w[(t + 1) % 16];
        let w2 = w[(t + 14) % 16];
        let small0 = xor3(
            _mm512_ror_epi32::<7>(w15),
            _mm512_ror_epi32::<18>(w15),
            _mm512_srli_epi32::<3>(w15),
        );
        let small1 = xor3(
            _mm512_ror_epi32::<17>(w2),
            _mm512_ror_epi32::<19>(w2),
            _mm512_srli_epi32::<10>(w2),
        );
        w[t % 16] = add4(w[t % 16], small0, w[(t + 9) % 16], small1);
    }

    /// One round on the working words named in their roles' order (`a` to `h`): the new
    /// `e` is written into `d`'s, the new `a` into `h`'s, and the next round names them one
    /// role further on.
    macro_rules! round {
        ($w:expr, $k:expr, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident) => {
            let sum1 = xor3(
                _mm512_ror_epi32::<6>($e),
                _mm512_ror_epi32::<11>($e),
                _mm512_ror_epi32::<25>($e),
            );
            // Choose: f where e has a one, g where it has a zero.
            let choose = _mm512_ternarylogic_epi32::<0xCA>($e, $f, $g);
            let t1 = add4(
                $h,
                sum1,
                choose,
                _mm512_add_epi32($w, _mm512_set1_epi32($k as i32)),
            );
            let sum0 = xor3(
                _mm512_ror_epi32::<2>($a),
                _mm512_ror_epi32::<13>($a),
                _mm512_ror_epi32::<22>($a),
            );
            let majority = _mm512_ternarylogic_epi32::<0xE8>($a, $b, $c);
            $d = _mm512_add_epi32($d, t1);
            $h = _mm512_add_epi32(t1, _mm512_add_epi32(sum0, majority));
        };
    }

    /// Sixteen rounds with the constants `$k`, the schedule's next sixteen words computed
    /// first when `$schedule`; the working words end in the roles they began in.
    macro_rules! sixteen_rounds {
        ($w:ident, $k:expr, [$a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident], $schedule:expr) => {
            let k: &[u32] = $k;
            macro_rules! step {
                ($t:literal, $a2:ident, $b2:ident, $c2:ident, $d2:ident, $e2:ident, $f2:ident, $g2:ident, $h2:ident) => {
                    if $schedule {
                        schedule(&mut $w, $t);
                    }
                    round!($w[$t], k[$t], $a2, $b2, $c2, $d2, $e2, $f2, $g2, $h2);
                };
            }
            step!(0, $a, $b, $c, $d, $e, $f, $g, $h);
            step!(1, $h, $a, $b, $c, $d, $e, $f, $g);
            step!(2, $g, $h, $a, $b, $c, $d, $e, $f);
            step!(3, $f, $g, $h, $a, $b, $c, $d, $e);
            step!(4, $e, $f, $g, $h, $a, $b, $c, $d);
            step!(5, $d, $e, $f, $g, $h, $a, $b, $c);
            step!(6, $c, $d, $e, $f, $g, $h, $a, $b);
            step!(7, $b, $c, $d, $e, $f, $g, $h, $a);
            step!(8, $a, $b, $c, $d, $e, $f, $g, $h);
            step!(9, $h, $a, $b, $c, $d, $e, $f, $g);
            step!(10, $g, $h, $a, $b, $c, $d, $e, $f);
            step!(11, $f, $g, $h, $a, $b, $c, $d, $e);
            step!(12, $e, $f, $g, $h, $a, $b, $c, $d);
            step!(13, $d, $e, $f, $g, $h, $a, $b, $c);
            step!(14, $c, $d, $e, $f, $g, $h, $a, $b);
            step!(15, $b, $c, $d, $e, $f, $g, $h, $a);
        };
    }

    /// Hash the blocks of `blocks[i]` into `states[i]`.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512BW; the blocks must be whole, as many in each.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn compress(states: &mut [State; WIDE_LANES], blocks: [&[u8]; WIDE_LANES]) {
        let mut state: [__m512i; 8] = std::array::from_fn(|word| {
            let column: [u32; WIDE_LANES] = std::array::from_fn(|lane| states[lane].0[word]);
            // SAFETY: a 64-byte read of a 64-byte array.
            unsafe { _mm512_loadu_si512(column.as_ptr().cast()) }
        });
        // Each 32-bit word's bytes reversed (the message is big-endian).
        let swap =
            _mm512_broadcast_i32x4(_mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203));
        for block in 0..blocks[0].len() / 64 {
            // (Past a lane's last block the address is outside its bytes: `wrapping_add`
            // makes no claim on it, and a prefetch is a hint that never faults.)
            for lane in blocks {
                _mm_prefetch::<_MM_HINT_T0>(
                    lane.as_ptr()
                        .wrapping_add(64 * (block + PREFETCH_AHEAD))
                        .cast(),
                );
            }
            let rows: [__m512i; 16] = std::array::from_fn(|lane| {
                // SAFETY: block `block` of each lane's blocks is whole (the caller's promise).
                let bytes =
                    unsafe { _mm512_loadu_si512(blocks[lane].as_ptr().add(64 * block).cast()) };
                _mm512_shuffle_epi8(bytes, swap)
            });
            let mut w = transpose(rows);
            let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = state;
            // Written out sixteen rounds at a time, the eight working words renamed from one
            // round to the next instead of moved: the schedule's words stay in registers and
            // no round spends instructions on copies (a loop over the rounds took 51 us a
            // 149 KiB message against 47).
            sixteen_rounds!(w, &K[..16], [a, b, c, d, e, f, g, h], false);
            for group in 1..4 {
                sixteen_rounds!(
                    w,
                    &K[16 * group..16 * group + 16],
                    [a, b, c, d, e, f, g, h],
                    true
                );
            }
            for (word, new) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
                *word = _mm512_add_epi32(*word, new);
            }
        }
        for (word, register) in state.iter().enumerate() {
            let mut column = [0u32; WIDE_LANES];
            // SAFETY: a 64-byte write into a 64-byte array.
            unsafe { _mm512_storeu_si512(column.as_mut_ptr().cast(), *register) };
            for (lane, value) in column.into_iter().enumerate() {
                states[lane].0[word] = value;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use sha2::Digest;

    use super::*;

    #[test]
    fn sixteen_at_once_is_sha256_of_each() {
        let mut rng = tokscope_testkit::Rng::new(7);
        for blocks in [1, 2, 5, 33] {
            // Different bytes in every lane: a lane mixed up with another shows.
            let messages: Vec<Vec<u8>> = (0..WIDE_LANES)
                .map(|_| (0..blocks * 64).map(|_| rng.next_u64() as u8).collect())
                .collect();
            // And a state of its own in every lane (a message's later blocks): a lane's state
            // read or written in another's place shows too.
            let starts: [State; WIDE_LANES] = std::array::from_fn(|lane| {
                let mut state = State::new();
                state.compress(&[lane as u8; 64]);
                state
            });
            let mut states = starts;
            compress(&mut states, std::array::from_fn(|lane| &messages[lane][..]));
            for (lane, (state, message)) in states.iter().zip(&messages).enumerate() {
                let mut alone = starts[lane];
                alone.compress(message);
                assert_eq!(state.0, alone.0, "{blocks} blocks, lane {lane}");
            }
        }
        // And against the `sha2` crate, padding included.
        let message = b"abc";
        let mut block = [0u8; 64];
        block[..3].copy_from_slice(message);
        block[3] = 0x80;
        block[63] = 24;
        let mut states = [State::new(); WIDE_LANES];
        compress(&mut states, [&block[..]; WIDE_LANES]);
        assert!(
            states
                .iter()
                .all(|state| state.bytes()[..] == sha2::Sha256::digest(message)[..])
        );
        eprintln!(
            "AVX-512 here: {}; sixteen at once from {:?} messages on",
            supported(),
            min_lanes()
        );
    }
}
