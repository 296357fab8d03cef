//! The timeline view, drawn where the tree, tokens and detail panes are (the list stays in
//! view, following the cursor): one sparkline strip a series — rollouts finished, the masked
//! share, calls/s, calls in flight — with the cursor's bucket marked in every strip and
//! under them, a time axis, then the cursor's bucket in words and its top causes.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Sparkline, SparklineBar};

use super::layout::Areas;
use super::{Theme, clip, pane_block, strings};
use crate::app::App;
use tokscope_core::text::{moment, sanitize};
use tokscope_core::timeline::Bucket;

/// Width of the strips' label column.
const LABEL: u16 = 11;

/// Where the view goes: the body beside (or below) the list, the whole body when the list
/// is not shown.
pub(crate) fn area(areas: &Areas) -> Rect {
    let top = areas.health.y + areas.health.height;
    let body = Rect::new(
        areas.header.x,
        top,
        areas.header.width,
        areas.status.y.saturating_sub(top),
    );
    let list = areas.list;
    if list.is_empty() || list.width == 0 {
        body
    } else if list.x + list.width < body.x + body.width {
        // Wide: the list is the left column.
        let x = list.x + list.width;
        Rect::new(x, body.y, body.x + body.width - x, body.height)
    } else {
        // Narrow: the list is on top.
        let y = list.y + list.height;
        Rect::new(
            body.x,
            y,
            body.width,
            (body.y + body.height).saturating_sub(y),
        )
    }
}

/// A bucket width for people: `10 s`, `5 min`, `1 h`, `1 d`.
pub(crate) fn width_words(seconds: f64) -> String {
    match seconds {
        s if s < 60.0 => format!("{s} s"),
        s if s < 3600.0 => format!("{} min", s / 60.0),
        s if s < 86_400.0 => format!("{} h", s / 3600.0),
        s => format!("{} d", s / 86_400.0),
    }
}

/// The buckets shown: a window of `columns` around the cursor, and the cursor's place in it.
fn window(first: i64, last: i64, cursor: i64, columns: usize) -> (i64, i64) {
    let columns = columns.max(1) as i64;
    let span = last - first + 1;
    if span <= columns {
        return (first, last);
    }
    let start = (cursor - columns / 2).clamp(first, last - columns + 1);
    (start, start + columns - 1)
}

