//! Application state and `update(message)`: no drawing, no terminal, fully testable.

pub mod health;
pub mod keys;
pub mod layout;
pub mod view;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::gaps::Gap;
use crate::live::StoreEvent;
use crate::live::replay::Replay;
use crate::observe::graph::GraphLine;
use crate::rebuild::divergence::{Divergence, divergence};
use crate::rebuild::{Origin, Provenance, provenance};
use crate::store::layout::natural_cmp;
use crate::ui::strings;
use crate::verdict::{Analysis, Lifecycle, Verdict, VerdictOptions, analyze};
use health::Health;
use keys::{Action, action_for};
use layout::{Areas, areas, inner_rows, token_rows, tokens_per_row};
use view::{TreeRow, tree_rows};

/// The panes, in Tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pane {
    /// Rollout list.
    List,
    /// Chain tree.
    Tree,
    /// Token provenance.
    Tokens,
    /// Record, verdict and notes.
    Inspector,
    /// Capture, observation and join gaps.
    Gaps,
    /// The observation graph.
    Graph,
}

const PANES: [Pane; 6] = [
    Pane::List,
    Pane::Tree,
    Pane::Tokens,
    Pane::Inspector,
    Pane::Gaps,
    Pane::Graph,
];

/// Columns the rollout list can be sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Rollout id (natural order).
    Id,
    /// Live / frozen / retired.
    State,
    /// Number of records.
    Calls,
    /// Number of chains.
    Chains,
    /// Delivered fraction.
    Delivered,
    /// Verdict.
    Verdict,
    /// First mask reason.
    Reason,
}

const SORT_KEYS: [SortKey; 7] = [
    SortKey::Id,
    SortKey::State,
    SortKey::Calls,
    SortKey::Chains,
    SortKey::Delivered,
    SortKey::Verdict,
    SortKey::Reason,
];

/// Text being typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Keys are commands.
    Normal,
    /// Typing the list filter.
    Filter,
    /// Typing where to jump in the replay.
    Jump(String),
    /// Typing an export file name.
    Export {
        /// Report or rebuilt response.
        what: ExportKind,
        /// The path typed so far.
        path: String,
    },
}

/// What to export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportKind {
    /// The report (SPEC §6 JSON).
    Report,
    /// The rebuilt response.
    Response,
}

/// The rollout list's state.
#[derive(Clone, Debug)]
pub struct ListState {
    /// Sort column.
    pub sort: SortKey,
    /// Descending.
    pub reverse: bool,
    /// Text filter (id or reason contains it).
    pub filter: String,
    /// Masked (or pending-masked) only.
    pub masked_only: bool,
    /// Only rollouts with this mask reason code.
    pub reason: Option<&'static str>,
    /// Visible rollouts (indices into `App::analyses`), in display order.
    pub rows: Vec<usize>,
    /// Selected row.
    pub selected: usize,
}

/// A what-if rebuild of the open rollout.
#[derive(Clone, Debug)]
pub struct WhatIf {
    /// The options used.
    pub options: VerdictOptions,
    /// The rebuilt analysis.
    pub analysis: Box<Analysis>,
    /// How it differs from the rollout as built.
    pub changes: Vec<String>,
}

/// Everything shown about the open rollout.
#[derive(Clone, Debug)]
pub struct RolloutView {
    /// Index into `App::analyses`.
    pub index: usize,
    /// Active what-if, if any (the panes then show it).
    pub what_if: Option<WhatIf>,
    /// Collapsed tree nodes.
    pub collapsed: HashSet<usize>,
    /// Tree rows.
    pub rows: Vec<TreeRow>,
    /// Selected tree row.
    pub tree_selected: usize,
    /// Chain shown in the token pane (index into the build's chains).
    pub chain: Option<usize>,
    /// Its provenance.
    pub provenance: Option<Provenance>,
    /// Token cursor.
    pub cursor: usize,
    /// Divergence of the selected call, when requested.
    pub divergence: Option<Divergence>,
    /// Inspector scroll.
    pub inspector_scroll: usize,
    /// Gaps.
    pub gaps: Vec<Gap>,
    /// Selected gap.
    pub gap_selected: usize,
    /// Records the rollout had before its last change, and when: newer calls are highlighted.
    pub new_records: Option<(usize, Instant)>,
    /// The observation graph's lines (empty without a rollout row).
    pub graph: Vec<GraphLine>,
    /// Selected graph line.
    pub graph_selected: usize,
}

/// The whole application state.
pub struct App {
    /// Store directories shown.
    pub stores: Vec<PathBuf>,
    /// Every rollout, analyzed.
    pub analyses: Vec<Analysis>,
    /// Options the rollouts were analyzed with.
    pub options: VerdictOptions,
    /// List state.
    pub list: ListState,
    /// The open rollout.
    pub view: Option<RolloutView>,
    /// Focused pane.
    pub focus: Pane,
    /// Which detail tab shows in the bottom-right area.
    pub detail: Pane,
    /// Typing mode.
    pub mode: Mode,
    /// Help overlay shown.
    pub show_help: bool,
    /// One-line message for the status bar.
    pub message: Option<String>,
    /// Terminal size.
    pub size: Rect,
    /// Generated tokens with log probability below this are "low probability".
    pub low_logprob: f64,
    /// Set when the user asked to quit.
    pub quit: bool,
    /// Decodes token ids to text, when a tokenizer was given.
    pub detok: Option<std::sync::Arc<crate::detok::Detokenizer>>,
    /// Show decoded text (instead of ids) in the token cells.
    pub show_text: bool,
    /// Store-wide health, kept up to date with `analyses`.
    pub health: Health,
    /// Raise an alarm when the masked fraction of frozen rollouts exceeds this.
    pub max_mask_fraction: Option<f64>,
    /// Following a store as it is written.
    pub live: Option<LiveState>,
    /// Replaying the store call by call.
    pub replay: Option<ReplayState>,
    /// Rollouts that changed recently (index into `analyses`), for a brief highlight.
    pub recent: HashMap<usize, Instant>,
    /// When each in-flight call was first seen (rollout index, call id).
    pub in_flight_since: HashMap<(usize, String), Instant>,
    /// The clock of the last tick (drives highlights and replay play).
    pub now: Instant,
}

