//! The plain-text rollout table of `tokscope build` and `tokscope check`.

use std::fmt::Write;

use crate::text::sanitize;
use crate::verdict::{Analysis, Lifecycle, Verdict};

/// Column headers.
const HEADERS: [&str; 7] = [
    "rollout",
    "state",
    "calls",
    "chains",
    "delivered",
    "verdict",
    "first reason",
];

/// Render the table, one row per rollout, with a summary line.
pub fn render(analyses: &[Analysis]) -> String {
    let rows: Vec<[String; 7]> = analyses.iter().map(row).collect();
    let mut widths = HEADERS.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row).take(6) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: [&str; 7]| {
        for (i, cell) in cells.iter().enumerate() {
            if i == 6 {
                out.push_str(cell);
            } else if (2..=4).contains(&i) {
                let _ = write!(out, "{cell:>w$}  ", w = widths[i]);
            } else {
                let _ = write!(out, "{cell:<w$}  ", w = widths[i]);
            }
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('\n');
    };
    line(&mut out, HEADERS);
    for row in &rows {
        line(&mut out, row.each_ref().map(String::as_str));
    }
    let count = |v: Verdict| analyses.iter().filter(|a| a.verdict == v).count();
    let _ = writeln!(
        out,
        "{} rollouts: {} ok, {} masked, {} pending",
        analyses.len(),
        count(Verdict::Ok),
        count(Verdict::Masked),
        count(Verdict::Pending)
    );
    out
}

fn row(analysis: &Analysis) -> [String; 7] {
    let build = analysis.build.as_ref();
    let open = analysis.capture.open_intents().len();
    let calls = if open > 0 && analysis.lifecycle == Lifecycle::Live {
        format!("{}+{open}", analysis.capture.records.len())
    } else {
        analysis.capture.records.len().to_string()
    };
    let verdict = match analysis.verdict {
        Verdict::Ok => "ok".to_string(),
        Verdict::Masked => "masked".to_string(),
        Verdict::Pending if analysis.mask_sample => "pending (masked)".to_string(),
        Verdict::Pending => "pending (ok)".to_string(),
    };
    [
        sanitize(analysis.rollout_id()).into_owned(),
        match analysis.lifecycle {
            Lifecycle::Live => "live",
            Lifecycle::Frozen => "frozen",
            Lifecycle::Retired => "retired",
            Lifecycle::Cleared => "cleared",
        }
        .to_string(),
        calls,
        build.map_or("-".into(), |b| b.chains.len().to_string()),
        build.map_or("-".into(), |b| {
            format!("{:.1}%", b.notes.delivered_fraction * 100.0)
        }),
        verdict,
        analysis
            .first_reason()
            .map_or(String::new(), |r| sanitize(&r.to_string()).into_owned()),
    ]
}
