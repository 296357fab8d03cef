//! What a whole build of a store costs, counted: `cargo run --release -p tokscope-core
//! --example build_work -- DIR`. Prints the records parsed and the tokens hashed (8 bytes a
//! token: the floor of any consumer that checks every link's digest is each distinct
//! cumulative sequence hashed once), with the time the pass took.

fn main() {
    let dir = std::env::args().nth(1).expect("usage: build_work DIR");
    let started = std::time::Instant::now();
    let locations = tokscope_core::load::locate(&[dir.into()], &[]).expect("a store directory");
    let mut masked = 0usize;
    tokscope_core::load::analyze_in_order(
        &locations,
        &tokscope_core::verdict::VerdictOptions::default(),
        &tokscope_core::observe::Rows::default(),
        |analysis| analysis.mask_sample,
        |mask| masked += usize::from(mask),
    );
    let work = tokscope_core::work::process_total();
    println!(
        "{} rollouts ({masked} masked) in {:.2} s: {} records parsed, {} tokens hashed ({:.2} GB of digest input), {} full builds",
        locations.len(),
        started.elapsed().as_secs_f64(),
        work.records_parsed,
        work.tokens_hashed,
        work.tokens_hashed as f64 * 8.0 / 1e9,
        work.full_builds,
    );
}
