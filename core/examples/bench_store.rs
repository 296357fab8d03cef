//! Write the benchmark store into a directory, to measure tokscope and the reference side by
//! side: `cargo run --release --example bench_store -- /tmp/bench-store`.

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: bench_store DIR [SCALE]");
    // SCALE 5 makes every prompt five times as long: 228 MB, the size of the store.
    let scale = std::env::args()
        .nth(2)
        .map_or(1, |s| s.parse().expect("SCALE is a number"));
    std::fs::create_dir_all(&dir).expect("create the directory");
    let calls = tokscope_testkit::write_bench_store_scaled(std::path::Path::new(&dir), scale)
        .expect("write the store");
    println!("wrote 24 rollouts, {calls} calls into {dir}");
}
