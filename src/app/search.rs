//! `/` search in the focused pane, `n` / `N` for the next and previous match: token ids or
//! decoded text in the token pane, call ids in the tree, text in the inspector, the gaps and
//! the graph. Smart case: case matters only when the query has a capital letter.

use super::{App, Notice, Pane};
use crate::rebuild::TokenValue;

/// The search in effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Search {
    /// The pane searched.
    pub pane: Pane,
    /// What was typed.
    pub query: String,
    /// Inspector only: the first wrapped line of every line holding the query, as drawing
    /// measured them (`None` until measured).
    pub inspector_matches: Option<Vec<usize>>,
    /// Inspector only: go to the first match once the matches are measured.
    pub(super) pending: bool,
}

impl Search {
    /// A search of the inspector for `query`, going to its first match once drawn.
    pub(super) fn pending_in_inspector(query: String) -> Search {
        Search {
            pane: Pane::Inspector,
            query,
            inspector_matches: None,
            pending: true,
        }
    }
}

/// Whether `text` holds `query`, smart case.
pub fn matches(text: &str, query: &str) -> bool {
    if query.chars().any(char::is_uppercase) {
        text.contains(query)
    } else {
        text.to_lowercase().contains(&query.to_lowercase())
    }
}

/// Visit `0..len` starting after `from` (or before it, backwards), wrapping once; the first
/// index `hit` accepts, and whether the search wrapped to find it.
fn cycle(
    len: usize,
    from: usize,
    forward: bool,
    hit: impl Fn(usize) -> bool,
) -> Option<(usize, bool)> {
    (1..=len).find_map(|step| {
        let (index, wrapped) = if forward {
            let i = from + step;
            (i % len, i >= len)
        } else {
            ((from + len - step % len) % len, step > from)
        };
        hit(index).then_some((index, wrapped))
    })
}

impl App {
    /// Search the focused pane for `query` (an empty query ends the search).
    pub(super) fn start_search(&mut self, query: String) {
        if query.trim().is_empty() {
            self.search = None;
            return;
        }
        self.search = Some(Search {
            pane: self.focus,
            query,
            inspector_matches: None,
            pending: self.focus == Pane::Inspector,
        });
        if self.focus != Pane::Inspector {
            self.search_step(true);
        }
    }

    /// The next (or previous) match of the search in effect.
    pub(super) fn search_step(&mut self, forward: bool) {
        let Some(search) = self.search.clone() else {
            self.message = Some(Notice::NoSearch);
            return;
        };
        self.focus_pane(search.pane);
        let query = search.query.as_str();
        let found = match search.pane {
            Pane::List => {
                self.message = Some(Notice::NoSearch);
                return;
            }
            Pane::Inspector => self.inspector_step(&search, forward),
            Pane::Tokens => self.token_step(query, forward),
            Pane::Tree => {
                let mut found = None;
                self.notice_from_view(|view, base| {
                    let analysis = view.shown(base);
                    let texts: Vec<String> = view
                        .rows
                        .iter()
                        .map(|row| row.call_id(analysis).to_owned())
                        .collect();
                    found = cycle(texts.len(), view.tree.selected(), forward, |i| {
                        matches(&texts[i], query)
                    });
                    found.and_then(|(row, _)| view.select_tree_row(base, row))
                });
                found
            }
            Pane::Gaps | Pane::Graph => {
                let mut found = None;
                let graph = search.pane == Pane::Graph;
                self.with_view(|view, _| {
                    let texts: Vec<String> = if graph {
                        view.graph
                            .iter()
                            .map(|l| format!("{:?} {:?}", l.call, l.node))
                            .collect()
                    } else {
                        view.gaps
                            .iter()
                            .map(|g| format!("{:?} {:?}", g.call, g.fact))
                            .collect()
                    };
                    let list = if graph {
                        &mut view.graph_list
                    } else {
                        &mut view.gap_list
                    };
                    found = cycle(texts.len(), list.selected(), forward, |i| {
                        matches(&texts[i], query)
                    });
                    if let Some((index, _)) = found {
                        list.select(index);
                    }
                });
                found
            }
        };
        match found {
            None => self.message = Some(Notice::NotFound(search.query)),
            Some((_, true)) => self.message = Some(Notice::SearchWrapped(forward)),
            Some(_) => {}
        }
    }

