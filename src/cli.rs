//! Command-line definitions.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// A terminal explorer for NeMo Gym's training-token capture.
#[derive(Parser, Debug)]
#[command(name = "tokscope", version, about)]
pub struct Cli {
    /// What to do (default: open the explorer on the given stores, or on the demo store).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Token-store directories (default: the bundled demo store).
    pub stores: Vec<PathBuf>,
    /// How the explorer shows and follows the stores.
    #[command(flatten)]
    pub explore: ExploreArgs,
    /// What every command reads besides the stores.
    #[command(flatten)]
    pub input: InputArgs,
}

/// Options of every command: what is read besides the stores, and how much of it.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct InputArgs {
    /// Rollout rows (a JSONL file or a directory of them) with the harness's observations
    /// (`ng_trajectory`, `ng_agent_observations`, `ng_verifier_invocations`); repeatable.
    /// Rows files inside the store directories are found without it.
    #[arg(long = "rollouts", value_name = "PATH", global = true)]
    pub rows: Vec<PathBuf>,
    /// The longest record line read, in MiB (default 256). A longer line is not parsed: it
    /// is reported with its file and line, and its rollout is masked.
    #[arg(long, value_name = "MIB", global = true,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub max_line_mib: Option<u64>,
}

/// Options of the explorer.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExploreArgs {
    /// A local Hugging Face `tokenizer.json` to show decoded text beside token ids
    /// (default for the demo store: the bundled one).
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// How changes are noticed.
    #[command(flatten)]
    pub poll: PollArgs,
    /// When the header raises the alarm.
    #[command(flatten)]
    pub alarm: AlarmArgs,
    /// Read the stores once; do not follow changes.
    #[arg(long)]
    pub no_watch: bool,
    /// Compare two runs: each rollout of STORE_A with its verdict in STORE_B (matched as
    /// `diff` matches them), the list filtered to the flips (F: all); Enter sets a rollout's
    /// two runs side by side where they part.
    #[arg(long, num_args = 2, value_names = ["STORE_A", "STORE_B"])]
    pub compare: Option<Vec<PathBuf>>,
    /// With --compare: rows of run A (a JSONL file or a directory of them; repeatable).
    #[arg(long = "rollouts-a", value_name = "PATH", requires = "compare")]
    pub rows_a: Vec<PathBuf>,
    /// With --compare: rows of run B (as --rollouts-a).
    #[arg(long = "rollouts-b", value_name = "PATH", requires = "compare")]
    pub rows_b: Vec<PathBuf>,
}

/// How a watcher notices changes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PollArgs {
    /// Poll every MS milliseconds (50 or more) instead of waiting for change events
    /// (network mounts).
    #[arg(long, value_name = "MS", value_parser = poll_ms)]
    pub poll: Option<u64>,
}

/// The alarm on masked frozen rollouts.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AlarmArgs {
    /// Raise an alarm when more than this fraction (0 to 1) of frozen rollouts is masked.
    #[arg(long, value_name = "F", value_parser = fraction)]
    pub max_mask_fraction: Option<f64>,
    /// Judge that fraction only once this many rollouts are frozen [default: 10].
    #[arg(long, value_name = "N")]
    pub min_frozen: Option<usize>,
}

impl AlarmArgs {
    /// `--min-frozen`, or its default.
    pub fn min_frozen(&self) -> usize {
        self.min_frozen
            .unwrap_or(tokscope_core::follow::DEFAULT_MIN_FROZEN)
    }
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Rebuild every rollout and report its verdict.
    Build(BuildArgs),
    /// Like `build --format table`, exiting with status 1 when a frozen rollout is masked;
    /// with `--follow`, keep watching (the kill switch for a training run).
    Check(CheckArgs),
    /// Group the masked and at-risk rollouts by cause (with reward, agent and task from the
    /// rows), and list the tasks masking thins: the run-level why, for a CI log or a ticket.
    Why(WhyArgs),
    /// Compare two runs (A/B): verdict flips of the rollouts matched by id (else by task),
    /// cause groups side by side, delivered share and reward per side and per agent.
    Diff(DiffArgs),
    /// Open the explorer replaying a recorded store call by call, from the first call.
    Replay(ReplayArgs),
    /// Write the bundled demo store progressively into a fresh temporary directory, following
    /// the writer's protocol, and watch it live.
    Demo(DemoArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout: `tokscope man > tokscope.1`.
    Man,
}

/// Arguments of `tokscope completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `tokscope replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// Token-store directories (default: the bundled demo store).
    pub stores: Vec<PathBuf>,
    /// A local Hugging Face `tokenizer.json` to show decoded text beside token ids
    /// (default for the demo store: the bundled one).
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// When the header raises the alarm.
    #[command(flatten)]
    pub alarm: AlarmArgs,
}

