//! Every user-facing string of the explorer, in one place.

use crate::app::{ExportKind, Notice, WhatIfChange};

/// Program name in the header.
pub(crate) const APP: &str = "tokscope";
/// Help title.
pub(crate) const TITLE_HELP: &str = "keys — any key closes";
/// The help's title when it has more lines than rows.
pub(crate) const TITLE_HELP_SCROLL: &str = "keys — j/k PgUp/PgDn g/G scroll · any other key closes";
/// What the mouse does, for the help.
pub(crate) const HELP_MOUSE: [(&str, &str); 4] = [
    ("click", "focus the pane, select the row (opens it)"),
    ("wheel", "scroll the pane under the pointer"),
    ("tab strip", "i / p / o show inspector, gaps, graph"),
    ("health strip", "open the causes view"),
];

/// Shown when a selected call is on no chain.
pub(crate) const NOT_ON_A_CHAIN: &str =
    "this call is on no chain (quarantined or under a quarantined call)";
/// Shown when no low-probability token remains.
pub(crate) const NO_LOW_PROB: &str = "no further generated token below the probability threshold";
/// Shown when an action needs a call selected in the tree.
pub(crate) const SELECT_A_CALL: &str = "select a call in the chain tree first";
/// Said of a rollout whose row's `mask_sample` is not tokscope's verdict.
pub(crate) const ROW_DISAGREES: &str =
    "the row's mask_sample disagrees with tokscope's verdict (the producer judged otherwise)";
/// Shown when the causes view has nothing to filter to.
pub(crate) const NO_CAUSES: &str = "no masked or at-risk rollout: no cause to filter to";
/// Title of the causes view.
pub(crate) const TITLE_CAUSES: &str = "causes";
/// A compare-mode key outside compare mode.
pub(crate) const COMPARE_ONLY: &str = "F works in compare mode: tokscope --compare STORE_A STORE_B";
/// The list's title in compare mode, flips only.
pub(crate) const COMPARE_FLIPS: &str = " · A/B: flips, gone, new (F: all)";
/// The list's title in compare mode, every rollout.
pub(crate) const COMPARE_ALL: &str = " · A/B: all (F: flips)";
/// Compare mode: a rollout of A not in B.
pub(crate) const COMPARE_GONE: &str = "gone";
/// Compare mode: a rollout of B not in A.
pub(crate) const COMPARE_NEW: &str = "new (B)";
/// The side-by-side view's title.
pub(crate) const TITLE_BESIDE: &str = "A beside B";
/// The side-by-side view while a side's analysis is read.
pub(crate) const BESIDE_READING: &str = "reading both runs' rollouts…";
/// The side-by-side view's keys.
pub(crate) const BESIDE_KEYS: &str = "Enter or Esc: back to the list";
/// The timeline view's title.
pub(crate) const TITLE_TIMELINE: &str = "timeline";
/// The timeline view's title in compare mode (it counts run A).
pub(crate) const TIMELINE_RUN_A: &str = " of run A";
/// The timeline view's keys, in its title.
pub(crate) const TIMELINE_KEYS: &str = "← → move · [ ] width · Enter keep the list · Esc back";
/// The timeline view with no record time to place.
pub(crate) const TIMELINE_EMPTY: &str = "no record yet: nothing to place in time";
/// Rollouts the timeline cannot place.
pub(crate) const TIMELINE_UNTIMED: &str = "rollout(s) without a record: in no bucket";
/// The causes view's keys.
pub(crate) const CAUSES_KEYS: &str = "↑↓ select · Enter filter the list · Esc close";
/// The causes view with no group.
pub(crate) const CAUSES_NONE: &str = "no masked or at-risk rollout";
/// Heading of the thinned tasks in the causes view.
pub(crate) const CAUSES_THINNED: &str =
    "tasks masking thins (fewer than 2 delivered, or delivered rewards all equal)";
/// What a thinned task means, in the causes view.
pub(crate) const THINNED_WHY: &str =
    "too few delivered samples, or all with one reward: no advantage signal (Enter lists them)";
