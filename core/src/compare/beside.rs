//! One rollout's two runs side by side at the position where they part: the masked side's
//! failing call (its prompt, where the broken link's first difference falls) beside the
//! other side's delivered chain at the same token position; or, when neither side has a
//! broken link, the first position where the two delivered chains differ.

use crate::store::{TokenSeq, TokenValue};
use crate::verdict::cause::{Evidence, cause_of};
use crate::verdict::{Analysis, Standing};

/// Which side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Run A.
    A,
    /// Run B.
    B,
}

/// Why the position is where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parting {
    /// A broken link: `side`'s call `call` stops agreeing with what it claims there.
    BrokenLink {
        /// The side with the broken link.
        side: Which,
        /// Its first failing call.
        call: String,
    },
    /// The delivered chains differ first there.
    ChainsDiffer,
    /// One delivered chain is a prefix of the other; it ends there.
    OneEnds,
    /// The delivered chains are the same tokens (`len` of them).
    Agree(usize),
    /// A side has no sequence to compare (no build, no chain).
    Nothing,
}

/// What each side shows at the position.
#[derive(Clone, Debug, PartialEq)]
pub struct SideTokens {
    /// What the tokens are: `call X's prompt` or `the delivered chain`.
    pub what: String,
    /// Tokens of the sequence in the window (fewer where it ends).
    pub tokens: Vec<TokenValue>,
    /// The sequence's length.
    pub len: usize,
}

/// The two sides at the position where they part.
#[derive(Clone, Debug, PartialEq)]
pub struct Beside {
    /// Why there.
    pub parting: Parting,
    /// The position (`None`: they do not part).
    pub position: Option<usize>,
    /// The window's first position (the tokens shown start there).
    pub start: usize,
    /// Run A's tokens.
    pub a: Option<SideTokens>,
    /// Run B's tokens.
    pub b: Option<SideTokens>,
}

fn masked(analysis: &Analysis) -> bool {
    matches!(analysis.standing(), Standing::Masked | Standing::AtRisk)
}

/// The delivered chain's whole sequence: its leaf's prompt and generation.
fn delivered(analysis: &Analysis) -> Option<&TokenSeq> {
    let build = analysis.build.as_ref()?;
    let leaf = build.main_chain()?.links.last()?.node;
    Some(&build.nodes[leaf].cumulative)
}

/// The failing call's prompt and the position of the first difference, when `analysis`
/// is masked for a broken link whose difference was located.
fn broken_link(analysis: &Analysis) -> Option<(String, usize, &TokenSeq)> {
    let cause = cause_of(analysis)?;
    let Evidence::Link(link) = &cause.evidence else {
        return None;
    };
    let call = cause.call?;
    let position = link.position?;
    let build = analysis.build.as_ref()?;
    let records = &analysis.capture.records;
    let node = build
        .nodes
        .iter()
        .find(|n| records[n.record].model_call_id == call)?;
    Some((call, position, &node.prompt))
}

fn window(seq: &TokenSeq, start: usize, end: usize, what: String) -> SideTokens {
    let end = end.min(seq.len());
    SideTokens {
        what,
        tokens: if start < end {
            seq.values_range(start, end)
        } else {
            Vec::new()
        },
        len: seq.len(),
    }
}

