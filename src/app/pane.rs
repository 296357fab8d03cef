//! The panes, each described once ([`PaneSpec`]): its title, its place on the screen (a tab of
//! the bottom-right place or a place of its own), its name in the configuration and the
//! remembered state, the scope of its keys, what Enter does, and what the moving keys, `/` and
//! `y` act on. The app's behaviour and the drawing side read the spec; nothing matches on a
//! pane with a catch-all arm, so a new pane is a compile error wherever it must be handled.
//!
//! Adding a bottom-right tab whose items are rows: a [`Pane`] and a [`Tab`] variant with their
//! spec here (its rows reached through a [`RowsSpec`]), its rows and their [`ScrollList`] in
//! `RolloutView` (`app/rollout.rs`), its drawing in `ui/` and one arm in `ui::draw_tab`.

use strum::{EnumIter, IntoEnumIterator};

use super::scroll::ScrollList;
use super::{App, Notice, RolloutView};

/// The panes, in Tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter)]
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

/// The panes that share the bottom-right place, one shown at a time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, EnumIter)]
pub enum Tab {
    /// The inspector (shown first).
    #[default]
    Inspector,
    /// The gaps.
    Gaps,
    /// The observation graph.
    Graph,
}

/// Where a pane is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The left column.
    List,
    /// The top right.
    Tree,
    /// The middle right.
    Tokens,
    /// The bottom right, as one of the [`Tab`]s.
    Detail(Tab),
}

/// The keys a binding is for: everywhere, or while a pane is focused, or live and replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyScope {
    /// Every pane.
    Global,
    /// The rollout list.
    List,
    /// The chain tree.
    Tree,
    /// The token pane.
    Tokens,
    /// Live monitoring and replay.
    Live,
}

/// What Enter does in a pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enter {
    /// Open the rollout (focus the tree).
    Open,
    /// Show the selected call's divergence.
    Divergence,
    /// Go to the call the selected row names.
    GoToCall,
    /// Nothing.
    Nothing,
}

/// What a pane's items are: what the moving keys move, `/` searches and `y` copies.
#[derive(Clone, Copy)]
pub enum Items {
    /// The rollouts (`/` filters them; `y`: the rollout id).
    Rollouts,
    /// The chain tree's rows (`y`: the full call id).
    Tree,
    /// The token cursor (`y`: the marked tokens or the call's under the cursor).
    Tokens,
    /// Scrolled text, searched where it is drawn (`y`: the record JSON).
    Text,
    /// Rows of the pane's own.
    Rows(RowsSpec),
}

/// A pane whose items are rows of its own: how to reach them.
#[derive(Clone, Copy)]
pub struct RowsSpec {
    /// The rows' selection.
    pub list: fn(&RolloutView) -> &ScrollList,
    /// The rows' selection, to move it.
    pub list_mut: fn(&mut RolloutView) -> &mut ScrollList,
    /// Each row's text as `/` reads it (the full call id first).
    pub texts: fn(&RolloutView) -> Vec<String>,
    /// The call row `i` names (Enter and `d` go there).
    pub call: fn(&RolloutView, usize) -> Option<String>,
    /// What `y` (`as_text`: `Y`) copies of row `i`: what it is, and the text.
    pub yank: fn(&RolloutView, usize, bool) -> Option<(&'static str, String)>,
    /// Enter on the selected row.
    pub enter: fn(&mut App),
}

/// Everything the app and the drawing side need to know of a pane.
pub struct PaneSpec {
    /// The pane.
    pub pane: Pane,
    /// Its title.
    pub title: &'static str,
    /// Its name in the configuration and the remembered state.
    pub name: &'static str,
    /// Where it is drawn.
    pub place: Place,
    /// The scope of the keys shown while it is focused.
    pub scope: KeyScope,
    /// What Enter does.
    pub enter: Enter,
    /// What its items are.
    pub items: Items,
}

/// A bottom-right tab: the key that shows it and its label in the tab strip.
pub struct TabSpec {
    /// The tab.
    pub tab: Tab,
    /// The key that shows it (the user may bind others).
    pub key: &'static str,
    /// Its label when it is not the one shown.
    pub label: &'static str,
    /// The help line of its key.
    pub help: &'static str,
}

const LIST: PaneSpec = PaneSpec {
    pane: Pane::List,
    title: "rollouts",
    name: "list",
    place: Place::List,
    scope: KeyScope::List,
    enter: Enter::Open,
    items: Items::Rollouts,
};

const TREE: PaneSpec = PaneSpec {
    pane: Pane::Tree,
    title: "chain tree",
    name: "tree",
    place: Place::Tree,
    scope: KeyScope::Tree,
    enter: Enter::Divergence,
    items: Items::Tree,
};

const TOKENS: PaneSpec = PaneSpec {
    pane: Pane::Tokens,
    title: "tokens",
    name: "tokens",
    place: Place::Tokens,
    scope: KeyScope::Tokens,
    enter: Enter::Nothing,
    items: Items::Tokens,
};

const INSPECTOR: PaneSpec = PaneSpec {
    pane: Pane::Inspector,
    title: "inspector",
    name: "inspector",
    place: Place::Detail(Tab::Inspector),
    scope: KeyScope::Global,
    enter: Enter::Nothing,
    items: Items::Text,
};

const GAPS: PaneSpec = PaneSpec {
    pane: Pane::Gaps,
    title: "gaps",
    name: "gaps",
    place: Place::Detail(Tab::Gaps),
    scope: KeyScope::Global,
    enter: Enter::GoToCall,
    items: Items::Rows(RowsSpec {
        list: |view| &view.gap_list,
        list_mut: |view| &mut view.gap_list,
        texts: |view| {
            view.gaps
                .iter()
                .map(|g| format!("{} {}", g.call.as_deref().unwrap_or("-"), g.fact))
                .collect()
        },
        call: |view, i| view.gaps.get(i)?.call.clone(),
        yank: |view, i, as_text| {
            let gap = view.gaps.get(i)?;
            Some(match &gap.call {
                Some(call) if !as_text => ("call id", call.clone()),
                call => (
                    "gap",
                    format!("{} {}", call.as_deref().unwrap_or("-"), gap.fact),
                ),
            })
        },
        enter: App::enter_gap,
    }),
};

const GRAPH: PaneSpec = PaneSpec {
    pane: Pane::Graph,
    title: "observation graph",
    name: "graph",
    place: Place::Detail(Tab::Graph),
    scope: KeyScope::Global,
    enter: Enter::GoToCall,
    items: Items::Rows(RowsSpec {
        list: |view| &view.graph_list,
        list_mut: |view| &mut view.graph_list,
        texts: |view| {
            view.graph
                .iter()
                .map(|l| {
                    let call = l.call.as_deref().unwrap_or_default();
                    format!("{call} {}", tokscope_core::graph::text::line_text(l))
                })
                .collect()
        },
        call: |view, i| view.graph.get(i)?.call.clone(),
        yank: |view, i, as_text| {
            let line = view.graph.get(i)?;
            match (&line.call, &line.raw) {
                (Some(call), _) if !as_text => Some(("call id", call.clone())),
                (_, Some(raw)) => Some(("observation JSON", raw.to_string())),
                (Some(call), None) => Some(("call id", call.clone())),
                (None, None) => None,
            }
        },
        enter: |app| {
            let line = app.view.as_ref().and_then(|view| {
                view.graph
                    .get(view.graph_list.selected())
                    .map(|l| l.call.clone())
            });
            match line {
                Some(Some(call)) => app.select_call(&call),
                Some(None) => app.message = Some(Notice::NotACall),
                None => {}
            }
        },
    }),
};

impl Pane {
    /// The pane's spec.
    pub fn spec(self) -> &'static PaneSpec {
        match self {
            Pane::List => &LIST,
            Pane::Tree => &TREE,
            Pane::Tokens => &TOKENS,
            Pane::Inspector => &INSPECTOR,
            Pane::Gaps => &GAPS,
            Pane::Graph => &GRAPH,
        }
    }

