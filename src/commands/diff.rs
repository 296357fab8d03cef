//! `tokscope diff`: two runs compared (A/B), headless.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokscope_core::compare::{Diff, Side, render};
use tokscope_core::detok::Detokenizer;
use tokscope_core::load::analyze_in_order;
use tokscope_core::text::sanitize;
use tokscope_core::verdict::{Summary, VerdictOptions};

use super::read_rows;
use crate::cli::{DiffArgs, WhyFormat};

/// One side, judged and counted in one pass over its rollouts.
fn side(store: PathBuf, rows: &[PathBuf], options: &VerdictOptions) -> anyhow::Result<Side> {
    let stores = vec![store];
    let rows = read_rows(&stores, rows);
    let locations = super::locate_or_say(&stores)?;
    let ids: std::collections::HashSet<&str> = locations.iter().map(|l| l.id.as_str()).collect();
    let unmatched = rows.unmatched(&ids);
    if !unmatched.is_empty() {
        eprintln!(
            "tokscope: {} row(s) for {} name no rollout of it: {}",
            unmatched.len(),
            sanitize(&stores[0].display().to_string()),
            unmatched
                .iter()
                .take(5)
                .map(|k| sanitize(k).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut side = Side::new(stores);
    analyze_in_order(
        &locations,
        options,
        &rows,
        |analysis| Summary::of(&analysis),
        |summary| side.add(&summary),
    );
    Ok(side)
}

/// `diff A B` as text, with the rows found in each store (the explorer's `--compare`
/// without a terminal).
pub fn print_text(
    a: PathBuf,
    b: PathBuf,
    rows_a: &[PathBuf],
    rows_b: &[PathBuf],
) -> anyhow::Result<()> {
    let options = VerdictOptions::default();
    let (a, b) = (side(a, rows_a, &options)?, side(b, rows_b, &options)?);
    super::print(render::text(&a, &b, &Diff::of(&a, &b)).as_bytes())
}

/// Run `diff`.
pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let options = VerdictOptions {
        detokenizer: args
            .tokenizer
            .as_deref()
            .map(Detokenizer::load)
            .transpose()?
            .map(Arc::new),
        ..VerdictOptions::default()
    };
    let a = side(args.store_a, &args.rows_a, &options)?;
    let b = side(args.store_b, &args.rows_b, &options)?;
    let diff = Diff::of(&a, &b);
    let rows_of = |side: &Side| side.causes.rows_given();
    if rows_of(&a) != rows_of(&b) {
        // A cause explained by a row (an extra root a row calls a subagent) then differs
        // between the runs by that alone.
        eprintln!(
            "tokscope: rows were found for run {} only; cause groups and agents that rows \
             explain differ between the runs by that alone (give both --rollouts-a and \
             --rollouts-b)",
            if rows_of(&a) { "A" } else { "B" }
        );
    }
    match args.format {
        WhyFormat::Text => super::print(render::text(&a, &b, &diff).as_bytes())?,
        WhyFormat::Markdown => super::print(render::markdown(&a, &b, &diff).as_bytes())?,
        WhyFormat::Json => super::print_json(&render::json(&a, &b, &diff))?,
    }
    Ok(ExitCode::SUCCESS)
}
