//! The edit at a first difference: how many tokens one side removed and the other inserted
//! before both agree again, found by the smallest total shift.

use serde::Serialize;

use crate::store::TokenValue;

/// Tokens that must agree after an edit for the sides to count as aligned again.
pub(crate) const AGREE: usize = 4;
/// The largest removal or insertion looked for on its own (a stripped reasoning block).
pub(crate) const LONGEST_ONE_SIDED: usize = 1 << 16;
/// The largest total of removed and inserted tokens looked for in a replacement.
pub(crate) const LONGEST_REPLACEMENT: usize = 1024;

/// What changed at the first difference, parent side to child side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Edit {
    /// Tokens of the parent's sequence that the child's prompt lacks.
    pub removed: usize,
    /// Tokens of the child's prompt in their place.
    pub inserted: usize,
    /// Whether the sides agree again after it (else the sizes are those looked through).
    pub aligned: bool,
}

/// The shape of an edit, as grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EditShape {
    /// The child's prompt lacks tokens of the parent's sequence.
    Removed,
    /// The child's prompt has tokens the parent's sequence lacks.
    Inserted,
    /// Tokens of the parent's sequence were replaced by others.
    Replaced,
    /// The sides do not agree again within the lengths looked through.
    Unaligned,
}

impl Edit {
    /// Its shape.
    pub fn shape(&self) -> EditShape {
        match (self.aligned, self.removed, self.inserted) {
            (false, _, _) => EditShape::Unaligned,
            (true, _, 0) => EditShape::Removed,
            (true, 0, _) => EditShape::Inserted,
            _ => EditShape::Replaced,
        }
    }
}

impl EditShape {
    /// Its name in signatures.
    pub fn name(self) -> &'static str {
        match self {
            EditShape::Removed => "removed",
            EditShape::Inserted => "inserted",
            EditShape::Replaced => "replaced",
            EditShape::Unaligned => "unaligned",
        }
    }
}

/// Two sides from a first difference on.
struct Sides<'a> {
    child: &'a [TokenValue],
    parent: &'a [TokenValue],
    /// Whether `parent` ends where the parent's sequence ends (else it is a window of it).
    parent_ends: bool,
}

/// How two sides agree again after an edit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Agreement {
    /// They do not.
    No,
    /// Tokens agree ([`AGREE`] of them, or all the parent's sequence has left).
    Tokens,
    /// Only because the parent's sequence ended: what the child has from there is its own.
    ParentEnded,
}

impl Sides<'_> {
    /// How `child[i..]` and `parent[j..]` agree.
    fn agree(&self, i: usize, j: usize) -> Agreement {
        let (child, parent) = (self.child, self.parent);
        if j > parent.len() || i > child.len() {
            return Agreement::No;
        }
        let parent_rest = &parent[j..];
        let child_rest = &child[i..];
        if parent_rest.len() < AGREE && !self.parent_ends {
            return Agreement::No;
        }
        let n = AGREE.min(parent_rest.len());
        if child_rest.len() < n || child_rest[..n] != parent_rest[..n] {
            Agreement::No
        } else if n == 0 {
            Agreement::ParentEnded
        } else {
            Agreement::Tokens
        }
    }
}

/// The edit that makes `child` (the child's prompt from the first difference on) agree again
/// with `parent` (the parent's sequence from the same position): the smallest total of
/// removed and inserted tokens after which tokens agree, a one-sided edit before a
/// replacement of the same total; failing that, the rest of the parent's sequence removed.
/// `parent_ends`: `parent` runs to the end of the parent's sequence (not a window of it).
pub fn edit_at(child: &[TokenValue], parent: &[TokenValue], parent_ends: bool) -> Edit {
    let sides = Sides {
        child,
        parent,
        parent_ends,
    };
    let aligned = |removed, inserted| Edit {
        removed,
        inserted,
        aligned: true,
    };
    if sides.agree(0, 0) != Agreement::No {
        return aligned(0, 0);
    }
    let one_sided = LONGEST_ONE_SIDED.min(child.len().max(parent.len()));
    let mut parent_ended = None;
    for shift in 1..=one_sided {
        match sides.agree(0, shift) {
            Agreement::Tokens => return aligned(shift, 0),
            Agreement::ParentEnded => {
                parent_ended.get_or_insert(shift);
            }
            Agreement::No => {}
        }
        if sides.agree(shift, 0) == Agreement::Tokens {
            return aligned(0, shift);
        }
        if shift >= LONGEST_REPLACEMENT {
            continue;
        }
        // Replacements with this total, fewer removed first.
        for removed in 1..shift {
            if sides.agree(shift - removed, removed) == Agreement::Tokens {
                return aligned(removed, shift - removed);
            }
        }
    }
    match parent_ended {
        Some(removed) => aligned(removed, 0),
        None => Edit {
            removed: parent.len(),
            inserted: child.len(),
            aligned: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(ids: &[i32]) -> Vec<TokenValue> {
        ids.iter().map(|&i| TokenValue::from(i)).collect()
    }

    #[test]
    fn a_removed_block_an_insertion_and_a_replacement_are_told_apart_with_their_lengths() {
        // The parent generated 7 8 9 (a reasoning block) before 1 2 3 4 5; the child lacks it.
        let parent = v(&[7, 8, 9, 1, 2, 3, 4, 5]);
        let child = v(&[1, 2, 3, 4, 5, 60, 61]);
        let e = edit_at(&child, &parent, true);
        assert_eq!(
            (e.removed, e.inserted, e.shape()),
            (3, 0, EditShape::Removed)
        );
        let e = edit_at(&parent, &child[..5], true);
        assert_eq!((e.removed, e.inserted), (0, 3));
        // One token re-split into two: replaced 1 by 2.
        let parent = v(&[40, 1, 2, 3, 4, 5]);
        let child = v(&[41, 42, 1, 2, 3, 4, 5, 9]);
        let e = edit_at(&child, &parent, true);
        assert_eq!(
            (e.removed, e.inserted, e.shape()),
            (1, 2, EditShape::Replaced)
        );
    }

    #[test]
    fn the_parent_ending_inside_the_edit_aligns_and_a_window_that_never_agrees_does_not() {
        // A trailing token trimmed at the end of the parent's sequence: the child's own
        // tokens follow.
        let e = edit_at(&v(&[90, 91, 92]), &v(&[13]), true);
        assert_eq!((e.removed, e.inserted, e.aligned), (1, 0, true));
        // Nothing agrees again: the rest of the parent's sequence is what the child lacks.
        let e = edit_at(&v(&[1, 2, 3, 4, 5, 6, 7, 8]), &v(&[9; 8]), true);
        assert_eq!((e.removed, e.shape()), (8, EditShape::Removed), "{e:?}");
        // A stop token that agrees again beats the parent simply ending: `.⏎ <eos>` became
        // `. <eos>` (one replaced by one), not `.⏎ <eos>` removed.
        let e = edit_at(&v(&[30, 2, 77, 78]), &v(&[31, 2]), true);
        assert_eq!((e.removed, e.inserted), (1, 1), "{e:?}");
        // A window of a longer parent: its end is not the parent's end.
        let e = edit_at(&v(&[1; 3000]), &v(&[2; 3000]), false);
        assert_eq!(e.shape(), EditShape::Unaligned, "{e:?}");
        // One token replaced by one.
        let e = edit_at(&v(&[5, 1, 2, 3, 4]), &v(&[6, 1, 2, 3, 4, 0]), true);
        assert_eq!(
            (e.removed, e.inserted, e.shape()),
            (1, 1, EditShape::Replaced)
        );
    }
}
