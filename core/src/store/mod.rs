//! Read-only access to a token-store directory: discovery, records, state, intents.
//!
//! Nothing in this module opens a file for writing, takes a lock or changes metadata.

pub mod layout;
pub mod open;
pub mod read;
pub mod record;
pub mod seq;
pub mod state;

pub use layout::{FileKind, RolloutLocation, StoreDirError, discover};
pub use read::{
    Capture, DEFAULT_LINE_LIMIT, IssueKind, LinePos, ReadIssue, RolloutFiles, capture_of_bytes,
    read_capture, set_line_limit,
};
pub use record::{ParentResolution, RecordError, TokenRecord};
pub use seq::{TokenSeq, TokenValue};
pub use state::RolloutState;
