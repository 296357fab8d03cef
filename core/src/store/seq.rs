//! Shared, append-only token sequences.
//!
//! A rollout's calls repeat their ancestors' tokens: every prompt extends the previous call's
//! prompt and generation. Copying those prefixes per call would make rebuilding quadratic in
//! the rollout's length, so a [`TokenSeq`] is a persistent rope: an immutable prefix shared by
//! reference plus one chunk of its own. Appending is O(1) and never copies tokens.
//!
//! A record's prompt is one too: a full prompt that repeats its parent's prompt and generation
//! shares their chunks instead of holding a copy.
//!
//! Ids are 64 bits, as the reference takes them. A chunk that came from a record holding a
//! negative id is *signed*: its values are two's-complement `i64`, read back exactly by
//! [`TokenSeq::values`] (and refused by the digest, as the reference refuses them).

use std::sync::Arc;

/// An immutable token sequence built from shared chunks. Cloning is O(1).
#[derive(Clone, Default)]
pub struct TokenSeq(Option<Arc<SeqNode>>);

struct SeqNode {
    prefix: TokenSeq,
    chunk: Arc<[u64]>,
    /// The chunk's values are two's-complement `i64` (its record holds a negative id).
    signed: bool,
    /// This node or one before it is signed (most sequences have none to look for).
    any_signed: bool,
    len: usize,
}

/// A token id's exact value (an `i64` or a `u64`).
pub type TokenValue = i128;

fn value(bits: u64, signed: bool) -> TokenValue {
    if signed {
        TokenValue::from(bits as i64)
    } else {
        TokenValue::from(bits)
    }
}

impl TokenSeq {
    /// The empty sequence.
    pub fn new() -> Self {
        TokenSeq(None)
    }

    /// A sequence holding exactly `chunk` (non-negative ids).
    pub(crate) fn from_chunk(chunk: Arc<[u64]>) -> Self {
        TokenSeq::new().append(chunk)
    }

    /// A sequence holding a record's ids (`signed`: the record holds a negative id).
    pub fn from_ids(chunk: Arc<[u64]>, signed: bool) -> Self {
        TokenSeq::new().append_ids(chunk, signed)
    }

    /// This sequence followed by `chunk` (non-negative ids); empty chunks add no node.
    pub fn append(&self, chunk: Arc<[u64]>) -> Self {
        self.append_ids(chunk, false)
    }

    /// This sequence followed by a record's ids (`signed`: the record holds a negative id).
    pub(crate) fn append_ids(&self, chunk: Arc<[u64]>, signed: bool) -> Self {
        if chunk.is_empty() {
            return self.clone();
        }
        let len = self.len() + chunk.len();
        let any_signed = signed || self.0.as_ref().is_some_and(|node| node.any_signed);
        TokenSeq(Some(Arc::new(SeqNode {
            prefix: self.clone(),
            chunk,
            signed,
            any_signed,
            len,
        })))
    }

    /// This sequence followed by all of `other` (sharing its chunks).
    pub(crate) fn concat(&self, other: &TokenSeq) -> TokenSeq {
        other.nodes().into_iter().fold(self.clone(), |out, node| {
            out.append_ids(Arc::clone(&node.chunk), node.signed)
        })
    }

    /// Length of the last chunk (of a record's prompt: the ids it adds to those it shares).
    pub(crate) fn last_chunk_len(&self) -> usize {
        self.0.as_ref().map_or(0, |node| node.chunk.len())
    }

    /// This sequence followed by `source[start..end]`, copied chunk by chunk (each part keeps
    /// its chunk's signedness).
    pub(crate) fn append_range(&self, source: &TokenSeq, start: usize, end: usize) -> TokenSeq {
        let mut out = self.clone();
        let mut offset = 0;
        for node in source.nodes() {
            let (low, high) = (offset, offset + node.chunk.len());
            offset = high;
            let (a, b) = (start.max(low), end.min(high));
            if a < b {
                out = out.append_ids(node.chunk[a - low..b - low].into(), node.signed);
            }
            if high >= end {
                break;
            }
        }
        out
    }

    /// The chunks in order with their signedness.
    fn nodes(&self) -> Vec<&SeqNode> {
        self.nodes_after(0)
    }

    /// The nodes after the first `start` tokens, in order, where `start` is the end of one of
    /// this sequence's nodes (or 0): only the nodes after it are walked.
    fn nodes_after(&self, start: usize) -> Vec<&SeqNode> {
        let mut out = Vec::new();
        let mut current = self.0.as_deref();
        while let Some(node) = current.filter(|node| node.len > start) {
            out.push(node);
            current = node.prefix.0.as_deref();
        }
        out.reverse();
        out
    }

