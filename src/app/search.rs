//! `/` search in the focused pane, `n` / `N` for the next and previous match: token ids or
//! decoded text in the token pane, call ids in the tree, text in the inspector, the gaps and
//! the graph. Smart case: case matters only when the query has a capital letter.

use super::pane::Items;
use super::{App, Notice, Pane};
use tokscope_core::store::TokenValue;

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

/// The next (or previous) position where the id sequence `ids` starts, wrapping as the
/// lists do.
fn next_ids(
    values: &[TokenValue],
    ids: &[TokenValue],
    cursor: usize,
    forward: bool,
) -> Option<(usize, bool)> {
    if ids.is_empty() {
        return None;
    }
    cycle(values.len(), cursor, forward, |p| {
        values[p..].starts_with(ids)
    })
}

/// Tokens decoded together when searching text: runs, so a character split across
/// byte-level tokens is whole; the overlap finds a match across two chunks.
const TEXT_CHUNK: usize = 256;
const TEXT_OVERLAP: usize = 32;

/// The token where the next (or previous) match of `query` (smart case) in the decoded text
/// starts, wrapping once, and whether it wrapped. The text is decoded a chunk at a time from
/// the cursor on, so a search costs the text up to the match.
fn next_text(
    values: &[TokenValue],
    query: &str,
    detok: &tokscope_core::detok::Detokenizer,
    cursor: usize,
    forward: bool,
) -> Option<(usize, bool)> {
    let fold = !query.chars().any(char::is_uppercase);
    let query = if fold {
        query.to_lowercase()
    } else {
        query.to_owned()
    };
    if query.is_empty() || values.is_empty() {
        return None;
    }
    let decode = |ids: &[TokenValue]| {
        let text = detok.decode(ids);
        if fold { text.to_lowercase() } else { text }
    };
    // The matches starting in chunk `c` (tokens c·CHUNK…), in order.
    let starts_in = |c: usize| -> Vec<usize> {
        let begin = c * TEXT_CHUNK;
        let end = (begin + TEXT_CHUNK).min(values.len());
        let ids = &values[begin..(end + TEXT_OVERLAP).min(values.len())];
        let text = decode(ids);
        let mut starts = Vec::new();
        for (offset, _) in text.match_indices(query.as_str()) {
            // The last token whose text starts at or before the match.
            let (mut low, mut high) = (0, ids.len());
            while low + 1 < high {
                let mid = (low + high) / 2;
                if decode(&ids[..mid]).len() <= offset {
                    low = mid;
                } else {
                    high = mid;
                }
            }
            let token = begin + low;
            if token < end && starts.last() != Some(&token) {
                starts.push(token);
            }
        }
        starts
    };
    let chunks = values.len().div_ceil(TEXT_CHUNK);
    let home = cursor.min(values.len() - 1) / TEXT_CHUNK;
    for step in 0..=chunks {
        let (c, wrapped) = if forward {
            ((home + step) % chunks, home + step >= chunks)
        } else {
            ((home + chunks * 2 - step) % chunks, step > home)
        };
        // In the cursor's chunk: first what lies past the cursor; after a full turn, the
        // rest (the cursor's own token included, as the lists do).
        let accept = |t: usize| match (forward, step) {
            (true, 0) => t > cursor,
            (false, 0) => t < cursor,
            (true, s) if s == chunks => t <= cursor,
            (false, s) if s == chunks => t >= cursor,
            _ => true,
        };
        let starts = starts_in(c);
        let pick = if forward {
            starts.into_iter().find(|&t| accept(t))
        } else {
            starts.into_iter().rev().find(|&t| accept(t))
        };
        if let Some(token) = pick {
            return Some((token, wrapped));
        }
    }
    None
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
            pending: matches!(self.focus.spec().items, Items::Text),
            inspector_at: None,
        });
        if !matches!(self.focus.spec().items, Items::Text) {
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
        let found = match search.pane.spec().items {
            Items::Rollouts => {
                self.message = Some(Notice::NoSearch);
                return;
            }
            Items::Text => self.inspector_step(&search, forward),
            Items::Tokens => self.token_step(query, forward),
            Items::Tree => {
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
            Items::Rows(rows) => {
                let mut found = None;
                self.with_view(|view, _| {
                    // What the pane shows, with the full call id.
                    let texts = (rows.texts)(view);
                    let list = (rows.list_mut)(view);
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
            let cursor = view.tokens.cursor;
            found = match (&ids, &detok) {
                (Some(ids), _) => next_ids(&values, ids, cursor, forward),
                (None, Some(detok)) => next_text(&values, query, detok, cursor, forward),
                (None, None) => None,
            };
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
        assert_eq!(
            next_ids(&[1, 2, 3, 1, 2], &[1, 2], 0, true),
            Some((3, false))
        );
        assert_eq!(next_ids(&[1, 2], &[], 0, true), None);
        // [1, 2] starts at 0, 3 and 7.
        let values = [1, 2, 9, 1, 2, 9, 9, 1, 2];
        assert_eq!(next_ids(&values, &[1, 2], 0, true), Some((3, false)));
        assert_eq!(next_ids(&values, &[1, 2], 7, true), Some((0, true)));
        assert_eq!(next_ids(&values, &[1, 2], 3, false), Some((0, false)));
        assert_eq!(next_ids(&values, &[1, 2], 0, false), Some((7, true)));
        assert_eq!(next_ids(&[], &[1], 0, true), None);
        assert_eq!(next_ids(&[9, 9, 9, 9, 1], &[1], 4, true), Some((4, true)));
    }

    #[test]
    fn text_matches_across_chunks_both_ways_and_wrapping() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tokenizer.json");
        let detok = tokscope_core::detok::Detokenizer::load(&path).unwrap();
        let text: String = (0..400)
            .map(|i| {
                if i % 97 == 50 {
                    "the Needle here ".to_owned()
                } else {
                    format!("w{i} ")
                }
            })
            .collect();
        let values: Vec<TokenValue> = detok.encode(&text).into_iter().map(i128::from).collect();
        assert!(values.len() > 2 * TEXT_CHUNK, "{} tokens", values.len());
        // Every match, found by walking forward, each where its text starts.
        let mut found = Vec::new();
        let mut cursor = 0;
        while let Some((at, wrapped)) = next_text(&values, "needle", &detok, cursor, true) {
            if wrapped {
                break;
            }
            let tail = detok.decode(&values[at..]).to_lowercase();
            assert!(tail.trim_start().starts_with("needle"), "{at}: {tail:.20}");
            found.push(at);
            cursor = at;
        }
        assert_eq!(found.len(), 4, "{found:?}");
        // Backwards from the end, the same in reverse; wrapping both ways.
        let last = values.len() - 1;
        assert_eq!(
            next_text(&values, "needle", &detok, last, false),
            Some((found[3], false))
        );
        assert_eq!(
            next_text(&values, "needle", &detok, found[3], true),
            Some((found[0], true))
        );
        assert_eq!(
            next_text(&values, "needle", &detok, found[0], false),
            Some((found[3], true))
        );
        // Smart case: a capital asks for it.
        assert!(next_text(&values, "NEEDLE", &detok, 0, true).is_none());
        assert!(next_text(&values, "Needle", &detok, 0, true).is_some());
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
