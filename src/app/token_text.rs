//! How the token pane shows tokens (`T` cycles them; remembered between sessions).

/// How the token pane shows tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenText {
    /// Token ids in fixed cells.
    Ids,
    /// Decoded pieces in fixed cells (one cell a token).
    Cells,
    /// The chain decoded as wrapped prose.
    Prose,
}

impl TokenText {
    /// Its name in the remembered state.
    pub fn name(self) -> &'static str {
        match self {
            TokenText::Ids => "ids",
            TokenText::Cells => "cells",
            TokenText::Prose => "prose",
        }
    }

    /// The mode named `name`.
    pub fn named(name: &str) -> Option<TokenText> {
        [TokenText::Ids, TokenText::Cells, TokenText::Prose]
            .into_iter()
            .find(|mode| mode.name() == name)
    }

    /// The next mode (`T`).
    pub fn next(self) -> TokenText {
        match self {
            TokenText::Cells => TokenText::Prose,
            TokenText::Prose => TokenText::Ids,
            TokenText::Ids => TokenText::Cells,
        }
    }
}
