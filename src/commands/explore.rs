//! The explorer (no command): the stores followed live in the terminal; without a terminal
//! (piped output), the build table instead.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tokscope::app::{App, AppOptions, Notice, Viewport};
use tokscope::config::Config;
use tokscope_core::detok::Detokenizer;
use tokscope_core::follow::DEFAULT_MIN_FROZEN;
use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
use tokscope_core::load::locate;
use tokscope_core::verdict::VerdictOptions;

use super::{assets, interactive, load_config, read_rows, stores_or_demo};
use crate::cli::{AlarmArgs, ExploreArgs, Format};

/// Run the explorer on `stores` (the demo store when none).
pub fn run(
    args: ExploreArgs,
    mut stores: Vec<PathBuf>,
    rows: Vec<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let compare = args.compare.is_some();
    let mut store_rows = Vec::new();
    if let Some(pair) = args.compare {
        if !stores.is_empty() {
            anyhow::bail!("--compare takes the two stores: tokscope --compare STORE_A STORE_B");
        }
        if !rows.is_empty() {
            anyhow::bail!(
                "--compare: --rollouts would give both runs the same rows; give each its own \
                 with --rollouts-a PATH and --rollouts-b PATH"
            );
        }
        let canonical = |p: &PathBuf| p.canonicalize().unwrap_or_else(|_| p.clone());
        if canonical(&pair[0]) == canonical(&pair[1]) {
            anyhow::bail!(
                "--compare needs two stores; {} is given twice (tokscope diff A A compares a \
                 store with itself)",
                pair[0].display()
            );
        }
        let given = [
            ("--rollouts-a", &args.rows_a),
            ("--rollouts-b", &args.rows_b),
        ];
        for (store, (flag, paths)) in pair.iter().zip(given) {
            for path in paths {
                if std::fs::metadata(path).is_err() {
                    anyhow::bail!("{flag} {}: no such file or directory", path.display());
                }
                store_rows.push((store.clone(), path.clone()));
            }
        }
        stores = pair;
    }
    let given = Given {
        tokenizer: args.tokenizer,
        stores: !stores.is_empty(),
        poll: args.poll.poll,
        alarm: args.alarm,
        no_watch: args.no_watch,
    };
    let mut options = Explore::resolve(given, load_config()?, rows);
    options.compare = compare;
    options.store_rows = store_rows;
    let (stores, options) = with_demo_tokenizer(stores, options);
    open(stores, options, Start::Explore, live_app).map(ExitCode::from)
}

/// An app with no rollouts yet: the watcher reads the store in the background (summaries for
/// all, full analyses for what is looked at).
pub(super) fn live_app(
    stores: &[PathBuf],
    verdict: &VerdictOptions,
    _: &Explore,
    size: Viewport,
) -> anyhow::Result<(App, Option<Notice>)> {
    Ok((App::new_live(stores.to_vec(), verdict.clone(), size), None))
}

/// Makes the app the explorer opens with (and a notice to show first).
pub(super) type MakeApp =
    fn(&[PathBuf], &VerdictOptions, &Explore, Viewport) -> anyhow::Result<(App, Option<Notice>)>;

/// The explorer's options, as the command line and the configuration resolved them.
pub(super) struct Explore {
    /// Decode token ids with this `tokenizer.json`.
    pub tokenizer: Option<PathBuf>,
    /// Poll every MS milliseconds instead of waiting for change events.
    pub poll: Option<u64>,
    /// The alarm's limit on masked judged rollouts.
    pub max_mask_fraction: Option<f64>,
    /// The alarm judges once this many rollouts are judged.
    pub min_frozen: usize,
    /// Read once; do not follow.
    pub no_watch: bool,
    /// Rollout rows files and directories.
    pub rows: Vec<PathBuf>,
    /// The user's configuration (theme, keys, low probability).
    pub config: Config,
    /// Restore and remember what the explorer shows (not for the demo's fresh directory).
    pub remember: bool,
    /// Compare mode: the first store is run A, the second run B.
    pub compare: bool,
    /// Rows of one store each: `(store, path)` (compare mode's `--rollouts-a/-b`).
    pub store_rows: Vec<(PathBuf, PathBuf)>,
}

/// What the command line gave the explorer (before the configuration's defaults).
pub(super) struct Given {
    pub tokenizer: Option<PathBuf>,
    /// Stores were named (the demo store otherwise, which keeps its own tokenizer).
    pub stores: bool,
    pub poll: Option<u64>,
    pub alarm: AlarmArgs,
    pub no_watch: bool,
}