    /// Token pane: an id sequence when the query is numbers, else decoded text.
    fn token_step(&mut self, query: &str, forward: bool) -> Option<(usize, bool)> {
        let ids: Option<Vec<TokenValue>> = query
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect();
        let detok = self.detok.clone();
        if ids.is_none() && detok.is_none() {
            self.message = Some(Notice::NoTokenizer);
            return None;
        }
        let mut found = None;
        self.with_view(|view, _| {
            let Some(provenance) = &view.tokens.provenance else {
                return;
            };
            let tokens = &provenance.tokens;
            let hit = |position: usize| match (&ids, &detok) {
                (Some(ids), _) => ids
                    .iter()
                    .enumerate()
                    .all(|(k, id)| tokens.value(position + k) == Some(*id)),
                (None, Some(detok)) => {
                    // Pieces from here until the text is as long as the query.
                    let mut text = String::new();
                    let mut at = position;
                    while text.chars().count() < query.chars().count() {
                        let Some(token) = tokens.value(at) else { break };
                        text.push_str(&detok.piece(token));
                        at += 1;
                    }
                    let lower_ok = matches(&text, query);
                    lower_ok && {
                        // The match starts in this token, not in a later one.
                        let first = tokens
                            .value(position)
                            .map(|t| detok.piece(t))
                            .unwrap_or_default();
                        let rest: String = text.chars().skip(first.chars().count()).collect();
                        !matches(&rest, query)
                    }
                }
                (None, None) => false,
            };
            found = cycle(tokens.len(), view.tokens.cursor, forward, hit);
            if let Some((position, _)) = found {
                view.tokens.set_cursor(position);
            }
        });
        found
    }

    /// Inspector: the next measured match line below (or above) the top of the pane.
    fn inspector_step(&mut self, search: &Search, forward: bool) -> Option<(usize, bool)> {
        let lines = search.inspector_matches.clone()?;
        let mut found = None;
        self.with_view(|view, _| {
            let top = view.inspector.top();
            let next = if forward {
                lines.iter().copied().find(|&l| l > top).map(|l| (l, false))
            } else {
                lines
                    .iter()
                    .rev()
                    .copied()
                    .find(|&l| l < top)
                    .map(|l| (l, false))
            };
            found = next.or_else(|| {
                let wrapped = if forward { lines.first() } else { lines.last() };
                wrapped.map(|&l| (l, true))
            });
            if let Some((line, _)) = found {
                view.inspector.move_by(line as isize - top as isize);
            }
        });
        found
    }

    /// Drawing measured where the inspector's matches are.
    pub(super) fn inspector_matches(&mut self, lines: Vec<usize>) -> bool {
        let Some(search) = &mut self.search else {
            return false;
        };
        if search.pane != Pane::Inspector || search.inspector_matches.as_ref() == Some(&lines) {
            return false;
        }
        search.inspector_matches = Some(lines);
        if std::mem::take(&mut search.pending) {
            // The first match at or below the top.
            if let Some(view) = &self.view {
                let top = view.inspector.top();
                let search = self.search.as_mut().expect("just set");
                let lines = search.inspector_matches.as_ref().expect("just set");
                if let Some(&first) = lines.iter().find(|&&l| l >= top) {
                    if let Some(view) = &mut self.view {
                        view.inspector.move_by(first as isize - top as isize);
                    }
                } else {
                    let query = search.query.clone();
                    self.message = Some(Notice::NotFound(query));
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_case() {
        assert!(matches("Parent_Digest", "digest"));
        assert!(!matches("parent_digest", "Digest"));
        assert!(matches("Parent_Digest", "Digest"));
    }

    #[test]
    fn cycle_wraps_once_both_ways() {
        let hits = [false, true, false, true, false];
        let hit = |i: usize| hits[i];
        assert_eq!(cycle(5, 1, true, hit), Some((3, false)));
        assert_eq!(cycle(5, 3, true, hit), Some((1, true)));
        assert_eq!(cycle(5, 3, false, hit), Some((1, false)));
        assert_eq!(cycle(5, 1, false, hit), Some((3, true)));
        assert_eq!(cycle(5, 0, true, |_| false), None);
        assert_eq!(cycle(0, 0, true, |_| true), None);
        // The only match is where we are: found again after a full turn.
        assert_eq!(cycle(5, 3, true, |i| i == 3), Some((3, true)));
    }
}
