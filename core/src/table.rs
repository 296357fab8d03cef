//! The plain-text rollout table of `tokscope build` and `tokscope check`.

use std::fmt::Write;

use crate::text::sanitize;
use crate::verdict::{Analysis, Lifecycle, Standing};

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

/// Widths of the columns that are not the last: the rollout id's from the ids to be listed,
/// the others wide enough for any value, so rows can be written as soon as each rollout is
/// judged (memory does not grow with the store).
const FIXED_WIDTHS: [usize; 5] = [7, 9, 6, 9, 16];

/// Writes the table row by row, with a summary line at the end.
#[derive(Clone, Debug)]
pub struct TableWriter {
    widths: [usize; 6],
    tally: crate::verdict::Tally,
}

impl TableWriter {
    /// A table whose id column fits every id of `ids`.
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>) -> TableWriter {
        let id_width = ids
            .into_iter()
            .map(|id| sanitize(id).chars().count())
            .max()
            .unwrap_or(0)
            .max(HEADERS[0].len());
        let mut widths = [id_width; 6];
        for (width, fixed) in widths[1..].iter_mut().zip(FIXED_WIDTHS) {
            *width = fixed;
        }
        TableWriter {
            widths,
            tally: crate::verdict::Tally::default(),
        }
    }

    fn line(&self, cells: [&str; 7]) -> String {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i == 6 {
                out.push_str(cell);
            } else if (2..=4).contains(&i) {
                let _ = write!(out, "{cell:>w$}  ", w = self.widths[i]);
            } else {
                let _ = write!(out, "{cell:<w$}  ", w = self.widths[i]);
            }
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('\n');
        out
    }

    /// The header line.
    pub fn header(&self) -> String {
        self.line(HEADERS)
    }

    /// The line of one rollout (counted for the summary).
    pub fn row(&mut self, analysis: &Analysis) -> String {
        self.count(analysis.standing());
        self.line(row(analysis).each_ref().map(String::as_str))
    }

    /// Count a rollout for the summary line (when the row was made elsewhere).
    pub fn count(&mut self, standing: Standing) {
        self.tally.count(standing, 1);
    }

    /// The rollouts counted so far, by standing.
    pub fn tally(&self) -> &crate::verdict::Tally {
        &self.tally
    }

    /// The line of one rollout, without counting it (for worker threads).
    pub fn row_line(&self, analysis: &Analysis) -> String {
        self.line(row(analysis).each_ref().map(String::as_str))
    }

    /// The summary line.
    pub fn footer(&self) -> String {
        let t = &self.tally;
        let mut line = format!(
            "{}: {} ok, {} masked, {} pending",
            crate::text::count(t.rollouts() + t.cleared, "rollout", "rollouts"),
            t.ok,
            t.masked,
            t.live_total()
        );
        for (n, what) in [(t.retired, "retired"), (t.cleared, "cleared")] {
            if n > 0 {
                line.push_str(&format!(", {n} {what}"));
            }
        }
        line.push('\n');
        line
    }
}

/// Render the whole table, one row per rollout, with a summary line.
pub fn render(analyses: &[Analysis]) -> String {
    let mut table = TableWriter::new(analyses.iter().map(Analysis::rollout_id));
    let mut out = table.header();
    for analysis in analyses {
        out.push_str(&table.row(analysis));
    }
    out.push_str(&table.footer());
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
    // The explorer's words for a live rollout: waiting on calls in flight, at risk for a
    // reason no write can cure (that reason shown), else pending.
    let standing = analysis.standing();
    let verdict = match standing {
        Standing::Waiting => "waiting".to_owned(),
        Standing::AtRisk => "at risk".to_owned(),
        _ => analysis.verdict.words(analysis.mask_sample).to_owned(),
    };
    let reason = match standing {
        Standing::Waiting => {
            let calls: Vec<String> = analysis
                .capture
                .open_intents()
                .into_iter()
                .map(|c| sanitize(c).into_owned())
                .collect();
            format!("waiting on {}", calls.join(", "))
        }
        Standing::AtRisk => analysis
            .leading_reason()
            .map_or(String::new(), |r| sanitize(&r.to_string()).into_owned()),
        _ => analysis
            .first_reason()
            .map_or(String::new(), |r| sanitize(&r.to_string()).into_owned()),
    };
    [
        sanitize(analysis.rollout_id()).into_owned(),
        analysis.lifecycle.name().to_owned(),
        calls,
        build.map_or("-".into(), |b| b.chains.len().to_string()),
        build.map_or("-".into(), |b| {
            format!("{:.1}%", b.notes.delivered_fraction * 100.0)
        }),
        verdict,
        reason,
    ]
}
