//! `tokscope demo`: write a recorded store progressively into a fresh directory, the way the
//! capture writer does, so the explorer has something live to watch.
//!
//! Per call: the intent line (fsynced), a pause while "the model generates", the record line
//! (fsynced), then the state file replaced atomically (temporary file + rename). At the end of
//! a rollout: its dangling intents, its torn tail, the incomplete sentinel, and the freeze.
//! This writes only into the fresh directory it was given, never into the source store.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::store::layout::{FileKind, RolloutLocation};
use crate::store::{discover, read_capture};

/// One write of the schedule.
#[derive(Clone, Debug)]
enum Step {
    Intent { rollout: usize, call: String },
    Record { rollout: usize, line: Vec<u8> },
    Finish { rollout: usize },
}

/// A write and when it happens (seconds after the start).
type Timed = (f64, Step);

/// What to write for one rollout.
#[derive(Clone, Debug)]
struct Source {
    id: String,
    dangling: Vec<String>,
    torn: Vec<u8>,
    incomplete: bool,
    frozen: bool,
}

/// A running demo writer. Dropping it stops the writer.
pub struct DemoWriter {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    /// The directory being written.
    pub dir: PathBuf,
}

impl Drop for DemoWriter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl DemoWriter {
    /// Wait until every write is done.
    pub fn join(mut self) -> std::io::Result<()> {
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("demo writer panicked"))),
            None => Ok(()),
        }
    }
}

/// Start writing the rollouts of `source` into `target` (which must exist and be empty).
/// `seconds_per_call` sets the pace; rollouts start staggered, so several run at once.
pub fn start(source: &Path, target: &Path, seconds_per_call: f64) -> std::io::Result<DemoWriter> {
    let (sources, steps) = schedule(source, seconds_per_call)?;
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let dir = target.to_path_buf();
    let thread_dir = dir.clone();
    let rows_source = source.to_path_buf();
    let thread = std::thread::Builder::new()
        .name("tokscope-demo".into())
        .spawn(move || {
            write_all(&thread_dir, &sources, steps, &thread_stop)?;
            // The harness writes its rollout rows once the rollouts are done.
            copy_rows(&rows_source, &thread_dir)
        })?;
    Ok(DemoWriter {
        stop,
        thread: Some(thread),
        dir,
    })
}

/// The writes and when (seconds after the start) they happen.
fn schedule(source: &Path, seconds_per_call: f64) -> std::io::Result<(Vec<Source>, Vec<Timed>)> {
    let mut sources = Vec::new();
    let mut steps = Vec::new();
    let mut locations = discover(source).map_err(|e| std::io::Error::other(e.to_string()))?;
    locations.sort_by(|a, b| crate::store::layout::natural_cmp(&a.id, &b.id));
    for (index, location) in locations.iter().enumerate() {
        let capture = read_capture(location);
        let data = std::fs::read(location.path(FileKind::Records)).unwrap_or_default();
        // Every acknowledged line as written, refused or not: the copy must read the same.
        let complete = data.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let start = index as f64 * seconds_per_call * 0.6;
        let mut at = start;
        let mut recorded = Vec::new();
        for line in data[..complete]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
        {
            let call = serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| {
                    v.get("model_call_id")
                        .and_then(|c| c.as_str())
                        .map(str::to_owned)
                });
            if let Some(call) = &call {
                steps.push((
                    at,
                    Step::Intent {
                        rollout: index,
                        call: call.clone(),
                    },
                ));
                recorded.push(call.clone());
            }
            at += seconds_per_call * 0.7;
            steps.push((
                at,
                Step::Record {
                    rollout: index,
                    line: line.to_vec(),
                },
            ));
            at += seconds_per_call * 0.3;
        }
        steps.push((at, Step::Finish { rollout: index }));
        let torn = data[complete..].to_vec();
        sources.push(Source {
            id: location.id.clone(),
            dangling: capture
                .intents
                .iter()
                .filter(|i| !recorded.contains(i))
                .cloned()
                .collect(),
            torn,
            incomplete: capture.state.incomplete,
            frozen: capture.state.frozen,
        });
    }
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok((sources, steps))
}

/// Copy the rows files (`*.jsonl` that are not token files) of `source` into `target`.
fn copy_rows(source: &Path, target: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(source)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".jsonl") && !name.ends_with(".tokens.jsonl") {
            let temporary = target.join(format!(".{name}.partial"));
            std::fs::copy(&path, &temporary)?;
            std::fs::rename(&temporary, target.join(name))?;
        }
    }
    Ok(())
}

