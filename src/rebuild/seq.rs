//! Shared, append-only token sequences.
//!
//! A rollout's calls repeat their ancestors' tokens: every prompt extends the previous call's
//! prompt and generation. Copying those prefixes per call would make rebuilding quadratic in
//! the rollout's length, so a [`TokenSeq`] is a persistent rope: an immutable prefix shared by
//! reference plus one chunk of its own. Appending is O(1) and never copies tokens.

use std::sync::Arc;

/// An immutable token sequence built from shared chunks. Cloning is O(1).
#[derive(Clone, Default)]
pub struct TokenSeq(Option<Arc<SeqNode>>);

struct SeqNode {
    prefix: TokenSeq,
    chunk: Arc<[u32]>,
    len: usize,
}

impl TokenSeq {
    /// The empty sequence.
    pub fn new() -> Self {
        TokenSeq(None)
    }

    /// A sequence holding exactly `chunk`.
    pub fn from_chunk(chunk: Arc<[u32]>) -> Self {
        TokenSeq::new().append(chunk)
    }

    /// This sequence followed by `chunk`; empty chunks add no node.
    pub fn append(&self, chunk: Arc<[u32]>) -> Self {
        if chunk.is_empty() {
            return self.clone();
        }
        let len = self.len() + chunk.len();
        TokenSeq(Some(Arc::new(SeqNode {
            prefix: self.clone(),
            chunk,
            len,
        })))
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
    pub fn chunks(&self) -> Vec<&[u32]> {
        let mut out = Vec::new();
        let mut current = self.0.as_deref();
        while let Some(node) = current {
            out.push(&node.chunk[..]);
            current = node.prefix.0.as_deref();
        }
        out.reverse();
        out
    }

    /// Iterate over the first `n` tokens (all of them when `n >= len`) chunk by chunk.
    pub fn chunks_up_to(&self, n: usize) -> impl Iterator<Item = &[u32]> {
        let mut remaining = n.min(self.len());
        self.chunks().into_iter().map_while(move |chunk| {
            if remaining == 0 {
                return None;
            }
            let take = remaining.min(chunk.len());
            remaining -= take;
            Some(&chunk[..take])
        })
    }

    /// Iterate over every token.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.chunks()
            .into_iter()
            .flat_map(|chunk| chunk.iter().copied())
    }

    /// Copy the tokens into one vector (for small sequences, tests and display).
    pub fn to_vec(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len());
        for chunk in self.chunks() {
            out.extend_from_slice(chunk);
        }
        out
    }

    /// The token at `index`, if any. O(number of chunks).
    pub fn get(&self, index: usize) -> Option<u32> {
        let mut current = self.0.as_deref();
        while let Some(node) = current {
            let start = node.len - node.chunk.len();
            if index >= node.len {
                return None;
            }
            if index >= start {
                return Some(node.chunk[index - start]);
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

    /// Length of the common prefix of `self` and `other`, looking at most `limit` tokens.
    pub fn common_prefix_len(&self, other: &TokenSeq, limit: usize) -> usize {
        let limit = limit.min(self.len()).min(other.len());
        if limit == 0 {
            return 0;
        }
        if let Some(shared) = self.shared_prefix_len(other)
            && shared >= limit
        {
            return limit;
        }
        let left = self.chunks();
        let right = other.chunks();
        let (mut li, mut lo, mut ri, mut ro, mut matched) = (0, 0, 0, 0, 0);
        while matched < limit {
            let a = &left[li][lo..];
            let b = &right[ri][ro..];
            let n = a.len().min(b.len()).min(limit - matched);
            if a[..n] != b[..n] {
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
    pub fn ptr_eq(&self, other: &TokenSeq) -> bool {
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

impl From<Vec<u32>> for TokenSeq {
    fn from(tokens: Vec<u32>) -> Self {
        TokenSeq::from_chunk(tokens.into())
    }
}

impl serde::Serialize for TokenSeq {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for chunk in self.chunks() {
            for token in chunk {
                seq.serialize_element(token)?;
            }
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(parts: &[&[u32]]) -> TokenSeq {
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
    fn chunks_up_to_truncates() {
        let s = seq(&[&[1, 2], &[3, 4]]);
        let got: Vec<Vec<u32>> = s.chunks_up_to(3).map(|c| c.to_vec()).collect();
        assert_eq!(got, vec![vec![1, 2], vec![3]]);
        assert_eq!(s.chunks_up_to(0).count(), 0);
    }
}
