//! `tokscope why`: a run's masked rollouts grouped by cause, headless (a CI log, a ticket).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokscope_core::causes::render;
use tokscope_core::detok::Detokenizer;
use tokscope_core::health::Health;
use tokscope_core::load::{analyze_in_order, locate};
use tokscope_core::verdict::{Summary, VerdictOptions};

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
    let locations = locate(&stores, &[])?;
    // One pass: each rollout is judged and reduced to its summary on a worker, then counted.
    let mut health = Health::default();
    analyze_in_order(
        &locations,
        &options,
        &rows,
        |analysis| Summary::of(&analysis),
        |summary| health.add(&summary),
    );
    let out = match args.format {
        WhyFormat::Text => render::text(&health.causes, &health.tally),
        WhyFormat::Markdown => render::markdown(&health.causes, &health.tally),
        WhyFormat::Json => {
            let mut json =
                serde_json::to_string_pretty(&render::json(&health.causes, &health.tally))?;
            json.push('\n');
            json
        }
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // A reader that stopped reading (`| head`) has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(ExitCode::SUCCESS)
}
