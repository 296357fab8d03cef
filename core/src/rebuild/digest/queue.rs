//! The queue that hashes many messages at once: sixteen lanes while enough are left, a lane
//! refilled as soon as its message ends, then four at a time (or, asked to, the rest left
//! for later, where each stopped).

use std::borrow::Cow;

use super::super::lanes::wide::WIDE_LANES;
use super::super::lanes::{LANES, State};
use super::{compress_step, header_into, pad};

/// A message being hashed: its state, and its runs of whole blocks still to hash.
struct Job<'a> {
    /// Its place among the messages.
    message: usize,
    /// The hash of its blocks hashed so far.
    state: State,
    /// The runs left, the first one's hashed bytes cut off.
    runs: std::collections::VecDeque<&'a [u8]>,
}

impl<'a> Job<'a> {
    /// The bytes to hash next, of one run (empty once all are hashed).
    fn pending(&self) -> &'a [u8] {
        self.runs.front().copied().unwrap_or_default()
    }

    /// `step` bytes of [`Job::pending`] hashed.
    fn advance(&mut self, step: usize) {
        if let Some(run) = self.runs.front_mut() {
            *run = &run[step..];
            if run.is_empty() {
                self.runs.pop_front();
            }
        }
    }

    /// The first `bytes` of the runs hashed already (where a message's hashing stopped).
    fn skip(&mut self, mut bytes: usize) {
        debug_assert!(
            bytes.is_multiple_of(64) && bytes < self.left(),
            "a message stops after whole blocks, before its end"
        );
        while bytes > 0 {
            let step = bytes.min(self.pending().len());
            if step == 0 {
                break;
            }
            self.advance(step);
            bytes -= step;
        }
    }

    /// Bytes still to hash.
    fn left(&self) -> usize {
        self.runs.iter().map(|run| run.len()).sum()
    }
}