/// Live monitoring state.
#[derive(Debug, Default)]
pub struct LiveState {
    /// The view is paused; changes wait in `pending`.
    pub paused: bool,
    /// Changes received while paused.
    pub pending: Vec<StoreEvent>,
    /// The initial scan is complete.
    pub ready: bool,
}

/// Replay state.
#[derive(Debug)]
pub struct ReplayState {
    /// The timeline.
    pub replay: Replay,
    /// The analyses as they were before replay started.
    pub original: Vec<Analysis>,
    /// Playing at this speed (1, 10, 100), or paused.
    pub playing: Option<f64>,
    /// Speed used by the next play.
    pub speed: f64,
    /// Wall clock and store time when play started.
    pub anchor: Option<(Instant, f64)>,
}

/// How long a changed rollout stays highlighted.
pub const HIGHLIGHT: Duration = Duration::from_secs(2);

/// Something that happened.
#[derive(Clone, Debug)]
pub enum Message {
    /// A key.
    Key(KeyEvent),
    /// A mouse event.
    Mouse(MouseEvent),
    /// The terminal was resized.
    Resize(u16, u16),
}

impl App {
    /// A new app over analyzed rollouts.
    pub fn new(
        stores: Vec<PathBuf>,
        analyses: Vec<Analysis>,
        options: VerdictOptions,
        size: Rect,
    ) -> App {
        let mut app = App {
            stores,
            analyses,
            options,
            list: ListState {
                sort: SortKey::Id,
                reverse: false,
                filter: String::new(),
                masked_only: false,
                reason: None,
                rows: Vec::new(),
                selected: 0,
            },
            view: None,
            focus: Pane::List,
            detail: Pane::Inspector,
            mode: Mode::Normal,
            show_help: false,
            message: None,
            size,
            low_logprob: 0.1f64.ln(),
            quit: false,
            detok: None,
            show_text: false,
            health: Health::default(),
            max_mask_fraction: None,
            live: None,
            replay: None,
            recent: HashMap::new(),
            in_flight_since: HashMap::new(),
            now: Instant::now(),
        };
        app.health = Health::of(&app.analyses);
        app.refresh_rows();
        app.open_selected();
        app
    }

    /// Decode token ids with `detok` (and show text in the token cells).
    pub fn with_tokenizer(mut self, detok: crate::detok::Detokenizer) -> App {
        self.detok = Some(std::sync::Arc::new(detok));
        self.show_text = true;
        self
    }

    /// Pane geometry for the current size.
    pub fn areas(&self) -> Areas {
        areas(self.size)
    }

    /// The analysis shown in the panes: the what-if when active, else the rollout as built.
    pub fn shown(&self) -> Option<&Analysis> {
        let view = self.view.as_ref()?;
        Some(shown_of(&self.analyses, &view.what_if, view.index))
    }