    /// Every token's exact value (negative ids included).
    pub fn values(&self) -> impl Iterator<Item = TokenValue> + '_ {
        self.nodes()
            .into_iter()
            .flat_map(|node| node.chunk.iter().map(move |&bits| value(bits, node.signed)))
    }

    /// The exact values of tokens `start..end` (whole chunks before `start` are skipped, not
    /// walked: a frame of a million-token chain costs the tokens it shows).
    pub fn values_range(&self, start: usize, end: usize) -> Vec<TokenValue> {
        let end = end.min(self.len());
        let mut out = Vec::with_capacity(end.saturating_sub(start));
        let mut offset = 0;
        for node in self.nodes() {
            let (low, high) = (offset, offset + node.chunk.len());
            offset = high;
            let (a, b) = (start.max(low), end.min(high));
            if a < b {
                out.extend(
                    node.chunk[a - low..b - low]
                        .iter()
                        .map(|&t| value(t, node.signed)),
                );
            }
            if high >= end {
                break;
            }
        }
        out
    }

    /// The exact value of the token at `index`, if any.
    pub fn value(&self, index: usize) -> Option<TokenValue> {
        self.locate(index)
            .map(|(node, at)| value(node.chunk[at], node.signed))
    }

    /// The first negative id among the first `n` tokens, if any (what makes the reference's
    /// digest of them fail).
    pub(crate) fn first_negative(&self, n: usize) -> Option<i64> {
        if !self.0.as_ref().is_some_and(|node| node.any_signed) {
            return None;
        }
        let mut left = n.min(self.len());
        for node in self.nodes() {
            if left == 0 {
                break;
            }
            let take = left.min(node.chunk.len());
            left -= take;
            if node.signed
                && let Some(&bits) = node.chunk[..take].iter().find(|&&b| (b as i64) < 0)
            {
                return Some(bits as i64);
            }
        }
        None
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |node| node.len)
    }

    /// Whether the sequence holds no token.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunks in order; concatenated they are the sequence.
    pub(crate) fn chunks(&self) -> Vec<&[u64]> {
        self.chunks_after(0)
    }

    /// The chunks after the first `start` tokens (see [`TokenSeq::nodes_after`]).
    fn chunks_after(&self, start: usize) -> Vec<&[u64]> {
        let nodes = self.nodes_after(start);
        nodes.into_iter().map(|node| &node.chunk[..]).collect()
    }

    /// The token arrays this sequence is made of, in order, when there are at most `max`.
    pub(crate) fn few_chunks(&self, max: usize) -> Option<Vec<Arc<[u64]>>> {
        let mut out = Vec::new();
        let mut current = self.0.as_deref();
        while let Some(node) = current {
            if out.len() == max {
                return None;
            }
            out.push(Arc::clone(&node.chunk));
            current = node.prefix.0.as_deref();
        }
        out.reverse();
        Some(out)
    }

    /// The first `n` tokens (all of them when `n >= len`) as consecutive chunks.
    pub(crate) fn prefix_chunks(&self, n: usize) -> Vec<&[u64]> {
        let mut chunks = self.chunks();
        let mut remaining = n.min(self.len());
        chunks.retain_mut(|chunk| {
            let take = remaining.min(chunk.len());
            remaining -= take;
            *chunk = &chunk[..take];
            take > 0
        });
        chunks
    }

    /// Iterate over every token's 64 bits (see [`TokenSeq::values`] for exact values).
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.chunks()
            .into_iter()
            .flat_map(|chunk| chunk.iter().copied())
    }

    /// Copy the tokens into one vector (for small sequences, tests and display).
    pub fn to_vec(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len());
        for chunk in self.chunks() {
            out.extend_from_slice(chunk);
        }
        out
    }

    /// The token's 64 bits at `index`, if any. O(number of chunks).
    pub fn get(&self, index: usize) -> Option<u64> {
        self.locate(index).map(|(node, at)| node.chunk[at])
    }

    /// The chunk holding the token at `index` and its offset there. O(number of chunks).
    fn locate(&self, index: usize) -> Option<(&SeqNode, usize)> {
        let mut current = self.0.as_deref();
        while let Some(node) = current {
            let start = node.len - node.chunk.len();
            if index >= node.len {
                return None;
            }
            if index >= start {
                return Some((node, index - start));
            }
            current = node.prefix.0.as_deref();
        }
        None
    }

    /// Whether the first `other.len()` tokens of `self` equal `other`.
    ///
    /// Sequences that share the same prefix node compare in O(depth) without touching tokens.
    pub fn starts_with(&self, other: &TokenSeq) -> bool {
        self.common_prefix_len(other, other.len()) == other.len()
    }

    /// Whether both are the very same sequence (one node: equal without a token compared).
    pub(crate) fn is_same(&self, other: &TokenSeq) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Hand the tokens past `start`, in order, to `each`, a run of one array at a time.
    pub(crate) fn for_each_after(&self, start: usize, mut each: impl FnMut(&[u64])) {
        for node in self.nodes_after(start) {
            let begins = node.len - node.chunk.len();
            each(&node.chunk[start.saturating_sub(begins)..]);
        }
    }

    /// Whether `self` starts with `other` because it is made of `other`'s very arrays up to
    /// `other`'s length (a prompt that repeats its parent's prompt and generation): pointers
    /// only, no token compared. `false` says nothing either way.
    pub(crate) fn starts_with_same_arrays(&self, other: &TokenSeq) -> bool {
        let mut mine = self.0.as_deref();
        while let Some(node) = mine.filter(|node| node.len > other.len()) {
            mine = node.prefix.0.as_deref();
        }
        let mut theirs = other.0.as_deref();
        loop {
            match (mine, theirs) {
                (None, None) => return true,
                (Some(a), Some(b)) if std::ptr::eq(a, b) => return true,
                (Some(a), Some(b)) if a.len == b.len && Arc::ptr_eq(&a.chunk, &b.chunk) => {
                    mine = a.prefix.0.as_deref();
                    theirs = b.prefix.0.as_deref();
                }
                _ => return false,
            }
        }
    }

    /// Length of the common prefix of `self` and `other`, looking at most `limit` tokens.
    pub(crate) fn common_prefix_len(&self, other: &TokenSeq, limit: usize) -> usize {
        let limit = limit.min(self.len()).min(other.len());
        if limit == 0 {
            return 0;
        }
        let shared = self.shared_prefix_len(other).unwrap_or(0);
        if shared >= limit {
            return limit;
        }
        // Both have a chunk boundary where the shared node ends: compare from there, walking
        // only the nodes after it (a prompt shares most of its parent's).
        let left = self.chunks_after(shared);
        let right = other.chunks_after(shared);
        let (mut li, mut ri, mut lo, mut ro, mut matched) = (0, 0, 0, 0, shared);
        while matched < limit {
            let a = &left[li][lo..];
            let b = &right[ri][ro..];
            let n = a.len().min(b.len()).min(limit - matched);
            // The same array at the same place (a chunk both sequences share) is equal.
            if a.as_ptr() != b.as_ptr() && a[..n] != b[..n] {
                return matched + a.iter().zip(b).take_while(|(x, y)| x == y).count();
            }
            matched += n;
            lo += n;
            ro += n;
            if lo == left[li].len() {
                li += 1;
                lo = 0;
            }
            if ro == right[ri].len() {
                ri += 1;
                ro = 0;
            }
        }
        matched
    }

    /// If both sequences reach a common node (pointer-identical), the length of that node.
    fn shared_prefix_len(&self, other: &TokenSeq) -> Option<usize> {
        let mut a = self.0.as_ref();
        let mut b = other.0.as_ref();
        while let (Some(x), Some(y)) = (a, b) {
            if Arc::ptr_eq(x, y) {
                return Some(x.len);
            }
            if x.len >= y.len {
                a = x.prefix.0.as_ref();
            } else {
                b = y.prefix.0.as_ref();
            }
        }
        None
    }
}