    /// The tab this pane is, if it is one of the bottom-right tabs.
    pub fn tab(self) -> Option<Tab> {
        match self.spec().place {
            Place::Detail(tab) => Some(tab),
            Place::List | Place::Tree | Place::Tokens => None,
        }
    }

    /// Whether this pane is one of the bottom-right tabs.
    pub fn is_tab(self) -> bool {
        self.tab().is_some()
    }

    /// The pane named `name` in the configuration.
    pub fn named(name: &str) -> Option<Pane> {
        Pane::iter().find(|p| p.spec().name == name)
    }
}

impl Tab {
    /// The pane this tab is.
    pub fn pane(self) -> Pane {
        match self {
            Tab::Inspector => Pane::Inspector,
            Tab::Gaps => Pane::Gaps,
            Tab::Graph => Pane::Graph,
        }
    }

    /// Its key and label.
    pub fn spec(self) -> &'static TabSpec {
        const INSPECTOR: TabSpec = TabSpec {
            tab: Tab::Inspector,
            key: "i",
            label: "inspector",
            help: "inspector tab (bottom right)",
        };
        const GAPS: TabSpec = TabSpec {
            tab: Tab::Gaps,
            key: "p",
            label: "gaps",
            help: "gaps tab: what was not observed or joined",
        };
        const GRAPH: TabSpec = TabSpec {
            tab: Tab::Graph,
            key: "o",
            label: "graph",
            help: "observation graph tab",
        };
        match self {
            Tab::Inspector => &INSPECTOR,
            Tab::Gaps => &GAPS,
            Tab::Graph => &GRAPH,
        }
    }

    /// The tab named `name` (its pane's configuration name).
    pub fn named(name: &str) -> Option<Tab> {
        Pane::named(name)?.tab()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pane_has_one_spec_and_every_tab_is_a_pane() {
        let names: std::collections::HashSet<&str> = Pane::iter().map(|p| p.spec().name).collect();
        assert_eq!(names.len(), Pane::iter().count(), "names are unique");
        for pane in Pane::iter() {
            assert_eq!(pane.spec().pane, pane);
            assert_eq!(Pane::named(pane.spec().name), Some(pane));
            if let Some(tab) = pane.tab() {
                assert_eq!(tab.pane(), pane);
                assert_eq!(Tab::named(pane.spec().name), Some(tab));
            }
        }
        for tab in Tab::iter() {
            assert_eq!(tab.pane().tab(), Some(tab));
            assert_eq!(tab.spec().tab, tab);
        }
        assert!(!Pane::List.is_tab() && Pane::Graph.is_tab());
        assert_eq!(Tab::named("tree"), None, "the tree is not a tab");
    }
}
