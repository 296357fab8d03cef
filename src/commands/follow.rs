//! `tokscope check --follow`, the kill switch a training launcher can trust: it watches the
//! stores headlessly (waiting for one that does not exist yet), prints an event per change of
//! a rollout's standing, and never decides by itself that the run is over.
//!
//! Exit status: **1** the alarm fired (always wins, whatever else failed); **0** stopped by a
//! signal, or `--until-idle` with nothing over the limit; **2** bad arguments or
//! configuration; **3** it can no longer watch (after falling back to polling), or a store
//! could not be listed when it stopped.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tokscope_core::follow::{AlarmRule, Follower};
use tokscope_core::live::StoreEvent;
use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
use tokscope_core::text::{escape_json_controls, sanitize, utc_timestamp};

use super::{load_config, stores_or_demo};
use crate::cli::{CheckArgs, FollowFormat};

/// The alarm fired.
const ALARM: u8 = 1;
/// It can no longer watch.
const BLIND: u8 = 3;

/// Run `check --follow`.
pub fn run(mut args: CheckArgs, rows: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let config = load_config()?;
    let defaults = &config.defaults;
    args.poll.poll = args.poll.poll.or(defaults.poll);
    args.alarm.max_mask_fraction = args.alarm.max_mask_fraction.or(defaults.max_mask_fraction);
    args.alarm.min_frozen = args.alarm.min_frozen.or(defaults.min_frozen);
    let stores = stores_or_demo(args.stores.clone());
    let mut log = Log::new(args.format);
    // A store the trainer has not created yet is waited for; one that cannot be a store is a
    // mistake (status 2).
    for store in &stores {
        match std::fs::metadata(store) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => anyhow::bail!(
                "{}: not a directory",
                sanitize(&store.display().to_string())
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => log.note(&format!(
                "{}: does not exist yet; waiting for it",
                sanitize(&store.display().to_string())
            )),
            Err(e) => anyhow::bail!("{}: {e}", sanitize(&store.display().to_string())),
        }
    }
    let signal = Arc::new(AtomicUsize::new(0));
    for number in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_usize(number, Arc::clone(&signal), number as usize)?;
    }
    let handle = watch(
        stores.clone(),
        WatchOptions {
            mode: args.poll.poll.map_or(WatchMode::Events, |ms| {
                WatchMode::Poll(Duration::from_millis(ms))
            }),
            rows: rows.to_vec(),
            no_events: std::env::var_os("TOKSCOPE_NO_EVENTS").is_some(),
            ..WatchOptions::default()
        },
    );
    let mut follower = Follower::new(
        AlarmRule {
            max_mask_fraction: args.alarm.max_mask_fraction,
            min_frozen: args.alarm.min_frozen(),
            count_at_risk: args.count_at_risk,
        },
        &stores,
    );
    let heartbeat = args.heartbeat.map(Duration::from_secs_f64);
    let until_idle = args.until_idle.map(Duration::from_secs_f64);
    let (mut ready, mut last_beat, mut last_change) = (false, Instant::now(), Instant::now());
    // Stores that exist and cannot be listed: a watch that cannot see them is not a healthy
    // one, and stops with 3, not 0.
    let mut unlistable = std::collections::BTreeSet::new();
    let stopped = |unlistable: &std::collections::BTreeSet<PathBuf>| {
        if unlistable.is_empty() { 0 } else { BLIND }
    };
    loop {
        if signal.load(Ordering::Relaxed) != 0 {
            // What the watcher has already read is judged before stopping: a run that went
            // bad just before the signal still gets its 1.
            let deadline = Instant::now() + Duration::from_millis(300);
            while let Ok(event) = handle
                .events
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                if let StoreEvent::Updated(summary) = event
                    && let Some(change) = follower.take(*summary, SystemTime::now())
                {
                    log.event(&change, &change.text());
                }
            }
            if let Some(alarm) = follower.alarm(SystemTime::now()) {
                log.event(&alarm, &alarm.text());
                log.note(&alarm.text());
            }
            return Ok(log.status(follower.tripped(), stopped(&unlistable)));
        }
        let first = match handle.events.recv_timeout(Duration::from_millis(100)) {
            Ok(event) => Some(event),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                log.note("the watcher stopped: the stores can no longer be watched");
                return Ok(log.status(follower.tripped(), BLIND));
            }
        };
        for event in first.into_iter().chain(handle.events.try_iter()) {
            let now = SystemTime::now();
            match event {
                StoreEvent::Updated(summary) => {
                    last_change = Instant::now();
                    if let Some(change) = follower.take(*summary, now) {
                        log.event(&change, &change.text());
                    }
                }
                StoreEvent::Ready => ready = true,
                StoreEvent::Error(message) => log.note(&sanitize(&message)),
                StoreEvent::StoreGone(dir) => log.note(&format!(
                    "{} is gone; waiting for it to come back",
                    sanitize(&dir.display().to_string())
                )),
                StoreEvent::StoreBack(dir) => {
                    unlistable.remove(&dir);
                    log.note(&format!(
                        "{} is there: followed",
                        sanitize(&dir.display().to_string())
                    ));
                }
                StoreEvent::Unlistable { dir, reason } => {
                    log.note(&format!(
                        "{} cannot be listed ({}): its rollouts cannot be seen",
                        sanitize(&dir.display().to_string()),
                        sanitize(&reason)
                    ));
                    unlistable.insert(dir);
                }
                StoreEvent::Polling { dir, reason } => log.note(&format!(
                    "{}: no change events ({}); polling it every second instead",
                    sanitize(&dir.display().to_string()),
                    sanitize(&reason)
                )),
                StoreEvent::Detail(_) | StoreEvent::Timeline(_) | StoreEvent::Progress { .. } => {}
            }
        }
        // The first scan is judged whole, then every change as it comes.
        if !ready {
            continue;
        }
        if let Some(alarm) = follower.alarm(SystemTime::now()) {
            log.event(&alarm, &alarm.text());
            if log.lost {
                // Standard output is gone: the alarm's counts go to standard error instead.
                log.note(&alarm.text());
            } else {
                log.note("the alarm fired (see standard output)");
            }
            return Ok(ExitCode::from(ALARM));
        }
        if let Some(every) = heartbeat
            && last_beat.elapsed() >= every
        {
            last_beat = Instant::now();
            let beat = follower.heartbeat(SystemTime::now());
            log.event(&beat, &beat.text());
        }
        if let Some(idle) = until_idle
            && last_change.elapsed() >= idle
        {
            log.note("idle: no change for --until-idle; stopping");
            return Ok(log.status(follower.tripped(), stopped(&unlistable)));
        }
    }
}

