//! A run's masked rollouts grouped by cause, and the task groups masking thins: counted as
//! rollouts come, change and go ([`Causes::add`] / [`Causes::remove`], exact inverses), so a
//! live run's groups never need a pass over the other rollouts.
//!
//! - A **group** holds the masked (frozen) and at-risk (live) rollouts whose cause has one
//!   signature ([`Cause::key`]), with the agents they ran in and the rewards their rows gave.
//! - A task is **thinned** when masking leaves it fewer than 2 delivered rollouts, or
//!   delivered rollouts whose rewards are all equal: no advantage signal is left.

pub mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::verdict::cause::Cause;
use crate::verdict::{Standing, Summary};

/// A rollout of a group: its id, then its store.
pub type Member = (String, PathBuf);

/// What a group keeps of each rollout.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberFacts {
    /// Its cause (the example shown is the first member's).
    pub cause: Cause,
    /// Its row's reward.
    pub reward: Option<f64>,
}

/// The masked and at-risk rollouts of one cause signature.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The signature's key.
    pub key: String,
    /// Its title.
    pub title: String,
    /// The mask reason code.
    pub reason: &'static str,
    /// The signature's fields.
    pub signature: Vec<(&'static str, String)>,
    /// The rollouts, by id then store.
    pub members: BTreeMap<Member, MemberFacts>,
    /// Rollouts by the agent their row names.
    pub agents: BTreeMap<String, usize>,
    /// Rollouts by store.
    pub stores: BTreeMap<PathBuf, usize>,
}

/// The rewards of a group's rollouts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RewardFacts {
    /// Mean over the rollouts whose row gave a reward (`None`: none did).
    pub mean: Option<f64>,
    /// Rollouts whose row gave a reward.
    pub known: usize,
    /// Masked rollouts that carried reward > 0: training signal lost.
    pub masked_with_reward: usize,
}

impl Group {
    /// Rollouts in it.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Its rewards.
    pub fn reward(&self) -> RewardFacts {
        let rewards: Vec<f64> = self.members.values().filter_map(|m| m.reward).collect();
        RewardFacts {
            mean: (!rewards.is_empty()).then(|| rewards.iter().sum::<f64>() / rewards.len() as f64),
            known: rewards.len(),
            masked_with_reward: rewards.iter().filter(|&&r| r > 0.0).count(),
        }
    }

    /// Its agents, the most frequent first: `swe_agent 3, math_agent 1` (sanitized; `None`:
    /// no row named one).
    pub fn agents_line(&self) -> Option<String> {
        let mut agents: Vec<(&String, &usize)> = self.agents.iter().collect();
        agents.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let parts: Vec<String> = agents
            .iter()
            .map(|(name, n)| format!("{} {n}", crate::text::sanitize(name)))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// The example: the first rollout and its cause.
    pub fn example(&self) -> Option<(&Member, &Cause)> {
        self.members.iter().next().map(|(m, f)| (m, &f.cause))
    }
}

/// The rollouts of one task (`_ng_task_index`).
#[derive(Clone, Debug, Default, PartialEq)]
struct TaskCount {
    delivered: usize,
    masked: usize,
    /// Rewards of the delivered rollouts (by their bits), how many of each.
    delivered_rewards: BTreeMap<u64, usize>,
}

/// A task whose masked rollouts leave too little to learn from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Thinned {
    /// The task.
    pub task: String,
    /// Delivered rollouts of it.
    pub delivered: usize,
    /// Masked (or at-risk) rollouts of it.
    pub masked: usize,
    /// `fewer_than_2_delivered` or `equal_rewards`.
    pub why: &'static str,
}

impl Thinned {
    /// Why, in words: `fewer than 2 delivered` or `equal rewards`.
    pub fn why_words(&self) -> String {
        self.why.replace('_', " ")
    }

    /// The task in one line: `task 7: 1 delivered, 3 masked (fewer than 2 delivered)`.
    pub fn line(&self) -> String {
        format!(
            "task {}: {} delivered, {} masked ({})",
            crate::text::sanitize(&self.task),
            self.delivered,
            self.masked,
            self.why_words()
        )
    }
}