/// Arguments of `tokscope demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Seconds per model call (intent to record).
    #[arg(long, value_name = "SECONDS", default_value_t = 1.2, value_parser = pace)]
    pub pace: f64,
    /// When the header raises the alarm.
    #[command(flatten)]
    pub alarm: AlarmArgs,
}

/// Arguments of `tokscope build`.
#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Token-store directories (default: the bundled demo store).
    pub stores: Vec<PathBuf>,
    /// Only these rollouts (repeatable).
    #[arg(long = "rollout", value_name = "ID")]
    pub rollouts: Vec<String>,
    /// Anchor chain selection on this terminal call.
    #[arg(long, value_name = "ID")]
    pub terminal_call: Option<String>,
    /// The served response id the harness kept, joined to a model call through the rollout's
    /// row (the consumer's declared_response_id); one that matches no call masks. Rows never
    /// declare it themselves.
    #[arg(long, value_name = "RESPONSE_ID")]
    pub declared_response: Option<String>,
    /// `model` of the rebuilt response.
    #[arg(long, value_name = "NAME", default_value = "")]
    pub model: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// With `false`, an incomplete capture masks only when the terminal's chain was not
    /// delivered (needs --terminal-call).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub mask_incomplete_when_attributed: bool,
}

/// Arguments of `tokscope why`.
#[derive(clap::Args, Debug)]
pub struct WhyArgs {
    /// Token-store directories (default: the bundled demo store).
    pub stores: Vec<PathBuf>,
    /// A local Hugging Face `tokenizer.json`: broken links then say what the edit did to the
    /// text (re-tokenized, whitespace, reasoning removed, JSON re-serialized).
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// Output format [default: text].
    #[arg(long, value_enum)]
    pub format: Option<WhyFormat>,
    /// Instead of the groups, the run over time in buckets of BUCKET, 1 s to 7 d (`60`,
    /// `30s`, `5m`, `1h`, `1d`): one JSON object a line — rollouts finished and masked, the
    /// top causes, calls/s and calls in flight — for plotting (so no --format).
    #[arg(long, value_name = "BUCKET", value_parser = bucket)]
    pub by_time: Option<f64>,
}

/// Arguments of `tokscope diff`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The first run's token-store directory (before).
    pub store_a: PathBuf,
    /// The second run's token-store directory (after).
    pub store_b: PathBuf,
    /// Rows of run A (a JSONL file or a directory of them; repeatable). Rows files inside
    /// the store directory are found without it.
    #[arg(long = "rollouts-a", value_name = "PATH")]
    pub rows_a: Vec<PathBuf>,
    /// Rows of run B (as --rollouts-a).
    #[arg(long = "rollouts-b", value_name = "PATH")]
    pub rows_b: Vec<PathBuf>,
    /// A local Hugging Face `tokenizer.json` to classify broken links' text on both sides.
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = WhyFormat::Text)]
    pub format: WhyFormat,
}

/// Output formats of `why` and `diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WhyFormat {
    /// Aligned text (a CI log).
    Text,
    /// A markdown table (a ticket).
    Markdown,
    /// One JSON object (a script).
    Json,
}