/// Where the events go: standard output, as text lines or JSON lines. A write that fails (a
/// closed pipe, a full disk) is said once on standard error and the watch goes on: the kill
/// switch is not stopped by its log.
struct Log {
    format: FollowFormat,
    out: std::io::Stdout,
    lost: bool,
}

impl Log {
    fn new(format: FollowFormat) -> Log {
        Log {
            format,
            out: std::io::stdout(),
            lost: false,
        }
    }

    /// Write one event: its JSON, or its `text`.
    fn event(&mut self, event: &impl serde::Serialize, text: &str) {
        if self.lost {
            return;
        }
        let line = match self.format {
            FollowFormat::Jsonl => String::from_utf8(escape_json_controls(
                serde_json::to_vec(event).unwrap_or_default(),
            ))
            .unwrap_or_default(),
            FollowFormat::Text => text.to_owned(),
        };
        let mut out = self.out.lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            self.lost = true;
            drop(out);
            self.note(
                "standard output can no longer be written; watching on (the status still tells)",
            );
        }
    }

    /// A note for people, on standard error, with the time. A standard error that cannot
    /// be written (a closed pipe) is ignored: the kill switch is not stopped by its log.
    fn note(&mut self, text: &str) {
        let _ = writeln!(
            std::io::stderr(),
            "tokscope: {}  {text}",
            utc_timestamp(SystemTime::now())
        );
    }

    /// The exit status: the alarm's when it fired, else `otherwise`.
    fn status(&self, tripped: bool, otherwise: u8) -> ExitCode {
        ExitCode::from(if tripped { ALARM } else { otherwise })
    }
}