/// One [`compress_step`] of `jobs`: each one with bytes left hashes as many as the one with
/// the fewest.
fn step_jobs(jobs: &mut [Job<'_>], wide_from: Option<usize>) -> Option<(usize, usize, bool)> {
    // On the stack: a step is taken for every run's end in any lane.
    debug_assert!(jobs.len() <= WIDE_LANES);
    let mut pending: [&[u8]; WIDE_LANES] = [&[]; WIDE_LANES];
    let mut states = [State::new(); WIDE_LANES];
    for (at, job) in jobs.iter().enumerate() {
        pending[at] = job.pending();
        states[at] = job.state;
    }
    let (pending, states) = (&pending[..jobs.len()], &mut states[..jobs.len()]);
    let (step, hashed, wide) = compress_step(states, pending, wide_from)?;
    for (job, &state) in jobs.iter_mut().zip(states.iter()) {
        if !job.pending().is_empty() {
            job.state = state;
            job.advance(step);
        }
    }
    Some((step, hashed, wide))
}

/// Where a message's hashing stopped: the state after its first `done` bytes (whole
/// blocks of the SHA-256 message, header and padding included).
#[derive(Clone, Copy)]
pub(crate) struct Resume {
    pub(crate) state: State,
    pub(crate) done: usize,
}

/// Hash messages given as runs of whole blocks, each from where `starts` says it stopped
/// (`None`: its start): sixteen at a time while at least `wide_from` are left (a lane
/// refilled from the others as soon as its message ends; `None`: never), then up to
/// [`LANES`] at a time, their rounds interleaved — or, with `carry_tail`, the lanes run
/// only while as many are full as at the start (all sixteen, given that many messages),
/// and the ones left then are not finished: where each stopped comes back instead, for a
/// later call to take on beside other messages (a lane left empty costs as much as a full
/// one, and four at a time run at half the speed).
pub(super) fn hash_messages(
    messages: &[Vec<Cow<'_, [u8]>>],
    starts: &[Option<Resume>],
    wide_from: Option<usize>,
    carry_tail: bool,
) -> Vec<Result<[u8; 32], Resume>> {
    debug_assert!(messages.iter().flatten().all(|run| !run.is_empty()));
    debug_assert_eq!(messages.len(), starts.len());
    let mut jobs: Vec<Job<'_>> = messages
        .iter()
        .zip(starts)
        .enumerate()
        .map(|(message, (runs, start))| {
            let mut job = Job {
                message,
                state: State::new(),
                runs: runs.iter().map(|run| &run[..]).collect(),
            };
            if let Some(start) = start {
                job.state = start.state;
                job.skip(start.done);
            }
            job
        })
        .collect();
    let length = |message: usize| messages[message].iter().map(|run| run.len()).sum::<usize>();
    let mut out: Vec<Result<[u8; 32], Resume>> = vec![Ok([0u8; 32]); messages.len()];
    // Bytes hashed beside other messages, and of those sixteen lanes at a time.
    let (mut together, mut wide_bytes) = (0usize, 0usize);
    if let Some(wide_from) = wide_from.filter(|&from| jobs.len() >= from) {
        // Longest first: the messages left to the narrow lanes at the end are short ones.
        jobs.sort_by_key(|job| std::cmp::Reverse(job.left()));
        // Carrying, no step is taken with fewer lanes full than the call began with (all
        // sixteen, given that many): what is left waits for the next call's messages to
        // fill them. Measured in the live benchmark (35 rollouts written): run down to
        // `wide_from` (8 here), the lanes were 72% full on average and a digest took
        // 82–88 µs an append; run full, 62–65 µs.
        debug_assert!(wide_from <= WIDE_LANES, "no more lanes than there are");
        let began_with = jobs.len().min(WIDE_LANES);
        let run_from = if carry_tail {
            wide_from.max(began_with)
        } else {
            wide_from
        };
        let mut queue = std::mem::take(&mut jobs).into_iter();
        let mut lanes: Vec<Job<'_>> = Vec::with_capacity(WIDE_LANES);
        loop {
            lanes.extend(queue.by_ref().take(WIDE_LANES - lanes.len()));
            if lanes.len() < run_from {
                break;
            }
            #[cfg(test)]
            if lanes.len() < began_with {
                super::SHORT_STEPS.set(super::SHORT_STEPS.get() + 1);
            }
            let Some((step, hashed, wide)) = step_jobs(&mut lanes, Some(wide_from)) else {
                break;
            };
            debug_assert!(wide);
            wide_bytes += step * hashed;
            lanes.retain(|job| {
                let done = job.runs.is_empty();
                if done {
                    out[job.message] = Ok(job.state.bytes());
                }
                !done
            });
        }
        jobs = lanes;
        jobs.extend(queue);
        if carry_tail {
            for job in &jobs {
                out[job.message] = Err(Resume {
                    state: job.state,
                    done: length(job.message) - job.left(),
                });
            }
            jobs.clear();
        }
    }
    // Messages of like lengths together: a lane whose message ends early leaves the others
    // to go on with fewer lanes.
    jobs.sort_by_key(Job::left);
    for group in jobs.chunks_mut(LANES) {
        while let Some((step, hashed, _)) = step_jobs(group, None) {
            together += step * hashed;
        }
        for job in group.iter() {
            out[job.message] = Ok(job.state.bytes());
        }
    }
    // Counted in tokens, the headers and padding (at most 96 bytes a message) left out.
    let tokens: usize = (0..messages.len())
        .map(|message| (length(message) / 8).saturating_sub(12))
        .sum();
    crate::work::count(|work| {
        work.tokens_hashed_together += ((together + wide_bytes) / 8).min(tokens) as u64;
        work.tokens_hashed_wide += (wide_bytes / 8).min(tokens) as u64;
    });
    out
}

/// The SHA-256 message of a sequence kept encoded, as runs of whole blocks: the header with
/// the body's first bytes, the body's whole blocks after them (in place, not copied), and
/// the body's last bytes with the padding.
pub(super) fn encoded_blocks(body: &[u8]) -> Vec<Cow<'_, [u8]>> {
    // The header and the body's first bytes fill at most two blocks with the padding, the
    // body's last bytes with it two: each allocated once.
    let mut head = Vec::with_capacity(128);
    header_into(&mut head, body.len() / 8);
    let len = (head.len() + body.len()) as u64;
    let lead = ((64 - head.len() % 64) % 64).min(body.len());
    head.extend_from_slice(&body[..lead]);
    if !head.len().is_multiple_of(64) {
        // The body ends inside the first block: the padding follows it there.
        pad(&mut head, len);
        return vec![Cow::Owned(head)];
    }
    let whole = (body.len() - lead) / 64 * 64;
    let mut tail = Vec::with_capacity(128);
    tail.extend_from_slice(&body[lead + whole..]);
    pad(&mut tail, len);
    let mut runs = vec![Cow::Owned(head)];
    if whole > 0 {
        runs.push(Cow::Borrowed(&body[lead..lead + whole]));
    }
    runs.push(Cow::Owned(tail));
    runs
}
