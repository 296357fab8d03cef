//! Write the benchmark store into a directory, to measure tokscope and the reference side by
//! side: `cargo run --release --example bench_store -- /tmp/bench-store`.

fn main() {
    let dir = std::env::args().nth(1).expect("usage: bench_store DIR");
    std::fs::create_dir_all(&dir).expect("create the directory");
    let calls =
        tokscope_testkit::write_bench_store(std::path::Path::new(&dir)).expect("write the store");
    println!("wrote 24 rollouts, {calls} calls into {dir}");
}
