//! The `tokscope` binary: argument parsing and dispatch only.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tokscope_core::load::{analyze_in_order, locate};
use tokscope_core::observe::Rows;
use tokscope_core::verdict::{Analysis, Lifecycle, Verdict, VerdictOptions};

mod cli;
use cli::{Cli, Command, Format};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!(
                "tokscope: {}",
                tokscope_core::text::sanitize(&format!("{error:#}"))
            );
            ExitCode::from(2)
        }
    }
}

fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    validate(&mut cli)?;
    // The configuration is the explorer's and the kill switch's: a mistake in it must not
    // break `build`, `check` (a CI gate) or completions.
    let load_config = || -> anyhow::Result<tokscope::config::Config> {
        Ok(match tokscope::config::config_path() {
            Some(path) => tokscope::config::Config::load(&path)?,
            None => tokscope::config::Config::default(),
        })
    };
    if let Some(mib) = cli.input.max_line_mib {
        tokscope_core::store::set_line_limit(usize::try_from(mib << 20).unwrap_or(usize::MAX));
    }
    match cli.command {
        Some(Command::Build(args)) => {
            let options = VerdictOptions {
                model: args.model,
                terminal_call_id: args.terminal_call,
                declared_response_id: args.declared_response,
                mask_incomplete_when_attributed: args.mask_incomplete_when_attributed,
                ..VerdictOptions::default()
            };
            let stores = stores_or_demo(args.stores);
            let rows = read_rows(&stores, &cli.input.rows);
            build(&stores, &args.rollouts, &options, args.format, &rows).map(|_| ExitCode::SUCCESS)
        }
        Some(Command::Check(mut args)) if args.follow => {
            let config = load_config()?;
            let defaults = &config.defaults;
            args.poll.poll = args.poll.poll.or(defaults.poll);
            args.alarm.max_mask_fraction =
                args.alarm.max_mask_fraction.or(defaults.max_mask_fraction);
            args.alarm.min_frozen = args.alarm.min_frozen.or(defaults.min_frozen);
            follow(&args, &cli.input.rows)
        }
        Some(Command::Check(args)) => {
            let stores = stores_or_demo(args.stores);
            let rows = read_rows(&stores, &cli.input.rows);
            build(
                &stores,
                &[],
                &VerdictOptions::default(),
                Format::Table,
                &rows,
            )
            .map(|analyses| {
                // A final masked verdict fails the gate (retired rollouts were delivered).
                let failed = analyses.iter().any(|&(lifecycle, verdict)| {
                    verdict == Verdict::Masked && lifecycle != Lifecycle::Retired
                });
                if failed {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                }
            })
        }
        Some(Command::Replay(args)) => {
            let given = Given {
                tokenizer: args.tokenizer,
                stores: !args.stores.is_empty(),
                poll: None,
                alarm: args.alarm,
                no_watch: false,
            };
            let options = Explore::resolve(given, load_config()?, cli.input.rows);
            let (stores, options) = with_demo_tokenizer(args.stores, options);
            explore(stores, options, Start::Replay).map(ExitCode::from)
        }
        Some(Command::Demo(args)) => {
            let given = Given {
                tokenizer: None,
                stores: false,
                poll: None,
                alarm: args.alarm,
                no_watch: false,
            };
            let options = Explore::resolve(given, load_config()?, cli.input.rows);
            demo(args.pace, options).map(ExitCode::from)
        }
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
        None => {
            let args = cli.explore;
            let given = Given {
                tokenizer: args.tokenizer,
                stores: !cli.stores.is_empty(),
                poll: args.poll.poll,
                alarm: args.alarm,
                no_watch: args.no_watch,
            };
            let options = Explore::resolve(given, load_config()?, cli.input.rows);
            let (stores, options) = with_demo_tokenizer(cli.stores, options);
            explore(stores, options, Start::Explore).map(ExitCode::from)
        }
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
    for path in &cli.input.rows {
        if std::fs::metadata(path).is_err() {
            anyhow::bail!("--rollouts {}: no such file or directory", path.display());
        }
    }
    let stores = match &mut cli.command {
        Some(Command::Build(args)) => &mut args.stores,
        Some(Command::Check(args)) => &mut args.stores,
        Some(Command::Replay(args)) => &mut args.stores,
        Some(Command::Demo(_) | Command::Completions(_) | Command::Man) => return Ok(()),
        None => &mut cli.stores,
    };
    let mut seen = std::collections::HashSet::new();
    stores.retain(|store| seen.insert(store.canonicalize().unwrap_or_else(|_| store.clone())));
    Ok(())
}

