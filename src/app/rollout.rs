//! The open rollout: what the tree, token, inspector, gaps and graph panes show of it, their
//! selections and scrolling, and the what-if rebuilt from it.
//!
//! Every method takes the rollout as built (`base`); the view shows the what-if instead when
//! one is active ([`RolloutView::shown`]).

use std::collections::HashSet;
use std::time::Instant;

use super::Viewport;
use super::notice::{Notice, WhatIfChange, what_if_changes};
use super::scroll::{Scroll, ScrollList};
use super::tree::{TreeRow, tree_rows};
use tokscope_core::gaps::Gap;
use tokscope_core::graph::{GraphLine, rollout_gaps};
use tokscope_core::rebuild::divergence::{Divergence, divergence};
use tokscope_core::rebuild::{BuildOutput, Origin, Provenance, provenance};
use tokscope_core::verdict::{Analysis, VerdictOptions, analyze};

/// A what-if rebuild of the open rollout.
#[derive(Clone, Debug)]
pub struct WhatIf {
    /// The options used.
    pub options: VerdictOptions,
    /// The rebuilt analysis.
    pub analysis: Box<Analysis>,
    /// How it differs from the rollout as built.
    pub changes: Vec<WhatIfChange>,
}

/// The token pane: one chain's provenance and a cursor in it.
#[derive(Clone, Debug, Default)]
pub struct TokenView {
    /// Chain shown (index into the build's chains).
    pub chain: Option<usize>,
    /// Its provenance.
    pub provenance: Option<Provenance>,
    /// Token cursor.
    pub cursor: usize,
    /// Rows of tokens: the cursor's row is the selection.
    pub rows: ScrollList,
    /// Where a marked range starts (`v`); the range runs to the cursor.
    pub mark: Option<usize>,
    per_row: usize,
    /// Tokens shown as decoded cells (their rows hold fewer, wider cells).
    cells: bool,
}

impl TokenView {
    fn new(viewport: &Viewport) -> TokenView {
        TokenView {
            rows: ScrollList::new(0, viewport.token_rows),
            per_row: viewport.tokens_per_row.max(1),
            ..TokenView::default()
        }
    }

    /// Show tokens as decoded cells (`true`) or ids and text: the tokens a row holds follow.
    pub(crate) fn set_cells(&mut self, cells: bool, viewport: &Viewport) {
        self.cells = cells;
        self.resize(viewport);
    }

    /// Tokens a row of the pane holds now (ids, or the wider decoded cells).
    pub fn per_row(&self) -> usize {
        self.per_row
    }

    /// Number of tokens shown.
    pub fn len(&self) -> usize {
        self.provenance.as_ref().map_or(0, |p| p.tokens.len())
    }

    /// No tokens.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Show chain `chain` of `build` (or none), cursor at the start.
    fn show(&mut self, build: Option<&BuildOutput>, chain: Option<usize>) {
        self.chain = chain;
        self.provenance = build
            .zip(chain)
            .map(|(build, chain)| provenance(build, &build.chains[chain]));
        self.rows.set_len(self.len().div_ceil(self.per_row));
        self.mark = None;
        self.set_cursor(0);
    }

    /// The marked range (mark to cursor, both included), if a mark is set.
    pub fn marked(&self) -> Option<std::ops::RangeInclusive<usize>> {
        let mark = self.mark?.min(self.len().saturating_sub(1));
        Some(mark.min(self.cursor)..=mark.max(self.cursor))
    }

    /// Put the cursor at `position` (clamped).
    pub(crate) fn set_cursor(&mut self, position: usize) {
        self.cursor = position.min(self.len().saturating_sub(1));
        self.rows.select(self.cursor / self.per_row);
    }

    /// Move the cursor by `delta` tokens (clamped).
    pub(crate) fn move_cursor(&mut self, delta: isize) {
        let target = (self.cursor as isize).saturating_add(delta).max(0) as usize;
        self.set_cursor(target);
    }

    fn resize(&mut self, viewport: &Viewport) {
        self.per_row = if self.cells {
            viewport.text_tokens_per_row
        } else {
            viewport.tokens_per_row
        }
        .max(1);
        self.rows.set_height(viewport.token_rows);
        self.rows.set_len(self.len().div_ceil(self.per_row));
        self.set_cursor(self.cursor);
    }
}

