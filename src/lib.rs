//! tokscope: read NeMo Gym token stores, rebuild rollouts exactly as the reference builder
//! does, and explain the verdict.
//!
//! Layers: [`store`] reads files (never writes), [`rebuild`] rebuilds chains, [`verdict`] judges
//! a rollout like the reference consumer, [`load`] does it for whole stores.

#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod app;
pub mod config;
pub mod detok;
pub mod gaps;
pub mod live;
pub mod load;
pub mod observe;
pub mod rebuild;
pub mod report;
pub mod store;
pub mod table;
pub mod term;
pub mod text;
pub mod ui;
pub mod verdict;
