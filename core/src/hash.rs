//! Maps and sets keyed by what a store holds (call ids, rollout locations, line ranges) on
//! the hot paths of reading and following it, hashed with foldhash (randomly seeded)
//! instead of SipHash: hashing those short keys was 2% of a live append and more of the first
//! scan, and foldhash takes half of that or less.

/// A [`std::collections::HashMap`] with the fast hasher (made with `default()`).
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A [`std::collections::HashSet`] with the fast hasher (made with `default()`).
pub type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
