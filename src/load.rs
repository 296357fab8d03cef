//! Reading and judging many rollouts at once, spread over the available cores.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::store::{RolloutLocation, StoreDirError, discover, layout::natural_cmp, read_capture};
use crate::verdict::{Analysis, VerdictOptions, analyze};

/// Every rollout of `dirs` (restricted to `only` when non-empty), in store order then natural
/// id order.
pub fn locate(dirs: &[PathBuf], only: &[String]) -> Result<Vec<RolloutLocation>, StoreDirError> {
    let mut all = Vec::new();
    for dir in dirs {
        let mut found = discover(dir)?;
        found.sort_by(|a, b| natural_cmp(&a.id, &b.id));
        all.extend(
            found
                .into_iter()
                .filter(|l| only.is_empty() || only.contains(&l.id)),
        );
    }
    Ok(all)
}

/// Read, rebuild and judge every location, in parallel, keeping the input order.
pub fn analyze_all(locations: &[RolloutLocation], options: &VerdictOptions) -> Vec<Analysis> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(locations.len().max(1));
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<Analysis>> = (0..locations.len()).map(|_| None).collect();
    let slots: Vec<std::sync::Mutex<&mut Option<Analysis>>> =
        results.iter_mut().map(std::sync::Mutex::new).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(location) = locations.get(index) else {
                        break;
                    };
                    let analysis = analyze(read_capture(location), options);
                    **slots[index].lock().unwrap() = Some(analysis);
                }
            });
        }
    });
    drop(slots);
    results
        .into_iter()
        .map(|a| a.expect("every rollout analyzed"))
        .collect()
}