/// The first position where `a` and `b` differ, or where the shorter ends (`None`: equal).
fn first_difference(a: &TokenSeq, b: &TokenSeq) -> Option<usize> {
    a.iter()
        .zip(b.iter())
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// `a` and `b` (the same rollout in runs A and B) at the position where they part, with
/// `context` tokens shown on each side of it.
pub fn beside(a: &Analysis, b: &Analysis, context: usize) -> Beside {
    // A masked side's main chain is not delivered: it is named for what it is.
    let chain = |analysis: &Analysis| {
        if masked(analysis) {
            "the main chain (masked)".to_owned()
        } else {
            "the delivered chain".to_owned()
        }
    };
    let links = [
        (Which::A, masked(a).then(|| broken_link(a)).flatten()),
        (Which::B, masked(b).then(|| broken_link(b)).flatten()),
    ];
    let (parting, position, seq_a, seq_b) = match links {
        [(side, Some((call, position, prompt))), _]
        | [_, (side, Some((call, position, prompt)))] => {
            let what = format!("call {call}'s prompt");
            let (seq_a, seq_b) = match side {
                Which::A => (Some((prompt, what)), delivered(b).map(|s| (s, chain(b)))),
                Which::B => (delivered(a).map(|s| (s, chain(a))), Some((prompt, what))),
            };
            (
                Parting::BrokenLink { side, call },
                Some(position),
                seq_a,
                seq_b,
            )
        }
        _ => {
            let (seq_a, seq_b) = (delivered(a), delivered(b));
            let (parting, position) = match (seq_a, seq_b) {
                (Some(x), Some(y)) => match first_difference(x, y) {
                    Some(p) if p < x.len().min(y.len()) => (Parting::ChainsDiffer, Some(p)),
                    Some(p) => (Parting::OneEnds, Some(p)),
                    None => (Parting::Agree(x.len()), None),
                },
                _ => (Parting::Nothing, None),
            };
            (
                parting,
                position,
                seq_a.map(|s| (s, chain(a))),
                seq_b.map(|s| (s, chain(b))),
            )
        }
    };
    let at = position.unwrap_or(0);
    let start = at.saturating_sub(context);
    let end = at + context + 1;
    Beside {
        parting,
        position,
        start,
        a: seq_a.map(|(seq, what)| window(seq, start, end, what)),
        b: seq_b.map(|(seq, what)| window(seq, start, end, what)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo(id: &str) -> Analysis {
        crate::load::demo_store_analyses()
            .into_iter()
            .find(|a| a.rollout_id() == id)
            .expect("a demo rollout")
    }

    #[test]
    fn a_broken_link_is_shown_beside_the_other_runs_chain_at_its_position() {
        // `demo-mismatch` has a broken link; `demo-clean` stands in for the same rollout
        // delivered in the other run.
        let (masked, ok) = (demo("demo-mismatch"), demo("demo-clean"));
        let shown = beside(&masked, &ok, 3);
        let Parting::BrokenLink { side, .. } = &shown.parting else {
            panic!("{:?}", shown.parting);
        };
        assert_eq!(*side, Which::A);
        let position = shown.position.expect("located");
        assert_eq!(shown.start, position.saturating_sub(3));
        let a = shown.a.as_ref().unwrap();
        assert!(a.what.contains("prompt"), "{}", a.what);
        assert!(!a.tokens.is_empty() && a.tokens.len() <= 7);
        assert_eq!(shown.b.as_ref().unwrap().what, "the delivered chain");
        // The same from the other side.
        let mirrored = beside(&ok, &masked, 3);
        assert!(matches!(
            mirrored.parting,
            Parting::BrokenLink { side: Which::B, .. }
        ));
        assert_eq!(mirrored.position, shown.position);
    }

    #[test]
    fn two_delivered_runs_part_where_their_chains_first_differ() {
        let clean = demo("demo-clean");
        let same = beside(&clean, &clean, 2);
        assert!(matches!(same.parting, Parting::Agree(n) if n > 0));
        assert_eq!(same.position, None);
        let other = demo("demo-delta");
        let shown = beside(&clean, &other, 2);
        assert!(
            matches!(shown.parting, Parting::ChainsDiffer | Parting::OneEnds),
            "{:?}",
            shown.parting
        );
        let p = shown.position.unwrap();
        let (a, b) = (shown.a.unwrap(), shown.b.unwrap());
        let at = p - shown.start;
        assert!(a.tokens.get(at) != b.tokens.get(at), "they differ at {p}");
        assert_eq!(a.tokens[..at], b.tokens[..at], "and agree before it");
    }
}
