//! What the app is told ([`Message`]) and what text is being typed ([`Mode`]).

use std::path::PathBuf;
use std::time::Instant;

use super::{Action, ExportKind, Pane, TextKey, Viewport};
use tokscope_core::live::StoreEvent;

/// Text being typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Keys are commands.
    Normal,
    /// Typing the list filter.
    Filter,
    /// Typing a `:` command line.
    Command(String),
    /// Typing a search of the focused pane.
    Search(String),
    /// Typing an export file name.
    Export {
        /// Report or rebuilt response.
        what: ExportKind,
        /// The path typed so far.
        path: String,
    },
    /// The export file exists: overwrite it (`y`) or not.
    ConfirmOverwrite {
        /// Report or rebuilt response.
        what: ExportKind,
        /// The file.
        path: PathBuf,
    },
}

/// Something that happened.
#[derive(Debug)]
pub enum Message {
    /// A command.
    Action(Action),
    /// A key typed into the open prompt.
    Text(TextKey),
    /// A click on item `row` of a pane's visible items (`None`: on the pane, not an item).
    Click {
        /// The pane.
        pane: Pane,
        /// The visible row clicked, counted from the pane's first item row.
        row: Option<usize>,
    },
    /// The mouse wheel over a pane.
    Scroll {
        /// The pane.
        pane: Pane,
        /// Rows (positive: down).
        delta: isize,
    },
    /// The terminal was resized.
    Resize(Viewport),
    /// The drawing side measured the inspector's text (lines).
    InspectorMeasured(usize),
    /// The drawing side found the inspector search's matches (first wrapped line of each).
    InspectorMatches(Vec<usize>),
    /// The drawing side measured the help: its lines and the rows it shows.
    HelpMeasured {
        /// Lines of the help.
        lines: usize,
        /// Rows shown at a time.
        rows: usize,
    },
    /// Changes from the store watcher.
    Store(Vec<StoreEvent>),
    /// The replay worker judged rollouts again (what [`App::take_judge_request`](super::App::take_judge_request) asked).
    Judged(Vec<tokscope_core::live::replay::Judged>),
    /// The clock moved.
    Tick(Instant),
}
