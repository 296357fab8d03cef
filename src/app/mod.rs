//! Application state and `update(message)`: no drawing, no terminal, fully testable.
//!
//! The state is made of sub-states that own their behaviour — the rollout list
//! ([`list`]), the open rollout ([`rollout`]), live monitoring ([`live`]), replay
//! ([`replay`]) and export ([`export`]) — and [`App::update`] dispatches each message to
//! them. The app knows the screen only as a [`Viewport`] (how many rows each pane shows),
//! which the drawing side computes; what it tells the user is a typed [`Notice`].

pub mod action;
pub mod causes;
pub mod command;
pub mod compare;
pub mod details;
pub mod export;

pub mod list;
pub mod live;
mod message;
mod navigate;
pub mod notice;
pub mod output;
pub mod pane;
mod prompt;
pub mod remember;
pub mod replay;
mod revision;
pub mod rollout;
pub mod scroll;
pub mod search;
pub mod timeline;
pub mod token_text;
pub mod tree;
mod viewport;
pub mod yank;

use std::path::{Path, PathBuf};
use std::time::Instant;

use strum::IntoEnumIterator;

pub use action::{Action, TextKey};
pub use causes::{CauseRow, CausesView};
pub use compare::{CompareView, Comparison, Counterpart, SideCounts};
pub use export::{ExportError, ExportKind};
pub use list::{RolloutList, SortKey};
pub(crate) use live::HIGHLIGHT;
pub use live::Live;
pub use message::{Message, Mode};
pub use notice::{Notice, WhatIfChange};
pub use pane::{Pane, Tab};
pub use remember::Remembered;
pub use replay::{JumpTarget, ReplayState};
pub use rollout::{RolloutView, TokenView, WhatIf};
pub use timeline::TimelineView;
pub use token_text::TokenText;
pub use viewport::Viewport;

pub use details::Details;
use tokscope_core::health::Health;
use tokscope_core::store::RolloutLocation;
use tokscope_core::verdict::{Analysis, Summary, VerdictOptions};

/// The wall clock now, in UNIX seconds.
fn wall_clock() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// How the explorer is set up: what the command line and the configuration resolved, given
/// to the app at once ([`App::with_options`]).
pub struct AppOptions {
    /// The stores are followed (not read once).
    pub watching: bool,
    /// Raise an alarm when the masked fraction of judged rollouts exceeds this…
    pub max_mask_fraction: Option<f64>,
    /// …once at least this many rollouts are judged.
    pub min_frozen: usize,
    /// The user's keys (from the configuration), before the built-in ones.
    pub keys: Vec<(String, Action)>,
    /// Generated tokens with a probability below this are "low probability".
    pub low_probability: Option<f64>,
    /// Decodes token ids to text.
    pub detok: Option<std::sync::Arc<tokscope_core::detok::Detokenizer>>,
    /// A notice to show first (what reading the rows files found).
    pub notice: Option<Notice>,
}

impl Default for AppOptions {
    fn default() -> AppOptions {
        AppOptions {
            watching: true,
            max_mask_fraction: None,
            min_frozen: tokscope_core::follow::DEFAULT_MIN_FROZEN,
            keys: Vec::new(),
            low_probability: None,
            detok: None,
            notice: None,
        }
    }
}

