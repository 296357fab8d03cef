//! The `tokscope` binary: argument parsing and dispatch only.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tokscope::load::{analyze_all, analyze_in_order, locate};
use tokscope::verdict::{Analysis, Lifecycle, Verdict, VerdictOptions};

mod cli;
use cli::{Cli, Command, Format};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Build(args)) => {
            let options = VerdictOptions {
                model: args.model,
                terminal_call_id: args.terminal_call,
                mask_incomplete_when_attributed: args.mask_incomplete_when_attributed,
            };
            build(
                &stores_or_demo(args.stores),
                &args.rollouts,
                &options,
                args.format,
            )
            .map(|_| ExitCode::SUCCESS)
        }
        Some(Command::Check(args)) => {
            build(&args.stores, &[], &VerdictOptions::default(), Format::Table).map(|analyses| {
                let failed = analyses.contains(&(Lifecycle::Frozen, Verdict::Masked));
                if failed {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                }
            })
        }
        None => {
            let demo = cli.stores.is_empty();
            let tokenizer = cli
                .tokenizer
                .or_else(|| demo.then(|| assets().join("tokenizer.json")));
            explore(stores_or_demo(cli.stores), tokenizer).map(|_| ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|error| {
        eprintln!(
            "tokscope: {}",
            tokscope::text::sanitize(&format!("{error:#}"))
        );
        ExitCode::from(2)
    })
}

/// Open the explorer; without a terminal (piped output), print the build table instead.
fn explore(stores: Vec<PathBuf>, tokenizer: Option<PathBuf>) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        build(&stores, &[], &VerdictOptions::default(), Format::Table)?;
        return Ok(());
    }
    let options = VerdictOptions::default();
    let analyses = analyze_all(&locate(&stores, &[])?, &options);
    let (width, height) = crossterm::terminal::size().unwrap_or((80, 24));
    let mut app = tokscope::app::App::new(
        stores,
        analyses,
        options,
        ratatui::layout::Rect::new(0, 0, width, height),
    );
    if let Some(path) = tokenizer {
        app = app.with_tokenizer(tokscope::detok::Detokenizer::load(&path)?);
    }
    tokscope::term::run(app)?;
    Ok(())
}

/// The bundled assets (demo store, tokenizer), next to the sources.
fn assets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets")
}

/// The given stores, or the demo store bundled with the sources.
fn stores_or_demo(stores: Vec<PathBuf>) -> Vec<PathBuf> {
    if stores.is_empty() {
        vec![assets().join("demo-store")]
    } else {
        stores
    }
}

/// What `check` needs to know of each rollout.
type Outcome = (Lifecycle, Verdict);

fn build(
    stores: &[PathBuf],
    only: &[String],
    options: &VerdictOptions,
    format: Format,
) -> anyhow::Result<Vec<Outcome>> {
    let locations = locate(stores, only)?;
    // `Stdout` (not its lock) so the jsonl writer can run on whichever worker finishes.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout());
    let outcome = |a: &Analysis| (a.lifecycle, a.verdict);
    let outcomes = match format {
        Format::Jsonl => {
            // Serialize on the worker threads; write in rollout order as results arrive.
            let mut outcomes = Vec::with_capacity(locations.len());
            let mut written = Ok(());
            analyze_in_order(
                &locations,
                options,
                |analysis| {
                    let mut line = Vec::with_capacity(analysis.report_size_hint());
                    serde_json::to_writer(&mut line, &analysis.report())
                        .expect("reports serialize");
                    line.push(b'\n');
                    (outcome(&analysis), line)
                },
                |(result, line)| {
                    outcomes.push(result);
                    if written.is_ok() {
                        written = out.write_all(&line);
                    }
                },
            );
            written?;
            outcomes
        }
        Format::Table => {
            let analyses = analyze_all(&locations, options);
            out.write_all(tokscope::table::render(&analyses).as_bytes())?;
            analyses.iter().map(outcome).collect()
        }
        Format::Json => {
            let analyses = analyze_all(&locations, options);
            let reports: Vec<_> = analyses.iter().map(Analysis::report).collect();
            serde_json::to_writer_pretty(&mut out, &reports)?;
            out.write_all(b"\n")?;
            analyses.iter().map(outcome).collect()
        }
    };
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(outcomes)
}
