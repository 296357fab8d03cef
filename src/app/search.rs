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
    /// Inspector only: which of the matches is the current one.
    pub inspector_at: Option<usize>,
}

impl Search {
    /// A search of the inspector for `query`, going to its first match once drawn.
    pub(super) fn pending_in_inspector(query: String) -> Search {
        Search {
            pane: Pane::Inspector,
            query,
            inspector_matches: None,
            pending: true,
            inspector_at: None,
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

/// Where the id sequence `ids` starts in `values`.
fn id_matches(values: &[TokenValue], ids: &[TokenValue]) -> Vec<usize> {
    if ids.is_empty() {
        return Vec::new();
    }
    (0..values.len())
        .filter(|&p| values[p] == ids[0] && values[p..].starts_with(ids))
        .collect()
}

/// The tokens where a match of `query` (smart case) starts in the pieces' text.
fn text_matches(
    values: &[TokenValue],
    query: &str,
    detok: &crate::detok::Detokenizer,
) -> Vec<usize> {
    let fold = !query.chars().any(char::is_uppercase);
    let query = if fold {
        query.to_lowercase()
    } else {
        query.to_owned()
    };
    // The text and where each token's piece starts in it (folded piece by piece, so the
    // offsets stay those of the folded text).
    let mut text = String::new();
    let mut offsets = Vec::with_capacity(values.len());
    // Each distinct id decoded (and folded) once: a chain repeats its vocabulary.
    let mut pieces: std::collections::HashMap<TokenValue, String> =
        std::collections::HashMap::new();
    for &value in values {
        offsets.push(text.len());
        let piece = pieces.entry(value).or_insert_with(|| {
            let piece = detok.piece(value);
            if fold { piece.to_lowercase() } else { piece }
        });
        text.push_str(piece);
    }
    let mut starts: Vec<usize> = text
        .match_indices(query.as_str())
        .map(|(at, _)| offsets.partition_point(|&o| o <= at).saturating_sub(1))
        .collect();
    starts.dedup();
    starts
}

/// The first match after `cursor` (before it, backwards), wrapping once: the position and
/// whether it wrapped.
fn next_match(starts: &[usize], cursor: usize, forward: bool) -> Option<(usize, bool)> {
    if forward {
        let after = starts.partition_point(|&p| p <= cursor);
        match starts.get(after) {
            Some(&p) => Some((p, false)),
            None => starts.first().map(|&p| (p, true)),
        }
    } else {
        let before = starts.partition_point(|&p| p < cursor);
        match before.checked_sub(1) {
            Some(i) => Some((starts[i], false)),
            None => starts.last().map(|&p| (p, true)),
        }
    }
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
            inspector_at: None,
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
                    // What the pane shows, with the full call id.
                    let texts: Vec<String> = if graph {
                        view.graph
                            .iter()
                            .map(|l| {
                                let call = l.call.as_deref().unwrap_or_default();
                                format!("{call} {}", crate::observe::graph::text::line_text(l))
                            })
                            .collect()
                    } else {
                        view.gaps
                            .iter()
                            .map(|g| format!("{} {}", g.call.as_deref().unwrap_or("-"), g.fact))
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

    /// Token pane: an id sequence when the query is numbers, else decoded text (matched in
    /// the tokens' pieces, so a match may start inside a token).
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
            // One pass over the rope (a position lookup walks it: never once per token).
            let values: Vec<TokenValue> = provenance.tokens.values().collect();
            let starts: Vec<usize> = match (&ids, &detok) {
                (Some(ids), _) => id_matches(&values, ids),
                (None, Some(detok)) => text_matches(&values, query, detok),
                (None, None) => Vec::new(),
            };
            found = next_match(&starts, view.tokens.cursor, forward);
            if let Some((position, _)) = found {
                view.tokens.set_cursor(position);
            }
        });
        found
    }

    /// Inspector: the next measured match line below (or above) the top of the pane.
    fn inspector_step(&mut self, search: &Search, forward: bool) -> Option<(usize, bool)> {
        let lines = search.inspector_matches.clone().filter(|l| !l.is_empty())?;
        // From the current match (not from the top: the last ones may sit below the last
        // scrollable top, and `n` must still reach them and wrap).
        let (index, wrapped) = match (search.inspector_at, forward) {
            (Some(at), true) => ((at + 1) % lines.len(), at + 1 >= lines.len()),
            (Some(at), false) => ((at + lines.len() - 1) % lines.len(), at == 0),
            (None, _) => (0, false),
        };
        if let Some(search) = &mut self.search {
            search.inspector_at = Some(index);
        }
        let line = lines[index];
        self.with_view(|view, _| {
            let top = view.inspector.top();
            view.inspector.move_by(line as isize - top as isize);
        });
        Some((line, wrapped))
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
        // Other lines (another rollout, a resize): the current match is the first at or below
        // the top again.
        search.inspector_at = None;
        if let (false, Some(view)) = (search.pending, &self.view) {
            let top = view.inspector.top();
            let lines = search.inspector_matches.as_deref().unwrap_or_default();
            search.inspector_at = lines.iter().position(|&l| l >= top);
        }
        if std::mem::take(&mut search.pending) {
            // The first match at or below the top.
            if let Some(view) = &self.view {
                let top = view.inspector.top();
                let search = self.search.as_mut().expect("just set");
                let lines = search.inspector_matches.as_ref().expect("just set");
                if let Some(index) = lines.iter().position(|&l| l >= top) {
                    let first = lines[index];
                    search.inspector_at = Some(index);
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
    fn token_matches_wrap_like_the_lists() {
        assert_eq!(id_matches(&[1, 2, 3, 1, 2], &[1, 2]), vec![0, 3]);
        assert_eq!(id_matches(&[1, 2], &[]), Vec::<usize>::new());
        let starts = [0, 3, 7];
        assert_eq!(next_match(&starts, 0, true), Some((3, false)));
        assert_eq!(next_match(&starts, 7, true), Some((0, true)));
        assert_eq!(next_match(&starts, 3, false), Some((0, false)));
        assert_eq!(next_match(&starts, 0, false), Some((7, true)));
        assert_eq!(next_match(&[], 0, true), None);
        assert_eq!(next_match(&[4], 4, true), Some((4, true)));
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