/// The whole application state.
pub struct App {
    /// Store directories shown.
    pub stores: Vec<PathBuf>,
    /// Every rollout, summarized (what the list, header and health need).
    pub rollouts: Vec<Summary>,
    /// The longest rollout id (for the list's column).
    pub longest_id: usize,
    /// The index of each rollout in `rollouts`.
    index_of: tokscope_core::hash::HashMap<RolloutLocation, usize>,
    /// Full analyses of the rollouts being looked at.
    pub details: Details,
    /// The rollouts whose details were last asked of the watcher.
    pub(super) requested: Vec<RolloutLocation>,
    /// Replay was asked for and waits for every rollout's analysis from the watcher.
    replay_wanted: bool,
    /// Replay was asked for and the watcher not told yet.
    replay_requested: bool,
    /// Replay judging requests made in this session (their ids never repeat).
    replay_requests_made: u64,
    /// Options the rollouts were analyzed with.
    pub options: VerdictOptions,
    /// The rollout list.
    pub list: RolloutList,
    /// The open rollout.
    pub view: Option<RolloutView>,
    /// Focused pane.
    pub focus: Pane,
    /// Which tab shows in the bottom-right place.
    pub detail: Tab,
    /// Typing mode.
    pub mode: Mode,
    /// Help overlay shown.
    pub show_help: bool,
    /// Where the help is scrolled to.
    pub help: scroll::Scroll,
    /// The causes view, when open.
    pub causes: Option<CausesView>,
    /// The timeline view, when open.
    pub timeline: Option<TimelineView>,
    /// Compare mode (two runs), when on.
    pub comparison: Option<Comparison>,
    /// Compare mode's side-by-side view of one rollout, when open.
    pub beside: Option<CompareView>,
    /// Enter or `d` asked for this rollout's failing call before its analysis came.
    dive_pending: Option<usize>,
    /// The focused pane has the whole screen.
    pub zoom: bool,
    /// The user's keys (from the configuration), before the built-in ones.
    pub keys: Vec<(String, Action)>,
    /// A rollout to select once it is listed (remembered from the last session).
    pub restore: Option<String>,
    /// The user has pressed a key or used the mouse (until then the first row stays
    /// selected while rollouts arrive, whatever order they are read in).
    user_moved: bool,
    /// Text yanked, for the terminal loop to put on the clipboard.
    clipboard: Option<String>,
    /// The `/` search in effect (`n` / `N`).
    pub search: Option<search::Search>,
    /// One-line notice for the status bar.
    pub message: Option<Notice>,
    /// What the screen shows of each pane.
    pub viewport: Viewport,
    /// Generated tokens with log probability below this are "low probability".
    pub low_logprob: f64,
    /// Set when the user asked to quit.
    pub quit: bool,
    /// Decodes token ids to text, when a tokenizer was given.
    pub detok: Option<std::sync::Arc<tokscope_core::detok::Detokenizer>>,
    /// How the token pane shows tokens: ids, decoded cells or flowing text.
    pub token_text: TokenText,
    /// Store-wide health, kept up to date with `rollouts` by difference.
    pub health: Health,
    /// Raise an alarm when the masked fraction of frozen rollouts exceeds this…
    pub max_mask_fraction: Option<f64>,
    /// …once at least this many rollouts are frozen.
    pub min_frozen: usize,
    /// Live monitoring (and the highlights of what just changed).
    pub live: Live,
    /// Replaying the store call by call.
    pub replay: Option<ReplayState>,
    /// The clock of the last tick (drives highlights and replay play).
    pub now: Instant,
    /// The wall clock of the last tick (UNIX seconds; none before the first): ages of what
    /// the store's times say.
    pub wall: Option<f64>,
    /// The clock times are shown in (`Z` toggles UTC and local time).
    pub zone: tokscope_core::text::Zone,
    /// The changes that may have reached the open rollout's panes ([`App::detail_revision`]).
    revision: revision::Revision,
}

impl App {
    /// A new app over analyzed rollouts, all of them held in full.
    pub fn new(
        stores: Vec<PathBuf>,
        analyses: Vec<Analysis>,
        options: VerdictOptions,
        viewport: Viewport,
    ) -> App {
        let rollouts: Vec<Summary> = analyses.iter().map(Summary::of).collect();
        let index_of = rollouts
            .iter()
            .enumerate()
            .map(|(index, s)| (s.location.clone(), index))
            .collect();
        let mut app = App {
            stores,
            health: Health::of(&rollouts),
            longest_id: rollouts
                .iter()
                .map(|s| s.rollout_id().len())
                .max()
                .unwrap_or(0),
            rollouts,
            index_of,
            details: Details::all(analyses),
            requested: Vec::new(),
            replay_wanted: false,
            replay_requested: false,
            replay_requests_made: 0,
            options,
            list: RolloutList::new(viewport.list_rows),
            view: None,
            focus: Pane::List,
            detail: Tab::Inspector,
            mode: Mode::Normal,
            show_help: false,
            help: scroll::Scroll::default(),
            causes: None,
            timeline: None,
            comparison: None,
            beside: None,
            dive_pending: None,
            zoom: false,
            search: None,
            keys: Vec::new(),
            restore: None,
            user_moved: false,
            clipboard: None,
            message: None,
            viewport,
            low_logprob: 0.1f64.ln(),
            quit: false,
            detok: None,
            token_text: TokenText::Ids,
            max_mask_fraction: None,
            min_frozen: tokscope_core::follow::DEFAULT_MIN_FROZEN,
            live: Live::default(),
            replay: None,
            now: Instant::now(),
            wall: None,
            zone: tokscope_core::text::Zone::Utc,
            revision: revision::Revision::new(),
        };
        app.refresh_list();
        app
    }