impl Explore {
    /// The explorer's options: the command line's, else the configuration's defaults.
    pub fn resolve(given: Given, config: Config, rows: Vec<PathBuf>) -> Explore {
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
            compare: false,
            store_rows: Vec::new(),
        }
    }
}

/// How the explorer starts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// The stores as they are, followed live.
    Explore,
    /// Replaying from the first call.
    Replay,
}

/// Default to the demo store, decoded with the bundled tokenizer.
pub(super) fn with_demo_tokenizer(
    stores: Vec<PathBuf>,
    mut args: Explore,
) -> (Vec<PathBuf>, Explore) {
    if stores.is_empty() && args.tokenizer.is_none() {
        args.tokenizer = Some(assets::dir().join("tokenizer.json"));
    }
    (stores_or_demo(stores), args)
}

/// Open the explorer; without a terminal (piped output), print the build table instead.
pub(super) fn open(
    stores: Vec<PathBuf>,
    args: Explore,
    start: Start,
    make_app: MakeApp,
) -> anyhow::Result<u8> {
    if !interactive() {
        return print_table(&stores, &args);
    }
    // Fail early, with one clear line, on a directory that cannot be listed.
    locate(&stores, &[])?;
    // One tokenizer for the panes and for the causes (what a broken link did to the text).
    let detok = args
        .tokenizer
        .as_deref()
        .map(Detokenizer::load)
        .transpose()?
        .map(std::sync::Arc::new);
    let verdict = VerdictOptions {
        detokenizer: detok.clone(),
        ..VerdictOptions::default()
    };
    let (width, height) = crossterm::terminal::size().unwrap_or((80, 24));
    let size = tokscope::ui::layout::viewport(ratatui::layout::Rect::new(0, 0, width, height));
    // Replay watches the store too: its changes are held while replaying and shown when `R`
    // leaves replay for the store as it is now.
    let (app, notice) = make_app(&stores, &verdict, &args, size)?;
    let config = &args.config;
    let mut app = app.with_options(AppOptions {
        watching: !args.no_watch,
        max_mask_fraction: args.max_mask_fraction,
        min_frozen: args.min_frozen,
        keys: config.keys().unwrap_or_default(),
        low_probability: config.defaults.low_probability,
        detok,
        notice,
    });
    if args.compare {
        app.compare_stores();
    }
    if start == Start::Replay {
        app.start_replay();
    }
    let watch = Some(watch(
        stores,
        WatchOptions {
            mode: match args.poll {
                _ if args.no_watch => WatchMode::Once,
                Some(ms) => WatchMode::Poll(Duration::from_millis(ms)),
                None => WatchMode::Events,
            },
            verdict,
            rows: args.rows.clone(),
            store_rows: args.store_rows.clone(),
            ..Default::default()
        },
    ));
    // What the last session on these stores showed (replay starts from its own first call).
    let state_path = tokscope::config::state_path();
    let key = tokscope::config::stores_key(&app.stores);
    let remember = start == Start::Explore && args.remember;
    if remember
        && let Some(path) = &state_path
        && let Some(what) = tokscope::config::State::load(path).get(&key)
    {
        app.restore(what);
    }
    let (ended, app) = tokscope::term::run(app, watch, config.theme())?;
    if remember && let Some(path) = &state_path {
        let mut state = tokscope::config::State::load(path);
        state.remember(key, app.remembered());
        // Only a convenience: a state that cannot be written is no reason to fail, but it
        // is said.
        if let Err(error) = state.save(path, &app.stores) {
            eprintln!(
                "tokscope: {}",
                tokscope_core::text::sanitize(&error.to_string())
            );
        }
    }
    Ok(ended.status())
}

/// The build table of `stores`, printed instead of the explorer.
pub(super) fn print_table(stores: &[PathBuf], args: &Explore) -> anyhow::Result<u8> {
    if let (true, [a, b]) = (args.compare, stores) {
        // Compare mode without a terminal: what `diff` prints.
        let rows_of = |store: &PathBuf| -> Vec<PathBuf> {
            let own = args.store_rows.iter().filter(|(s, _)| s == store);
            own.map(|(_, path)| path.clone()).collect()
        };
        super::diff::print_text(a.clone(), b.clone(), &rows_of(a), &rows_of(b))?;
        return Ok(0);
    }
    let rows = read_rows(stores, &args.rows);
    super::build::write(
        stores,
        &[],
        &VerdictOptions::default(),
        Format::Table,
        &rows,
    )?;
    Ok(0)
}