/// The explorer's options, as the command line resolved them.
struct Explore {
    /// Decode token ids with this `tokenizer.json`.
    tokenizer: Option<PathBuf>,
    /// Poll every MS milliseconds instead of waiting for change events.
    poll: Option<u64>,
    /// The alarm's limit on masked frozen rollouts.
    max_mask_fraction: Option<f64>,
    /// The alarm judges once this many rollouts are frozen.
    min_frozen: usize,
    /// Read once; do not follow.
    no_watch: bool,
    /// Rollout rows files and directories.
    rows: Vec<PathBuf>,
    /// The user's configuration (theme, keys, low probability).
    config: tokscope::config::Config,
    /// Restore and remember what the explorer shows (not for the demo's fresh directory).
    remember: bool,
}

use tokscope_core::follow::DEFAULT_MIN_FROZEN;

/// What the command line gave the explorer (before the configuration's defaults).
struct Given {
    tokenizer: Option<PathBuf>,
    /// Stores were named (the demo store otherwise, which keeps its own tokenizer).
    stores: bool,
    poll: Option<u64>,
    alarm: cli::AlarmArgs,
    no_watch: bool,
}

impl Explore {
    /// The explorer's options: the command line's, else the configuration's defaults.
    fn resolve(given: Given, config: tokscope::config::Config, rows: Vec<PathBuf>) -> Explore {
        let defaults = &config.defaults;
        Explore {
            // The configured tokenizer is for real stores; the demo has its own.
            tokenizer: given
                .tokenizer
                .or_else(|| defaults.tokenizer.clone().filter(|_| given.stores)),
            poll: given.poll.or(defaults.poll),
            max_mask_fraction: given.alarm.max_mask_fraction.or(defaults.max_mask_fraction),
            min_frozen: given
                .alarm
                .min_frozen
                .or(defaults.min_frozen)
                .unwrap_or(DEFAULT_MIN_FROZEN),
            no_watch: given.no_watch,
            rows,
            config,
            remember: true,
        }
    }
}

/// How the explorer starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// The stores as they are, followed live.
    Explore,
    /// Replaying from the first call.
    Replay,
}

/// Default to the demo store, decoded with the bundled tokenizer.
fn with_demo_tokenizer(stores: Vec<PathBuf>, mut args: Explore) -> (Vec<PathBuf>, Explore) {
    if stores.is_empty() && args.tokenizer.is_none() {
        args.tokenizer = Some(assets().join("tokenizer.json"));
    }
    (stores_or_demo(stores), args)
}

/// Open the explorer; without a terminal (piped output), print the build table instead.
fn explore(stores: Vec<PathBuf>, args: Explore, start: Start) -> anyhow::Result<u8> {
    if !interactive() {
        return print_table(&stores, &args);
    }
    // Fail early, with one clear line, on a directory that cannot be listed.
    locate(&stores, &[])?;
    let options = VerdictOptions::default();
    let (width, height) = crossterm::terminal::size().unwrap_or((80, 24));
    let size = tokscope::ui::layout::viewport(ratatui::layout::Rect::new(0, 0, width, height));
    // Replay watches the store too: its changes are held while replaying and shown when `R`
    // leaves replay for the store as it is now.
    let watch_live = !args.no_watch;
    let mut rows_message = None;
    // Exploring, the watcher reads the store (in the background, summaries for all, full
    // analyses for what is looked at); replay needs every rollout's records up front.
    let mut app = if start == Start::Explore {
        let mut app = tokscope::app::App::new_live(stores.clone(), options.clone(), size);
        app.live.watching = watch_live;
        app
    } else {
        // Replay: every rollout's summary as it is now, and a timeline of every call; a step
        // judges again only the rollouts it changes, read back from their files.
        let rows = read_rows(&stores, &args.rows);
        let locations = locate(&stores, &[])?;
        let ids = locations.iter().map(|l| l.id.as_str()).collect();
        rows_message = rows.message(&ids);
        eprintln!("tokscope: reading {} rollouts for replay…", locations.len());
        let (mut summaries, mut times) = (Vec::new(), Vec::new());
        analyze_in_order(
            &locations,
            &options,
            &rows,
            |analysis| {
                (
                    tokscope_core::live::StoreEvent::updated(&analysis),
                    tokscope_core::live::replay::record_times(&analysis.capture),
                )
            },
            |(summary, record_times)| {
                summaries.push(summary);
                times.push(record_times);
            },
        );
        let mut app = tokscope::app::App::new_live(stores.clone(), options.clone(), size);
        app.live.watching = watch_live;
        app.update(tokscope::app::Message::Store(summaries));
        app.replay_on(
            tokscope_core::live::replay::Replay::from_times(locations, times, options.clone())
                .with_rows(std::sync::Arc::new(rows)),
        );
        app
    };
    app.max_mask_fraction = args.max_mask_fraction;
    app.min_frozen = args.min_frozen;
    app.message = rows_message.map(tokscope::app::Notice::Store);
    if let Some(path) = &args.tokenizer {
        app = app.with_tokenizer(tokscope_core::detok::Detokenizer::load(path)?);
    }
    if start == Start::Replay {
        app.start_replay();
    }
    let watch = Some(tokscope_core::live::watch::watch(
        stores,
        tokscope_core::live::watch::WatchOptions {
            mode: match args.poll {
                _ if !watch_live => tokscope_core::live::watch::WatchMode::Once,
                Some(ms) => tokscope_core::live::watch::WatchMode::Poll(
                    std::time::Duration::from_millis(ms),
                ),
                None => tokscope_core::live::watch::WatchMode::Events,
            },
            verdict: options,
            rows: args.rows.clone(),
            ..Default::default()
        },
    ));
    let config = &args.config;
    app.keys = config.keys().unwrap_or_default();
    if let Some(p) = config.defaults.low_probability {
        app.low_logprob = p.ln();
    }
    // What the last session on these stores showed (replay starts from its own first call).
    let state_path = tokscope::config::state_path();
    let key = tokscope::config::stores_key(&app.stores);
    let remember = start == Start::Explore && args.remember;
    if remember
        && let Some(path) = &state_path
        && let Some(what) = tokscope::config::State::load(path).get(&key).cloned()
    {
        tokscope::config::restore(&mut app, &what);
    }
    let (ended, app) = tokscope::term::run(app, watch, config.theme())?;
    if remember && let Some(path) = &state_path {
        let mut state = tokscope::config::State::load(path);
        state.remember(key, tokscope::config::remembered(&app));
        // Only a convenience: a state that cannot be written is no reason to fail.
        let _ = state.save(path);
    }
    Ok(ended.status())
}

