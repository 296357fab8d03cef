//! Live latency: from a record's fsync to its appearance in the model, under a steady
//! 1,000 appends/s across 50 rollouts, and the CPU the watcher spends per append.
//!
//! Run with `cargo bench --bench live`. The writer runs in a child process (this same binary,
//! `--writer DIR`), so this process's CPU time is the watcher's alone. Target: p99 < 100 ms.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use tokscope_core::live::StoreEvent;
use tokscope_core::live::watch::{WatchOptions, watch};
use tokscope_testkit::{Rng, linear_rollout};

const ROLLOUTS: usize = 50;
const APPENDS_PER_SECOND: u64 = 1000;
const SECONDS: u64 = 4;

/// The writer: round-robin appends at a steady rate; prints `rollout count fsync-time` lines.
fn writer(dir: &Path) {
    let total = (APPENDS_PER_SECOND * SECONDS) as usize;
    let per_rollout = total / ROLLOUTS + 1;
    let lines: Vec<Vec<String>> = (0..ROLLOUTS)
        .map(|r| {
            let id = format!("live-{r:02}");
            linear_rollout(
                &id,
                per_rollout,
                &mut Rng::new(r as u64 + 1),
                40,
                r % 2 == 0,
                true,
            )
            .calls
            .iter()
            .map(|c| c.to_line(&id))
            .collect()
        })
        .collect();
    let mut files: Vec<std::fs::File> = (0..ROLLOUTS)
        .map(|r| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(format!("live-{r:02}.tokens.jsonl")))
                .unwrap()
        })
        .collect();
    let start = Instant::now();
    let interval = Duration::from_secs(1) / APPENDS_PER_SECOND as u32;
    // Times are kept and printed at the end: a full pipe must not stall the writer.
    let mut times = Vec::with_capacity(total);
    for n in 0..total {
        if let Some(wait) = (interval * n as u32).checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let rollout = n % ROLLOUTS;
        let count = n / ROLLOUTS + 1;
        let file = &mut files[rollout];
        file.write_all(format!("{}\n", lines[rollout][count - 1]).as_bytes())
            .unwrap();
        file.sync_data().unwrap();
        times.push((rollout, count, tokscope_testkit::unix_now()));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (rollout, count, time) in times {
        writeln!(out, "{rollout} {count} {time}").unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(position) = args.iter().position(|a| a == "--writer") {
        writer(Path::new(&args[position + 1]));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let handle = watch(vec![dir.path().to_path_buf()], WatchOptions::default());
    loop {
        if let StoreEvent::Ready = handle.events.recv().unwrap() {
            break;
        }
    }
    let cpu_before = tokscope_testkit::cpu_seconds();
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--writer")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // rollout id -> (record count, time seen)
    let mut seen: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
    let total = (APPENDS_PER_SECOND * SECONDS) as usize;
    let mut received = 0usize;
    let deadline = Instant::now() + Duration::from_secs(SECONDS + 10);
    let mut counts: HashMap<String, usize> = HashMap::new();
    while received < total && Instant::now() < deadline {
        if let Ok(StoreEvent::Updated(analysis)) =
            handle.events.recv_timeout(Duration::from_millis(500))
        {
            let at = tokscope_testkit::unix_now();
            let id = analysis.rollout_id().to_owned();
            let count = analysis.records;
            let before = counts.insert(id.clone(), count).unwrap_or(0);
            received += count.saturating_sub(before);
            seen.entry(id).or_default().push((count, at));
        }
    }
    let cpu = tokscope_testkit::cpu_seconds() - cpu_before;
    let output = child.wait_with_output().unwrap();
    let mut latencies = Vec::new();
    for line in output.stdout.lines() {
        let line = line.unwrap();
        let mut parts = line.split(' ');
        let rollout: usize = parts.next().unwrap().parse().unwrap();
        let count: usize = parts.next().unwrap().parse().unwrap();
        let written: f64 = parts.next().unwrap().parse().unwrap();
        let id = format!("live-{rollout:02}");
        // The first update that shows at least `count` records.
        if let Some((_, at)) = seen
            .get(&id)
            .and_then(|v| v.iter().find(|(c, _)| *c >= count))
        {
            latencies.push(((at - written) * 1000.0).max(0.0));
        }
    }
    latencies.sort_by(f64::total_cmp);
    let pick = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
    println!(
        "{} appends at {APPENDS_PER_SECOND}/s across {ROLLOUTS} rollouts; {} seen in the model",
        total,
        latencies.len()
    );
    println!(
        "fsync → model latency: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 100 ms)",
        pick(0.5),
        pick(0.99),
        pick(1.0)
    );
    println!(
        "watcher CPU: {:.2} s for {} appends = {:.0} µs per append",
        cpu,
        total,
        cpu * 1e6 / total as f64
    );
    assert_eq!(latencies.len(), total, "every append reached the model");
}
