//! Two runs side by side (A/B): which rollouts flipped verdict, which cause groups grew,
//! shrank, appeared or vanished, and what each side delivered and earned, overall and per
//! agent.
//!
//! Each side is counted as its rollouts are judged ([`Side::add`], one pass, nothing kept of a
//! rollout but its id, standing and row facts); [`Diff::of`] then pairs the two.
//!
//! - Rollouts are **matched by id** (a re-run of the same tasks under the same ids). Those left
//!   are **matched by task**: the row's `_ng_task_index` and `_ng_rollout_index` when both sides
//!   give both, else by task alone, pairing a task's rollouts of each side in id order.
//! - A rollout is **delivered** when ok or retired, **masked** when masked or at risk (it
//!   cannot be cured), and **undecided** while live otherwise; cleared rollouts are not in a
//!   run. A flip is masked → delivered or delivered → masked; undecided ones never flip.

pub mod beside;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::causes::Causes;
use crate::store::layout::natural_cmp;
use crate::verdict::{Standing, Summary, Tally};

/// Where a rollout ended, for comparing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ok or retired: it trains.
    Delivered,
    /// Masked, or at risk (live, incurable).
    Masked,
    /// Live, nothing decided yet.
    Undecided,
}

impl Outcome {
    /// The outcome of `standing` (`None`: cleared, not in the run).
    pub fn of(standing: Standing) -> Option<Outcome> {
        match standing {
            Standing::Ok | Standing::Retired => Some(Outcome::Delivered),
            Standing::Masked | Standing::AtRisk => Some(Outcome::Masked),
            Standing::Waiting | Standing::Live => Some(Outcome::Undecided),
            Standing::Cleared => None,
        }
    }

    /// Whether going from this outcome to `other` is a flip: delivered to masked or back
    /// (undecided never flips).
    pub fn flips_to(self, other: Outcome) -> bool {
        matches!(
            (self, other),
            (Outcome::Delivered, Outcome::Masked) | (Outcome::Masked, Outcome::Delivered)
        )
    }

    /// Its name: `delivered`, `masked`, `undecided`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Masked => "masked",
            Outcome::Undecided => "undecided",
        }
    }
}

/// What a side keeps of one rollout.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    outcome: Outcome,
    task: Option<String>,
    sample: Option<String>,
}

/// What a side says of one agent (or of the whole side).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Facts {
    /// Rollouts in the run (not cleared).
    pub rollouts: usize,
    /// Delivered (ok or retired).
    pub delivered: usize,
    /// Masked or at risk.
    pub masked: usize,
    /// Rollouts whose row gave a reward.
    pub reward_known: usize,
    /// Sum of those rewards.
    #[serde(skip)]
    reward_sum: f64,
    /// Masked rollouts whose row's reward was > 0: signal lost.
    pub masked_with_reward: usize,
}

impl Facts {
    fn count(&mut self, outcome: Outcome, reward: Option<f64>) {
        self.rollouts += 1;
        match outcome {
            Outcome::Delivered => self.delivered += 1,
            Outcome::Masked => self.masked += 1,
            Outcome::Undecided => {}
        }
        if let Some(reward) = reward {
            self.reward_known += 1;
            self.reward_sum += reward;
            if outcome == Outcome::Masked && reward > 0.0 {
                self.masked_with_reward += 1;
            }
        }
    }

    /// Mean reward over the rollouts whose row gave one.
    pub fn mean_reward(&self) -> Option<f64> {
        (self.reward_known > 0).then(|| self.reward_sum / self.reward_known as f64)
    }

    /// Delivered share of the decided rollouts (delivered or masked; `None`: none decided).
    pub fn delivered_fraction(&self) -> Option<f64> {
        let decided = self.delivered + self.masked;
        (decided > 0).then(|| self.delivered as f64 / decided as f64)
    }
}

/// One run's rollouts, counted for a comparison.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// The stores read.
    pub stores: Vec<PathBuf>,
    entries: BTreeMap<String, Entry>,
    /// Rollouts by standing.
    pub tally: Tally,
    /// Its cause groups.
    pub causes: Causes,
    /// Over all its rollouts.
    pub facts: Facts,
    /// Per agent its rows name.
    pub agents: BTreeMap<String, Facts>,
    /// Generated tokens captured and delivered.
    pub tokens: (usize, usize),
}

impl Side {
    /// An empty side reading `stores`.
    pub fn new(stores: Vec<PathBuf>) -> Side {
        Side {
            stores,
            ..Side::default()
        }
    }

