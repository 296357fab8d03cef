//! The screen as the app knows it: how many rows and tokens each pane shows.

/// How many rows each pane shows: the screen as the app needs to know it (scrolling and
/// paging), computed by the drawing side's layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Viewport {
    /// Terminal width.
    pub width: u16,
    /// Terminal height.
    pub height: u16,
    /// Rollout rows in the list (below its header).
    pub list_rows: usize,
    /// Rows of the chain tree.
    pub tree_rows: usize,
    /// Rows of the inspector and the gaps.
    pub detail_rows: usize,
    /// Rows of the graph (above the selected record).
    pub graph_rows: usize,
    /// Rows of tokens.
    pub token_rows: usize,
    /// Tokens per row, as ids.
    pub tokens_per_row: usize,
    /// Tokens per row, as decoded cells (wider where the pane has room).
    pub text_tokens_per_row: usize,
}
