//! `tokscope check`: the build table, and status 1 when a final verdict is masked (a CI gate).

use std::path::PathBuf;
use std::process::ExitCode;

use tokscope_core::verdict::{Standing, VerdictOptions};

use super::{read_rows, stores_or_demo};
use crate::cli::{CheckArgs, Format};

/// Run `check` (without `--follow`).
pub fn run(args: CheckArgs, rows: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let stores = stores_or_demo(args.stores);
    let rows = read_rows(&stores, rows);
    let outcomes = super::build::write(
        &stores,
        &[],
        &VerdictOptions::default(),
        Format::Table,
        &rows,
    )?;
    // A final masked verdict fails the gate (retired rollouts were delivered).
    let failed = outcomes.contains(&Standing::Masked);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