/// Everything shown about the open rollout.
#[derive(Clone, Debug)]
pub struct RolloutView {
    /// Index into the app's analyses.
    pub index: usize,
    /// Active what-if, if any (the panes then show it).
    pub what_if: Option<WhatIf>,
    /// Collapsed tree nodes.
    pub collapsed: HashSet<usize>,
    /// Tree rows.
    pub rows: Vec<TreeRow>,
    /// Selection in the tree.
    pub tree: ScrollList,
    /// The token pane.
    pub tokens: TokenView,
    /// Divergence of the selected call, when requested.
    pub divergence: Option<Divergence>,
    /// Inspector scrolling (its length is measured by the drawing side).
    pub inspector: Scroll,
    /// Gaps.
    pub gaps: Vec<Gap>,
    /// Selection in the gaps.
    pub gap_list: ScrollList,
    /// The observation graph's lines (empty without a rollout row).
    pub graph: Vec<GraphLine>,
    /// Selection in the graph.
    pub graph_list: ScrollList,
    /// Records the rollout had before its last change, and when: newer calls are highlighted.
    pub new_records: Option<(usize, Instant)>,
}

/// The analysis a view shows: the what-if when active, else the rollout as built.
fn shown<'a>(what_if: &'a Option<WhatIf>, base: &'a Analysis) -> &'a Analysis {
    match what_if {
        Some(what_if) => &what_if.analysis,
        None => base,
    }
}

impl RolloutView {
    /// Open rollout `index` (`base` is its analysis).
    pub fn open(index: usize, base: &Analysis, viewport: &Viewport) -> RolloutView {
        let mut view = RolloutView {
            index,
            what_if: None,
            collapsed: HashSet::new(),
            rows: Vec::new(),
            tree: ScrollList::new(0, viewport.tree_rows),
            tokens: TokenView::new(viewport),
            divergence: None,
            inspector: Scroll::default(),
            gaps: Vec::new(),
            gap_list: ScrollList::new(0, viewport.detail_rows),
            graph: Vec::new(),
            graph_list: ScrollList::new(0, viewport.graph_rows),
            new_records: None,
        };
        view.rebuild(base);
        view
    }

    /// The analysis shown: the what-if when active, else `base`.
    pub fn shown<'a>(&'a self, base: &'a Analysis) -> &'a Analysis {
        shown(&self.what_if, base)
    }

    /// Recompute what the panes derive from the shown analysis (after opening or a what-if).
    pub fn rebuild(&mut self, base: &Analysis) {
        let analysis = shown(&self.what_if, base);
        self.gaps = rollout_gaps(analysis);
        self.gap_list.set_len(self.gaps.len());
        self.graph = analysis
            .options
            .observations
            .as_ref()
            .map(|o| tokscope_core::graph::lines(o, analysis))
            .unwrap_or_default();
        self.graph_list.set_len(self.graph.len());
        self.divergence = None;
        let build = analysis.build.as_ref();
        self.rows = build.map_or_else(Vec::new, |b| tree_rows(b, &self.collapsed));
        self.tree.set_len(self.rows.len());
        self.tokens.show(build, build.and_then(|b| b.main));
    }

    /// The pane sizes changed.
    pub fn resize(&mut self, viewport: &Viewport) {
        self.tree.set_height(viewport.tree_rows);
        self.gap_list.set_height(viewport.detail_rows);
        self.graph_list.set_height(viewport.graph_rows);
        self.tokens.resize(viewport);
    }

    /// The node selected in the tree, if the selected row is a node.
    pub fn selected_node(&self) -> Option<usize> {
        match self.rows.get(self.tree.selected())? {
            TreeRow::Node { node, .. } => Some(*node),
            TreeRow::SetAside { .. } => None,
        }
    }

    /// The record selected in the tree (node or set-aside row).
    pub fn selected_record(&self, base: &Analysis) -> Option<usize> {
        let build = self.shown(base).build.as_ref()?;
        match self.rows.get(self.tree.selected())? {
            TreeRow::Node { node, .. } => Some(build.record_of(*node)),
            TreeRow::SetAside { record } => Some(*record),
        }
    }

    /// Move the tree selection; the token cursor and the graph follow it.
    pub(crate) fn move_tree(&mut self, base: &Analysis, delta: isize) -> Option<Notice> {
        self.tree.move_by(delta);
        self.divergence = None;
        self.follow_tree_selection(base)
    }

    /// Select tree row `row` (a click).
    pub(crate) fn select_tree_row(&mut self, base: &Analysis, row: usize) -> Option<Notice> {
        self.tree.select(row);
        self.divergence = None;
        self.follow_tree_selection(base)
    }