impl TokenSeq {
    /// Whether both are the very same shared sequence (O(1), no token compared).
    pub(crate) fn ptr_eq(&self, other: &TokenSeq) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Drop for TokenSeq {
    // The default drop recurses once per node; a 10,000-call chain would overflow the stack.
    fn drop(&mut self) {
        let mut next = self.0.take();
        while let Some(node) = next {
            match Arc::try_unwrap(node) {
                Ok(mut owned) => next = owned.prefix.0.take(),
                Err(_) => break,
            }
        }
    }
}

impl PartialEq for TokenSeq {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.starts_with(other)
    }
}

impl Eq for TokenSeq {}

impl std::fmt::Debug for TokenSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl From<Vec<u64>> for TokenSeq {
    fn from(tokens: Vec<u64>) -> Self {
        TokenSeq::from_chunk(tokens.into())
    }
}

impl serde::Serialize for TokenSeq {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for node in self.nodes() {
            for &bits in node.chunk.iter() {
                if node.signed {
                    seq.serialize_element(&(bits as i64))?;
                } else {
                    seq.serialize_element(&bits)?;
                }
            }
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(parts: &[&[u64]]) -> TokenSeq {
        parts
            .iter()
            .fold(TokenSeq::new(), |s, p| s.append(p.to_vec().into()))
    }