    /// Count `summary` in (a rollout id seen twice keeps its last summary's entry).
    pub fn add(&mut self, summary: &Summary) {
        let standing = summary.standing();
        self.tally.count(standing, 1);
        let Some(outcome) = self.add_for_pairing(summary) else {
            return;
        };
        self.causes.add(summary);
        self.facts.count(outcome, summary.reward());
        if let Some(agent) = summary.agent() {
            self.agents
                .entry(agent.to_owned())
                .or_default()
                .count(outcome, summary.reward());
        }
        self.tokens.0 += summary.tokens.0;
        self.tokens.1 += summary.tokens.1;
    }

    /// Take in only what pairing needs of `summary` (its id, outcome, task and sample): a
    /// [`Diff`] of such sides has its pairs, gone and new, and no groups or facts. Its
    /// outcome (`None`: cleared, not taken in).
    pub fn add_for_pairing(&mut self, summary: &Summary) -> Option<Outcome> {
        let outcome = Outcome::of(summary.standing())?;
        self.entries.insert(
            summary.rollout_id().to_owned(),
            Entry {
                outcome,
                task: summary.task().map(str::to_owned),
                sample: summary.context.as_ref().and_then(|c| c.sample.clone()),
            },
        );
        Some(outcome)
    }

    /// Forget rollout `id` (a pairing side's rollout cleared; see [`Side::add_for_pairing`]).
    pub fn forget(&mut self, id: &str) {
        self.entries.remove(id);
    }

    /// The rollout `id`'s outcome on this side.
    pub fn outcome(&self, id: &str) -> Option<Outcome> {
        self.entries.get(id).map(|e| e.outcome)
    }

    /// Generated tokens delivered, as a share of those captured.
    pub fn tokens_delivered(&self) -> Option<f64> {
        (self.tokens.0 > 0).then(|| self.tokens.1 as f64 / self.tokens.0 as f64)
    }
}

/// How a pair was matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The same rollout id on both sides.
    Id,
    /// The same task and sample (`_ng_task_index`, `_ng_rollout_index`).
    TaskSample,
    /// The same task, the task's rollouts paired in id order.
    Task,
}

/// A rollout of A and its counterpart in B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pair {
    /// Its id in A.
    pub a: String,
    /// Its id in B.
    pub b: String,
    /// How they were matched.
    pub by: MatchedBy,
    /// Its outcome in A.
    pub a_outcome: Outcome,
    /// Its outcome in B.
    pub b_outcome: Outcome,
}

impl Pair {
    /// `r7`, or `r7 ↔ s7` when the ids differ.
    pub fn label(&self) -> String {
        if self.a == self.b {
            self.a.clone()
        } else {
            format!("{} ↔ {}", self.a, self.b)
        }
    }

    /// Masked in A, delivered in B.
    pub fn fixed(&self) -> bool {
        self.a_outcome == Outcome::Masked && self.b_outcome == Outcome::Delivered
    }

    /// Masked in one run and delivered in the other.
    pub fn flipped(&self) -> bool {
        self.a_outcome.flips_to(self.b_outcome)
    }

    /// Delivered in A, masked in B.
    pub fn broke(&self) -> bool {
        self.a_outcome == Outcome::Delivered && self.b_outcome == Outcome::Masked
    }
}

/// A cause group in either side: its rollouts in A and B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupRow {
    /// The group's title.
    pub title: String,
    /// Its signature key.
    pub key: String,
    /// The mask reason code.
    pub reason: &'static str,
    /// Rollouts in A.
    pub a: usize,
    /// Rollouts in B.
    pub b: usize,
    /// Its share of A's masked rollouts.
    pub a_share: f64,
    /// Its share of B's masked rollouts.
    pub b_share: f64,
}

impl GroupRow {
    /// `appeared` (only in B), `vanished` (only in A), `grew`, `shrank` or `same`.
    pub fn change(&self) -> &'static str {
        match (self.a, self.b) {
            (0, _) => "appeared",
            (_, 0) => "vanished",
            (a, b) if b > a => "grew",
            (a, b) if b < a => "shrank",
            _ => "same",
        }
    }
}

/// An agent of either side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentRow {
    /// The agent's name (from the rows' `agent_ref.name`).
    pub agent: String,
    /// What A says of it.
    pub a: Facts,
    /// What B says of it.
    pub b: Facts,
}

/// Two runs compared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diff {
    /// Every matched pair, by A's id.
    pub pairs: Vec<Pair>,
    /// Rollouts of A with no counterpart in B (gone).
    pub only_a: Vec<String>,
    /// Rollouts of B with no counterpart in A (new).
    pub only_b: Vec<String>,
    /// Cause groups of either side, the largest (in A and B together) first.
    pub groups: Vec<GroupRow>,
    /// Agents of either side, by name.
    pub agents: Vec<AgentRow>,
}

