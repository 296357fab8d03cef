//! A comparison as text (a CI log), markdown (a ticket) or JSON (a script).

use serde_json::{Value, json};

use super::{Diff, Facts, MatchedBy, Pair, Side};
use crate::causes::render::{cell, share};
use crate::text::sanitize;

/// A side's name and stores: `A /runs/before`.
fn side_name(label: &str, side: &Side) -> String {
    let stores: Vec<String> = side
        .stores
        .iter()
        .map(|s| sanitize(&s.display().to_string()).into_owned())
        .collect();
    format!("{label} {}", stores.join(", "))
}

fn percent(fraction: Option<f64>) -> String {
    fraction.map_or("–".into(), |f| format!("{:.1}%", f * 100.0))
}

fn reward(facts: &Facts) -> String {
    facts
        .mean_reward()
        .map_or("–".into(), |m| format!("{m:.3}"))
}

/// A side in one line: `40 rollouts, 12 masked (30.0%; 2 of them live, at risk), 70.0% of
/// the decided delivered, mean reward 0.450`.
fn side_line(facts: &Facts, at_risk: Option<usize>) -> String {
    let risk = match at_risk {
        Some(n) if n > 0 => format!("; {n} of them live, at risk"),
        _ => String::new(),
    };
    let mut line = format!(
        "{} rollouts, {} masked ({}{risk}), {} of the decided delivered",
        facts.rollouts,
        facts.masked,
        percent((facts.rollouts > 0).then(|| share(facts.masked, facts.rollouts))),
        percent(facts.delivered_fraction()),
    );
    if facts.reward_known > 0 {
        line.push_str(&format!(
            ", mean reward {} ({} known), {} masked with reward > 0",
            reward(facts),
            facts.reward_known,
            facts.masked_with_reward
        ));
    }
    line
}

/// Ids in a line, the first `limit` of them: `r1, r2, r3 and 4 more`.
fn ids_line(ids: &[String], limit: usize) -> String {
    let shown: Vec<String> = ids
        .iter()
        .take(limit)
        .map(|id| sanitize(id).into_owned())
        .collect();
    match ids.len().saturating_sub(limit) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

fn labels<'a>(pairs: impl Iterator<Item = &'a Pair>) -> Vec<String> {
    pairs.map(Pair::label).collect()
}