/// `check --follow`: watch the stores headlessly; a line per verdict change; status 1 as soon
/// as the frozen rollouts' masked fraction is over the limit, 0 when every rollout is retired
/// or on a signal (stopping the watch is not a failure).
fn follow(args: &cli::CheckArgs, rows: &[PathBuf]) -> anyhow::Result<ExitCode> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokscope_core::follow::{Decision, Follower};
    use tokscope_core::live::StoreEvent;
    use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
    let stores = stores_or_demo(args.stores.clone());
    locate(&stores, &[])?;
    let signal = Arc::new(AtomicUsize::new(0));
    for number in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_usize(number, Arc::clone(&signal), number as usize)?;
    }
    let handle = watch(
        stores,
        WatchOptions {
            mode: args.poll.poll.map_or(WatchMode::Events, |ms| {
                WatchMode::Poll(std::time::Duration::from_millis(ms))
            }),
            rows: rows.to_vec(),
            ..WatchOptions::default()
        },
    );
    let mut follower = Follower::new(args.alarm.max_mask_fraction, args.alarm.min_frozen());
    let jsonl = args.format == cli::FollowFormat::Jsonl;
    let mut out = std::io::stdout().lock();
    let mut ready = false;
    loop {
        if signal.load(Ordering::Relaxed) != 0 {
            return Ok(ExitCode::SUCCESS);
        }
        let first = match handle
            .events
            .recv_timeout(std::time::Duration::from_millis(100))
        {
            Ok(event) => event,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("the watcher stopped")
            }
        };
        for event in std::iter::once(first).chain(handle.events.try_iter()) {
            match event {
                StoreEvent::Updated(summary) => {
                    if let Some(change) = follower.take(*summary) {
                        let line = if jsonl {
                            serde_json::to_string(&change)?
                        } else {
                            change.text()
                        };
                        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                            // The reader went away (a closed pipe): nothing left to report to.
                            return Ok(ExitCode::SUCCESS);
                        }
                    }
                }
                StoreEvent::Ready => ready = true,
                StoreEvent::Error(message) => {
                    eprintln!("tokscope: {}", tokscope_core::text::sanitize(&message));
                }
                StoreEvent::StoreGone(dir) => eprintln!(
                    "tokscope: {} is gone; waiting for it to come back",
                    tokscope_core::text::sanitize(&dir.display().to_string())
                ),
                _ => {}
            }
        }
        // The first scan is judged whole, then every change as it comes.
        if !ready {
            continue;
        }
        match follower.decision() {
            Decision::Watching => {}
            Decision::Tripped(alarm) => {
                let line = if jsonl {
                    serde_json::to_string(&alarm)?
                } else {
                    alarm.text()
                };
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
                eprintln!("tokscope: {}", alarm.text());
                return Ok(ExitCode::from(1));
            }
            Decision::AllRetired => return Ok(ExitCode::SUCCESS),
        }
    }
}

/// Whether standard input and output are a terminal (else the explorer prints a table).
fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}

