//! The `tokscope` binary: argument parsing and dispatch only.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tokscope::load::{analyze_all, locate};
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
                let failed = analyses
                    .iter()
                    .any(|a| a.lifecycle == Lifecycle::Frozen && a.verdict == Verdict::Masked);
                if failed {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                }
            })
        }
        None => build(
            &stores_or_demo(cli.stores),
            &[],
            &VerdictOptions::default(),
            Format::Table,
        )
        .map(|_| ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|error| {
        eprintln!(
            "tokscope: {}",
            tokscope::text::sanitize(&format!("{error:#}"))
        );
        ExitCode::from(2)
    })
}

/// The given stores, or the demo store bundled with the sources.
fn stores_or_demo(stores: Vec<PathBuf>) -> Vec<PathBuf> {
    if stores.is_empty() {
        vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store")]
    } else {
        stores
    }
}

fn build(
    stores: &[PathBuf],
    only: &[String],
    options: &VerdictOptions,
    format: Format,
) -> anyhow::Result<Vec<Analysis>> {
    let locations = locate(stores, only)?;
    let analyses = analyze_all(&locations, options);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    match format {
        Format::Table => out.write_all(tokscope::table::render(&analyses).as_bytes())?,
        Format::Jsonl => {
            for analysis in &analyses {
                serde_json::to_writer(&mut out, &analysis.report())?;
                out.write_all(b"\n")?;
            }
        }
        Format::Json => {
            let reports: Vec<_> = analyses.iter().map(Analysis::report).collect();
            serde_json::to_writer_pretty(&mut out, &reports)?;
            out.write_all(b"\n")?;
        }
    }
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(analyses)
}