/// The flips in order: `(what, ids)`.
fn flips(diff: &Diff) -> [(&'static str, Vec<String>); 4] {
    [
        ("masked → ok", labels(diff.fixed())),
        ("ok → masked", labels(diff.broke())),
        ("only in A (gone)", diff.only_a.clone()),
        ("only in B (new)", diff.only_b.clone()),
    ]
}

fn matched_line(diff: &Diff) -> String {
    format!(
        "matched {} by id, {} by task and sample, {} by task; {} only in A, {} only in B",
        diff.matched(MatchedBy::Id),
        diff.matched(MatchedBy::TaskSample),
        diff.matched(MatchedBy::Task),
        diff.only_a.len(),
        diff.only_b.len()
    )
}

/// How many ids a text or markdown line names before `and N more` (JSON names all).
const IDS_SHOWN: usize = 12;

/// The comparison as text lines.
pub fn text(a: &Side, b: &Side, diff: &Diff) -> String {
    let (a_side, b_side) = (a, b);
    let mut out = format!(
        "{}\n  {}\n{}\n  {}\n{}\n",
        side_name("A", a),
        side_line(&a.facts, Some(a.tally.at_risk)),
        side_name("B", b),
        side_line(&b.facts, Some(b.tally.at_risk)),
        matched_line(diff)
    );
    out.push_str("\nflips\n");
    for (what, ids) in flips(diff) {
        out.push_str(&format!("  {what:<17} {:>5}", ids.len()));
        if !ids.is_empty() {
            out.push_str(&format!("  {}", ids_line(&ids, IDS_SHOWN)));
        }
        out.push('\n');
    }
    if !diff.groups.is_empty() {
        out.push_str(&format!(
            "\ncause groups\n  {:>6} {:>6}  {:>6} {:>6}  {:<9} cause\n",
            "A", "share", "B", "share", "change"
        ));
        for g in &diff.groups {
            out.push_str(&format!(
                "  {:>6} {:>5.1}%  {:>6} {:>5.1}%  {:<9} {}\n",
                g.a,
                g.a_share * 100.0,
                g.b,
                g.b_share * 100.0,
                g.change(),
                sanitize(&g.title)
            ));
        }
    }
    if !diff.agents.is_empty() {
        out.push_str("\nagents (A → B; – where a run's rows name no agent)\n");
        let no_rows = |side: &Side| !side.causes.rows_given();
        for row in &diff.agents {
            let (a, b) = (&row.a, &row.b);
            if no_rows(a_side) || no_rows(b_side) {
                let count = |facts: &Facts, side: &Side| {
                    if no_rows(side) {
                        "–".to_owned()
                    } else {
                        facts.rollouts.to_string()
                    }
                };
                let (x, y) = (count(a, a_side), count(b, b_side));
                out.push_str(&format!(
                    "  {:<16} rollouts {x} → {y}\n",
                    sanitize(&row.agent)
                ));
                continue;
            }
            out.push_str(&format!(
                "  {:<16} rollouts {} → {}, masked {} → {}, delivered {} → {}",
                sanitize(&row.agent),
                a.rollouts,
                b.rollouts,
                a.masked,
                b.masked,
                percent(a.delivered_fraction()),
                percent(b.delivered_fraction()),
            ));
            if a.reward_known + b.reward_known > 0 {
                out.push_str(&format!(", mean reward {} → {}", reward(a), reward(b)));
            }
            out.push('\n');
        }
    }
    out
}

/// A side's or an agent's cells; `at_risk`: how many of the masked are live and at risk.
fn facts_cells(facts: &Facts, at_risk: Option<usize>) -> String {
    let masked = match at_risk {
        Some(n) if n > 0 => format!("{} ({n} at risk)", facts.masked),
        _ => facts.masked.to_string(),
    };
    format!(
        "{} | {masked} | {} | {} | {}",
        facts.rollouts,
        percent(facts.delivered_fraction()),
        reward(facts),
        match facts.reward_known {
            0 => "–".to_owned(),
            _ => facts.masked_with_reward.to_string(),
        }
    )
}

const FACTS_HEADER: &str =
    "rollouts | masked | delivered (of the decided) | mean reward | masked with reward > 0 |\n";
const FACTS_RULE: &str = "---:|---:|---:|---:|---:|\n";

/// The comparison as markdown tables.
pub fn markdown(a: &Side, b: &Side, diff: &Diff) -> String {
    let mut out = format!("**{}**\n\n", cell(&matched_line(diff)));
    out.push_str(&format!(
        "| side | stores | {FACTS_HEADER}|---|---|{FACTS_RULE}"
    ));
    for (label, side) in [("A", a), ("B", b)] {
        let stores: Vec<String> = side
            .stores
            .iter()
            .map(|s| cell(&s.display().to_string()))
            .collect();
        out.push_str(&format!(
            "| {label} | {} | {} |\n",
            stores.join(", "),
            facts_cells(&side.facts, Some(side.tally.at_risk))
        ));
    }
    out.push_str("\n| flip | rollouts | ids |\n|---|---:|---|\n");
    for (what, ids) in flips(diff) {
        out.push_str(&format!(
            "| {what} | {} | {} |\n",
            ids.len(),
            cell(&ids_line(&ids, IDS_SHOWN))
        ));
    }
    if !diff.groups.is_empty() {
        out.push_str("\n| cause | A | A share | B | B share | change |\n");
        out.push_str("|---|---:|---:|---:|---:|---|\n");
        for g in &diff.groups {
            out.push_str(&format!(
                "| {} | {} | {:.1}% | {} | {:.1}% | {} |\n",
                cell(&g.title),
                g.a,
                g.a_share * 100.0,
                g.b,
                g.b_share * 100.0,
                g.change()
            ));
        }
    }
    if !diff.agents.is_empty() {
        out.push_str(&format!(
            "\n| agent | side | {FACTS_HEADER}|---|---|{FACTS_RULE}"
        ));
        for row in &diff.agents {
            for (label, facts, side) in [("A", &row.a, a), ("B", &row.b, b)] {
                let cells = if side.causes.rows_given() {
                    facts_cells(facts, None)
                } else {
                    "– | – | – | – | – (no rows)".to_owned()
                };
                out.push_str(&format!("| {} | {label} | {cells} |\n", cell(&row.agent)));
            }
        }
    }
    out
}

fn facts_json(facts: &Facts) -> Value {
    json!({
        "rollouts": facts.rollouts,
        "masked": facts.masked,
        "delivered": facts.delivered,
        "delivered_fraction": facts.delivered_fraction(),
        "mean_reward": facts.mean_reward(),
        "reward_known": facts.reward_known,
        "masked_with_reward": facts.masked_with_reward,
    })
}

fn side_json(side: &Side) -> Value {
    let mut value = facts_json(&side.facts);
    value["stores"] = json!(
        side.stores
            .iter()
            .map(|s| s.display().to_string())
            .collect::<Vec<_>>()
    );
    value["tokens_delivered_fraction"] = json!(side.tokens_delivered());
    value["at_risk"] = json!(side.tally.at_risk);
    value
}

/// The comparison as JSON: `{"a": {"rollouts", "masked", …}, "b": {…}, "flips":
/// {"masked_to_ok", "ok_to_masked", "only_a", "only_b"}, "groups": [{"title", "a", "b", …}],
/// "agents": [{"agent", "a", "b"}], "pairs": […]}`. Flips name A's ids; `pairs` gives each
/// flipped pair's ids on both sides and how it was matched.
pub fn json(a: &Side, b: &Side, diff: &Diff) -> Value {
    let ids = |pairs: Vec<&Pair>| pairs.iter().map(|p| p.a.clone()).collect::<Vec<_>>();
    let flipped: Vec<&Pair> = diff.pairs.iter().filter(|p| p.flipped()).collect();
    json!({
        "a": side_json(a),
        "b": side_json(b),
        "matched": {
            "by_id": diff.matched(MatchedBy::Id),
            "by_task_sample": diff.matched(MatchedBy::TaskSample),
            "by_task": diff.matched(MatchedBy::Task),
        },
        "flips": {
            "masked_to_ok": ids(diff.fixed().collect()),
            "ok_to_masked": ids(diff.broke().collect()),
            "only_a": diff.only_a,
            "only_b": diff.only_b,
        },
        "pairs": flipped,
        "groups": diff.groups.iter().map(|g| {
            let mut value = json!(g);
            value["change"] = json!(g.change());
            value
        }).collect::<Vec<_>>(),
        // A run whose rows say nothing of agents has `null` for each agent.
        "agents": diff.agents.iter().map(|row| json!({
            "agent": row.agent,
            "a": a.causes.rows_given().then(|| facts_json(&row.a)),
            "b": b.causes.rows_given().then(|| facts_json(&row.b)),
        })).collect::<Vec<_>>(),
    })
}
