//! Full-build throughput on a generated store: 24 rollouts of 30–60 calls, prompts growing
//! to ~100k tokens, a third of them stored as delta records.
//!
//! Run with `cargo bench --bench build`. Prints MB/s (records bytes read) and rollouts/s for
//! `build --format jsonl` work: read, rebuild, judge, serialize every report.

use std::io::Write;
use std::time::{Duration, Instant};

use tokscope_core::verdict::VerdictOptions;

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let total_calls = tokscope_testkit::write_bench_store(dir.path()).expect("write the store");
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
        // Exactly the CLI's jsonl path: serialize on the workers, write in rollout order.
        let locations = tokscope_core::load::locate(&stores, &[]).unwrap();
        let mut sink = std::io::BufWriter::with_capacity(1 << 20, CountingSink(0));
        let mut clean = true;
        tokscope_core::load::analyze_in_order(
            &locations,
            &options,
            &tokscope_core::observe::Rows::default(),
            |analysis| {
                let mut line = Vec::with_capacity(analysis.report_size_hint());
                serde_json::to_writer(&mut line, &analysis.report()).unwrap();
                line.push(b'\n');
                (analysis.mask_sample, line)
            },
            |(masked, line)| {
                clean &= !masked;
                sink.write_all(&line).unwrap();
            },
        );
        let sink = sink.into_inner().ok().unwrap();
        timings.push(start.elapsed());
        output_bytes = sink.0;
        assert!(clean, "generated rollouts are clean");
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
