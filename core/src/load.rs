//! Reading and judging many rollouts at once, spread over the available cores.

use std::path::PathBuf;

use crate::observe::Rows;
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
    analyze_all_with(locations, options, |analysis| analysis)
}

/// The options for one rollout: `options` with the observations of its row, if any.
pub fn options_for(
    options: &VerdictOptions,
    rows: &Rows,
    location: &RolloutLocation,
) -> VerdictOptions {
    let observations = match rows.for_rollout(location) {
        Some(observations) => observations.clone(),
        // Rows were given, none for this rollout: that is a gap too.
        None if !rows.files.is_empty() => crate::observe::Observations {
            missing_row: true,
            ..Default::default()
        },
        None => return options.clone(),
    };
    VerdictOptions {
        observations: Some(std::sync::Arc::new(observations)),
        ..options.clone()
    }
}

/// Like [`analyze_all`], applying `finish` to each analysis on the worker thread (for
/// example serializing its report, which is as much work as the build itself).
pub(crate) fn analyze_all_with<T: Send>(
    locations: &[RolloutLocation],
    options: &VerdictOptions,
    finish: impl Fn(Analysis) -> T + Sync,
) -> Vec<T> {
    let mut out = Vec::with_capacity(locations.len());
    analyze_in_order(locations, options, &Rows::default(), finish, |value| {
        out.push(value)
    });
    out
}

/// Analyze in parallel and hand each result of `finish` to `consume` in input order, as soon
/// as it and everything before it are done; results are not kept, so memory stays bounded by
/// the work in flight.
pub fn analyze_in_order<T: Send>(
    locations: &[RolloutLocation],
    options: &VerdictOptions,
    rows: &Rows,
    finish: impl Fn(Analysis) -> T + Sync,
    consume: impl FnMut(T),
) {
    crate::pool::in_order(
        locations,
        |location| {
            let options = options_for(options, rows, location);
            finish(analyze(read_capture(location), &options))
        },
        consume,
    );
}

/// Read every location's capture in parallel and hand each result of `finish` to `consume`
/// in input order (nothing is judged; for the replay timeline).
pub(crate) fn read_in_order<T: Send>(
    locations: &[RolloutLocation],
    finish: impl Fn(crate::store::Capture) -> T + Sync,
    consume: impl FnMut(T),
) {
    crate::pool::in_order(
        locations,
        |location| finish(read_capture(location)),
        consume,
    );
}

/// The bundled demo store, analyzed with default options (for unit tests).
#[cfg(test)]
pub(crate) fn demo_store_analyses() -> Vec<Analysis> {
    let store = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/demo-store");
    let locations = locate(&[store], &[]).unwrap_or_default();
    analyze_all(&locations, &VerdictOptions::default())
}

/// The conformance store whose rollouts are all live, several at risk (for unit tests).
#[cfg(test)]
pub(crate) fn at_risk_summaries() -> Vec<crate::verdict::Summary> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/conformance/store-1-0");
    let locations = locate(&[dir], &[]).unwrap_or_default();
    analyze_all(&locations, &VerdictOptions::default())
        .iter()
        .map(crate::verdict::Summary::of)
        .collect()
}