/// Arguments of `tokscope check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Token-store directories (default: the bundled demo store).
    pub stores: Vec<PathBuf>,
    /// Keep watching (the kill switch): print a line per verdict change, and exit 1 as soon
    /// as more than `--max-mask-fraction` of the judged rollouts is masked; only a signal
    /// (INT, TERM, HUP: status 0) or `--until-idle` ends it otherwise. A store that does not
    /// exist yet is waited for. Status 3: it can no longer watch.
    #[arg(long)]
    pub follow: bool,
    /// With `--follow`: also count live rollouts at risk (masked for a reason no later write
    /// can cure) as masked judged ones, so the run stops before they freeze.
    #[arg(long, requires = "follow")]
    pub count_at_risk: bool,
    /// With `--follow`: print a one-line summary of the run every SECONDS.
    #[arg(long, value_name = "SECONDS", requires = "follow", value_parser = seconds)]
    pub heartbeat: Option<f64>,
    /// With `--follow`: exit 0 after SECONDS without a change (scripted replays), unless the
    /// alarm fired.
    #[arg(long, value_name = "SECONDS", requires = "follow", value_parser = seconds)]
    pub until_idle: Option<f64>,
    /// With `--follow`: `text` lines, or `jsonl` (one JSON event a line, for log pipelines).
    #[arg(long, value_enum, default_value_t = FollowFormat::Text, requires = "follow")]
    pub format: FollowFormat,
    /// With `--follow`: how changes are noticed.
    #[command(flatten)]
    pub poll: PollArgs,
    /// With `--follow`: when to exit 1.
    #[command(flatten)]
    pub alarm: AlarmArgs,
}

/// Output formats of `check --follow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FollowFormat {
    /// One line a verdict change: rollout, state, verdict, first reason.
    Text,
    /// One JSON event a line: `{"event":"verdict",...}` or `{"event":"alarm",...}`.
    Jsonl,
}

/// Output formats of `build`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text, one rollout a row.
    Table,
    /// One JSON array of reports.
    Json,
    /// One report a line, in rollout order (the conformance format).
    Jsonl,
}

/// The shortest polling interval accepted: polling faster costs CPU and finds nothing sooner.
pub const MIN_POLL_MS: u64 = 50;

/// The longest polling interval (an hour): a longer one would never poll in practice.
pub const MAX_POLL_MS: u64 = 3_600_000;

/// A value clap could not take.
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    /// Not a number.
    #[error("{0:?} is not a number")]
    NotANumber(String),
    /// A polling interval below [`MIN_POLL_MS`].
    #[error("{0} ms polls too often; use {MIN_POLL_MS} or more (or no --poll: change events)")]
    PollTooFast(u64),
    /// A polling interval above [`MAX_POLL_MS`].
    #[error("{0} ms polls too rarely; use at most {MAX_POLL_MS} (an hour)")]
    PollTooSlow(u64),
    /// Not a number of seconds between 0.1 and a day.
    #[error("{0} is not a number of seconds between 0.1 and 86400")]
    NotSeconds(String),
    /// A pace that is negative, NaN or over an hour.
    #[error("{0} is not a pace in seconds between 0 and 3600")]
    NotAPace(String),
    /// A fraction outside 0..=1 (or NaN).
    #[error("{0} is not a fraction between 0 and 1")]
    NotAFraction(String),
}

fn seconds(text: &str) -> Result<f64, ArgError> {
    let value: f64 = text
        .parse()
        .map_err(|_| ArgError::NotANumber(text.to_owned()))?;
    if !(0.1..=86_400.0).contains(&value) {
        return Err(ArgError::NotSeconds(text.to_owned()));
    }
    Ok(value)
}

fn bucket(text: &str) -> Result<f64, tokscope_core::timeline::BadBucket> {
    tokscope_core::timeline::parse_bucket(text)
}

fn poll_ms(text: &str) -> Result<u64, ArgError> {
    let ms: u64 = text
        .parse()
        .map_err(|_| ArgError::NotANumber(text.to_owned()))?;
    if ms < MIN_POLL_MS {
        return Err(ArgError::PollTooFast(ms));
    }
    if ms > MAX_POLL_MS {
        return Err(ArgError::PollTooSlow(ms));
    }
    Ok(ms)
}

fn pace(text: &str) -> Result<f64, ArgError> {
    let value: f64 = text
        .parse()
        .map_err(|_| ArgError::NotANumber(text.to_owned()))?;
    if !(0.0..=3600.0).contains(&value) {
        return Err(ArgError::NotAPace(text.to_owned()));
    }
    Ok(value)
}

fn fraction(text: &str) -> Result<f64, ArgError> {
    let value: f64 = text
        .parse()
        .map_err(|_| ArgError::NotANumber(text.to_owned()))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(ArgError::NotAFraction(text.to_owned()));
    }
    Ok(value)
}