    #[test]
    fn append_and_read_back() {
        let s = seq(&[&[1, 2], &[], &[3], &[4, 5, 6]]);
        assert_eq!(s.len(), 6);
        assert_eq!(s.to_vec(), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(s.get(0), Some(1));
        assert_eq!(s.get(3), Some(4));
        assert_eq!(s.get(5), Some(6));
        assert_eq!(s.get(6), None);
        assert_eq!(s.chunks().len(), 3, "empty chunks add no node");
    }

    #[test]
    fn prefix_checks_shared_and_copied() {
        let parent = seq(&[&[1, 2, 3], &[4]]);
        let child = parent.append(vec![5, 6].into());
        assert!(child.starts_with(&parent));
        let copied = TokenSeq::from(vec![1, 2, 3, 4, 9]);
        assert!(copied.starts_with(&parent));
        assert!(!copied.starts_with(&child));
        assert_eq!(copied.common_prefix_len(&child, usize::MAX), 4);
        assert!(
            !parent.starts_with(&child),
            "a shorter sequence cannot start with a longer one"
        );
        assert_eq!(TokenSeq::from(vec![1, 2, 3, 4, 5, 6]), child);
    }

    #[test]
    fn same_arrays_answer_a_prefix_check_by_pointers_only() {
        let prompt = seq(&[&[1, 2], &[3]]);
        let generation: Arc<[u64]> = vec![4, 5].into();
        // The parent's cumulative sequence, and a child's prompt built anew on its arrays.
        let cumulative = prompt.append(Arc::clone(&generation));
        let child = prompt
            .append(Arc::clone(&generation))
            .append(vec![6].into());
        assert!(child.starts_with_same_arrays(&cumulative));
        assert!(child.starts_with_same_arrays(&prompt));
        assert!(child.starts_with_same_arrays(&TokenSeq::new()));
        assert!(cumulative.starts_with_same_arrays(&cumulative));
        // Equal tokens in other arrays: not known by pointers (the full check answers).
        let copied = TokenSeq::from(vec![1, 2, 3, 4, 5]);
        assert!(!child.starts_with_same_arrays(&copied));
        assert!(child.starts_with(&copied));
        // The same arrays, cut elsewhere: not a prefix by pointers.
        let shorter = prompt.append(vec![4].into());
        assert!(!child.starts_with_same_arrays(&shorter));
        assert!(
            !cumulative.starts_with_same_arrays(&child),
            "longer than self"
        );
    }

    #[test]
    fn for_each_after_hands_the_tokens_past_a_point_and_is_same_is_identity() {
        let s = seq(&[&[1, 2], &[3, 4, 5], &[6]]);
        for start in 0..8 {
            let mut out = vec![9];
            s.for_each_after(start, |tokens| out.extend_from_slice(tokens));
            let mut expected = vec![9];
            expected.extend_from_slice(&s.to_vec()[start.min(6)..]);
            assert_eq!(out, expected, "{start}");
        }
        assert!(s.is_same(&s.clone()));
        assert!(
            !s.is_same(&seq(&[&[1, 2], &[3, 4, 5], &[6]])),
            "equal, not the same"
        );
        assert!(TokenSeq::new().is_same(&TokenSeq::default()));
        assert!(!s.is_same(&TokenSeq::new()));
    }

    #[test]
    fn prefix_chunks_truncates() {
        let s = seq(&[&[1, 2], &[3, 4]]);
        let got: Vec<Vec<u64>> = s.prefix_chunks(3).iter().map(|c| c.to_vec()).collect();
        assert_eq!(got, vec![vec![1, 2], vec![3]]);
        assert!(s.prefix_chunks(0).is_empty());
        for n in 0..6 {
            let flat: Vec<u64> = s.prefix_chunks(n).concat();
            assert_eq!(flat, s.to_vec()[..n.min(4)], "{n}");
        }
    }
}
