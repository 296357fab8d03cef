//! The causes of a run as text (a CI log), markdown (a ticket) or JSON (a script).

use serde_json::{Value, json};

use super::{Causes, Group};
use crate::text::sanitize;
use crate::verdict::Tally;
use crate::verdict::cause::{Cause, Evidence};

/// How much of the run the groups cover: rollouts (not cleared) and those masked or at risk.
fn totals(tally: &Tally) -> (usize, usize) {
    (tally.rollouts(), tally.masked + tally.at_risk)
}

/// The run in one line: `31 rollouts (0 live): 24 masked, 0 at risk (77.4%)`.
fn headline(tally: &Tally) -> String {
    let (rollouts, masked) = totals(tally);
    format!(
        "{rollouts} rollouts ({} live): {} masked, {} at risk ({:.1}%)",
        tally.live_total(),
        tally.masked,
        tally.at_risk,
        share(masked, rollouts) * 100.0
    )
}

/// Said when no rollout's row gave a reward, an agent or a task.
pub const NO_ROWS: &str = "no rows give reward, agent or task: pass --rollouts PATH (the \
     rollout collection's results) to weigh the causes by reward and agent and to find the \
     tasks masking thins";

/// `part / whole`, 0 for nothing of nothing.
pub fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Where the example broke, in a few words: `r1 call c3, token 1234 of its prompt: −"…" +"…"`.
pub fn example_line(id: &str, cause: &Cause) -> String {
    let mut line = sanitize(id).into_owned();
    if let Some(call) = &cause.call {
        line.push_str(&format!(" call {}", sanitize(call)));
    }
    if let Evidence::Link(link) = &cause.evidence {
        if let Some(position) = link.position {
            line.push_str(&format!(" at token {position} of its prompt"));
        }
        match (&link.text, link.edit) {
            (Some(text), _) => line.push_str(&format!(
                ": −\"{}\" +\"{}\"",
                sanitize(&text.removed),
                sanitize(&text.inserted)
            )),
            (None, Some(edit)) if edit.aligned => line.push_str(&format!(
                ": {} token(s) removed, {} inserted",
                edit.removed, edit.inserted
            )),
            _ => {}
        }
    }
    line
}

fn agents_text(group: &Group) -> String {
    group
        .agents_line()
        .unwrap_or_else(|| "agent unknown".into())
}

fn reward_text(group: &Group) -> String {
    let reward = group.reward();
    match reward.mean {
        Some(mean) => format!(
            "reward mean {mean:.2} ({} known), {} with reward > 0",
            reward.known, reward.masked_with_reward
        ),
        None => "no reward known".into(),
    }
}

/// The counts of each store, when there are several: `(store, its tally)`.
pub type StoreTallies = [(String, Tally)];

/// The causes as text lines.
pub fn text(causes: &Causes, tally: &Tally, stores: &StoreTallies) -> String {
    let (_, masked) = totals(tally);
    let groups = causes.groups();
    let mut out = format!("{}, {} cause group(s)\n", headline(tally), groups.len());
    if stores.len() > 1 {
        for (store, tally) in stores {
            out.push_str(&format!("  {}: {}\n", sanitize(store), headline(tally)));
        }
    }
    if !causes.rows_given() {
        out.push_str(&format!("({NO_ROWS})\n"));
    }
    for group in &groups {
        out.push_str(&format!(
            "\n{:>6} {:>5.1}%  {}\n",
            group.len(),
            share(group.len(), masked) * 100.0,
            sanitize(&group.title)
        ));
        if causes.rows_given() {
            out.push_str(&format!(
                "              {} · {}\n",
                agents_text(group),
                reward_text(group)
            ));
        }
        if let Some(((id, _), cause)) = group.example() {
            out.push_str(&format!("              e.g. {}\n", example_line(id, cause)));
        }
    }
    let thinned = causes.thinned();
    if !thinned.is_empty() {
        out.push_str("\ntasks masking thins (fewer than 2 delivered, or equal rewards):\n");
        for t in &thinned {
            out.push_str(&format!("  {}\n", t.line()));
        }
    }
    let disagree = causes.disagreements();
    if !disagree.is_empty() {
        let ids: Vec<String> = disagree
            .iter()
            .map(|(id, _)| sanitize(id).into_owned())
            .collect();
        out.push_str(&format!(
            "\nrows whose mask_sample disagrees with tokscope: {}\n",
            ids.join(", ")
        ));
    }
    out
}