/// A task-matching key: the task, and the sample when `with_sample`.
fn task_key(entry: &Entry, with_sample: bool) -> Option<(String, Option<String>)> {
    let task = entry.task.clone()?;
    if with_sample {
        Some((task, Some(entry.sample.clone()?)))
    } else {
        Some((task, None))
    }
}

impl Diff {
    /// Compare `a` with `b`.
    pub fn of(a: &Side, b: &Side) -> Diff {
        let mut pairs = Vec::new();
        let mut left_a: BTreeSet<&str> = BTreeSet::new();
        for (id, entry) in &a.entries {
            match b.entries.get(id) {
                Some(other) => pairs.push(Pair {
                    a: id.clone(),
                    b: id.clone(),
                    by: MatchedBy::Id,
                    a_outcome: entry.outcome,
                    b_outcome: other.outcome,
                }),
                None => {
                    left_a.insert(id);
                }
            }
        }
        let mut left_b: BTreeSet<&str> = b
            .entries
            .keys()
            .filter(|id| !a.entries.contains_key(*id))
            .map(String::as_str)
            .collect();
        for (with_sample, by) in [(true, MatchedBy::TaskSample), (false, MatchedBy::Task)] {
            let keyed = |side: &Side, left: &BTreeSet<&str>| {
                let mut keyed: BTreeMap<(String, Option<String>), Vec<String>> = BTreeMap::new();
                for id in left {
                    if let Some(key) = task_key(&side.entries[*id], with_sample) {
                        keyed.entry(key).or_default().push((*id).to_owned());
                    }
                }
                for ids in keyed.values_mut() {
                    ids.sort_by(|x, y| natural_cmp(x, y));
                }
                keyed
            };
            let (keyed_a, keyed_b) = (keyed(a, &left_a), keyed(b, &left_b));
            for (key, ids_a) in &keyed_a {
                let Some(ids_b) = keyed_b.get(key) else {
                    continue;
                };
                // With the sample in the key, only a unique match is a match.
                if with_sample && (ids_a.len() != 1 || ids_b.len() != 1) {
                    continue;
                }
                for (id_a, id_b) in ids_a.iter().zip(ids_b) {
                    left_a.remove(id_a.as_str());
                    left_b.remove(id_b.as_str());
                    pairs.push(Pair {
                        a: id_a.clone(),
                        b: id_b.clone(),
                        by,
                        a_outcome: a.entries[id_a].outcome,
                        b_outcome: b.entries[id_b].outcome,
                    });
                }
            }
        }
        pairs.sort_by(|x, y| natural_cmp(&x.a, &y.a));
        let sorted = |left: BTreeSet<&str>| {
            let mut ids: Vec<String> = left.into_iter().map(str::to_owned).collect();
            ids.sort_by(|x, y| natural_cmp(x, y));
            ids
        };
        Diff {
            pairs,
            only_a: sorted(left_a),
            only_b: sorted(left_b),
            groups: group_rows(a, b),
            agents: agent_rows(a, b),
        }
    }

    /// Pairs masked in A and delivered in B.
    pub fn fixed(&self) -> impl Iterator<Item = &Pair> {
        self.pairs.iter().filter(|p| p.fixed())
    }

    /// Pairs delivered in A and masked in B.
    pub fn broke(&self) -> impl Iterator<Item = &Pair> {
        self.pairs.iter().filter(|p| p.broke())
    }

    /// Pairs matched `by`.
    pub fn matched(&self, by: MatchedBy) -> usize {
        self.pairs.iter().filter(|p| p.by == by).count()
    }

    /// The pair of A's rollout `id`.
    pub fn pair_of_a(&self, id: &str) -> Option<&Pair> {
        self.pairs.iter().find(|p| p.a == id)
    }
}

fn group_rows(a: &Side, b: &Side) -> Vec<GroupRow> {
    let masked = |side: &Side| side.facts.masked;
    let mut rows: BTreeMap<&str, GroupRow> = BTreeMap::new();
    for (side_is_a, side) in [(true, a), (false, b)] {
        for group in side.causes.groups() {
            let row = rows.entry(group.key.as_str()).or_insert_with(|| GroupRow {
                title: group.title.clone(),
                key: group.key.clone(),
                reason: group.reason,
                a: 0,
                b: 0,
                a_share: 0.0,
                b_share: 0.0,
            });
            let share = crate::causes::render::share(group.len(), masked(side));
            if side_is_a {
                (row.a, row.a_share) = (group.len(), share);
            } else {
                (row.b, row.b_share) = (group.len(), share);
            }
        }
    }
    let mut rows: Vec<GroupRow> = rows.into_values().collect();
    rows.sort_by(|x, y| {
        (y.a + y.b)
            .cmp(&(x.a + x.b))
            .then_with(|| x.key.cmp(&y.key))
    });
    rows
}

