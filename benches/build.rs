//! Full-build throughput on a generated store: 24 rollouts of 30–60 calls, prompts growing
//! to ~100k tokens, a third of them stored as delta records.
//!
//! Run with `cargo bench --bench build`. Prints MB/s (records bytes read) and rollouts/s for
//! `build --format jsonl` work: read, rebuild, judge, serialize every report.

use std::io::Write;
use std::time::{Duration, Instant};

use tokscope::synth::{Rng, linear_rollout};
use tokscope::verdict::VerdictOptions;

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut rng = Rng::new(2026);
    let mut total_calls = 0;
    for index in 0..24 {
        let calls = rng.range(30, 61) as usize;
        let final_prompt = if index % 6 == 0 {
            100_000
        } else {
            rng.range(5_000, 40_000) as usize
        };
        let grow = final_prompt / calls / 2; // environment tokens average `grow`
        let delta = index % 3 == 2;
        let mut rollout = linear_rollout(
            &format!("bench-{index}"),
            calls,
            &mut rng,
            grow,
            delta,
            true,
        );
        rollout.frozen = true;
        rollout.write(dir.path()).expect("write rollout");
        total_calls += calls;
    }
    let bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let stores = [dir.path().to_path_buf()];
    let options = VerdictOptions::default();
    let mut timings = Vec::new();
    let mut output_bytes = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let locations = tokscope::load::locate(&stores, &[]).unwrap();
        let analyses = tokscope::load::analyze_all(&locations, &options);
        // Buffered exactly as the CLI writes to stdout.
        let mut sink = std::io::BufWriter::with_capacity(1 << 20, CountingSink(0));
        for analysis in &analyses {
            serde_json::to_writer(&mut sink, &analysis.report()).unwrap();
            sink.write_all(b"\n").unwrap();
        }
        let sink = sink.into_inner().ok().unwrap();
        timings.push(start.elapsed());
        output_bytes = sink.0;
        assert!(
            analyses.iter().all(|a| !a.mask_sample),
            "generated rollouts are clean"
        );
    }
    timings.sort();
    let median: Duration = timings[timings.len() / 2];
    let secs = median.as_secs_f64();
    println!(
        "store: 24 rollouts, {total_calls} calls, {:.1} MB on disk; reports: {:.1} MB",
        bytes as f64 / 1e6,
        output_bytes as f64 / 1e6
    );
    println!(
        "full build (jsonl): median {:.3} s over 5 runs (min {:.3} s) = {:.0} MB/s, {:.0} rollouts/s",
        secs,
        timings[0].as_secs_f64(),
        bytes as f64 / 1e6 / secs,
        24.0 / secs
    );
}

struct CountingSink(usize);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
