//! `tokscope check --follow`, the kill switch: watch the stores headlessly, print a line per
//! verdict change, and exit 1 as soon as the judged rollouts' masked fraction is over the
//! limit; 0 when every rollout is retired, or on a signal (stopping the watch is no failure).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokscope_core::follow::{Decision, Follower};
use tokscope_core::live::StoreEvent;
use tokscope_core::live::watch::{WatchMode, WatchOptions, watch};
use tokscope_core::load::locate;
use tokscope_core::text::sanitize;

use super::{load_config, stores_or_demo};
use crate::cli::{CheckArgs, FollowFormat};

/// Run `check --follow`.
pub fn run(mut args: CheckArgs, rows: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let config = load_config()?;
    let defaults = &config.defaults;
    args.poll.poll = args.poll.poll.or(defaults.poll);
    args.alarm.max_mask_fraction = args.alarm.max_mask_fraction.or(defaults.max_mask_fraction);
    args.alarm.min_frozen = args.alarm.min_frozen.or(defaults.min_frozen);
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
                WatchMode::Poll(Duration::from_millis(ms))
            }),
            rows: rows.to_vec(),
            ..WatchOptions::default()
        },
    );
    let mut follower = Follower::new(args.alarm.max_mask_fraction, args.alarm.min_frozen());
    let jsonl = args.format == FollowFormat::Jsonl;
    let mut out = std::io::stdout().lock();
    let mut ready = false;
    loop {
        if signal.load(Ordering::Relaxed) != 0 {
            return Ok(ExitCode::SUCCESS);
        }
        let first = match handle.events.recv_timeout(Duration::from_millis(100)) {
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
                    eprintln!("tokscope: {}", sanitize(&message));
                }
                StoreEvent::StoreGone(dir) => eprintln!(
                    "tokscope: {} is gone; waiting for it to come back",
                    sanitize(&dir.display().to_string())
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