/// A markdown cell: no pipes, line breaks or tags (a renderer would take `<think>` for HTML).
pub fn cell(text: &str) -> String {
    sanitize(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
        .replace('\n', " ")
}

/// The causes as a markdown table a person can paste into a ticket.
pub fn markdown(causes: &Causes, tally: &Tally, stores: &StoreTallies) -> String {
    let (_, masked) = totals(tally);
    let mut out = format!(
        "**{}, {} cause group(s)**\n\n",
        headline(tally),
        causes.groups().len()
    );
    if !causes.rows_given() {
        out.push_str(&format!("_{}_\n\n", cell(NO_ROWS)));
    }
    if stores.len() > 1 {
        out.push_str("| store | rollouts | live | masked | at risk |\n|---|---:|---:|---:|---:|\n");
        for (store, t) in stores {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                cell(store),
                t.rollouts(),
                t.live_total(),
                t.masked,
                t.at_risk
            ));
        }
        out.push('\n');
    }
    out.push_str(
        "| rollouts | share | cause | agents | mean reward | masked with reward > 0 | example |\n",
    );
    out.push_str("|---:|---:|---|---|---:|---:|---|\n");
    for group in causes.groups() {
        let reward = group.reward();
        let example = group
            .example()
            .map(|((id, _), cause)| example_line(id, cause))
            .unwrap_or_default();
        out.push_str(&format!(
            "| {} | {:.1}% | {} | {} | {} | {} | {} |\n",
            group.len(),
            share(group.len(), masked) * 100.0,
            cell(&group.title),
            cell(&agents_text(group)),
            reward.mean.map_or("–".into(), |m| format!("{m:.2}")),
            match reward.known {
                0 => "–".to_owned(),
                _ => reward.masked_with_reward.to_string(),
            },
            cell(&example)
        ));
    }
    let thinned = causes.thinned();
    if !thinned.is_empty() {
        out.push_str("\n| task | delivered | masked | thinned because |\n|---|---:|---:|---|\n");
        for t in &thinned {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                cell(&t.task),
                t.delivered,
                t.masked,
                t.why_words()
            ));
        }
    }
    out
}

/// The causes as JSON: `{"rollouts", "masked", "groups": [{"title", "reason", "signature",
/// "rollouts", "agents", "reward": {"mean", "masked_with_reward"}, …}], "thinned_groups"}`.
pub fn json(causes: &Causes, tally: &Tally, stores: &StoreTallies) -> Value {
    let (rollouts, masked) = totals(tally);
    let groups: Vec<Value> = causes
        .groups()
        .iter()
        .map(|group| {
            let reward = group.reward();
            let signature: serde_json::Map<String, Value> = group
                .signature
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
                .collect();
            let example = group.example().map(|((id, _), cause)| {
                json!({"rollout": id, "cause": cause})
            });
            json!({
                "title": group.title,
                "key": group.key,
                "reason": group.reason,
                "signature": signature,
                "count": group.len(),
                "share": share(group.len(), masked),
                "rollouts": group.members.keys().map(|(id, _)| id).collect::<Vec<_>>(),
                "agents": group.agents,
                "stores": group.stores.iter().map(|(s, n)| (s.display().to_string(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                "reward": {
                    "mean": reward.mean,
                    "known": reward.known,
                    "masked_with_reward": reward.masked_with_reward,
                },
                "example": example,
            })
        })
        .collect();
    json!({
        "rollouts": rollouts,
        "masked": masked,
        "masked_frozen": tally.masked,
        "at_risk": tally.at_risk,
        "live": tally.live_total(),
        "rows_given": causes.rows_given(),
        "stores": stores
            .iter()
            .map(|(store, t)| json!({
                "store": store,
                "rollouts": t.rollouts(),
                "live": t.live_total(),
                "masked": t.masked,
                "at_risk": t.at_risk,
            }))
            .collect::<Vec<_>>(),
        "groups": groups,
        "thinned_groups": causes.thinned(),
        "row_disagreements": causes.disagreements().iter().map(|(id, _)| id).collect::<Vec<_>>(),
    })
}