/// Draw the view.
pub(crate) fn draw(frame: &mut Frame, app: &App, theme: Theme, areas: &Areas) {
    let Some(view) = &app.timeline else {
        return;
    };
    let area = area(areas);
    if area.height < 3 || area.width < LABEL + 4 {
        return;
    }
    let timeline = &view.timeline;
    let title = format!(
        "{}{} · {} buckets · {}",
        strings::TITLE_TIMELINE,
        if app.comparison.is_some() {
            strings::TIMELINE_RUN_A
        } else {
            ""
        },
        width_words(timeline.bucket_seconds()),
        strings::TIMELINE_KEYS
    );
    frame.render_widget(Clear, area);
    let block = pane_block(title, true, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some((first, last)) = timeline.span() else {
        frame.render_widget(
            Paragraph::new(Span::styled(strings::TIMELINE_EMPTY, theme.dim())),
            inner,
        );
        return;
    };
    let columns = usize::from(inner.width.saturating_sub(LABEL));
    let (from, to) = window(first, last, view.cursor, columns);
    let buckets: Vec<Bucket> = (from..=to).map(|i| timeline.at(i)).collect();
    let at_cursor = usize::try_from(view.cursor - from).ok();
    // Strips two rows high when there is room for them and the words below.
    let strip_height: u16 = if inner.height >= 16 { 2 } else { 1 };
    type Value = fn(&Bucket) -> f64;
    let strips: [(&str, Value, Style); 4] = [
        ("finished", |b| b.finished as f64, theme.good()),
        (
            "masked %",
            |b| b.masked_fraction.unwrap_or(0.0) * 100.0,
            theme.problem(),
        ),
        ("calls/s", |b| b.calls_per_second, Style::default()),
        ("in flight", |b| b.in_flight, theme.dim()),
    ];
    let mut y = inner.y;
    for (label, value, style) in strips {
        if y + strip_height > inner.y + inner.height {
            break;
        }
        let values: Vec<f64> = buckets.iter().map(value).collect();
        let max = values.iter().copied().fold(0.0_f64, f64::max);
        let top = if label == "masked %" { 100.0 } else { max };
        // Sparklines count in integers: hundredths keep fractions of a call.
        let bars: Vec<SparklineBar> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let bar = SparklineBar::from((v * 100.0).round() as u64);
                if Some(i) == at_cursor {
                    bar.style(theme.cursor())
                } else {
                    bar
                }
            })
            .collect();
        let peak = if label == "masked %" {
            String::new()
        } else {
            format!("≤{}", short_number(max))
        };
        let labels = vec![
            Line::from(Span::styled(label.to_owned(), theme.heading())),
            Line::from(Span::styled(peak, theme.dim())),
        ];
        frame.render_widget(
            Paragraph::new(
                labels
                    .into_iter()
                    .take(usize::from(strip_height))
                    .collect::<Vec<_>>(),
            ),
            Rect::new(inner.x, y, LABEL, strip_height),
        );
        frame.render_widget(
            Sparkline::default()
                .data(bars)
                .max(((top * 100.0).round() as u64).max(1))
                .style(style),
            Rect::new(inner.x + LABEL, y, inner.width - LABEL, strip_height),
        );
        y += strip_height;
    }
    let width = usize::from(inner.width);
    let line = |text: String, style: Style| Line::from(Span::styled(clip(&text, width), style));
    // Times of day, or dates for buckets of a day and more.
    let days = timeline.bucket_seconds() >= 86_400.0;
    let clock = |seconds: f64| {
        moment(seconds, app.zone).map_or_else(
            || "?".into(),
            |m| {
                if days {
                    m[..10].to_owned()
                } else {
                    m[11..19].to_owned()
                }
            },
        )
    };
    let marker = at_cursor.map_or(String::new(), |at| {
        format!("{}▲", " ".repeat(usize::from(LABEL) + at))
    });
    let mut lines = vec![
        line(marker, theme.heading()),
        line(
            axis(
                &clock(timeline.start_of(from)),
                &clock(timeline.start_of(to + 1)),
                // The end's time under the last bucket, not at the pane's edge.
                (usize::from(LABEL) + buckets.len()).clamp(usize::from(LABEL) + 21, width),
            ),
            theme.dim(),
        ),
    ];
    let bucket = timeline.at(view.cursor);
    let start = moment(bucket.start, app.zone).unwrap_or_else(|| "?".into());
    let end = clock(bucket.start + bucket.seconds);
    lines.push(line(format!("▸ {start} – {end}"), theme.heading()));
    let share = bucket
        .masked_fraction
        .map_or("–".into(), |f| format!("{:.0}%", f * 100.0));
    lines.push(line(
        format!(
            "  {} finished, {} masked ({share}), {} at risk · {:.2} calls/s · {:.1} in flight",
            bucket.finished,
            bucket.masked,
            bucket.at_risk,
            bucket.calls_per_second,
            bucket.in_flight
        ),
        Style::default(),
    ));
    for cause in bucket.causes.iter().take(3) {
        lines.push(line(
            format!("  {:>4}  {}", cause.count, sanitize(&cause.title)),
            theme.problem(),
        ));
    }
    if timeline.untimed() > 0 {
        lines.push(line(
            format!("  {} {}", timeline.untimed(), strings::TIMELINE_UNTIMED),
            theme.dim(),
        ));
    }
    frame.render_widget(
        Paragraph::new(lines),
        Rect::new(
            inner.x,
            y,
            inner.width,
            (inner.y + inner.height).saturating_sub(y),
        ),
    );
}

/// `12`, `3.4`, `0.05`: a strip's peak in few characters.
fn short_number(value: f64) -> String {
    if value >= 100.0 || value == value.round() {
        format!("{value:.0}")
    } else if value >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// The time axis under the strips: the window's first time under the first bucket, its end
/// at the right.
fn axis(from: &str, to: &str, width: usize) -> String {
    let pad = " ".repeat(usize::from(LABEL));
    let room = width
        .saturating_sub(usize::from(LABEL) + from.len() + to.len())
        .max(1);
    format!("{pad}{from}{}{to}", " ".repeat(room))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_keeps_the_cursor_in_view() {
        assert_eq!(window(0, 9, 3, 20), (0, 9));
        assert_eq!(window(0, 99, 0, 10), (0, 9));
        assert_eq!(window(0, 99, 50, 10), (45, 54));
        assert_eq!(window(0, 99, 99, 10), (90, 99));
    }

    #[test]
    fn widths_read_as_people_say_them() {
        assert_eq!(width_words(30.0), "30 s");
        assert_eq!(width_words(300.0), "5 min");
        assert_eq!(width_words(3600.0), "1 h");
        assert_eq!(width_words(86_400.0), "1 d");
    }
}