/// Shown when a divergence cannot be computed.
pub(crate) const NO_DIVERGENCE: &str =
    "no divergence to show: this call's parent link holds, or it is a root by decision";
/// Shown when the what-if is dropped.
pub(crate) const WHAT_IF_CLEARED: &str = "what-if cleared: showing the rollout as built";
/// A write in progress (torn tail) on a live rollout.
pub(crate) const WRITING: &str = "✎ writing…";
/// Replay keys outside replay.
pub(crate) const REPLAY_ONLY: &str = "replay is off: press R to replay the store call by call";
/// Live keys outside live monitoring.
pub(crate) const LIVE_ONLY: &str = "not watching a store (open one to monitor it live)";
/// Replay started.
pub(crate) const READING_FOR_REPLAY: &str = "◌ reading the timeline for replay… ";
pub(crate) const REPLAY_READING: &str = "reading every rollout's call times for replay…";
pub(crate) const REPLAY_ON: &str =
    "replay: , and . step one call · Space play · 1 2 3 speed · : jump · R leaves";
/// Replay ended.
pub(crate) const REPLAY_OFF: &str = "replay off: showing the store as it is now";
/// What the build did with a record that repeats another byte for byte.
pub(crate) const FATE_DUPLICATE: &str =
    "set aside: a byte-for-byte repeat (same tokens) of the record of";
/// What the build did with a record whose call id another record holds with other tokens.
pub(crate) const FATE_CONFLICT: &str = "set aside: same call id, other tokens than the record of";
/// What the build did with a delta record it could not rebuild.
pub(crate) const FATE_DELTA_BROKEN: &str = "set aside: a delta record whose full prompt cannot be \
     rebuilt (its parent chain is missing or does not match)";
/// What the build did with a record that generated nothing.
pub(crate) const FATE_EMPTY: &str =
    "set aside: no generated tokens (no training signal), left out of the chains";
/// Replay's hints: play, step, speed, leave.
pub(crate) const HINT_PLAY: &str = "play/pause";
/// Replay's step hint.
pub(crate) const HINT_STEP: &str = "step";
/// Replay's speed hint.
pub(crate) const HINT_SPEED: &str = "1×/10×/100×";
/// Replay's leave hint.
pub(crate) const HINT_LEAVE_REPLAY: &str = "live";
/// The command prompt's hint.
pub(crate) const COMMAND_HINT: &str =
    "Enter run · Esc cancel · :rollout ID :call ID :pos N :chain N :causes";
/// The command prompt's hint in replay: the jumps, relative ones in seconds.
pub(crate) const COMMAND_HINT_REPLAY: &str = "Enter run · Esc cancel · :N call N · :+s/:-s seconds from now · :@s after the first call · :CALL-ID";
/// Command prompt.
pub(crate) const COMMAND_PROMPT: &str = ":";
/// The commands, for a command line that was not understood.
pub(crate) const COMMANDS: &str = ":rollout ID · :call ID · :pos N · :chain N · :causes · replay: :N (call), :+s / :-s \
     (seconds from now), :@s (after the first call), :CALL-ID";
/// No tokenizer loaded.
pub(crate) const NO_TOKENIZER: &str =
    "no tokenizer loaded: start with --tokenizer PATH/tokenizer.json";
/// Empty store.
pub(crate) const NO_ROLLOUTS: &str = "no rollouts match (check the filters, or the store is empty)";
/// Nothing selected.
pub(crate) const NO_SELECTION: &str = "no rollout selected";
pub(crate) const LOADING: &str = "reading the rollout…";
pub(crate) const WAITING_ON: &str = "waiting on";

/// The first scan's progress, for the header.
pub(crate) fn reading(progress: Option<(usize, usize)>) -> String {
    match progress {
        Some((read, total)) => format!(
            "◌ {} / {} read ",
            tokscope_core::text::thousands(read),
            tokscope_core::text::thousands(total)
        ),
        None => "◌ scanning… ".into(),
    }
}

