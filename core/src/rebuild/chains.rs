//! Steps 7–9 of `prefix_merging` (SPEC §5): one chain per leaf, the main chain among them,
//! the facts the panes read of them and the notes they make (the delivered counts). An
//! append that extends a chain makes these again in part ([`super::extend`]).

use std::sync::Arc;

use super::output::{BuildOutput, Chain, ChainId, ChainLink};
use crate::store::TokenRecord;

/// Round like Python's `round(x, 4)` (correctly rounded, ties to even on the exact value).
pub(crate) fn round4(x: f64) -> f64 {
    // `n / 10_000` for an integer `n` is the double nearest that decimal, as parsing it is;
    // `n` is the rounded one unless `x · 10⁴` lies so near a half that the product's own
    // rounding could have moved it across (then the decimal text decides, as before). Taken
    // at every append (the delivered fraction), the text was a visible part of it.
    let scaled = x * 10_000.0;
    // (Below 1e9 the product is off by less than 1e-7.)
    if scaled.abs() < 1e9 {
        let half_off = (scaled - scaled.trunc()).abs() - 0.5;
        if half_off.abs() > 1e-6 {
            return scaled.round() / 10_000.0;
        }
    }
    format!("{x:.4}").parse().unwrap_or(x)
}

/// Steps 7–9 over placed calls whose retries are resolved and whose captured tokens are
/// counted: one chain per leaf, the main chain, the chain facts, the delivered counts.
pub(super) fn finish_chains(
    records: &[Arc<TokenRecord>],
    terminal_call_id: Option<&str>,
    out: &mut BuildOutput,
) {
    out.chains.clear();
    out.main = None;
    out.notes.terminal_chain = None;
    // Step 7: one chain per leaf.
    build_chains(out);
    // Step 8: choose the main chain.
    select_main(records, terminal_call_id, out);
    chain_facts(out);
    chain_notes(records, out);
}

/// Step 9: the notes the chains make (their number, the tokens the main chain delivers).
pub(super) fn chain_notes(records: &[Arc<TokenRecord>], out: &mut BuildOutput) {
    let delivered: usize = out.main_chain().map_or(0, |chain| {
        crate::work::count(|work| work.nodes_walked += chain.links.len() as u64);
        chain
            .links
            .iter()
            .map(|l| records[out.nodes[l.node].record].generation_token_ids.len())
            .sum()
    });
    note_chains(out, delivered);
}

/// The notes of the chains as they are, the main chain delivering `delivered` generated
/// tokens: their number, that count and its fraction of those captured.
pub(super) fn note_chains(out: &mut BuildOutput, delivered: usize) {
    let notes = &mut out.notes;
    notes.chains = out.chains.len();
    notes.generated_tokens_delivered = delivered;
    let captured = notes.generated_tokens_captured;
    notes.delivered_fraction = if captured > 0 {
        round4(delivered as f64 / captured as f64)
    } else {
        0.0
    };
}

/// Step 7: one chain per leaf, skipping paths through a quarantined call.
fn build_chains(out: &mut BuildOutput) {
    let nodes = &out.nodes;
    for (leaf, node) in nodes.iter().enumerate() {
        if !node.children.is_empty() {
            continue;
        }
        let mut path = vec![leaf];
        let mut current = node.parent;
        while let Some(p) = current {
            path.push(p);
            current = nodes[p].parent;
        }
        path.reverse();
        if path.iter().any(|&n| nodes[n].quarantined) {
            continue;
        }
        let mut links = Vec::with_capacity(path.len());
        let mut previous_len = 0;
        for (step, &n) in path.iter().enumerate() {
            let prompt_len = nodes[n].prompt.len();
            let interstitial = if step == 0 {
                (prompt_len, prompt_len)
            } else {
                (previous_len.min(prompt_len), prompt_len)
            };
            links.push(ChainLink {
                node: n,
                interstitial,
            });
            previous_len = nodes[n].cumulative.len();
        }
        out.chains.push(Chain {
            chain_id: ChainId::Main,
            root_prompt_len: nodes[path[0]].prompt.len(),
            links,
        });
    }
}