/// The build table of `stores`, printed instead of the explorer.
fn print_table(stores: &[PathBuf], args: &Explore) -> anyhow::Result<u8> {
    let rows = read_rows(stores, &args.rows);
    build(
        stores,
        &[],
        &VerdictOptions::default(),
        Format::Table,
        &rows,
    )?;
    Ok(0)
}

/// `tokscope demo`: a writer fills a fresh directory while the explorer watches it.
fn demo(pace: f64, mut args: Explore) -> anyhow::Result<u8> {
    if !interactive() {
        // Nothing to watch without a terminal: the table of the store the demo writes.
        return print_table(&[assets().join("demo-store")], &args);
    }
    let dir = std::env::temp_dir().join(format!("tokscope-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let writer = tokscope_core::live::demo::start(&assets().join("demo-store"), &dir, pace)?;
    if args.tokenizer.is_none() {
        args.tokenizer = Some(assets().join("tokenizer.json"));
    }
    args.no_watch = false;
    args.remember = false;
    let result = explore(vec![dir.clone()], args, Start::Explore);
    drop(writer);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The bundled assets (demo store, tokenizer), next to the sources.
/// The bundled assets (demo store, tokenizer): next to the sources when they are there, else
/// (an installed binary) written once from the copy embedded in the binary into a directory
/// of the temporary directory named after this version.
fn assets() -> PathBuf {
    let sources = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    if sources.is_dir() && std::env::var_os("TOKSCOPE_EMBEDDED_ASSETS").is_none() {
        return sources;
    }
    embedded::unpack().unwrap_or(sources)
}

/// The assets embedded by `build.rs`.
mod embedded {
    use std::path::PathBuf;

    include!(concat!(env!("OUT_DIR"), "/assets.rs"));

    /// Write the embedded assets under the temporary directory (once per version and user;
    /// files already there with the same bytes are left alone).
    pub(crate) fn unpack() -> std::io::Result<PathBuf> {
        let user = std::env::var("USER").unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "tokscope-assets-{}-{}",
            env!("CARGO_PKG_VERSION"),
            user
        ));
        for (relative, bytes) in ASSETS {
            let path = dir.join(relative);
            if std::fs::read(&path).is_ok_and(|existing| existing == *bytes) {
                continue;
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            // Written aside and renamed: a reader never sees half a file.
            let partial = path.with_extension(format!("partial-{}", std::process::id()));
            std::fs::write(&partial, bytes)?;
            std::fs::rename(&partial, &path)?;
        }
        Ok(dir)
    }
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

fn build(
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
            tokscope_core::text::sanitize(id),
            stores
                .iter()
                .map(|s| tokscope_core::text::sanitize(&s.display().to_string()).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let ids: std::collections::HashSet<&str> = locations.iter().map(|l| l.id.as_str()).collect();
    for key in rows.unmatched(&ids) {
        if only.is_empty() {
            eprintln!(
                "tokscope: a rollout row names {}, which is in no store",
                tokscope_core::text::sanitize(key)
            );
        }
    }
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
                rows,
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
            // Rows are made on the worker threads and written in order as they finish.
            let mut table =
                tokscope_core::table::TableWriter::new(locations.iter().map(|l| l.id.as_str()));
            let mut outcomes = Vec::with_capacity(locations.len());
            let mut written = out.write_all(table.header().as_bytes());
            let shape = table.clone();
            analyze_in_order(
                &locations,
                options,
                rows,
                |analysis| (outcome(&analysis), shape.row_line(&analysis)),
                |(result, line)| {
                    table.count(result.1);
                    outcomes.push(result);
                    if written.is_ok() {
                        written = out.write_all(line.as_bytes());
                    }
                },
            );
            written?;
            out.write_all(table.footer().as_bytes())?;
            outcomes
        }
        Format::Json => {
            // One pretty array, each report written as it finishes (indented as an element).
            let mut outcomes = Vec::with_capacity(locations.len());
            let mut written = out.write_all(b"[");
            let mut first = true;
            analyze_in_order(
                &locations,
                options,
                rows,
                |analysis| {
                    let pretty = serde_json::to_string_pretty(&analysis.report())
                        .expect("reports serialize");
                    (outcome(&analysis), pretty.replace('\n', "\n  "))
                },
                |(result, element)| {
                    outcomes.push(result);
                    if written.is_ok() {
                        let lead: &[u8] = if first { b"\n  " } else { b",\n  " };
                        first = false;
                        written = out
                            .write_all(lead)
                            .and_then(|()| out.write_all(element.as_bytes()));
                    }
                },
            );
            written?;
            out.write_all(if first { b"]\n" } else { b"\n]\n" })?;
            outcomes
        }
    };
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(outcomes)
}