/// What a rollout pane says when no rollout is open: still being read, or none selected.
pub(crate) fn no_view(app: &crate::app::App) -> &'static str {
    if app.loading() { LOADING } else { NO_SELECTION }
}
/// No build to show.
pub(crate) const NO_BUILD: &str =
    "no build: the records could not be read (see the inspector and gaps)";
/// No chain to show.
pub(crate) const NO_CHAIN: &str = "no chain to show";
/// No rollout row.
pub(crate) const NO_OBSERVATIONS: &str =
    "no rollout row for this rollout: pass --rollouts PATH (rows files in the store are found)";
/// Enter on a graph line that is no model call.
pub(crate) const NOT_A_CALL: &str = "select a model call (●) to jump to its tokens";
/// No gaps.
pub(crate) const NO_GAPS: &str = "no gaps: everything was observed and joined";
pub(crate) const NO_CAPTURE_GAPS_NO_ROW: &str = "no capture gaps. No rollout row, so nothing \
     observed to join: pass --rollouts ROWS (or put the rows file in the store directory)";

/// Export prompt.
pub(crate) fn export_prompt(what: ExportKind) -> &'static str {
    match what {
        ExportKind::Report => "export report to: ",
        ExportKind::Response => "export rebuilt response to: ",
    }
}

/// A notice, worded for the status bar.
pub(crate) fn notice(notice: &Notice) -> String {
    match notice {
        Notice::NotOnAChain => NOT_ON_A_CHAIN.into(),
        Notice::NoLowProb => NO_LOW_PROB.into(),
        Notice::SelectACall => SELECT_A_CALL.into(),
        Notice::NoDivergence => NO_DIVERGENCE.into(),
        Notice::NoCauses => NO_CAUSES.into(),
        Notice::CompareOnly => COMPARE_ONLY.into(),
        Notice::SkippedIdle(seconds) => {
            format!(
                "skipped {seconds:.0} s with no write: the clock jumped to the next call (I: don't skip)"
            )
        }
        Notice::SkipIdle(true) => {
            "replay skips idle gaps (the clock jumps to the next write)".into()
        }
        Notice::SkipIdle(false) => "replay plays idle gaps in full".into(),
        Notice::Zone(tokscope_core::text::Zone::Utc) => "times in UTC".into(),
        Notice::Zone(tokscope_core::text::Zone::Local) => {
            "times in this machine's local time (Z: UTC)".into()
        }
        Notice::BadFilter(why) => format!("filter: {why}"),
        Notice::WhatIfCleared => WHAT_IF_CLEARED.into(),
        Notice::NoTokenizer => NO_TOKENIZER.into(),
        Notice::ReplayOnly => REPLAY_ONLY.into(),
        Notice::LiveOnly => LIVE_ONLY.into(),
        Notice::ReplayOn => REPLAY_ON.into(),
        Notice::ReplayReading => REPLAY_READING.into(),
        Notice::ReplayOff => REPLAY_OFF.into(),
        Notice::NotACall => NOT_A_CALL.into(),
        Notice::ChainShown { chain, number, of } => {
            format!("tokens: showing {chain} ({number} of {of}; c for the next)")
        }
        Notice::NoSuchCall(call) => format!("{call} is not in this rollout's tree"),
        Notice::NoSuchRollout(id) => format!("no rollout {id} (nor a single one containing it)"),
        Notice::NoSuchChain(n) => format!("this rollout has no chain {n}"),
        Notice::BadCommand(why) => format!("{why} — {COMMANDS}"),
        Notice::Yanked { what, chars, start } => {
            let shown = if start.chars().count() < *chars {
                format!("{start}…")
            } else {
                start.clone()
            };
            format!(
                "yanked {what} ({}): {shown}",
                tokscope_core::text::count(*chars, "character", "characters")
            )
        }
        Notice::TokenText(mode) => match mode {
            crate::app::TokenText::Ids => "tokens: ids (T: decoded cells)".into(),
            crate::app::TokenText::Cells => {
                "tokens: decoded, one cell a token (T: flowing text)".into()
            }
            crate::app::TokenText::Prose => {
                "tokens: flowing text, whole characters (T: ids; j/k move by a row)".into()
            }
        },
        Notice::Mark(Some(at)) => {
            format!("mark at {at}: move, then y yanks the range (v again clears it)")
        }
        Notice::Mark(None) => "mark cleared".into(),
        Notice::NoBuild => {
            "no build, so no divergence: the records could not be read (the inspector says why)"
                .into()
        }
        Notice::FiltersCleared => "the list's filters were cleared to show it".into(),
        Notice::Polling { dir, reason } => format!(
            "{}: no change events ({}): polled every second instead",
            tokscope_core::text::sanitize(&dir.display().to_string()),
            tokscope_core::text::sanitize(reason)
        ),
        Notice::TokensOnly => "that key works in the token pane (Tab to it)".into(),
        Notice::NothingToYank => {
            "nothing to yank here (Y yanks decoded text with --tokenizer)".into()
        }
        Notice::YankTooLarge(bytes) => format!(
            "not yanked: {} is more than a terminal clipboard takes (1 MiB); mark a shorter range with v",
            tokscope_core::text::count(*bytes, "byte", "bytes")
        ),
        Notice::NoSearch => "no search: / in a pane to search it (in the list, / filters)".into(),
        Notice::NotFound(query) => format!("{query:?} not found in this pane"),
        Notice::SearchWrapped(true) => "search went past the end: from the top".into(),
        Notice::SearchWrapped(false) => "search went past the start: from the bottom".into(),
        Notice::Exported(path) => format!("wrote {}", path.display()),
        Notice::ExportFailed(error) => format!("export failed: {error}"),
        Notice::NotOverwritten(path) => format!("{} left as it was", path.display()),
        Notice::Store(text) => text.clone(),
        Notice::StoreGone(dir) => format!(
            "{} was deleted or renamed; following it again when it is back",
            dir.display()
        ),
        Notice::StoreBack(dir) => format!("{} is back: followed again", dir.display()),
    }
}