    /// A live app: no rollouts yet; their summaries arrive as [`Message::Store`], and the
    /// full analyses of those looked at when asked for ([`App::detail_requests`]).
    pub fn new_live(stores: Vec<PathBuf>, options: VerdictOptions, viewport: Viewport) -> App {
        let mut app = App::new(stores, Vec::new(), options, viewport);
        app.details = Details::bounded(details::DETAIL_CACHE);
        app.live = Live::watching();
        app
    }

    /// The app set up with `options`.
    pub fn with_options(mut self, options: AppOptions) -> App {
        let AppOptions {
            watching,
            max_mask_fraction,
            min_frozen,
            keys,
            low_probability,
            detok,
            notice,
        } = options;
        self.live.watching = watching;
        self.max_mask_fraction = max_mask_fraction;
        self.min_frozen = min_frozen;
        self.keys = keys;
        if let Some(p) = low_probability {
            self.low_logprob = p.ln();
        }
        self.message = notice;
        match detok {
            Some(detok) => self.with_shared_tokenizer(detok),
            None => self,
        }
    }

    /// Decode token ids with `detok` (and show text in the token cells).
    pub fn with_tokenizer(self, detok: tokscope_core::detok::Detokenizer) -> App {
        self.with_shared_tokenizer(std::sync::Arc::new(detok))
    }

    /// Decode token ids with `detok`, shared with the judging (the causes' text classes).
    pub fn with_shared_tokenizer(
        mut self,
        detok: std::sync::Arc<tokscope_core::detok::Detokenizer>,
    ) -> App {
        self.detok = Some(detok);
        self.token_text = TokenText::Cells;
        if let Some(view) = &mut self.view {
            view.tokens.set_cells(true, &self.viewport);
        }
        self
    }

    /// The analysis shown in the panes: the what-if when active, else the rollout as built.
    pub fn shown(&self) -> Option<&Analysis> {
        let view = self.view.as_ref()?;
        Some(view.shown(self.base()?))
    }

    /// The node selected in the tree, if the selected row is a node.
    pub fn selected_node(&self) -> Option<usize> {
        self.view.as_ref()?.selected_node()
    }

    /// The record selected in the tree (node or set-aside row).
    pub fn selected_record(&self) -> Option<usize> {
        let view = self.view.as_ref()?;
        view.selected_record(self.base()?)
    }

