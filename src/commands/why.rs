//! `tokscope why`: a run's masked rollouts grouped by cause, headless (a CI log, a ticket).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokscope_core::causes::render;
use tokscope_core::detok::Detokenizer;
use tokscope_core::health::Health;
use tokscope_core::load::analyze_in_order;
use tokscope_core::text::{sanitize, utc_of_seconds};
use tokscope_core::timeline::Timeline;
use tokscope_core::verdict::{Summary, Tally, VerdictOptions};

use super::{assets, read_rows, stores_or_demo};
use crate::cli::{WhyArgs, WhyFormat};

/// Run `why`.
pub fn run(args: WhyArgs, rows: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let demo = args.stores.is_empty();
    let stores = stores_or_demo(args.stores);
    let rows = read_rows(&stores, rows);
    let tokenizer = args
        .tokenizer
        .or_else(|| demo.then(|| assets::dir().join("tokenizer.json")));
    let options = VerdictOptions {
        detokenizer: tokenizer
            .as_deref()
            .map(Detokenizer::load)
            .transpose()?
            .map(Arc::new),
        ..VerdictOptions::default()
    };
    let locations = super::locate_or_say(&stores)?;
    // One pass: each rollout is judged and reduced to its summary (and the model its records
    // name) on a worker, then counted.
    let mut health = Health::default();
    let mut by_store: std::collections::BTreeMap<PathBuf, Tally> = Default::default();
    let mut models = std::collections::BTreeSet::new();
    let mut timeline = args.by_time.map(Timeline::new);
    analyze_in_order(
        &locations,
        &options,
        &rows,
        |analysis| {
            let model = analysis.capture.records.first().map(|r| r.model.clone());
            (Summary::of(&analysis), model)
        },
        |(summary, model)| {
            by_store
                .entry(summary.location.dir.clone())
                .or_default()
                .count(summary.standing(), 1);
            health.add(&summary);
            if let Some(timeline) = &mut timeline {
                timeline.add(&summary);
            }
            models.extend(model.filter(|m| !m.is_empty()));
        },
    );
    if let (Some(path), true) = (&tokenizer, models.len() > 1) {
        // One tokenizer decodes every rollout: those of another model get meaningless text.
        let names: Vec<String> = models.iter().map(|m| sanitize(m).into_owned()).collect();
        eprintln!(
            "tokscope: the records name {} models ({}); {} decodes all of them, so the text \
             classes of the others' broken links mean nothing: run why once per model's store",
            names.len(),
            names.join(", "),
            sanitize(&path.display().to_string())
        );
    }
    if let Some(timeline) = &timeline {
        return print_series(timeline);
    }
    let stores: Vec<(String, Tally)> = by_store
        .into_iter()
        .map(|(dir, tally)| (dir.display().to_string(), tally))
        .collect();
    let (causes, tally) = (&health.causes, &health.tally);
    match args.format.unwrap_or(WhyFormat::Text) {
        WhyFormat::Text => super::print(render::text(causes, tally, &stores).as_bytes())?,
        WhyFormat::Markdown => super::print(render::markdown(causes, tally, &stores).as_bytes())?,
        WhyFormat::Json => super::print_json(&render::json(causes, tally, &stores))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The run over time, one JSON object a bucket (its start also in UTC), empty buckets
/// included so that a plot's x axis is even.
fn print_series(timeline: &Timeline) -> anyhow::Result<ExitCode> {
    let series = timeline.series()?;
    let mut out = String::new();
    for bucket in &series {
        let mut value = serde_json::to_value(bucket)?;
        value["start_utc"] = serde_json::json!(utc_of_seconds(bucket.start));
        out.push_str(&value.to_string());
        out.push('\n');
    }
    if timeline.untimed() > 0 {
        eprintln!(
            "tokscope: {} rollout(s) have no record and so no time; they are in no bucket",
            timeline.untimed()
        );
    }
    super::print(&tokscope_core::text::escape_json_controls(out.into_bytes()))?;
    Ok(ExitCode::SUCCESS)
}