/// A run's causes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Causes {
    groups: BTreeMap<String, Group>,
    tasks: BTreeMap<String, TaskCount>,
    /// Judged rollouts whose row's `mask_sample` says otherwise.
    disagreements: BTreeSet<Member>,
    /// Rollouts counted whose row said something of them (reward, agent, task).
    pub context_seen: usize,
}

fn member(summary: &Summary) -> Member {
    (
        summary.rollout_id().to_owned(),
        summary.location.dir.clone(),
    )
}

fn step(value: &mut usize, sign: isize) {
    *value = if sign > 0 {
        value.saturating_add(1)
    } else {
        value.saturating_sub(1)
    };
}

impl Causes {
    /// Group every summary.
    pub fn of<'a>(summaries: impl IntoIterator<Item = &'a Summary>) -> Causes {
        let mut causes = Causes::default();
        for summary in summaries {
            causes.add(summary);
        }
        causes
    }

    /// Count `summary` in.
    pub fn add(&mut self, summary: &Summary) {
        self.count(summary, 1);
    }

    /// Count `summary` out: the exact inverse of [`Causes::add`].
    pub fn remove(&mut self, summary: &Summary) {
        self.count(summary, -1);
    }

    fn count(&mut self, summary: &Summary, sign: isize) {
        if summary.context.is_some() {
            step(&mut self.context_seen, sign);
        }
        let standing = summary.standing();
        let masked = matches!(standing, Standing::Masked | Standing::AtRisk);
        if summary.row_disagrees() {
            if sign > 0 {
                self.disagreements.insert(member(summary));
            } else {
                self.disagreements.remove(&member(summary));
            }
        }
        if let Some(task) = summary.task() {
            let delivered = matches!(standing, Standing::Ok | Standing::Retired);
            if delivered || masked {
                let count = self.tasks.entry(task.to_owned()).or_default();
                if masked {
                    step(&mut count.masked, sign);
                } else {
                    step(&mut count.delivered, sign);
                    if let Some(reward) = summary.reward() {
                        let n = count.delivered_rewards.entry(reward.to_bits()).or_default();
                        step(n, sign);
                        if *n == 0 {
                            count.delivered_rewards.remove(&reward.to_bits());
                        }
                    }
                }
                if *count == TaskCount::default() {
                    self.tasks.remove(task);
                }
            }
        }
        let Some(cause) = summary.cause.as_ref().filter(|_| masked) else {
            return;
        };
        let key = cause.key();
        let group = self.groups.entry(key.clone()).or_insert_with(|| Group {
            key: key.clone(),
            title: cause.title(),
            reason: cause.reason,
            signature: cause.signature(),
            members: BTreeMap::new(),
            agents: BTreeMap::new(),
            stores: BTreeMap::new(),
        });
        let who = member(summary);
        if sign > 0 {
            group.members.insert(
                who,
                MemberFacts {
                    cause: cause.clone(),
                    reward: summary.reward(),
                },
            );
        } else {
            group.members.remove(&who);
        }
        if let Some(agent) = summary.agent() {
            step(group.agents.entry(agent.to_owned()).or_default(), sign);
            group.agents.retain(|_, n| *n > 0);
        }
        step(
            group
                .stores
                .entry(summary.location.dir.clone())
                .or_default(),
            sign,
        );
        group.stores.retain(|_, n| *n > 0);
        if group.is_empty() {
            self.groups.remove(&key);
        }
    }

    /// The groups, the largest first (then by key).
    pub fn groups(&self) -> Vec<&Group> {
        let mut groups: Vec<&Group> = self.groups.values().collect();
        groups.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.key.cmp(&b.key)));
        groups
    }

    /// The group of signature `key`.
    pub fn group(&self, key: &str) -> Option<&Group> {
        self.groups.get(key)
    }

    /// Rollouts in some group.
    pub fn grouped(&self) -> usize {
        self.groups.values().map(Group::len).sum()
    }

    /// Tasks that masking thins, by task (natural order).
    pub fn thinned(&self) -> Vec<Thinned> {
        let mut thinned: Vec<Thinned> = self
            .tasks
            .iter()
            .filter(|(_, c)| c.masked > 0)
            .filter_map(|(task, c)| {
                let why = if c.delivered < 2 {
                    "fewer_than_2_delivered"
                } else if c.delivered_rewards.len() == 1
                    && c.delivered_rewards.values().sum::<usize>() == c.delivered
                {
                    "equal_rewards"
                } else {
                    return None;
                };
                Some(Thinned {
                    task: task.clone(),
                    delivered: c.delivered,
                    masked: c.masked,
                    why,
                })
            })
            .collect();
        thinned.sort_by(|a, b| crate::store::layout::natural_cmp(&a.task, &b.task));
        thinned
    }

    /// Whether any rollout's row said something of it (else rewards, agents and thinned
    /// tasks cannot be had).
    pub fn rows_given(&self) -> bool {
        self.context_seen > 0
    }

    /// Rollouts whose row's `mask_sample` disagrees with tokscope's verdict.
    pub fn disagreements(&self) -> &BTreeSet<Member> {
        &self.disagreements
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conformance() -> Vec<Summary> {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/conformance/store-1-1");
        let locations = crate::load::locate(&[dir], &[]).unwrap();
        crate::load::analyze_all(&locations, &Default::default())
            .iter()
            .map(Summary::of)
            .collect()
    }

    #[test]
    fn a_change_counted_by_difference_equals_counting_everything_again() {
        let mut summaries = conformance();
        let mut causes = Causes::of(&summaries);
        assert!(causes.grouped() > 0, "the store has masked rollouts");
        let total: usize = causes.groups().iter().map(|g| g.len()).sum();
        assert_eq!(total, causes.grouped());
        // One rollout changes (here: its cause goes; a fix landed), one appears twice over.
        let changed = summaries.iter().position(|s| s.cause.is_some()).unwrap();
        let before = summaries[changed].clone();
        summaries[changed].cause = None;
        causes.remove(&before);
        causes.add(&summaries[changed]);
        assert_eq!(causes, Causes::of(&summaries));
        // Taking every rollout out leaves nothing behind.
        for s in &summaries {
            causes.remove(s);
        }
        assert_eq!(causes, Causes::default());
    }

    #[test]
    fn tasks_are_thinned_by_masking_alone() {
        let base: Vec<Summary> = crate::load::demo_store_analyses()
            .iter()
            .map(Summary::of)
            .collect();
        let ok = base
            .iter()
            .find(|s| s.standing() == Standing::Ok)
            .cloned()
            .expect("a frozen ok rollout");
        let masked = base.iter().find(|s| s.cause.is_some()).unwrap().clone();
        let with = |mut s: Summary, id: &str, task: &str, reward: f64| {
            s.location.id = id.into();
            s.context = Some(crate::observe::RowContext {
                reward: Some(reward),
                task: Some(task.into()),
                agent: Some("a".into()),
                ..Default::default()
            });
            s
        };
        let causes = Causes::of(&[
            // Task 1: two delivered with different rewards, one masked: still a signal.
            with(ok.clone(), "a", "1", 1.0),
            with(ok.clone(), "b", "1", 0.0),
            with(masked.clone(), "c", "1", 1.0),
            // Task 2: equal rewards left.
            with(ok.clone(), "d", "2", 1.0),
            with(ok.clone(), "e", "2", 1.0),
            with(masked.clone(), "f", "2", 0.0),
            // Task 3: one delivered left.
            with(ok.clone(), "g", "3", 1.0),
            with(masked.clone(), "h", "3", 1.0),
            // Task 4: nothing masked, nothing thinned.
            with(ok, "i", "4", 1.0),
        ]);
        let thinned = causes.thinned();
        let thinned: Vec<(&str, &str)> = thinned.iter().map(|t| (t.task.as_str(), t.why)).collect();
        assert_eq!(
            thinned,
            [("2", "equal_rewards"), ("3", "fewer_than_2_delivered")]
        );
        let group = causes.groups()[0];
        assert_eq!(group.len(), 3);
        assert_eq!(group.reward().masked_with_reward, 2);
        assert_eq!(group.agents.get("a"), Some(&3));
    }
}
