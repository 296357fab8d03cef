//! The rollout list.

use super::memo::{self, Slot};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::layout::inner_width;
use super::{Theme, clip, pane_block, strings};
use crate::app::{App, Pane, SortKey};
use tokscope_core::compare::Outcome;
use tokscope_core::text::sanitize;
use tokscope_core::verdict::{LiveStatus, Summary, Verdict};

/// The verdict badge text.
pub(crate) fn badge(status: LiveStatus, verdict: Verdict) -> &'static str {
    match (status, verdict) {
        (LiveStatus::Final, Verdict::Masked) => "MASKED",
        (LiveStatus::Final, _) => "ok",
        (LiveStatus::AtRisk, _) => "RISK",
        (LiveStatus::Waiting, _) => "wait",
        (LiveStatus::Pending, _) => "pend",
        (LiveStatus::Good, _) => "live✓",
    }
}

fn state(analysis: &Summary) -> &'static str {
    analysis.lifecycle.name()
}

fn sort_name(key: SortKey) -> &'static str {
    match key {
        SortKey::Id => "id",
        SortKey::State => "state",
        SortKey::Calls => "calls",
        SortKey::Chains => "chains",
        SortKey::Delivered => "delivered",
        SortKey::Verdict => "verdict",
        SortKey::Reason => "reason",
        SortKey::Reward => "reward",
        SortKey::Agent => "agent",
    }
}

/// Draw the list.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let list = &app.list;
    // In compare mode, of the rollouts the list can show: A's, and B's not in A.
    let of = app.comparison.as_ref().map_or(app.rollouts.len(), |c| {
        c.counts[0].rollouts + c.diff.only_b.len()
    });
    let mut title = format!(
        "{} {}/{} · sort {}{}",
        crate::app::Pane::List.spec().title,
        list.rows.len(),
        of,
        sort_name(list.sort),
        if list.reverse { " ↓" } else { " ↑" }
    );
    if list.masked_only {
        title.push_str(" · masked");
    }
    if let Some(code) = list.reason {
        title.push_str(&format!(" · {code}"));
    }
    if !list.filter.is_empty() {
        title.push_str(&format!(" · /{}", sanitize(&list.filter)));
    }
    if let Some(comparison) = &app.comparison {
        title.push_str(if comparison.flips_only {
            strings::COMPARE_FLIPS
        } else {
            strings::COMPARE_ALL
        });
    }
    let block = pane_block(title, app.focus == Pane::List, theme);
    let width = inner_width(area);
    let id_width = app.longest_id.clamp(7, 24);
    let columns = Columns::of(app);
    // Compare mode drops the state column: what the other run says matters more there.
    let state_width = if columns.compare { 0 } else { 6 };
    let header = format!(
        "{:<id_width$} {:<state_width$}{}{:>5} {:>2} {:>4} {:<6} {}reason",
        "rollout",
        if columns.compare { "" } else { "state" },
        if columns.compare { "" } else { " " },
        "calls",
        "ch",
        "del",
        "verdict",
        columns.header(),
    );
    let mut lines = vec![Line::from(Span::styled(clip(&header, width), theme.dim()))];
    if list.rows.is_empty() {
        lines.push(Line::from(Span::styled(strings::NO_ROLLOUTS, theme.dim())));
    }
    for row in list.scroll.visible() {
        let index = list.rows[row];
        let a = &app.rollouts[index];
        let open = a.in_flight();
        let calls = if open > 0 {
            format!("{}+{open}", a.records)
        } else {
            a.records.to_string()
        };
        let (chains, delivered) = match (a.chains, a.delivered) {
            (Some(chains), Some(delivered)) => {
                (chains.to_string(), format!("{:.0}%", delivered * 100.0))
            }
            _ => ("-".into(), "-".into()),
        };
        let writing = a.writing();
        let mut reason = match a.live_status() {
            // What it waits for, and since when (not a problem, so not a mask reason).
            LiveStatus::Waiting => waiting_for(app, index, a),
            _ => a.first_reason().map(|r| r.to_string()).unwrap_or_default(),
        };
        if writing {
            reason = format!("{} {reason}", strings::WRITING);
        }
        let lead = format!(
            "{:<id_width$} {:<state_width$}{}{:>5} {:>2} {:>4} ",
            clip(&sanitize(a.rollout_id()), id_width),
            if columns.compare { "" } else { state(a) },
            if columns.compare { "" } else { " " },
            calls,
            chains,
            delivered
        );
        // Compare mode's column first: it is what the list is for then.
        let mut cells = String::new();
        if columns.compare {
            cells.push_str(&format!("{:<COUNTERPART$} ", counterpart(app, index)));
        }
        cells.push_str(&columns.cells(a));
        let used = lead.chars().count() + 7 + cells.chars().count();
        let mut spans = vec![
            Span::raw(lead),
            Span::styled(
                format!("{:<6} ", badge(a.live_status(), a.verdict)),
                theme.verdict(a.live_status(), a.verdict),
            ),
            Span::raw(cells),
            Span::styled(
                clip(&sanitize(&reason), width.saturating_sub(used)),
                theme.dim(),
            ),
        ];
        if app.live.recent.contains_key(&index) {
            spans[0].style = spans[0].style.patch(theme.fresh());
        }
        if row == list.scroll.selected() {
            for span in &mut spans {
                span.style = span.style.patch(theme.selected());
            }
        }
        lines.push(Line::from(spans));
    }
    memo::render(frame, Slot::List, Paragraph::new(lines).block(block), area);
}

