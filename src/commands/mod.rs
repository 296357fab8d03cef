//! The commands, one module each, and what they share: the stores to read (the bundled demo
//! store by default), the rows files, the configuration.

mod assets;
mod build;
mod check;
mod demo;
mod diff;
mod explore;
mod follow;
mod replay;
mod why;

use std::path::PathBuf;
use std::process::ExitCode;

use tokscope::config::Config;
use tokscope_core::observe::Rows;

use crate::cli::{Cli, Command};

/// Run the command the command line names (the explorer without one).
pub fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    validate(&mut cli)?;
    if let Some(mib) = cli.input.max_line_mib {
        tokscope_core::store::set_line_limit(usize::try_from(mib << 20).unwrap_or(usize::MAX));
    }
    let rows = cli.input.rows;
    match cli.command {
        Some(Command::Build(args)) => build::run(args, &rows),
        Some(Command::Check(args)) if args.follow => follow::run(args, &rows),
        Some(Command::Check(args)) => check::run(args, &rows),
        Some(Command::Replay(args)) => replay::run(args, rows),
        Some(Command::Why(args)) => why::run(args, &rows),
        Some(Command::Diff(args)) => diff::run(args),
        Some(Command::Demo(args)) => demo::run(args, rows),
        Some(Command::Completions(args)) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(args.shell, &mut command, "tokscope", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Man) => {
            let command = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(command).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        None => explore::run(cli.explore, cli.stores, rows),
    }
}

/// Refuse what cannot work before doing anything: rows paths that do not exist, and the same
/// store given twice (also through a symlink) collapses to one.
fn validate(cli: &mut Cli) -> anyhow::Result<()> {
    if let Some(Command::Check(args)) = &cli.command
        && !args.follow
    {
        let given = [
            ("--poll", args.poll.poll.is_some()),
            (
                "--max-mask-fraction",
                args.alarm.max_mask_fraction.is_some(),
            ),
            ("--min-frozen", args.alarm.min_frozen.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            anyhow::bail!(
                "check: {flag} applies to check --follow (without it, check exits 1 on any masked frozen rollout)"
            );
        }
    }
    if let Some(Command::Why(args)) = &cli.command
        && args.by_time.is_some()
        && args.format.is_some()
    {
        anyhow::bail!(
            "why: --by-time prints one JSON object a line; --format does not apply to it"
        );
    }
    if let Some(Command::Diff(_)) = &cli.command
        && !cli.input.rows.is_empty()
    {
        anyhow::bail!(
            "diff: give each side its rows with --rollouts-a PATH and --rollouts-b PATH (one --rollouts would give both runs the same rewards)"
        );
    }
    let mut rows: Vec<(&str, &PathBuf)> =
        cli.input.rows.iter().map(|p| ("--rollouts", p)).collect();
    if let Some(Command::Diff(args)) = &cli.command {
        rows.extend(args.rows_a.iter().map(|p| ("--rollouts-a", p)));
        rows.extend(args.rows_b.iter().map(|p| ("--rollouts-b", p)));
    }
    for (flag, path) in rows {
        if std::fs::metadata(path).is_err() {
            anyhow::bail!("{flag} {}: no such file or directory", path.display());
        }
    }
    let stores = match &mut cli.command {
        Some(Command::Build(args)) => &mut args.stores,
        Some(Command::Check(args)) => &mut args.stores,
        Some(Command::Replay(args)) => &mut args.stores,
        Some(Command::Why(args)) => &mut args.stores,
        Some(Command::Demo(_) | Command::Diff(_) | Command::Completions(_) | Command::Man) => {
            return Ok(());
        }
        None => &mut cli.stores,
    };
    let mut seen = std::collections::HashSet::new();
    stores.retain(|store| seen.insert(store.canonicalize().unwrap_or_else(|_| store.clone())));
    Ok(())
}

/// The user's configuration. It is the explorer's and the kill switch's: a mistake in it must
/// not break `build`, `check` (a CI gate) or completions, which never read it.
fn load_config() -> anyhow::Result<Config> {
    Ok(match tokscope::config::config_path() {
        Some(path) => Config::load(&path)?,
        None => Config::default(),
    })
}

/// The given stores, or the demo store bundled with the sources.
fn stores_or_demo(stores: Vec<PathBuf>) -> Vec<PathBuf> {
    if stores.is_empty() {
        vec![assets::dir().join("demo-store")]
    } else {
        stores
    }
}

/// The rollouts of `stores`; none is said on standard error (a report of nothing is no
/// failure, but it should not look like a clean run).
fn locate_or_say(stores: &[PathBuf]) -> anyhow::Result<Vec<tokscope_core::store::RolloutLocation>> {
    let locations = tokscope_core::load::locate(stores, &[])?;
    if locations.is_empty() {
        let names: Vec<String> = stores
            .iter()
            .map(|s| tokscope_core::text::sanitize(&s.display().to_string()).into_owned())
            .collect();
        eprintln!(
            "tokscope: no rollouts (no *.tokens.* files) in {}",
            names.join(", ")
        );
    }
    Ok(locations)
}

/// Rows given with `--rollouts`, plus those found in the store directories.
fn read_rows(stores: &[PathBuf], paths: &[PathBuf]) -> Rows {
    let mut rows = Rows::read(paths);
    rows.discover(stores);
    for problem in &rows.problems {
        let line = format!("{}: {}", problem.source, problem.message);
        eprintln!("tokscope: {}", tokscope_core::text::sanitize(&line));
    }
    rows
}

/// Write `text` to standard output; a reader that stopped reading (`| head`) has what it
/// wanted.
fn print(text: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Write `value` as pretty JSON, with the C1 controls and line separators a terminal would
/// act on escaped.
fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    let mut json = serde_json::to_string_pretty(value)?;
    json.push('\n');
    print(&tokscope_core::text::escape_json_controls(
        json.into_bytes(),
    ))
}

/// Whether standard input and output are a terminal (else the explorer prints a table).
fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}