    /// Put the token cursor on the selected call's generation (switching chain if needed),
    /// and the graph selection on its model call.
    fn follow_tree_selection(&mut self, base: &Analysis) -> Option<Notice> {
        let record = self.selected_record(base)?;
        let analysis = shown(&self.what_if, base);
        let call = &analysis.capture.records[record].model_call_id;
        if let Some(line) = self
            .graph
            .iter()
            .position(|l| l.call.as_deref() == Some(call.as_str()))
        {
            self.graph_list.select(line);
        }
        let node = self.selected_node()?;
        let build = analysis.build.as_ref()?;
        let on_current = self
            .tokens
            .chain
            .is_some_and(|c| build.chain_contains(c, node));
        if !on_current {
            match build.chain_of(node) {
                Some(chain) => {
                    self.tokens.show(Some(build), Some(chain));
                }
                None => return Some(Notice::NotOnAChain),
            }
        }
        let start = self.tokens.provenance.as_ref().and_then(|p| {
            p.segments
                .iter()
                .find(|s| s.origin == Origin::Generation { node })
                .map(|s| s.range.0)
        });
        if let Some(start) = start {
            self.tokens.set_cursor(start);
        }
        None
    }

    /// Select a call by id in the tree (and so in the token pane and the graph).
    pub(crate) fn select_call(&mut self, base: &Analysis, call: &str) -> Result<(), Notice> {
        let analysis = shown(&self.what_if, base);
        let records = &analysis.capture.records;
        let build = analysis
            .build
            .as_ref()
            .ok_or_else(|| Notice::NoSuchCall(call.to_owned()))?;
        let target = self.rows.iter().position(|row| match row {
            TreeRow::Node { node, .. } => records[build.record_of(*node)].model_call_id == call,
            TreeRow::SetAside { record } => records[*record].model_call_id == call,
        });
        match target {
            Some(row) => {
                self.tree.select(row);
                self.divergence = None;
                match self.follow_tree_selection(base) {
                    Some(notice) => Err(notice),
                    None => Ok(()),
                }
            }
            None => Err(Notice::NoSuchCall(call.to_owned())),
        }
    }

    /// Collapse or expand the selected node's subtree.
    pub(crate) fn toggle_collapse(&mut self, base: &Analysis) {
        let Some(node) = self.selected_node() else {
            return;
        };
        let Some(build) = &shown(&self.what_if, base).build else {
            return;
        };
        if !self.collapsed.remove(&node) {
            self.collapsed.insert(node);
        }
        self.rows = tree_rows(build, &self.collapsed);
        self.tree.set_len(self.rows.len());
        let row = self
            .rows
            .iter()
            .position(|r| matches!(r, TreeRow::Node { node: n, .. } if *n == node))
            .unwrap_or(0);
        self.tree.select(row);
    }

    /// Move the token cursor to the next (or previous) call boundary.
    pub(crate) fn jump_boundary(&mut self, forward: bool) {
        let Some(provenance) = &self.tokens.provenance else {
            return;
        };
        let cursor = self.tokens.cursor;
        let starts = provenance.segments.iter().map(|s| s.range.0);
        let target = if forward {
            starts.filter(|&s| s > cursor).min()
        } else {
            starts.filter(|&s| s < cursor).max()
        };
        if let Some(target) = target {
            self.tokens.set_cursor(target);
        }
    }

    /// Move the token cursor to the next (or previous) generated token whose log probability
    /// is below `threshold`.
    pub(crate) fn jump_low_prob(
        &mut self,
        base: &Analysis,
        forward: bool,
        threshold: f64,
    ) -> Option<Notice> {
        let analysis = shown(&self.what_if, base);
        let build = analysis.build.as_ref()?;
        let provenance = self.tokens.provenance.as_ref()?;
        let records = &analysis.capture.records;
        let cursor = self.tokens.cursor;
        let is_low = |position: usize| {
            provenance
                .log_prob(records, build, position)
                .is_some_and(|lp| lp < threshold)
        };
        let generated = provenance
            .segments
            .iter()
            .filter(|s| matches!(s.origin, Origin::Generation { .. }));
        let found = if forward {
            generated
                .flat_map(|s| s.range.0.max(cursor + 1)..s.range.1)
                .find(|&p| is_low(p))
        } else {
            let segments: Vec<_> = generated.collect();
            segments
                .iter()
                .rev()
                .flat_map(|s| (s.range.0..s.range.1.min(cursor)).rev())
                .find(|&p| is_low(p))
        };
        match found {
            Some(position) => {
                self.tokens.set_cursor(position);
                None
            }
            None => Some(Notice::NoLowProb),
        }
    }