    /// Mask reason codes present in the store, in first-seen order.
    pub(crate) fn reason_codes(&self) -> Vec<&'static str> {
        list::reason_codes(&self.rollouts)
    }

    /// Handle one message; whether anything on screen may have changed.
    pub fn update(&mut self, message: Message) -> bool {
        let reach = self.reach(&message);
        let changed = self.handle(message);
        self.count_reach(reach, changed);
        changed
    }

    fn handle(&mut self, message: Message) -> bool {
        match message {
            Message::Action(action) => self.act(action),
            Message::Text(key) => self.on_text(key),
            Message::Click { pane, row } => {
                self.restore = None;
                self.user_moved = true;
                self.on_click(pane, row)
            }
            Message::Scroll { pane, delta } => {
                self.restore = None;
                self.user_moved = true;
                self.on_scroll(pane, delta)
            }
            Message::Resize(viewport) => self.resize(viewport),
            Message::InspectorMeasured(lines) => {
                let Some(view) = &mut self.view else {
                    return false;
                };
                let before = view.inspector;
                view.inspector.set_size(lines, self.viewport.detail_rows);
                return view.inspector.top() != before.top();
            }
            Message::InspectorMatches(lines) => return self.inspector_matches(lines),
            Message::HelpMeasured { lines, rows } => {
                let before = self.help;
                self.help.set_size(lines, rows);
                return self.help != before;
            }
            Message::Store(events) => {
                let changed = self.apply(events);
                return self.pair_again() || changed;
            }
            Message::Judged(results) => {
                self.judged(results);
                self.pair_again();
            }
            Message::Tick(now) => return self.tick(now),
        }
        true
    }

    /// The pane that has the whole screen, if zoomed.
    pub fn zoomed(&self) -> Option<Pane> {
        self.zoom.then_some(self.focus)
    }

    /// Select the rollout `id` as soon as it is listed (what the last session showed), unless
    /// the user moves first.
    pub fn restore_rollout(&mut self, id: Option<String>) {
        self.restore = id;
        self.apply_restore();
    }

    /// Select the rollout waiting to be restored, if it is listed now; with nothing to
    /// restore and the user not moved yet, the first row.
    fn apply_restore(&mut self) {
        let Some(id) = &self.restore else {
            if !self.user_moved && self.list.scroll.selected() != 0 {
                self.list.scroll.select(0);
                self.open_selected();
            }
            return;
        };
        let Some(row) = self
            .list
            .rows
            .iter()
            .position(|&i| self.rollouts[i].rollout_id() == id)
        else {
            return;
        };
        self.restore = None;
        // What the last session showed counts as the user's choice: later batches keep it.
        self.user_moved = true;
        self.list.scroll.select(row);
        self.open_selected();
    }

    /// Perform an action.
    pub(crate) fn act(&mut self, action: Action) {
        self.message = None;
        // The user moves: what the last session showed no longer matters.
        self.restore = None;
        self.user_moved = true;
        if self.show_help && self.scroll_help(action) {
            return;
        }
        if self.causes.is_some() && self.causes_key(action) {
            return;
        }
        if self.timeline.is_some() && self.timeline_key(action) {
            return;
        }
        if self.beside.is_some() && self.beside_key(action) {
            return;
        }
        match action {
            Action::Dismiss => {
                self.show_help = false;
                if let Some(view) = &mut self.view {
                    view.divergence = None;
                }
            }
            Action::Quit => self.quit = true,
            Action::Help => {
                self.show_help = !self.show_help;
                self.help.home();
            }
            Action::Causes => self.toggle_causes(),
            Action::Timeline => self.toggle_timeline(),
            Action::Flips => self.toggle_flips(),
            Action::ShowTab(tab) => self.focus_pane(tab.pane()),
            Action::Zoom => self.zoom = !self.zoom,
            Action::NextPane | Action::PrevPane => {
                let panes: Vec<Pane> = Pane::iter().collect();
                let at = panes.iter().position(|p| *p == self.focus).unwrap_or(0);
                let step = if action == Action::NextPane {
                    1
                } else {
                    panes.len() - 1
                };
                self.focus_pane(panes[(at + step) % panes.len()]);
            }
            Action::Up => self.move_by(-1),
            Action::Down => self.move_by(1),
            Action::PageUp => self.page(-1),
            Action::PageDown => self.page(1),
            Action::Top => self.jump_to_end(false),
            Action::Bottom => self.jump_to_end(true),
            Action::Left => self.with_view(|view, _| view.tokens.move_cursor(-1)),
            Action::Right => self.with_view(|view, _| view.tokens.move_cursor(1)),
            Action::Enter if self.focus == Pane::List && self.open_beside() => {}
            Action::Enter => self.enter(),
            Action::ToggleCollapse => self.with_view(RolloutView::toggle_collapse),
            Action::Filter => {
                self.mode = if self.focus == Pane::List {
                    Mode::Filter
                } else {
                    Mode::Search(String::new())
                };
            }
            Action::Yank => self.yank(false),
            Action::YankText => self.yank(true),
            Action::Mark if self.focus == Pane::Tokens => self.notice_from_view(|view, _| {
                view.tokens.mark = match view.tokens.mark {
                    Some(_) => None,
                    None => Some(view.tokens.cursor),
                };
                Some(Notice::Mark(view.tokens.mark))
            }),
            Action::Mark => self.message = Some(Notice::TokensOnly),
            Action::SearchNext => self.search_step(true),
            Action::SearchPrev => self.search_step(false),
            Action::MaskedOnly => {
                self.list.masked_only = !self.list.masked_only;
                self.refresh_list();
            }
            Action::CycleReason => {
                let codes = self.reason_codes();
                self.list.cycle_reason(&codes);
                self.refresh_list();
            }
            Action::SortNext => {
                self.list.sort_next();
                self.refresh_list();
            }
            Action::SortReverse => {
                self.list.reverse = !self.list.reverse;
                self.refresh_list();
            }
            Action::NextBoundary => self.with_view(|view, _| view.jump_boundary(true)),
            Action::PrevBoundary => self.with_view(|view, _| view.jump_boundary(false)),
            Action::NextLowProb | Action::PrevLowProb => {
                let threshold = self.low_logprob;
                let forward = action == Action::NextLowProb;
                self.notice_from_view(|view, base| view.jump_low_prob(base, forward, threshold));
            }
            Action::CycleChain => {
                // The focus stays; the status line says which chain the token pane shows.
                self.with_view(RolloutView::cycle_chain);
                if let (Some(view), Some(base)) = (&self.view, self.base())
                    && let (Some(number), Some(build)) =
                        (view.tokens.chain, &view.shown(base).build)
                    && let Some(chain) = build.chains.get(number)
                {
                    self.message = Some(Notice::ChainShown {
                        chain: chain.chain_id.to_string(),
                        number: number + 1,
                        of: build.chains.len(),
                    });
                }
            }
            Action::ToggleText => {
                if self.detok.is_some() {
                    self.token_text = self.token_text.next();
                    let cells = self.token_text == TokenText::Cells;
                    if let Some(view) = &mut self.view {
                        view.tokens.set_cells(cells, &self.viewport);
                    }
                    self.message = Some(Notice::TokenText(self.token_text));
                } else {
                    self.message = Some(Notice::NoTokenizer);
                }
            }
            Action::Divergence => self.show_divergence(),
            Action::PinTerminal => self.pin_terminal(),
            Action::ToggleAttributed => {
                let (Some(view), Some(base)) = (&self.view, self.base()) else {
                    return;
                };
                let mut options = view.current_options(base);
                options.mask_incomplete_when_attributed = !options.mask_incomplete_when_attributed;
                self.what_if(options);
            }
            Action::ClearWhatIf => {
                if let Some(view) = &mut self.view
                    && let Some(base) = self.details.get(view.index)
                    && view.clear_what_if(base)
                {
                    self.message = Some(Notice::WhatIfCleared);
                }
            }
            Action::Pause => self.pause_or_play(),
            Action::ToggleReplay => self.toggle_replay(),
            Action::StepBack => self.replay_step(-1),
            Action::StepForward => self.replay_step(1),
            Action::Speed1 => self.replay_play(1.0),
            Action::Speed10 => self.replay_play(10.0),
            Action::Speed100 => self.replay_play(100.0),
            Action::SkipIdle => self.toggle_skip_idle(),
            Action::ToggleZone => {
                use tokscope_core::text::Zone;
                self.zone = match self.zone {
                    Zone::Utc => Zone::Local,
                    Zone::Local => Zone::Utc,
                };
                self.message = Some(Notice::Zone(self.zone));
            }
            Action::Command => self.mode = Mode::Command(String::new()),
            Action::ExportReport | Action::ExportResponse => {
                if let Some(analysis) = self.shown() {
                    let what = if action == Action::ExportReport {
                        ExportKind::Report
                    } else {
                        ExportKind::Response
                    };
                    let path = export::default_file_name(analysis.rollout_id(), what);
                    self.mode = Mode::Export { what, path };
                }
            }
        }
    }

    /// Run `f` on the open view with its rollout as built.
    fn with_view(&mut self, f: impl FnOnce(&mut RolloutView, &Analysis)) {
        if let Some(view) = &mut self.view
            && let Some(base) = self.details.get(view.index)
        {
            f(view, base);
        }
    }

    /// Run `f` on the open view; its notice, if any, becomes the message.
    fn notice_from_view(&mut self, f: impl FnOnce(&mut RolloutView, &Analysis) -> Option<Notice>) {
        if let Some(view) = &mut self.view
            && let Some(base) = self.details.get(view.index)
            && let Some(notice) = f(view, base)
        {
            self.message = Some(notice);
        }
    }

    fn what_if(&mut self, options: VerdictOptions) {
        self.with_view(|view, base| view.set_what_if(base, options));
        self.detail = Tab::Inspector;
    }

    fn pin_terminal(&mut self) {
        let (Some(view), Some(base)) = (&self.view, self.base()) else {
            return;
        };
        let Some(record) = view.selected_record(base) else {
            self.message = Some(Notice::SelectACall);
            return;
        };
        let call = view.shown(base).capture.records[record]
            .model_call_id
            .clone();
        let mut options = view.current_options(base);
        options.terminal_call_id = Some(call.clone());
        self.what_if(options);
        self.select_call(&call);
    }

    fn resize(&mut self, viewport: Viewport) {
        self.viewport = viewport;
        self.list.scroll.set_height(viewport.list_rows);
        if let Some(view) = &mut self.view {
            view.resize(&viewport);
        }
    }

    /// Recompute the list's rows (keeping the selected rollout) and open the selection.
    fn refresh_list(&mut self) {
        self.list.refresh(&self.rollouts, self.replay.is_some());
        self.open_selected();
        self.apply_restore();
    }

    /// Open the rollout under the list selection (drives every other pane).
    fn open_selected(&mut self) {
        let Some(index) = self.list.selected_rollout() else {
            self.view = None;
            return;
        };
        if self.view.as_ref().is_some_and(|v| v.index == index) {
            return;
        }
        self.details.touch(index);
        if !self.details.contains(index)
            && let Some(replay) = &self.replay
        {
            // Replaying: the rollout as it stood at the current call, from the timeline.
            let analysis = replay.replay.analysis_at(index);
            self.details.insert(index, std::sync::Arc::new(analysis));
        }
        // Not read yet: the view opens when the watcher's answer arrives.
        let cells = self.token_text == TokenText::Cells;
        self.view = self.details.get(index).map(|analysis| {
            let mut view = RolloutView::open(index, analysis, &self.viewport);
            view.tokens.set_cells(cells, &self.viewport);
            view
        });
        if self.view.is_some() && self.dive_pending.take() == Some(index) {
            self.open_cause();
        }
    }

    /// After rollouts changed: health, list, and the open view (kept where it was).
    fn after_change(&mut self, kept: Option<rollout::Kept>) {
        self.health.settle();
        // The causes view's rows change with the rollouts (a group can go).
        if self.causes.is_some() {
            let len = self.cause_rows().len();
            if let Some(view) = &mut self.causes {
                view.rows.set_len(len);
            }
        }
        self.apply_restore();
        match (kept, &mut self.view) {
            (Some(kept), Some(view)) if self.list.selected_rollout() == Some(view.index) => {
                if let Some(base) = self.details.get(view.index) {
                    view.refresh(kept, base, self.now);
                }
            }
            _ => self.open_selected(),
        }
        let keep = self.looked_at();
        self.details.trim(&keep);
    }

    /// Advance the clock: replay play, highlight expiry. Whether anything changed.
    fn tick(&mut self, now: Instant) -> bool {
        self.now = now;
        self.wall = Some(wall_clock());
        let mut changed = self.live.expire(now);
        if let Some(replay) = &mut self.replay {
            let (due, ended) = replay.advance(now);
            if let Some(seconds) = replay.skipped.take() {
                self.message = Some(Notice::SkippedIdle(seconds));
            }
            changed |= ended;
            if let Some(rollouts) = due {
                self.after_seek(&rollouts);
                changed = true;
            } else {
                changed |= self.judge_pending();
            }
        }
        changed
    }

    /// Write the shown rollout's report or rebuilt response to `path` (an existing file only
    /// with `overwrite`).
    pub fn export(
        &self,
        what: ExportKind,
        path: &Path,
        overwrite: bool,
    ) -> Result<PathBuf, ExportError> {
        let analysis = self.shown().ok_or(ExportError::NoRollout)?;
        export::export(analysis, &self.stores, what, path, overwrite)
    }
}

#[cfg(test)]
mod tests;
