//! What the app tells the user, as facts; the status bar words them (`ui::strings`).

use std::path::PathBuf;

use super::export::ExportError;
use tokscope_core::verdict::Analysis;

/// A one-line notice for the status bar.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// The selected call is on no chain.
    NotOnAChain,
    /// No further low-probability token.
    NoLowProb,
    /// The action needs a call selected in the tree.
    SelectACall,
    /// No divergence to show for the selected call.
    NoDivergence,
    /// No masked or at-risk rollout to group by cause.
    NoCauses,
    /// A compare-mode key outside compare mode.
    CompareOnly,
    /// Replay's clock jumped over this many idle store seconds to the next write.
    SkippedIdle(f64),
    /// Replay skips idle gaps now (or not).
    SkipIdle(bool),
    /// Times are shown in this clock now.
    Zone(tokscope_core::text::Zone),
    /// A filter word that looks like a field test and is not one, and why.
    BadFilter(String),
    /// The what-if was dropped.
    WhatIfCleared,
    /// Decoded text needs a tokenizer.
    NoTokenizer,
    /// A replay key outside replay.
    ReplayOnly,
    /// A live key while not watching.
    LiveOnly,
    /// Replay started.
    ReplayOn,
    /// Replay waits for every rollout to be read.
    ReplayReading,
    /// Replay ended.
    ReplayOff,
    /// Enter on a graph line that is no model call.
    NotACall,
    /// The token pane now shows this chain (`number` of `of`).
    ChainShown {
        /// The chain's name (`main`, `branch-1`…).
        chain: String,
        /// Its place, from 1.
        number: usize,
        /// Chains in the build.
        of: usize,
    },
    /// A call id that is not in the open rollout's tree.
    NoSuchCall(String),
    /// No rollout of that id (or more than one containing it).
    NoSuchRollout(String),
    /// The open rollout has fewer chains.
    NoSuchChain(usize),
    /// A command line that was not understood, and why.
    BadCommand(String),
    /// Copied to the clipboard: what, and how many characters.
    Yanked {
        /// What was copied.
        what: &'static str,
        /// Its length in characters.
        chars: usize,
        /// Its beginning, to see what was copied.
        start: String,
    },
    /// The token pane now shows tokens this way.
    TokenText(super::TokenText),
    /// The rollout has no build (its records could not be read): nothing to compare.
    NoBuild,
    /// A followed directory is polled: its change events cannot be had.
    Polling {
        /// The directory.
        dir: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// The list's filters were cleared to show the rollout asked for.
    FiltersCleared,
    /// The token mark was set at a position, or cleared.
    Mark(Option<usize>),
    /// A key that works in the token pane only.
    TokensOnly,
    /// Nothing selected to copy.
    NothingToYank,
    /// Too large for the terminal's clipboard (bytes).
    YankTooLarge(usize),
    /// `n` / `N` without a search.
    NoSearch,
    /// The search found nothing.
    NotFound(String),
    /// The search went past the end (`true`: forward) to find the match.
    SearchWrapped(bool),
    /// An export was written.
    Exported(PathBuf),
    /// An export failed.
    ExportFailed(ExportError),
    /// An existing file was left as it was.
    NotOverwritten(PathBuf),
    /// What the store watcher or the rows reader reported (already worded by them).
    Store(String),
    /// A followed directory was deleted or renamed away.
    StoreGone(PathBuf),
    /// A followed directory is back and followed again.
    StoreBack(PathBuf),
}

/// One difference a what-if made to the open rollout.
#[derive(Clone, Debug, PartialEq)]
pub enum WhatIfChange {
    /// The verdict: masked before, masked after.
    Verdict {
        /// Masked as built.
        before: bool,
        /// Masked in the what-if.
        after: bool,
    },
    /// The main chain changed: (calls, last call) before and after.
    MainChain {
        /// As built.
        before: (usize, Option<String>),
        /// In the what-if.
        after: (usize, Option<String>),
    },
    /// The delivered fraction changed.
    Delivered {
        /// As built.
        before: f64,
        /// In the what-if.
        after: f64,
    },
    /// A mask reason no longer applies.
    ReasonGone(&'static str),
    /// A new mask reason.
    NewReason(&'static str),
}

/// The differences between a rollout as built and a what-if of it.
pub(crate) fn what_if_changes(before: &Analysis, after: &Analysis) -> Vec<WhatIfChange> {
    let mut changes = vec![WhatIfChange::Verdict {
        before: before.mask_sample,
        after: after.mask_sample,
    }];
    let main_calls = |a: &Analysis| -> (usize, Option<String>) {
        let Some(build) = &a.build else {
            return (0, None);
        };
        build.main_chain().map_or((0, None), |chain| {
            let last = chain.links.last().map(|l| {
                a.capture.records[build.record_of(l.node)]
                    .model_call_id
                    .clone()
            });
            (chain.links.len(), last)
        })
    };
    let (b, a) = (main_calls(before), main_calls(after));
    if b != a {
        changes.push(WhatIfChange::MainChain {
            before: b,
            after: a,
        });
    }
    let fraction = |x: &Analysis| x.build.as_ref().map_or(0.0, |b| b.notes.delivered_fraction);
    if fraction(before) != fraction(after) {
        changes.push(WhatIfChange::Delivered {
            before: fraction(before),
            after: fraction(after),
        });
    }
    let codes = |x: &Analysis| x.reasons.iter().map(|r| r.code()).collect::<Vec<_>>();
    let (codes_before, codes_after) = (codes(before), codes(after));
    for code in &codes_before {
        if !codes_after.contains(code) {
            changes.push(WhatIfChange::ReasonGone(code));
        }
    }
    for code in &codes_after {
        if !codes_before.contains(code) {
            changes.push(WhatIfChange::NewReason(code));
        }
    }
    changes
}