    /// Show the next chain in the token pane.
    pub(crate) fn cycle_chain(&mut self, base: &Analysis) {
        let Some(build) = &shown(&self.what_if, base).build else {
            return;
        };
        if build.chains.is_empty() {
            return;
        }
        let next = self
            .tokens
            .chain
            .map_or(0, |c| (c + 1) % build.chains.len());
        self.tokens.show(Some(build), Some(next));
    }

    /// Show chain `index` (from 0) in the token pane; whether there is one.
    pub(crate) fn show_chain(&mut self, base: &Analysis, index: usize) -> bool {
        match &shown(&self.what_if, base).build {
            Some(build) if index < build.chains.len() => {
                self.tokens.show(Some(build), Some(index));
                true
            }
            _ => false,
        }
    }

    /// Where the selected call's prompt leaves its recorded parent's tokens.
    pub(crate) fn show_divergence(&mut self, base: &Analysis) -> Option<Notice> {
        let analysis = shown(&self.what_if, base);
        let Some(build) = analysis.build.as_ref() else {
            return Some(Notice::NoBuild);
        };
        let Some(node) = self.selected_node() else {
            return Some(Notice::SelectACall);
        };
        self.divergence = divergence(&analysis.capture.records, build, node);
        // The token cursor goes to the first differing position: the call's prompt starts
        // its chain's sequence, so the position is the same there.
        if let Some(found) = &self.divergence {
            self.tokens.set_cursor(found.position);
        }
        self.divergence.is_none().then_some(Notice::NoDivergence)
    }

    /// The options the shown analysis was built with.
    pub(crate) fn current_options(&self, base: &Analysis) -> VerdictOptions {
        self.shown(base).options.clone()
    }

    /// Rebuild the rollout with `options` and show that instead.
    pub(crate) fn set_what_if(&mut self, base: &Analysis, options: VerdictOptions) {
        let analysis = analyze(base.capture.clone(), &options);
        let changes = what_if_changes(base, &analysis);
        self.what_if = Some(WhatIf {
            options,
            analysis: Box::new(analysis),
            changes,
        });
        self.rebuild(base);
    }

    /// Drop the what-if; whether there was one.
    pub(crate) fn clear_what_if(&mut self, base: &Analysis) -> bool {
        let had = self.what_if.take().is_some();
        if had {
            self.rebuild(base);
        }
        had
    }

    /// What to keep across a change of the rollout: read before the analysis is replaced.
    pub(crate) fn keep(&self, before: &Analysis) -> Kept {
        Kept {
            call: self
                .selected_record(before)
                .map(|r| before.capture.records[r].model_call_id.clone()),
            chain: self.tokens.chain.and_then(|c| {
                self.shown(before)
                    .build
                    .as_ref()
                    .map(|b| b.chains[c].chain_id)
            }),
            records: before.capture.records.len(),
        }
    }

    /// The rollout changed (live or replay): rebuild, keeping the selected call, the chain
    /// shown, the token cursor and the other selections where they were.
    pub(crate) fn refresh(&mut self, kept: Kept, base: &Analysis, now: Instant) {
        let cursor = self.tokens.cursor;
        let tree_row = self.tree.selected();
        self.what_if = None;
        self.new_records = Some((kept.records, now));
        self.rebuild(base);
        self.tree.select(tree_row);
        if let Some(call) = kept.call {
            // The call may be gone (a rollout cleared and rewritten): keep the row then.
            let _ = self.select_call(base, &call);
        }
        if let (Some(build), Some(name)) = (&base.build, kept.chain)
            && let Some(chain) = build.chains.iter().position(|c| c.chain_id == name)
            && self.tokens.chain != Some(chain)
        {
            self.tokens.show(Some(build), Some(chain));
        }
        self.tokens.set_cursor(cursor);
    }
}