/// Step 8: name the delivered chain `main`, the others `branch-N`.
pub(super) fn select_main(
    records: &[Arc<TokenRecord>],
    terminal: Option<&str>,
    out: &mut BuildOutput,
) {
    if out.chains.is_empty() {
        return;
    }
    let root_key = |chain: &Chain| {
        let record = &records[out.nodes[chain.links[0].node].record];
        (record.created_at, record.model_call_id.as_str())
    };
    let call_of = |link: &ChainLink| records[out.nodes[link.node].record].model_call_id.as_str();
    let by_default = |a: &&Chain, b: &&Chain| {
        let (ka, kb) = (root_key(a), root_key(b));
        ka.0.total_cmp(&kb.0).then(ka.1.cmp(kb.1))
    };
    let anchored = terminal.and_then(|terminal| {
        let containing = out
            .chains
            .iter()
            .enumerate()
            .filter(|(_, c)| c.links.iter().any(|l| call_of(l) == terminal));
        containing
            .min_by(|(_, a), (_, b)| {
                let ends = |c: &Chain| c.links.last().is_none_or(|l| call_of(l) != terminal);
                ends(a).cmp(&ends(b)).then_with(|| by_default(a, b))
            })
            .map(|(i, _)| i)
    });
    let main = anchored.unwrap_or_else(|| {
        out.chains
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| by_default(a, b))
            .map_or(0, |(i, _)| i) // chains is not empty (checked above)
    });
    let mut branch = 0;
    for (i, chain) in out.chains.iter_mut().enumerate() {
        if i == main {
            chain.chain_id = ChainId::Main;
        } else {
            chain.chain_id = ChainId::Branch(branch);
            branch += 1;
        }
    }
    out.main = Some(main);
    if anchored.is_some() {
        out.notes.terminal_chain = Some(ChainId::Main);
    }
}

/// The chain facts every pane asks for, answered once: which chain each node is shown on
/// (main first), and which chain ends at each leaf.
pub(super) fn chain_facts(out: &mut BuildOutput) {
    crate::work::count(|work| work.nodes_walked += out.nodes.len() as u64);
    // (Filled again in place.)
    for facts in [&mut out.node_chain, &mut out.chain_ending_at] {
        facts.clear();
        facts.resize(out.nodes.len(), None);
    }
    let order = out.main.into_iter().chain(0..out.chains.len());
    for chain in order {
        for link in &out.chains[chain].links {
            out.node_chain[link.node].get_or_insert(chain);
        }
    }
    for (index, chain) in out.chains.iter().enumerate() {
        if let Some(leaf) = chain.links.last() {
            out.chain_ending_at[leaf.node] = Some(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::round4;

    /// Python's `round(x, 4)`, as the decimal text gives it.
    fn by_text(x: f64) -> f64 {
        format!("{x:.4}").parse().unwrap()
    }

    #[test]
    fn rounding_to_four_places_is_the_decimal_texts_everywhere() {
        let mut rng = tokscope_testkit::Rng::new(5);
        let mut cases: Vec<f64> = vec![0.0, -0.0, 1.0, 0.5, 0.00005, 0.00015, 0.00025, 2.675];
        // Fractions as the delivered counts make them, ties and near-ties among them.
        for captured in 1..=400u32 {
            cases.extend((0..=captured).map(|delivered| delivered as f64 / captured as f64));
        }
        for _ in 0..100_000 {
            let x = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            cases.extend([x, x * 1e6, -x, (x * 1e4).trunc() / 1e4 + 0.00005]);
        }
        cases.extend([1e12 + 0.5, 123_456_789.000_05, f64::MAX, f64::MIN_POSITIVE]);
        for x in cases {
            assert_eq!(round4(x).to_bits(), by_text(x).to_bits(), "{x:e}");
        }
    }
}
