//! Write a training run's store (the scale benchmarks' shape) into a directory:
//! `cargo run --release -p tokscope-core --example training_store -- DIR [ROLLOUTS] [BYTES_PER_ROLLOUT]`
//! (defaults: 2,000 rollouts, about 2 GB).

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: training_store DIR [ROLLOUTS] [BYTES_PER_ROLLOUT]");
    let rollouts = args
        .next()
        .map_or(2_000, |n| n.parse().expect("ROLLOUTS is a number"));
    let bytes = args.next().map_or(1_330_000, |n| {
        n.parse().expect("BYTES_PER_ROLLOUT is a number")
    });
    std::fs::create_dir_all(&dir).expect("create the directory");
    let written =
        tokscope_testkit::write_training_store(std::path::Path::new(&dir), rollouts, bytes)
            .expect("write the store");
    println!(
        "wrote {rollouts} rollouts, {} MB of records into {dir}",
        written / 1_000_000
    );
}
