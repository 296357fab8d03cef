//! tokscope's front end: the explorer (state, panes, terminal) and its configuration, over
//! [`tokscope_core`], which reads, rebuilds and judges the stores.
//!
//! Layers, lowest first: [`app`] holds the explorer's state and its transitions, [`ui`] draws
//! it (a pure function of the state), [`term`] runs the terminal and the event loop, and
//! [`config`] reads the user's file and remembered state.

#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod app;
pub mod config;
pub mod term;
pub mod ui;
