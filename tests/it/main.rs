//! The integration tests, in one binary (as ripgrep and bottom keep theirs): one link of the
//! library, the tokenizers and ratatui instead of one per file.

mod common;

mod architecture;
mod causes;
mod causes_view;
mod cli;
mod commands;
mod compare;
mod config;
mod conformance;
mod follow;
mod hostile;
mod incremental;
mod layout;
mod live;
mod observe;
mod producers;
mod prose;
mod read_only;
mod rules;
mod scale;
mod second_round;
mod timeline;
mod tui;