/// The columns shown only when they say something (after the verdict, so that a narrow list
/// keeps the verdict): the reward and the agent when rows give them, the store when several
/// are open.
struct Columns {
    reward: bool,
    agent: bool,
    store: bool,
    /// Compare mode: the counterpart's verdict in the other run.
    compare: bool,
}

/// Width of compare mode's column.
const COUNTERPART: usize = 8;

/// Compare mode's column: the counterpart's verdict in B (`ok`, `MASKED`…, after `→` when it
/// flipped), or `gone` (not in B), or `new` (a rollout of B not in A).
fn counterpart(app: &App, index: usize) -> String {
    use crate::app::Counterpart;
    match app.counterpart(index) {
        Some(Counterpart::In(other)) => {
            let (this, that) = (&app.rollouts[index], &app.rollouts[other]);
            let badge = badge(that.live_status(), that.verdict);
            // A flip as `diff` counts one: delivered in one run, masked in the other.
            let outcome = |s: &Summary| Outcome::of(s.standing());
            match (outcome(this), outcome(that)) {
                (Some(x), Some(y)) if x.flips_to(y) => format!("→{badge}"),
                _ => badge.to_owned(),
            }
        }
        Some(Counterpart::Gone) => strings::COMPARE_GONE.to_owned(),
        Some(Counterpart::New) => strings::COMPARE_NEW.to_owned(),
        Some(Counterpart::Unread) => "…".to_owned(),
        None => String::new(),
    }
}

/// Width of the agent column.
const AGENT: usize = 12;
/// Width of the store column.
const STORE: usize = 10;

impl Columns {
    fn of(app: &App) -> Columns {
        Columns {
            reward: app.rollouts.iter().any(|s| s.reward().is_some()),
            agent: app.rollouts.iter().any(|s| s.agent().is_some()),
            // Compare mode's column says which run a rollout is of.
            store: app.stores.len() > 1 && app.comparison.is_none(),
            compare: app.comparison.is_some(),
        }
    }

    fn header(&self) -> String {
        let mut text = String::new();
        if self.compare {
            text.push_str(&format!("{:<COUNTERPART$} ", "in B"));
        }
        if self.reward {
            text.push_str(&format!("{:>6} ", "reward"));
        }
        if self.agent {
            text.push_str(&format!("{:<AGENT$} ", "agent"));
        }
        if self.store {
            text.push_str(&format!("{:<STORE$} ", "store"));
        }
        text
    }

    fn cells(&self, a: &Summary) -> String {
        let mut text = String::new();
        if self.reward {
            let reward = a.reward().map_or("-".to_owned(), |r| format!("{r:.2}"));
            text.push_str(&format!("{reward:>6} "));
        }
        if self.agent {
            let agent = sanitize(a.agent().unwrap_or("-")).into_owned();
            text.push_str(&format!("{:<AGENT$} ", clip(&agent, AGENT)));
        }
        if self.store {
            let name = a.location.dir.file_name().map_or_else(
                || a.location.dir.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            text.push_str(&format!("{:<STORE$} ", clip(&sanitize(&name), STORE)));
        }
        text
    }
}

/// "waiting on c002 (3.1 s)": the calls a live rollout waits for, and for how long at
/// least ([`App::in_flight_age`]).
fn waiting_for(app: &App, index: usize, a: &Summary) -> String {
    let calls: Vec<String> = a
        .open_intents
        .iter()
        .map(|call| super::short_call(call, a.rollout_id()).into_owned())
        .collect();
    match app.in_flight_age(index, None) {
        Some(age) => format!(
            "{} {} ({})",
            strings::WAITING_ON,
            calls.join(", "),
            super::age(age)
        ),
        None => format!("{} {}", strings::WAITING_ON, calls.join(", ")),
    }
}
