//! tokscope's domain: read NeMo Gym token stores, rebuild rollouts exactly as the reference
//! builder does, judge them, and follow stores being written. Nothing here can reach a
//! terminal: ratatui, crossterm and clap are not among this crate's dependencies.
//!
//! Layers, lowest first: [`text`] and [`store`] read files (never write), [`rebuild`] rebuilds
//! chains, [`observe`] reads rollout rows, [`verdict`] judges a rollout like the reference
//! consumer, [`gaps`] and [`graph`] say what is missing, [`health`] counts a store, [`compare`] sets two runs side by side, [`timeline`] lays a run out over time,
//! [`load`] does it for whole stores, [`live`] follows stores being written, and [`follow`] is
//! the kill switch's judge.

#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod causes;
pub mod compare;
pub mod detok;
pub mod follow;
pub mod gaps;
pub mod graph;
pub mod hash;
pub mod health;
pub mod live;
pub mod load;
pub mod memory;
pub mod observe;
pub mod pool;
pub mod rebuild;
pub mod report;
pub mod store;
pub mod table;
pub mod text;
pub mod timeline;
pub mod verdict;
pub mod work;
