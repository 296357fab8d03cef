//! `tokscope build`: every rollout's report (table, JSON or JSON lines), written in rollout
//! order as each is judged on the worker threads.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tokscope_core::load::{analyze_in_order, locate};
use tokscope_core::observe::Rows;
use tokscope_core::text::{escape_json_controls, sanitize};
use tokscope_core::verdict::{Analysis, Standing, VerdictOptions};

use super::{read_rows, stores_or_demo};
use crate::cli::{BuildArgs, Format};

/// What `check` needs to know of each rollout: where it stands.
pub type Outcome = Standing;

/// Run `build`.
pub fn run(args: BuildArgs, rows: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let options = VerdictOptions {
        model: args.model,
        terminal_call_id: args.terminal_call,
        declared_response_id: args.declared_response,
        mask_incomplete_when_attributed: args.mask_incomplete_when_attributed,
        ..VerdictOptions::default()
    };
    let stores = stores_or_demo(args.stores);
    let rows = read_rows(&stores, rows);
    write(&stores, &args.rollouts, &options, args.format, &rows)?;
    Ok(ExitCode::SUCCESS)
}

/// Judge the rollouts of `stores` (only those named in `only`, when any) and write their
/// reports to standard output in `format`; what each came to.
pub fn write(
    stores: &[PathBuf],
    only: &[String],
    options: &VerdictOptions,
    format: Format,
    rows: &Rows,
) -> anyhow::Result<Vec<Outcome>> {
    let locations = locate(stores, only)?;
    // A rollout asked for by name that no store holds is a mistake, not an empty answer.
    let missing: Vec<&String> = only
        .iter()
        .filter(|id| !locations.iter().any(|l| &l.id == *id))
        .collect();
    if let Some(id) = missing.first() {
        anyhow::bail!(
            "--rollout {}: no such rollout in {}",
            sanitize(id),
            stores
                .iter()
                .map(|s| sanitize(&s.display().to_string()).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let ids: std::collections::HashSet<&str> = locations.iter().map(|l| l.id.as_str()).collect();
    for key in rows.unmatched(&ids) {
        if only.is_empty() {
            eprintln!(
                "tokscope: a rollout row names {}, which is in no store",
                sanitize(key)
            );
        }
    }
    // `Stdout` (not its lock) so the jsonl writer can run on whichever worker finishes.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout());
    let outcome = Analysis::standing;
    let mut outcomes = Vec::with_capacity(locations.len());
    // Each format: what a worker makes of an analysis, the text before, between and after.
    let mut written = Ok(());
    match format {
        Format::Jsonl => analyze_in_order(
            &locations,
            options,
            rows,
            |analysis| {
                let mut line = Vec::with_capacity(analysis.report_size_hint());
                serde_json::to_writer(&mut line, &analysis.report()).expect("reports serialize");
                line.push(b'\n');
                (outcome(&analysis), escape_json_controls(line))
            },
            |(result, line)| {
                outcomes.push(result);
                if written.is_ok() {
                    written = out.write_all(&line);
                }
            },
        ),
        Format::Table => {
            // Rows are made on the worker threads and written in order as they finish.
            let mut table =
                tokscope_core::table::TableWriter::new(locations.iter().map(|l| l.id.as_str()));
            written = out.write_all(table.header().as_bytes());
            let shape = table.clone();
            analyze_in_order(
                &locations,
                options,
                rows,
                |analysis| (outcome(&analysis), shape.row_line(&analysis)),
                |(result, line)| {
                    table.count(result);
                    outcomes.push(result);
                    if written.is_ok() {
                        written = out.write_all(line.as_bytes());
                    }
                },
            );
            if written.is_ok() {
                written = out.write_all(table.footer().as_bytes());
            }
        }
        Format::Json => {
            // One pretty array, each report written as it finishes (indented as an element).
            written = out.write_all(b"[");
            let mut first = true;
            analyze_in_order(
                &locations,
                options,
                rows,
                |analysis| {
                    let pretty = serde_json::to_string_pretty(&analysis.report())
                        .expect("reports serialize");
                    let pretty = escape_json_controls(pretty.replace('\n', "\n  ").into_bytes());
                    (outcome(&analysis), pretty)
                },
                |(result, element)| {
                    outcomes.push(result);
                    if written.is_ok() {
                        let lead: &[u8] = if first { b"\n  " } else { b",\n  " };
                        first = false;
                        written = out.write_all(lead).and_then(|()| out.write_all(&element));
                    }
                },
            );
            if written.is_ok() {
                written = out.write_all(if first { b"]\n" } else { b"\n]\n" });
            }
        }
    }
    written?;
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(outcomes)
}