/// One difference a what-if made, worded for the inspector.
pub(crate) fn what_if_change(change: &WhatIfChange) -> String {
    let verdict = |masked: bool| if masked { "masked" } else { "trainable" };
    match change {
        WhatIfChange::Verdict { before, after } if before != after => {
            format!("verdict: {} → {}", verdict(*before), verdict(*after))
        }
        WhatIfChange::Verdict { after, .. } => format!("verdict unchanged: {}", verdict(*after)),
        WhatIfChange::MainChain { before, after } => format!(
            "main chain: {} calls ending {} → {} calls ending {}",
            before.0,
            before.1.as_deref().unwrap_or("-"),
            after.0,
            after.1.as_deref().unwrap_or("-")
        ),
        WhatIfChange::Delivered { before, after } => {
            format!("delivered: {:.1}% → {:.1}%", before * 100.0, after * 100.0)
        }
        WhatIfChange::ReasonGone(code) => format!("reason gone: {code}"),
        WhatIfChange::NewReason(code) => format!("new reason: {code}"),
    }
}

/// A pane's name, as its title (a tab: its label) reads.
pub(crate) fn pane_name(pane: crate::app::Pane) -> &'static str {
    pane.tab().map_or(pane.spec().title, |tab| tab.spec().label)
}

/// What Enter does, in the status bar's hints.
pub(crate) const ENTER_OPEN: &str = "open";
/// What Enter does in the tree.
pub(crate) const ENTER_DIVERGENCE: &str = "divergence";
/// What Enter does on a row that names a call.
pub(crate) const ENTER_GO_TO_CALL: &str = "go to the call";
/// The hint of the tab keys.
pub(crate) const TABS: &str = "tabs";

/// The token pane's hint when no tokenizer decodes the ids.
pub(crate) const HINT_NO_TOKENIZER: &str =
    "ids only: --tokenizer PATH (a tokenizer.json) decodes them";
