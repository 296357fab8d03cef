//! The chain tree's rows: the build's forest flattened, with collapsed subtrees and the
//! records the build set aside. Computed when a rollout is opened, never while drawing
//! (chain membership and retry groups are the build's own facts).

use std::collections::HashSet;

use tokscope_core::rebuild::{BuildOutput, RecordFate};

/// One row of the chain tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeRow {
    /// A placed call.
    Node {
        /// Node index.
        node: usize,
        /// Indentation level (grows only at branch points, so long chains stay flat).
        depth: usize,
        /// Number of descendants hidden because the node is collapsed.
        hidden: usize,
        /// At a branch point: whether it is the last of its siblings (`None`: a root or the
        /// only child, which continues its parent's line).
        last_sibling: Option<bool>,
    },
    /// A record the build set aside (not a node).
    SetAside {
        /// Record index.
        record: usize,
    },
}

/// Flatten the forest into rows (iteratively: chains can be 10,000 calls deep).
impl TreeRow {
    /// The call id of the record the row shows.
    pub fn call_id<'a>(&self, analysis: &'a tokscope_core::verdict::Analysis) -> &'a str {
        let records = &analysis.capture.records;
        match self {
            TreeRow::Node { node, .. } => match &analysis.build {
                Some(build) => &records[build.record_of(*node)].model_call_id,
                None => "",
            },
            TreeRow::SetAside { record } => &records[*record].model_call_id,
        }
    }
}

pub(crate) fn tree_rows(build: &BuildOutput, collapsed: &HashSet<usize>) -> Vec<TreeRow> {
    let mut rows = Vec::with_capacity(build.nodes.len());
    let roots: Vec<usize> = (0..build.nodes.len())
        .filter(|&i| build.nodes[i].parent.is_none())
        .collect();
    let mut stack: Vec<(usize, usize, Option<bool>)> =
        roots.into_iter().rev().map(|r| (r, 0, None)).collect();
    while let Some((node, depth, last_sibling)) = stack.pop() {
        let children = &build.nodes[node].children;
        if collapsed.contains(&node) && !children.is_empty() {
            rows.push(TreeRow::Node {
                node,
                depth,
                hidden: descendants(build, node),
                last_sibling,
            });
            continue;
        }
        rows.push(TreeRow::Node {
            node,
            depth,
            hidden: 0,
            last_sibling,
        });
        let branch = children.len() > 1;
        let child_depth = if branch { depth + 1 } else { depth };
        for (k, &child) in children.iter().enumerate().rev() {
            let last = branch.then_some(k + 1 == children.len());
            stack.push((child, child_depth, last));
        }
    }
    for (record, fate) in build.fates.iter().enumerate() {
        if !matches!(fate, RecordFate::Placed(_)) {
            rows.push(TreeRow::SetAside { record });
        }
    }
    rows
}

fn descendants(build: &BuildOutput, node: usize) -> usize {
    let mut count = 0;
    let mut stack = build.nodes[node].children.clone();
    while let Some(n) = stack.pop() {
        count += 1;
        stack.extend_from_slice(&build.nodes[n].children);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokscope_testkit::{Call, Rollout};

    #[test]
    fn long_chains_stay_flat_and_branches_indent() {
        let rollout = Rollout {
            id: "r".into(),
            calls: vec![
                Call::root("a", vec![1, 2], vec![3], 1.0),
                Call::child("b", "a", vec![1, 2, 3, 4], vec![5], 2.0),
                Call::child("c", "b", vec![1, 2, 3, 4, 5, 6], vec![7], 3.0),
                Call::child("d", "b", vec![1, 2, 3, 4, 5, 8], vec![9], 3.5),
            ],
            ..Rollout::default()
        };
        let dir = tempfile::tempdir().unwrap();
        rollout.write(dir.path()).unwrap();
        let location = tokscope_core::store::RolloutLocation {
            dir: dir.path().into(),
            id: "r".into(),
        };
        let analysis = tokscope_core::verdict::analyze(
            tokscope_core::store::read_capture(&location),
            &Default::default(),
        );
        let build = analysis.build.as_ref().unwrap();
        let rows = tree_rows(build, &HashSet::new());
        let depths: Vec<usize> = rows
            .iter()
            .map(|r| match r {
                TreeRow::Node { depth, .. } => *depth,
                TreeRow::SetAside { .. } => 99,
            })
            .collect();
        assert_eq!(depths, vec![0, 0, 1, 1]);
        // The branch's first child hangs from ├, the last from └; the chain goes on with │.
        let siblings: Vec<Option<bool>> = rows
            .iter()
            .map(|r| match r {
                TreeRow::Node { last_sibling, .. } => *last_sibling,
                TreeRow::SetAside { .. } => None,
            })
            .collect();
        assert_eq!(siblings, vec![None, None, Some(false), Some(true)]);
        let collapsed: HashSet<usize> = [1].into();
        let rows = tree_rows(build, &collapsed);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[1],
            TreeRow::Node {
                node: 1,
                depth: 0,
                hidden: 2,
                last_sibling: None,
            }
        );
        assert_eq!(build.chain_ending_at.iter().flatten().count(), 2);
        assert!(build.on_main(0));
    }
}