fn agent_rows(a: &Side, b: &Side) -> Vec<AgentRow> {
    let names: BTreeSet<&String> = a.agents.keys().chain(b.agents.keys()).collect();
    names
        .into_iter()
        .map(|name| AgentRow {
            agent: name.clone(),
            a: a.agents.get(name).copied().unwrap_or_default(),
            b: b.agents.get(name).copied().unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::RowContext;

    fn demo() -> Vec<Summary> {
        crate::load::demo_store_analyses()
            .iter()
            .map(Summary::of)
            .collect()
    }

    fn with_row(mut s: Summary, id: &str, task: &str, sample: Option<&str>) -> Summary {
        s.location.id = id.into();
        s.context = Some(RowContext {
            task: Some(task.into()),
            sample: sample.map(str::to_owned),
            agent: Some("agent".into()),
            reward: Some(1.0),
            ..RowContext::default()
        });
        s
    }

    #[test]
    fn rollouts_pair_by_id_then_by_task_and_sample_then_by_task() {
        let base = demo();
        let ok = base
            .iter()
            .find(|s| s.standing() == Standing::Ok)
            .unwrap()
            .clone();
        let masked = base.iter().find(|s| s.cause.is_some()).unwrap().clone();
        let mut a = Side::default();
        let mut b = Side::default();
        // Same id: fixed.
        a.add(&with_row(masked.clone(), "r1", "1", Some("0")));
        b.add(&with_row(ok.clone(), "r1", "1", Some("0")));
        // Other ids, same task and sample: broke.
        a.add(&with_row(ok.clone(), "a2", "2", Some("0")));
        b.add(&with_row(masked.clone(), "b2", "2", Some("0")));
        // Task 3, no samples: paired in id order (a3x ↔ b3x, a3y ↔ b3y).
        a.add(&with_row(ok.clone(), "a3x", "3", None));
        a.add(&with_row(masked.clone(), "a3y", "3", None));
        b.add(&with_row(ok.clone(), "b3x", "3", None));
        b.add(&with_row(ok.clone(), "b3y", "3", None));
        // Unmatched on each side.
        a.add(&with_row(ok.clone(), "gone", "9", None));
        b.add(&with_row(ok.clone(), "new", "10", None));
        let diff = Diff::of(&a, &b);
        let pairs: Vec<(&str, &str, MatchedBy)> = diff
            .pairs
            .iter()
            .map(|p| (p.a.as_str(), p.b.as_str(), p.by))
            .collect();
        assert_eq!(
            pairs,
            [
                ("a2", "b2", MatchedBy::TaskSample),
                ("a3x", "b3x", MatchedBy::Task),
                ("a3y", "b3y", MatchedBy::Task),
                ("r1", "r1", MatchedBy::Id),
            ]
        );
        let fixed: Vec<&str> = diff.fixed().map(|p| p.a.as_str()).collect();
        let broke: Vec<&str> = diff.broke().map(|p| p.a.as_str()).collect();
        assert_eq!(fixed, ["a3y", "r1"]);
        assert_eq!(broke, ["a2"]);
        assert_eq!(diff.only_a, ["gone"]);
        assert_eq!(diff.only_b, ["new"]);
        // One cause group, 2 masked in A, 1 in B.
        assert_eq!(diff.groups.len(), 1);
        assert_eq!((diff.groups[0].a, diff.groups[0].b), (2, 1));
        assert_eq!(diff.groups[0].change(), "shrank");
        assert_eq!(diff.agents.len(), 1);
        assert_eq!(diff.agents[0].a.masked, 2);
        assert_eq!(diff.agents[0].b.masked, 1);
        assert_eq!(diff.agents[0].a.masked_with_reward, 2);
        assert_eq!(a.facts.delivered_fraction(), Some(3.0 / 5.0));
    }

    #[test]
    fn a_sample_shared_by_two_rollouts_falls_back_to_the_task() {
        let ok = demo()
            .into_iter()
            .find(|s| s.standing() == Standing::Ok)
            .unwrap();
        let mut a = Side::default();
        let mut b = Side::default();
        a.add(&with_row(ok.clone(), "a1", "1", Some("0")));
        a.add(&with_row(ok.clone(), "a2", "1", Some("0")));
        b.add(&with_row(ok.clone(), "b1", "1", Some("0")));
        let diff = Diff::of(&a, &b);
        assert_eq!(diff.matched(MatchedBy::TaskSample), 0);
        assert_eq!(diff.matched(MatchedBy::Task), 1);
        assert_eq!(diff.only_a, ["a2"]);
    }
}