    /// Mask reason codes present in the store, in first-seen order.
    pub fn reason_codes(&self) -> Vec<&'static str> {
        let mut codes = Vec::new();
        for analysis in &self.analyses {
            for reason in &analysis.reasons {
                if !codes.contains(&reason.code()) {
                    codes.push(reason.code());
                }
            }
        }
        codes
    }

    /// Handle one message.
    pub fn update(&mut self, message: Message) {
        match message {
            Message::Resize(width, height) => self.size = Rect::new(0, 0, width, height),
            Message::Key(key) => self.on_key(key),
            Message::Mouse(mouse) => self.on_mouse(mouse),
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        match self.mode.clone() {
            Mode::Filter => {
                match key.code {
                    KeyCode::Enter => self.mode = Mode::Normal,
                    KeyCode::Esc => {
                        self.list.filter.clear();
                        self.mode = Mode::Normal;
                    }
                    KeyCode::Backspace => {
                        self.list.filter.pop();
                    }
                    KeyCode::Char(c) => self.list.filter.push(c),
                    _ => return,
                }
                self.refresh_rows();
                self.open_selected();
            }
            Mode::Jump(mut text) => match key.code {
                KeyCode::Enter => {
                    self.mode = Mode::Normal;
                    self.jump(&text);
                }
                KeyCode::Esc => self.mode = Mode::Normal,
                KeyCode::Backspace => {
                    text.pop();
                    self.mode = Mode::Jump(text);
                }
                KeyCode::Char(c) => {
                    text.push(c);
                    self.mode = Mode::Jump(text);
                }
                _ => {}
            },
            Mode::Export { what, mut path } => match key.code {
                KeyCode::Enter => {
                    self.mode = Mode::Normal;
                    self.message = Some(match self.export(what, Path::new(&path)) {
                        Ok(written) => strings::exported(&written),
                        Err(error) => strings::export_failed(&error),
                    });
                }
                KeyCode::Esc => self.mode = Mode::Normal,
                KeyCode::Backspace => {
                    path.pop();
                    self.mode = Mode::Export { what, path };
                }
                KeyCode::Char(c) => {
                    path.push(c);
                    self.mode = Mode::Export { what, path };
                }
                _ => {}
            },
            Mode::Normal => {
                if self.show_help {
                    // Any key closes the help; `q` still quits.
                    self.show_help = false;
                    if action_for(key) == Some(Action::Quit) {
                        self.quit = true;
                    }
                    return;
                }
                if key.code == KeyCode::Esc {
                    self.message = None;
                    if let Some(view) = &mut self.view {
                        view.divergence = None;
                    }
                    return;
                }
                if let Some(action) = action_for(key) {
                    self.act(action);
                }
            }
        }
    }

    /// Perform an action.
    pub fn act(&mut self, action: Action) {
        self.message = None;
        match action {
            Action::Quit => self.quit = true,
            Action::Help => self.show_help = true,
            Action::NextPane | Action::PrevPane => {
                let at = PANES.iter().position(|p| *p == self.focus).unwrap();
                let step = if action == Action::NextPane {
                    1
                } else {
                    PANES.len() - 1
                };
                self.focus_pane(PANES[(at + step) % PANES.len()]);
            }
            Action::Up => self.move_by(-1),
            Action::Down => self.move_by(1),
            Action::PageUp => self.move_by(-(self.page() as isize)),
            Action::PageDown => self.move_by(self.page() as isize),
            Action::Top => self.move_by(isize::MIN / 2),
            Action::Bottom => self.move_by(isize::MAX / 2),
            Action::Left => self.move_cursor(-1),
            Action::Right => self.move_cursor(1),
            Action::Enter => self.enter(),
            Action::ToggleCollapse => self.toggle_collapse(),
            Action::Filter => {
                self.focus = Pane::List;
                self.mode = Mode::Filter;
            }
            Action::MaskedOnly => {
                self.list.masked_only = !self.list.masked_only;
                self.refresh_rows();
                self.open_selected();
            }
            Action::CycleReason => {
                let codes = self.reason_codes();
                self.list.reason = match self.list.reason {
                    None => codes.first().copied(),
                    Some(current) => codes
                        .iter()
                        .position(|c| *c == current)
                        .and_then(|i| codes.get(i + 1))
                        .copied(),
                };
                self.refresh_rows();
                self.open_selected();
            }
            Action::SortNext => {
                let at = SORT_KEYS.iter().position(|k| *k == self.list.sort).unwrap();
                self.list.sort = SORT_KEYS[(at + 1) % SORT_KEYS.len()];
                self.refresh_rows();
            }
            Action::SortReverse => {
                self.list.reverse = !self.list.reverse;
                self.refresh_rows();
            }
            Action::NextBoundary => self.jump_boundary(true),
            Action::PrevBoundary => self.jump_boundary(false),
            Action::NextLowProb => self.jump_low_prob(true),
            Action::PrevLowProb => self.jump_low_prob(false),
            Action::CycleChain => self.cycle_chain(),
            Action::ToggleText => {
                if self.detok.is_some() {
                    self.show_text = !self.show_text;
                } else {
                    self.message = Some(strings::NO_TOKENIZER.into());
                }
            }
            Action::Divergence => self.show_divergence(),
            Action::PinTerminal => self.pin_terminal(),
            Action::ToggleAttributed => self.toggle_attributed(),
            Action::ClearWhatIf => {
                if let Some(view) = &mut self.view
                    && view.what_if.take().is_some()
                {
                    self.rebuild_view();
                    self.message = Some(strings::WHAT_IF_CLEARED.into());
                }
            }
            Action::Pause => self.pause_or_play(),
            Action::ToggleReplay => self.toggle_replay(),
            Action::StepBack => self.replay_step(-1),
            Action::StepForward => self.replay_step(1),
            Action::Speed1 => self.replay_play(1.0),
            Action::Speed10 => self.replay_play(10.0),
            Action::Speed100 => self.replay_play(100.0),
            Action::Jump => {
                if self.replay.is_some() {
                    self.mode = Mode::Jump(String::new());
                } else {
                    self.message = Some(strings::REPLAY_ONLY.into());
                }
            }
            Action::ExportReport | Action::ExportResponse => {
                if let Some(analysis) = self.shown() {
                    let what = if action == Action::ExportReport {
                        ExportKind::Report
                    } else {
                        ExportKind::Response
                    };
                    let path = strings::default_export_name(
                        analysis.rollout_id(),
                        what == ExportKind::Report,
                    );
                    self.mode = Mode::Export { what, path };
                }
            }
        }
    }

    fn focus_pane(&mut self, pane: Pane) {
        self.focus = pane;
        if matches!(pane, Pane::Inspector | Pane::Gaps | Pane::Graph) {
            self.detail = pane;
        }
    }

    fn page(&self) -> usize {
        let areas = self.areas();
        match self.focus {
            Pane::List => inner_rows(areas.list).saturating_sub(1),
            Pane::Tree => inner_rows(areas.tree),
            Pane::Tokens => token_rows(areas.tokens) * tokens_per_row(areas.tokens),
            Pane::Inspector | Pane::Gaps | Pane::Graph => inner_rows(areas.detail),
        }
        .max(1)
    }

    fn move_by(&mut self, delta: isize) {
        let step = |current: usize, len: usize| -> usize {
            if len == 0 {
                return 0;
            }
            (current as isize)
                .saturating_add(delta)
                .clamp(0, len as isize - 1) as usize
        };
        match self.focus {
            Pane::List => {
                let next = step(self.list.selected, self.list.rows.len());
                if next != self.list.selected {
                    self.list.selected = next;
                    self.open_selected();
                }
            }
            Pane::Tree => {
                if let Some(view) = &mut self.view {
                    view.tree_selected = step(view.tree_selected, view.rows.len());
                    view.divergence = None;
                }
                self.follow_tree_selection();
            }
            Pane::Tokens => {
                let per_row = tokens_per_row(self.areas().tokens) as isize;
                let delta = if delta.abs() == 1 {
                    delta * per_row
                } else {
                    delta
                };
                self.move_cursor(delta);
            }
            Pane::Inspector => {
                if let Some(view) = &mut self.view {
                    view.inspector_scroll = (view.inspector_scroll as isize)
                        .saturating_add(delta)
                        .max(0) as usize;
                }
            }
            Pane::Gaps => {
                if let Some(view) = &mut self.view {
                    view.gap_selected = step(view.gap_selected, view.gaps.len());
                }
            }
            Pane::Graph => {
                if let Some(view) = &mut self.view {
                    view.graph_selected = step(view.graph_selected, view.graph.len());
                }
            }
        }
    }

    fn move_cursor(&mut self, delta: isize) {
        if let Some(view) = &mut self.view
            && let Some(provenance) = &view.provenance
        {
            let len = provenance.tokens.len();
            if len > 0 {
                view.cursor = (view.cursor as isize)
                    .saturating_add(delta)
                    .clamp(0, len as isize - 1) as usize;
            }
        }
    }

    /// Recompute the visible rollout rows from sort and filters, keeping the selection.
    pub fn refresh_rows(&mut self) {
        let keep = self.list.rows.get(self.list.selected).copied();
        let filter = self.list.filter.to_lowercase();
        let mut rows: Vec<usize> = (0..self.analyses.len())
            .filter(|&i| {
                let a = &self.analyses[i];
                (self.replay.is_none() || a.lifecycle != Lifecycle::Cleared)
                    && (!self.list.masked_only || a.mask_sample)
                    && self
                        .list
                        .reason
                        .is_none_or(|code| a.reasons.iter().any(|r| r.code() == code))
                    && (filter.is_empty()
                        || a.rollout_id().to_lowercase().contains(&filter)
                        || a.reasons
                            .iter()
                            .any(|r| r.to_string().to_lowercase().contains(&filter)))
            })
            .collect();
        let analyses = &self.analyses;
        let key = self.list.sort;
        rows.sort_by(|&x, &y| {
            let (a, b) = (&analyses[x], &analyses[y]);
            let order = match key {
                SortKey::Id => std::cmp::Ordering::Equal,
                SortKey::State => lifecycle_rank(a.lifecycle).cmp(&lifecycle_rank(b.lifecycle)),
                SortKey::Calls => a.capture.records.len().cmp(&b.capture.records.len()),
                SortKey::Chains => chains(a).cmp(&chains(b)),
                SortKey::Delivered => delivered(a).total_cmp(&delivered(b)),
                SortKey::Verdict => verdict_rank(a).cmp(&verdict_rank(b)),
                SortKey::Reason => first_code(a).cmp(first_code(b)),
            };
            order.then_with(|| natural_cmp(a.rollout_id(), b.rollout_id()))
        });
        if self.list.reverse {
            rows.reverse();
        }
        self.list.selected = keep
            .and_then(|k| rows.iter().position(|&r| r == k))
            .unwrap_or(0);
        self.list.rows = rows;
    }

    /// Open the rollout under the list selection (drives every other pane).
    pub fn open_selected(&mut self) {
        let Some(&index) = self.list.rows.get(self.list.selected) else {
            self.view = None;
            return;
        };
        if self.view.as_ref().is_some_and(|v| v.index == index) {
            return;
        }
        self.view = Some(RolloutView {
            index,
            what_if: None,
            collapsed: HashSet::new(),
            rows: Vec::new(),
            tree_selected: 0,
            chain: None,
            provenance: None,
            cursor: 0,
            divergence: None,
            inspector_scroll: 0,
            gaps: Vec::new(),
            gap_selected: 0,
            new_records: None,
            graph: Vec::new(),
            graph_selected: 0,
        });
        self.rebuild_view();
    }

    /// Recompute the derived data of the open rollout (after opening or a what-if).
    fn rebuild_view(&mut self) {
        let Some(view) = self.view.as_mut() else {
            return;
        };
        let analysis = shown_of(&self.analyses, &view.what_if, view.index);
        view.gaps = view::gaps(analysis);
        view.graph = analysis
            .options
            .observations
            .as_ref()
            .map(|o| crate::observe::graph::lines(o, analysis))
            .unwrap_or_default();
        view.graph_selected = view.graph_selected.min(view.graph.len().saturating_sub(1));
        view.gap_selected = view.gap_selected.min(view.gaps.len().saturating_sub(1));
        view.divergence = None;
        match &analysis.build {
            Some(build) => {
                view.rows = tree_rows(build, &view.collapsed);
                view.chain = build.main;
                view.provenance = build.main_chain().map(|c| provenance(build, c));
            }
            None => {
                view.rows = Vec::new();
                view.chain = None;
                view.provenance = None;
            }
        }
        view.tree_selected = view.tree_selected.min(view.rows.len().saturating_sub(1));
        view.cursor = 0;
    }

    /// The node selected in the tree, if the selected row is a node.
    pub fn selected_node(&self) -> Option<usize> {
        let view = self.view.as_ref()?;
        match view.rows.get(view.tree_selected)? {
            TreeRow::Node { node, .. } => Some(*node),
            TreeRow::SetAside { .. } => None,
        }
    }

    /// The record selected in the tree (node or set-aside row).
    pub fn selected_record(&self) -> Option<usize> {
        let view = self.view.as_ref()?;
        let build = self.shown()?.build.as_ref()?;
        match view.rows.get(view.tree_selected)? {
            TreeRow::Node { node, .. } => Some(build.nodes[*node].record),
            TreeRow::SetAside { record } => Some(*record),
        }
    }

    /// Put the token cursor on the selected call's generation (switching chain if needed),
    /// and the graph selection on its model call.
    fn follow_tree_selection(&mut self) {
        self.follow_in_graph();
        self.follow_tokens();
    }

    fn follow_in_graph(&mut self) {
        let Some(record) = self.selected_record() else {
            return;
        };
        let Some(call) = self
            .shown()
            .map(|a| a.capture.records[record].model_call_id.clone())
        else {
            return;
        };
        if let Some(view) = &mut self.view
            && let Some(line) = view
                .graph
                .iter()
                .position(|l| l.call.as_deref() == Some(call.as_str()))
        {
            view.graph_selected = line;
        }
    }

    fn follow_tokens(&mut self) {
        let Some(node) = self.selected_node() else {
            return;
        };
        let Some(view) = self.view.as_mut() else {
            return;
        };
        let Some(build) = &shown_of(&self.analyses, &view.what_if, view.index).build else {
            return;
        };
        let on_current = view
            .chain
            .is_some_and(|c| build.chains[c].links.iter().any(|l| l.node == node));
        if !on_current {
            match build
                .chains
                .iter()
                .position(|c| c.links.iter().any(|l| l.node == node))
            {
                Some(chain) => {
                    view.chain = Some(chain);
                    view.provenance = Some(provenance(build, &build.chains[chain]));
                }
                None => {
                    self.message = Some(strings::NOT_ON_A_CHAIN.into());
                    return;
                }
            }
        }
        if let Some(provenance) = &view.provenance
            && let Some(segment) = provenance
                .segments
                .iter()
                .find(|s| s.origin == Origin::Generation { node })
        {
            view.cursor = segment.range.0;
        }
    }

    fn enter(&mut self) {
        match self.focus {
            Pane::List => self.focus = Pane::Tree,
            Pane::Gaps => {
                let Some(view) = &self.view else { return };
                let Some(call) = view
                    .gaps
                    .get(view.gap_selected)
                    .and_then(|g| g.call.clone())
                else {
                    return;
                };
                self.select_call(&call);
            }
            Pane::Tree => self.show_divergence(),
            Pane::Graph => {
                let Some(view) = &self.view else { return };
                match view.graph.get(view.graph_selected).map(|l| l.call.clone()) {
                    Some(Some(call)) => self.select_call(&call),
                    Some(None) => self.message = Some(strings::NOT_A_CALL.into()),
                    None => {}
                }
            }
            _ => {}
        }
    }

    /// Select a call by id in the tree (and so in the token pane and inspector).
    pub fn select_call(&mut self, call: &str) {
        let Some(analysis) = self.shown() else { return };
        let records = &analysis.capture.records;
        let Some(build) = &analysis.build else { return };
        let target = self
            .view
            .as_ref()
            .unwrap()
            .rows
            .iter()
            .position(|row| match row {
                TreeRow::Node { node, .. } => records[build.record_of(*node)].model_call_id == call,
                TreeRow::SetAside { record } => records[*record].model_call_id == call,
            });
        match target {
            Some(row) => {
                self.view.as_mut().unwrap().tree_selected = row;
                self.focus = Pane::Tree;
                self.follow_tree_selection();
            }
            None => self.message = Some(strings::no_such_call(call)),
        }
    }

    fn toggle_collapse(&mut self) {
        let Some(node) = self.selected_node() else {
            return;
        };
        let Some(view) = self.view.as_mut() else {
            return;
        };
        let Some(build) = &shown_of(&self.analyses, &view.what_if, view.index).build else {
            return;
        };
        if !view.collapsed.remove(&node) {
            view.collapsed.insert(node);
        }
        view.rows = tree_rows(build, &view.collapsed);
        view.tree_selected = view
            .rows
            .iter()
            .position(|r| matches!(r, TreeRow::Node { node: n, .. } if *n == node))
            .unwrap_or(0);
    }

    fn jump_boundary(&mut self, forward: bool) {
        let Some(view) = &mut self.view else { return };
        let Some(provenance) = &view.provenance else {
            return;
        };
        let starts = provenance.segments.iter().map(|s| s.range.0);
        let target = if forward {
            starts.filter(|&s| s > view.cursor).min()
        } else {
            starts.filter(|&s| s < view.cursor).max()
        };
        if let Some(target) = target {
            view.cursor = target;
        }
    }

    fn jump_low_prob(&mut self, forward: bool) {
        let threshold = self.low_logprob;
        let Some(analysis) = self.shown() else { return };
        let (Some(build), Some(view)) = (&analysis.build, &self.view) else {
            return;
        };
        let Some(provenance) = &view.provenance else {
            return;
        };
        let records = &analysis.capture.records;
        let cursor = view.cursor;
        let is_low = |position: usize| {
            provenance
                .log_prob(records, build, position)
                .is_some_and(|lp| lp < threshold)
        };
        let mut found = None;
        let segments: Vec<_> = provenance
            .segments
            .iter()
            .filter(|s| matches!(s.origin, Origin::Generation { .. }))
            .collect();
        if forward {
            'outer: for segment in &segments {
                for position in segment.range.0.max(cursor + 1)..segment.range.1 {
                    if is_low(position) {
                        found = Some(position);
                        break 'outer;
                    }
                }
            }
        } else {
            'outer: for segment in segments.iter().rev() {
                for position in (segment.range.0..segment.range.1.min(cursor)).rev() {
                    if is_low(position) {
                        found = Some(position);
                        break 'outer;
                    }
                }
            }
        }
        match found {
            Some(position) => self.view.as_mut().unwrap().cursor = position,
            None => self.message = Some(strings::NO_LOW_PROB.into()),
        }
    }

    fn cycle_chain(&mut self) {
        let Some(view) = self.view.as_mut() else {
            return;
        };
        let Some(build) = &shown_of(&self.analyses, &view.what_if, view.index).build else {
            return;
        };
        if build.chains.is_empty() {
            return;
        }
        let next = view.chain.map_or(0, |c| (c + 1) % build.chains.len());
        view.chain = Some(next);
        view.provenance = Some(provenance(build, &build.chains[next]));
        view.cursor = 0;
        self.focus = Pane::Tokens;
    }

    fn show_divergence(&mut self) {
        let Some(node) = self.selected_node() else {
            self.message = Some(strings::SELECT_A_CALL.into());
            return;
        };
        let Some(analysis) = self.shown() else { return };
        let Some(build) = &analysis.build else { return };
        let found = divergence(&analysis.capture.records, build, node);
        let view = self.view.as_mut().unwrap();
        if found.is_none() {
            self.message = Some(strings::NO_DIVERGENCE.into());
        }
        view.divergence = found;
        self.detail = Pane::Inspector;
    }

    fn what_if(&mut self, options: VerdictOptions) {
        let Some(view) = &self.view else { return };
        let base = &self.analyses[view.index];
        let analysis = analyze(base.capture.clone(), &options);
        let changes = strings::what_if_changes(base, &analysis);
        let view = self.view.as_mut().unwrap();
        view.what_if = Some(WhatIf {
            options,
            analysis: Box::new(analysis),
            changes,
        });
        self.rebuild_view();
        self.detail = Pane::Inspector;
    }

    fn current_options(&self) -> VerdictOptions {
        self.view
            .as_ref()
            .and_then(|v| v.what_if.as_ref())
            .map_or_else(|| self.options.clone(), |w| w.options.clone())
    }

    fn pin_terminal(&mut self) {
        let Some(record) = self.selected_record() else {
            self.message = Some(strings::SELECT_A_CALL.into());
            return;
        };
        let call = self.shown().unwrap().capture.records[record]
            .model_call_id
            .clone();
        let mut options = self.current_options();
        options.terminal_call_id = Some(call.clone());
        self.what_if(options);
        self.select_call(&call);
    }

    fn toggle_attributed(&mut self) {
        if self.view.is_none() {
            return;
        }
        let mut options = self.current_options();
        options.mask_incomplete_when_attributed = !options.mask_incomplete_when_attributed;
        self.what_if(options);
    }

    /// A live app: no rollouts yet; they arrive through [`App::apply`].
    pub fn new_live(stores: Vec<PathBuf>, options: VerdictOptions, size: Rect) -> App {
        let mut app = App::new(stores, Vec::new(), options, size);
        app.live = Some(LiveState::default());
        app
    }

    /// Take in changes from the watcher (queued while paused or replaying).
    pub fn apply(&mut self, events: Vec<StoreEvent>) {
        if events.is_empty() {
            return;
        }
        let hold = self.replay.is_some() || self.live.as_ref().is_some_and(|l| l.paused);
        if hold {
            if let Some(live) = &mut self.live {
                live.pending.extend(events);
            }
            return;
        }
        let open = self.view.as_ref().map(|v| v.index);
        let mut open_changed = None;
        for event in events {
            match event {
                StoreEvent::Updated(analysis) => {
                    let index = match self
                        .analyses
                        .iter()
                        .position(|a| a.capture.location == analysis.capture.location)
                    {
                        Some(index) => {
                            if Some(index) == open {
                                open_changed
                                    .get_or_insert(self.analyses[index].capture.records.len());
                            }
                            self.analyses[index] = *analysis;
                            index
                        }
                        None => {
                            self.analyses.push(*analysis);
                            self.analyses.len() - 1
                        }
                    };
                    self.recent.insert(index, self.now);
                    let a = &self.analyses[index];
                    let open_intents: Vec<String> = if a.lifecycle == Lifecycle::Live {
                        a.capture
                            .open_intents()
                            .into_iter()
                            .map(str::to_owned)
                            .collect()
                    } else {
                        Vec::new()
                    };
                    self.in_flight_since
                        .retain(|(i, call), _| *i != index || open_intents.contains(call));
                    for call in open_intents {
                        self.in_flight_since
                            .entry((index, call))
                            .or_insert(self.now);
                    }
                }
                StoreEvent::Error(error) => self.message = Some(error),
                StoreEvent::Ready => {
                    if let Some(live) = &mut self.live {
                        live.ready = true;
                    }
                }
            }
        }
        self.health = Health::of(&self.analyses);
        self.refresh_rows();
        if self.view.is_none() {
            self.open_selected();
        } else if let Some(before) = open_changed {
            self.refresh_open_view(before);
        } else {
            // The selection follows its rollout; open it if the selected row moved.
            self.open_selected();
        }
    }

    /// Rebuild the open view after its rollout changed, keeping the selection, the chain and
    /// the token cursor where they were.
    fn refresh_open_view(&mut self, records_before: usize) {
        let Some(analysis) = self.shown() else { return };
        let records = &analysis.capture.records;
        let selected_call = self
            .selected_record()
            .and_then(|r| records.get(r))
            .map(|r| r.model_call_id.clone());
        let view = self.view.as_ref().unwrap();
        let chain_name = view.chain.and_then(|c| {
            analysis
                .build
                .as_ref()
                .map(|b| b.chains[c].chain_id)
        });
        let (cursor, scroll, gap, tree_row) = (
            view.cursor,
            view.inspector_scroll,
            view.gap_selected,
            view.tree_selected,
        );
        let view = self.view.as_mut().unwrap();
        view.what_if = None;
        view.new_records = Some((records_before, self.now));
        let focus = self.focus;
        self.rebuild_view();
        let view = self.view.as_mut().unwrap();
        view.inspector_scroll = scroll;
        view.gap_selected = gap.min(view.gaps.len().saturating_sub(1));
        view.tree_selected = tree_row.min(view.rows.len().saturating_sub(1));
        if let Some(call) = selected_call {
            self.select_call(&call);
            self.focus = focus;
        }
        let Some(view) = self.view.as_mut() else {
            return;
        };
        let analysis = shown_of(&self.analyses, &view.what_if, view.index);
        if let (Some(build), Some(name)) = (&analysis.build, chain_name)
            && let Some(chain) = build.chains.iter().position(|c| c.chain_id == name)
        {
            view.chain = Some(chain);
            view.provenance = Some(provenance(build, &build.chains[chain]));
        }
        let len = view.provenance.as_ref().map_or(0, |p| p.tokens.len());
        view.cursor = cursor.min(len.saturating_sub(1));
        self.message = None;
    }

    /// Advance the clock: replay play, highlight expiry. Returns whether anything changed.
    pub fn tick(&mut self, now: Instant) -> bool {
        self.now = now;
        let before = self.recent.len();
        self.recent
            .retain(|_, at| now.duration_since(*at) < HIGHLIGHT);
        let mut changed = before != self.recent.len();
        if let Some(replay) = &mut self.replay
            && let (Some(speed), Some((wall, store))) = (replay.playing, replay.anchor)
        {
            let target = store + now.duration_since(wall).as_secs_f64() * speed;
            let next = replay
                .replay
                .moments()
                .get(replay.replay.position())
                .map(|m| m.time);
            if next.is_some_and(|t| t <= target) {
                let rollouts = replay.replay.seek_time(target);
                self.after_seek(&rollouts);
                changed = true;
            }
            let replay = self.replay.as_mut().unwrap();
            if replay.replay.position() >= replay.replay.len() {
                replay.playing = None;
                replay.anchor = None;
                changed = true;
            }
        }
        changed
    }

    fn pause_or_play(&mut self) {
        if let Some(replay) = &mut self.replay {
            if replay.playing.is_some() {
                replay.playing = None;
                replay.anchor = None;
            } else {
                let speed = replay.speed;
                self.replay_play(speed);
            }
            return;
        }
        let Some(live) = &mut self.live else {
            self.message = Some(strings::LIVE_ONLY.into());
            return;
        };
        live.paused = !live.paused;
        if !live.paused {
            let pending = std::mem::take(&mut live.pending);
            self.apply(pending);
        }
    }

    fn toggle_replay(&mut self) {
        if let Some(replay) = self.replay.take() {
            self.analyses = replay.original;
            self.after_replay_change();
            // Catch up with what the watcher sent meanwhile.
            if let Some(live) = &mut self.live {
                let pending = std::mem::take(&mut live.pending);
                self.apply(pending);
            }
            self.message = Some(strings::REPLAY_OFF.into());
            return;
        }
        let captures = self.analyses.iter().map(|a| a.capture.clone()).collect();
        let mut replay = Replay::new(captures, self.options.clone());
        // Start at the present: step back from here.
        let end = replay.len();
        replay.seek(end);
        self.replay = Some(ReplayState {
            replay,
            original: self.analyses.clone(),
            playing: None,
            speed: 10.0,
            anchor: None,
        });
        self.message = Some(strings::REPLAY_ON.into());
    }

    /// Start replay at the first call (for `tokscope replay`).
    pub fn start_replay(&mut self) {
        self.toggle_replay();
        if let Some(replay) = &mut self.replay {
            let rollouts = replay.replay.seek(1);
            self.after_seek(&rollouts);
        }
    }

    fn replay_step(&mut self, delta: isize) {
        let Some(replay) = &mut self.replay else {
            self.message = Some(strings::REPLAY_ONLY.into());
            return;
        };
        replay.playing = None;
        replay.anchor = None;
        let position = (replay.replay.position() as isize + delta).max(0) as usize;
        let rollouts = replay.replay.seek(position);
        self.after_seek(&rollouts);
    }

    fn replay_play(&mut self, speed: f64) {
        let Some(replay) = &mut self.replay else {
            self.message = Some(strings::REPLAY_ONLY.into());
            return;
        };
        if replay.replay.position() >= replay.replay.len() {
            let rollouts = replay.replay.seek(0);
            self.after_seek(&rollouts);
        }
        let replay = self.replay.as_mut().unwrap();
        let time = replay
            .replay
            .time()
            .or(replay.replay.start())
            .unwrap_or(0.0);
        replay.speed = speed;
        replay.playing = Some(speed);
        replay.anchor = Some((self.now, time));
    }

    /// Jump to `target`: a call number, `+seconds` after the first call, or a call id.
    fn jump(&mut self, target: &str) {
        let Some(replay) = &mut self.replay else {
            return;
        };
        let target = target.trim();
        let rollouts =
            if let Some(offset) = target.strip_prefix('+').and_then(|t| t.parse::<f64>().ok()) {
                let start = replay.replay.start().unwrap_or(0.0);
                replay.replay.seek_time(start + offset)
            } else if let Ok(position) = target.parse::<usize>() {
                replay.replay.seek(position)
            } else if let Some(position) = replay.replay.position_of_call(target) {
                replay.replay.seek(position)
            } else {
                self.message = Some(strings::no_such_call(target));
                return;
            };
        self.after_seek(&rollouts);
    }

    /// Rebuild the rollouts a replay step changed.
    fn after_seek(&mut self, rollouts: &[usize]) {
        let Some(replay) = &self.replay else { return };
        let open = self.view.as_ref().map(|v| v.index);
        let mut open_before = None;
        for &rollout in rollouts {
            if Some(rollout) == open {
                open_before = Some(self.analyses[rollout].capture.records.len());
            }
            self.analyses[rollout] = replay.replay.analysis_at(rollout);
            self.recent.insert(rollout, self.now);
        }
        self.health = Health::of(&self.analyses);
        self.refresh_rows();
        match open_before {
            Some(before) if self.view.as_ref().is_some_and(|v| Some(v.index) == open) => {
                self.refresh_open_view(before)
            }
            _ => self.open_selected(),
        }
    }

    fn after_replay_change(&mut self) {
        self.health = Health::of(&self.analyses);
        self.refresh_rows();
        if let Some(view) = &mut self.view {
            view.what_if = None;
        }
        let keep = self.view.as_ref().map(|v| v.index);
        self.view = None;
        self.open_selected();
        if keep.is_some() && self.view.is_none() {
            self.open_selected();
        }
    }

    /// Write the shown rollout's report or rebuilt response to `path`.
    pub fn export(&self, what: ExportKind, path: &Path) -> Result<PathBuf, String> {
        let analysis = self.shown().ok_or("no rollout selected")?;
        let target = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| e.to_string())?
                .join(path)
        };
        let parent = target.parent().ok_or("no directory in that path")?;
        let parent = parent
            .canonicalize()
            .map_err(|e| format!("{}: {e}", parent.display()))?;
        for store in &self.stores {
            if let Ok(store) = store.canonicalize()
                && parent.starts_with(&store)
            {
                return Err(strings::REFUSE_STORE_WRITE.into());
            }
        }
        let json = match what {
            ExportKind::Report => serde_json::to_vec_pretty(&analysis.report()),
            ExportKind::Response => match &analysis.response {
                Some(response) => serde_json::to_vec_pretty(response),
                None => return Err(strings::NO_RESPONSE.into()),
            },
        }
        .map_err(|e| e.to_string())?;
        let file_name = target.file_name().ok_or("no file name in that path")?;
        let final_path = parent.join(file_name);
        std::fs::write(&final_path, json).map_err(|e| format!("{}: {e}", final_path.display()))?;
        Ok(final_path)
    }

    fn on_mouse(&mut self, mouse: MouseEvent) {
        let areas = self.areas();
        let at = Position::new(mouse.column, mouse.row);
        let pane = [
            (areas.list, Pane::List),
            (areas.tree, Pane::Tree),
            (areas.tokens, Pane::Tokens),
            (areas.detail, self.detail),
        ]
        .into_iter()
        .find(|(rect, _)| rect.contains(at));
        let Some((rect, pane)) = pane else { return };
        match mouse.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let previous = self.focus;
                self.focus = pane;
                let delta = if mouse.kind == MouseEventKind::ScrollDown {
                    3
                } else {
                    -3
                };
                self.move_by(delta);
                if pane == Pane::Tokens || pane == Pane::Inspector {
                    self.focus = previous;
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus_pane(pane);
                let row = usize::from(mouse.row.saturating_sub(rect.y + 1));
                match pane {
                    Pane::List => {
                        // One header line inside the border; rows scroll with the selection.
                        let offset =
                            scroll_offset(self.list.selected, inner_rows(rect).saturating_sub(1));
                        if let Some(target) = row.checked_sub(1).map(|r| r + offset)
                            && target < self.list.rows.len()
                        {
                            self.list.selected = target;
                            self.open_selected();
                        }
                    }
                    Pane::Tree => {
                        if let Some(view) = &mut self.view {
                            let offset = scroll_offset(view.tree_selected, inner_rows(rect));
                            if row + offset < view.rows.len() {
                                view.tree_selected = row + offset;
                                view.divergence = None;
                            }
                        }
                        self.follow_tree_selection();
                    }
                    Pane::Gaps => {
                        if let Some(view) = &mut self.view {
                            let offset = scroll_offset(view.gap_selected, inner_rows(rect));
                            if row + offset < view.gaps.len() {
                                view.gap_selected = row + offset;
                            }
                        }
                    }
                    Pane::Graph => {
                        if let Some(view) = &mut self.view {
                            let offset = scroll_offset(view.graph_selected, inner_rows(rect));
                            if row + offset < view.graph.len() {
                                view.graph_selected = row + offset;
                            }
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// The analysis a view shows. A free function over the fields it needs, so callers can keep
/// it borrowed while they update the view's other fields (no copy of the build per key).
fn shown_of<'a>(
    analyses: &'a [Analysis],
    what_if: &'a Option<WhatIf>,
    index: usize,
) -> &'a Analysis {
    match what_if {
        Some(what_if) => &what_if.analysis,
        None => &analyses[index],
    }
}

/// First visible row so that `selected` is on screen in a window of `height` rows.
pub fn scroll_offset(selected: usize, height: usize) -> usize {
    if height == 0 {
        return selected;
    }
    selected.saturating_sub(height - 1)
}

fn lifecycle_rank(l: Lifecycle) -> u8 {
    match l {
        Lifecycle::Live => 0,
        Lifecycle::Frozen => 1,
        Lifecycle::Retired => 2,
        Lifecycle::Cleared => 3,
    }
}

fn verdict_rank(a: &Analysis) -> u8 {
    match (a.verdict, a.mask_sample) {
        (Verdict::Masked, _) => 0,
        (Verdict::Pending, true) => 1,
        (Verdict::Pending, false) => 2,
        (Verdict::Ok, _) => 3,
    }
}

fn chains(a: &Analysis) -> usize {
    a.build.as_ref().map_or(0, |b| b.chains.len())
}

fn delivered(a: &Analysis) -> f64 {
    a.build
        .as_ref()
        .map_or(-1.0, |b| b.notes.delivered_fraction)
}

fn first_code(a: &Analysis) -> &'static str {
    a.first_reason().map_or("", |r| r.code())
}