/// What a view keeps across a change of its rollout.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    call: Option<String>,
    chain: Option<tokscope_core::rebuild::ChainId>,
    records: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo(id: &str) -> Analysis {
        tokscope_testkit::demo_analyses()
            .into_iter()
            .find(|a| a.rollout_id() == id)
            .unwrap_or_else(|| panic!("demo rollout {id}"))
    }

    fn viewport() -> Viewport {
        Viewport {
            width: 120,
            height: 40,
            list_rows: 10,
            tree_rows: 8,
            detail_rows: 10,
            graph_rows: 7,
            token_rows: 6,
            tokens_per_row: 10,
            text_tokens_per_row: 10,
        }
    }

    #[test]
    fn tree_selection_moves_the_token_cursor_and_chain() {
        let base = demo("demo-subagent");
        let mut view = RolloutView::open(0, &base, &viewport());
        let build = base.build.as_ref().expect("a build");
        assert_eq!(view.tokens.chain, build.main);
        // Walk the tree: every node on a chain puts the cursor on its own generation.
        for row in 0..view.rows.len() {
            let notice = view.select_tree_row(&base, row);
            let Some(node) = view.selected_node() else {
                continue;
            };
            match build.chain_of(node) {
                None => assert_eq!(notice, Some(Notice::NotOnAChain)),
                Some(_) => {
                    let chain = view.tokens.chain.expect("a chain shown");
                    assert!(build.chain_contains(chain, node));
                    let provenance = view.tokens.provenance.as_ref().expect("provenance");
                    let segment = provenance
                        .segment_at(view.tokens.cursor)
                        .expect("cursor inside");
                    assert_eq!(segment.origin, Origin::Generation { node });
                    let cursor_row = view.tokens.cursor / view.tokens.per_row();
                    assert!(view.tokens.rows.visible().contains(&cursor_row));
                }
            }
        }
    }

    #[test]
    fn collapse_what_if_and_refresh_keep_the_selection() {
        let base = demo("demo-subagent");
        let mut view = RolloutView::open(0, &base, &viewport());
        let rows = view.rows.len();
        view.select_tree_row(&base, 1);
        let node = view.selected_node().expect("a node");
        view.toggle_collapse(&base);
        assert!(view.rows.len() < rows);
        assert_eq!(view.selected_node(), Some(node));
        view.toggle_collapse(&base);
        assert_eq!(view.rows.len(), rows);
        // Pin the selected call as terminal: a what-if with its changes.
        let call = base.capture.records[view.selected_record(&base).expect("record")]
            .model_call_id
            .clone();
        let mut options = view.current_options(&base);
        options.terminal_call_id = Some(call.clone());
        view.set_what_if(&base, options);
        let what_if = view.what_if.as_ref().expect("a what-if");
        assert!(matches!(what_if.changes[0], WhatIfChange::Verdict { .. }));
        assert!(view.clear_what_if(&base));
        assert!(!view.clear_what_if(&base));
        // A refresh from the same analysis keeps the selected call.
        view.select_call(&base, &call).expect("call in tree");
        let kept = view.keep(&base);
        view.refresh(kept, &base, Instant::now());
        let record = view.selected_record(&base).expect("record");
        assert_eq!(base.capture.records[record].model_call_id, call);
        assert_eq!(
            view.select_call(&base, "nope"),
            Err(Notice::NoSuchCall("nope".into()))
        );
    }

    #[test]
    fn token_cursor_and_jumps_clamp() {
        let base = demo("demo-clean");
        let mut view = RolloutView::open(0, &base, &viewport());
        let len = view.tokens.len();
        assert!(len > 0);
        view.tokens.move_cursor(isize::MAX);
        assert_eq!(view.tokens.cursor, len - 1);
        view.tokens.move_cursor(isize::MIN);
        assert_eq!(view.tokens.cursor, 0);
        view.jump_boundary(true);
        assert!(view.tokens.cursor > 0);
        let first_boundary = view.tokens.cursor;
        view.jump_boundary(false);
        assert_eq!(view.tokens.cursor, 0);
        view.jump_boundary(true);
        assert_eq!(view.tokens.cursor, first_boundary);
        // A threshold no token is below finds nothing.
        assert_eq!(
            view.jump_low_prob(&base, true, f64::NEG_INFINITY),
            Some(Notice::NoLowProb)
        );
        assert_eq!(view.jump_low_prob(&base, true, f64::INFINITY), None);
        assert!(view.tokens.cursor > first_boundary.min(1) - 1);
        // Resizing keeps the cursor's row on screen.
        let mut small = viewport();
        small.token_rows = 1;
        small.tokens_per_row = 3;
        view.tokens.set_cursor(len - 1);
        view.resize(&small);
        assert!(view.tokens.rows.visible().contains(&((len - 1) / 3)));
    }
}