fn append_synced(path: &Path, bytes: &[u8]) -> std::io::Result<u64> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    Ok(file.metadata()?.len())
}

/// Replace the state file atomically, as the writer does.
fn write_state(dir: &Path, id: &str, state: &serde_json::Value) -> std::io::Result<()> {
    let temporary = dir.join(format!(".tokens-state-{}-{id}", std::process::id()));
    std::fs::write(&temporary, format!("{state}\n"))?;
    std::fs::rename(&temporary, dir.join(format!("{id}.tokens.state.json")))
}

fn write_all(
    dir: &Path,
    sources: &[Source],
    steps: Vec<(f64, Step)>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let started = Instant::now();
    let mut versions = vec![0u64; sources.len()];
    let location = |rollout: usize| RolloutLocation {
        dir: dir.to_path_buf(),
        id: sources[rollout].id.clone(),
    };
    for (at, step) in steps {
        // Sleep in small slices so a stop is honored quickly.
        while let Some(left) = Duration::from_secs_f64(at).checked_sub(started.elapsed()) {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
        match step {
            Step::Intent { rollout, call } => {
                append_synced(
                    &location(rollout).path(FileKind::Intents),
                    format!("{call}\n").as_bytes(),
                )?;
            }
            Step::Record { rollout, line } => {
                let mut bytes = line;
                bytes.push(b'\n');
                let size = append_synced(&location(rollout).path(FileKind::Records), &bytes)?;
                versions[rollout] += 1;
                let state = json!({"entry_digests": {}, "frozen": false, "incomplete": false,
                    "indexed_size": size, "retired": false, "snapshot_id": "", "version": versions[rollout]});
                write_state(dir, &sources[rollout].id, &state)?;
            }
            Step::Finish { rollout } => {
                let source = &sources[rollout];
                let place = location(rollout);
                // The index covers acknowledged lines only, never a torn tail.
                let acknowledged =
                    std::fs::metadata(place.path(FileKind::Records)).map_or(0, |m| m.len());
                for call in &source.dangling {
                    append_synced(
                        &place.path(FileKind::Intents),
                        format!("{call}\n").as_bytes(),
                    )?;
                }
                if !source.torn.is_empty() {
                    append_synced(&place.path(FileKind::Records), &source.torn)?;
                }
                if source.incomplete {
                    append_synced(&place.path(FileKind::Incomplete), b"\n")?;
                }
                if source.frozen || source.incomplete {
                    versions[rollout] += 1;
                    let state = json!({"entry_digests": {}, "frozen": source.frozen,
                        "incomplete": source.incomplete, "indexed_size": acknowledged, "retired": false,
                        "snapshot_id": if source.frozen { format!("demo-{}", source.id) } else { String::new() },
                        "version": versions[rollout]});
                    write_state(dir, &source.id, &state)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_store_that_reads_like_the_source() {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/demo-store");
        let target = tempfile::tempdir().unwrap();
        let writer = start(&source, target.path(), 0.0).unwrap();
        writer.join().unwrap();
        let options = crate::verdict::VerdictOptions::default();
        let report = |dir: &Path| -> Vec<serde_json::Value> {
            crate::load::analyze_all(
                &crate::load::locate(&[dir.to_path_buf()], &[]).unwrap(),
                &options,
            )
            .iter()
            .map(|a| serde_json::to_value(a.report()).unwrap())
            .collect()
        };
        let (copy, original) = (report(target.path()), report(&source));
        assert_eq!(copy.len(), original.len());
        for (a, b) in copy.iter().zip(&original) {
            let differing: Vec<&String> = b
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| a[k.as_str()] != b[k.as_str()])
                .collect();
            assert!(
                differing.is_empty(),
                "{}: {differing:?} {} vs {}",
                b["rollout_id"],
                a["read_issues"],
                b["read_issues"]
            );
        }
        let leftovers = std::fs::read_dir(target.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".tokens-state-")
            })
            .count();
        assert_eq!(leftovers, 0, "temporary state files are renamed into place");
        assert_eq!(
            std::fs::read(target.path().join("rollouts.jsonl")).unwrap(),
            std::fs::read(source.join("rollouts.jsonl")).unwrap(),
            "the harness's rows follow the rollouts"
        );
    }
}
