//! Panes drawn again unchanged are copied, not rendered.
//!
//! Drawing stays a function of the state. What is kept is a pane's rendering, in two ways:
//!
//! - **By widget** ([`render`]): laying out a paragraph walks every grapheme of every line
//!   (its width, its wrap), which was most of a frame; comparing a widget with the one drawn
//!   last time is a walk over its strings. The key is the widget itself and its area, nothing
//!   the pane read to build it, so no input can be forgotten.
//! - **By state** ([`kept_or_drawn`]): the open rollout's tree, tokens and inspector are
//!   not even built while their [`PaneKey`] holds — the app's count of the changes that may
//!   reach them ([`App::detail_revision`]) and what else they read that is set directly.
//!   While a run is written, frames come for the list and the header ten times a second and
//!   those panes are the same. `kept_tests` draws random sequences both ways.
//!
//! A pane renders into a fresh frame's area (the terminal resets its buffer after each frame;
//! panes do not overlap, overlays draw after them), so the same widget in the same area
//! renders the same cells.

use std::cell::RefCell;

use ratatui::Frame;
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use ratatui::widgets::Paragraph;

use super::Theme;
use crate::app::{App, Pane, Tab, TokenText};
use tokscope_core::text::Zone;

/// The panes whose rendering is kept, one kept rendering each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The rollout list.
    List,
    /// The chain tree.
    Tree,
    /// Token provenance.
    Tokens,
    /// The bottom-right tab (inspector, gaps or graph).
    Detail,
}

impl Slot {
    const COUNT: usize = 4;

    fn index(self) -> usize {
        self as usize
    }
}

/// A pane's last rendering: the widget, where, and the cells it made there (row by row);
/// for an open rollout's pane, the state it was drawn for and what it measured then.
struct Kept {
    area: Rect,
    paragraph: Paragraph<'static>,
    cells: Vec<Cell>,
    drawn_for: Option<(PaneKey, Option<Measure>)>,
}

/// What the inspector measured of its text: its wrapped length, and where the search's
/// matches are.
pub(crate) type Measure = (usize, Option<Vec<usize>>);

/// The state an open rollout's pane is drawn from: the app's revision of those panes (see
/// [`App::detail_revision`]), and what else they read that is set directly rather than by a
/// message.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PaneKey {
    revision: (u64, u64),
    theme: Theme,
    focus: Pane,
    detail: Tab,
    token_text: TokenText,
    low_logprob: u64,
    zone: Zone,
    detok: Option<usize>,
    search: Option<(Pane, String, Option<usize>)>,
}

impl PaneKey {
    /// The key of `app`'s open rollout's panes, drawn with `theme`.
    pub(crate) fn of(app: &App, theme: Theme) -> PaneKey {
        PaneKey {
            revision: app.detail_revision(),
            theme,
            focus: app.focus,
            detail: app.detail,
            token_text: app.token_text,
            low_logprob: app.low_logprob.to_bits(),
            zone: app.zone,
            detok: app
                .detok
                .as_ref()
                .map(|detok| std::sync::Arc::as_ptr(detok) as usize),
            search: app
                .search
                .as_ref()
                .map(|s| (s.pane, s.query.clone(), s.inspector_at)),
        }
    }
}

/// The inspector's text measured last: its wrapped length at a width.
struct Measured {
    width: u16,
    paragraph: Paragraph<'static>,
    lines: usize,
}

#[derive(Default)]
struct Memo {
    kept: [Option<Kept>; Slot::COUNT],
    /// Slots rendered since their last [`drawn_for`].
    rendered: [bool; Slot::COUNT],
    measured: Option<Measured>,
    /// Renderings copied instead of made (tests of the memo's use).
    copied: usize,
    /// Panes copied without being built (tests).
    reused: usize,
}

thread_local! {
    // Per thread: tests draw on many threads at once; the explorer draws on one.
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// Render `paragraph` into `area`, or copy the cells it rendered there the last time the
/// same slot drew the same paragraph in the same area.
pub(crate) fn render(frame: &mut Frame, slot: Slot, paragraph: Paragraph<'static>, area: Rect) {
    MEMO.with_borrow_mut(|memo| {
        let buffer = frame.buffer_mut();
        let area = area.intersection(buffer.area);
        if area.is_empty() {
            // Nothing of it on the screen (ratatui's own render draws nothing there either).
            return;
        }
        memo.rendered[slot.index()] = true;
        let entry = &mut memo.kept[slot.index()];
        if let Some(kept) = entry
            .as_mut()
            .filter(|kept| kept.area == area && kept.paragraph == paragraph)
        {
            copy_in(buffer, area, &kept.cells);
            // (Drawn for a state again only if the pane says so: see `drawn_for`.)
            kept.drawn_for = None;
            memo.copied += 1;
            return;
        }
        ratatui::widgets::Widget::render(&paragraph, area, buffer);
        *entry = Some(Kept {
            area,
            cells: copy_out(buffer, area),
            paragraph,
            drawn_for: None,
        });
    });
}

/// The open rollout's pane in `slot`: copied into `area` if it was rendered there for `key`,
/// else drawn by `draw` (which renders through [`render`]) and kept for `key`. What the pane
/// measured, then or now.
pub(crate) fn kept_or_drawn(
    frame: &mut Frame,
    slot: Slot,
    key: &PaneKey,
    area: Rect,
    draw: impl FnOnce(&mut Frame) -> Option<Measure>,
) -> Option<Measure> {
    if let Some(measure) = reuse(frame, slot, key, area) {
        return measure;
    }
    let measure = draw(frame);
    drawn_for(slot, key.clone(), measure.clone());
    measure
}

/// Copy into `area` what `slot` rendered there for `key` (see [`drawn_for`]), if it did: then
/// the pane need not be built. What it measured then, if so.
fn reuse(frame: &mut Frame, slot: Slot, key: &PaneKey, area: Rect) -> Option<Option<Measure>> {
    MEMO.with_borrow_mut(|memo| {
        let buffer = frame.buffer_mut();
        let area = area.intersection(buffer.area);
        let kept = memo.kept[slot.index()].as_ref()?;
        let (drawn_for, measure) = kept.drawn_for.as_ref()?;
        if drawn_for != key || kept.area != area {
            return None;
        }
        copy_in(buffer, area, &kept.cells);
        memo.reused += 1;
        Some(measure.clone())
    })
}

/// What `slot` has just rendered (with [`render`]) was drawn for `key`, and measured
/// `measure`. (Only a rendering made or copied since the last call counts: a pane with
/// nothing on the screen kept nothing for `key`.)
fn drawn_for(slot: Slot, key: PaneKey, measure: Option<Measure>) {
    MEMO.with_borrow_mut(|memo| {
        if std::mem::take(&mut memo.rendered[slot.index()])
            && let Some(kept) = &mut memo.kept[slot.index()]
        {
            kept.drawn_for = Some((key, measure));
        }
    });
}

/// The lines `paragraph` wraps to at `width` (measured again only when it changed).
pub(crate) fn line_count(paragraph: &Paragraph<'static>, width: u16) -> usize {
    MEMO.with_borrow_mut(|memo| {
        if let Some(measured) = memo
            .measured
            .as_ref()
            .filter(|m| m.width == width && m.paragraph == *paragraph)
        {
            return measured.lines;
        }
        let lines = paragraph.line_count(width);
        memo.measured = Some(Measured {
            width,
            paragraph: paragraph.clone(),
            lines,
        });
        lines
    })
}

/// Renderings this thread copied since the last call (tests).
#[cfg(test)]
pub(crate) fn take_copied() -> usize {
    MEMO.with_borrow_mut(|memo| std::mem::take(&mut memo.copied))
}

/// Panes this thread copied without building them since the last call (tests).
#[cfg(test)]
pub(crate) fn take_reused() -> usize {
    MEMO.with_borrow_mut(|memo| std::mem::take(&mut memo.reused))
}

/// Run `draw` with nothing kept, and put back what was kept (tests).
#[cfg(test)]
pub(crate) fn without_kept<R>(draw: impl FnOnce() -> R) -> R {
    let kept = MEMO.with_borrow_mut(std::mem::take);
    let result = draw();
    MEMO.with_borrow_mut(|memo| *memo = kept);
    result
}

/// Forget every kept rendering of this thread (tests compare with a fresh drawing).
#[cfg(test)]
pub(crate) fn forget() {
    MEMO.with_borrow_mut(|memo| *memo = Memo::default());
}

/// Where row `y` of `area` lies in the buffer's cells.
fn row(buffer: &Buffer, area: Rect, y: u16) -> std::ops::Range<usize> {
    let start = buffer.index_of(area.x, y);
    start..start + usize::from(area.width)
}

fn copy_out(buffer: &Buffer, area: Rect) -> Vec<Cell> {
    let mut cells = Vec::with_capacity(usize::from(area.width) * usize::from(area.height));
    for y in area.top()..area.bottom() {
        cells.extend_from_slice(&buffer.content[row(buffer, area, y)]);
    }
    cells
}

/// Copy `cells` (kept by [`copy_out`] for the same non-empty area) back into `area`.
fn copy_in(buffer: &mut Buffer, area: Rect, cells: &[Cell]) {
    let rows = cells.chunks(usize::from(area.width));
    for (y, kept) in (area.top()..area.bottom()).zip(rows) {
        let range = row(buffer, area, y);
        buffer.content[range].clone_from_slice(kept);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::text::Line;
    use ratatui::widgets::{Block, Borders, Wrap};

    use super::*;

    fn paragraph(text: &str) -> Paragraph<'static> {
        Paragraph::new(vec![Line::from(text.to_owned()), Line::from("second")])
            .block(Block::default().borders(Borders::ALL).title(" pane "))
            .wrap(Wrap { trim: false })
    }

    fn drawn(text: &str, area: Rect) -> Buffer {
        let mut terminal = Terminal::new(TestBackend::new(30, 8)).unwrap();
        terminal
            .draw(|frame| render(frame, Slot::Tree, paragraph(text), area))
            .unwrap();
        terminal.backend().buffer().clone()
    }

    #[test]
    fn the_same_widget_is_copied_and_draws_what_rendering_draws() {
        forget();
        let area = Rect::new(2, 1, 20, 5);
        let first = drawn("a line long enough to wrap in the pane", area);
        assert_eq!(take_copied(), 0);
        assert_eq!(drawn("a line long enough to wrap in the pane", area), first);
        assert_eq!(take_copied(), 1, "the second frame is copied");
        // Another text, another area: rendered, and each as a fresh drawing would.
        for (text, area) in [
            ("another", area),
            ("another", Rect::new(0, 0, 30, 8)),
            ("another", Rect::new(0, 0, 30, 8)),
        ] {
            let kept = drawn(text, area);
            forget();
            assert_eq!(kept, drawn(text, area), "{text} {area:?}");
        }
    }

    #[test]
    fn an_area_past_the_screen_is_cut_to_it() {
        forget();
        let area = Rect::new(20, 4, 30, 10);
        let first = drawn("text", area);
        assert_eq!(drawn("text", area), first);
        assert_eq!(take_copied(), 1);
        // Wholly off the screen: nothing drawn, nothing kept.
        let blank = drawn("", Rect::new(0, 0, 0, 0));
        assert_eq!(drawn("text", Rect::new(40, 2, 10, 5)), blank);
        assert_eq!(drawn("text", Rect::new(2, 20, 10, 5)), blank);
        assert_eq!(take_copied(), 0);
    }

    #[test]
    fn a_length_is_measured_again_only_for_another_text_or_width() {
        forget();
        let text = paragraph("one two three four five six");
        assert_eq!(line_count(&text, 10), text.line_count(10));
        assert_eq!(line_count(&text, 40), text.line_count(40));
        let other = paragraph("one");
        assert_eq!(line_count(&other, 10), other.line_count(10));
        assert_ne!(text.line_count(10), other.line_count(10));
    }

    /// The explorer's screen after each step, drawn twice with the memo and once fresh.
    #[test]
    fn the_explorer_draws_with_the_memo_what_it_draws_without() {
        use crate::app::{Action, App, Message, Tab};
        use tokscope_core::verdict::VerdictOptions;

        let store = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-store");
        let locations =
            tokscope_core::load::locate(std::slice::from_ref(&store), &[]).unwrap_or_default();
        let analyses = tokscope_core::load::analyze_all(&locations, &VerdictOptions::default());
        let size = |width, height| Rect::new(0, 0, width, height);
        let mut app = App::new(
            vec![store],
            analyses,
            VerdictOptions::default(),
            crate::ui::layout::viewport_for(size(140, 44), None),
        );
        let theme = crate::ui::Theme { color: true };
        let screen = |app: &App, area: Rect| {
            let mut terminal = Terminal::new(TestBackend::new(area.width, area.height)).unwrap();
            terminal
                .draw(|frame| drop(crate::ui::draw(frame, app, theme)))
                .unwrap();
            terminal.backend().buffer().clone()
        };
        let steps = [
            None,
            Some(Action::Down),
            Some(Action::Down),
            Some(Action::NextPane),
            Some(Action::Down),
            Some(Action::ShowTab(Tab::Gaps)),
            Some(Action::ShowTab(Tab::Graph)),
            Some(Action::ShowTab(Tab::Inspector)),
            Some(Action::PageDown),
            Some(Action::Zoom),
            Some(Action::Zoom),
        ];
        forget();
        // The same steps on a wide screen, then resized to a small one (what was kept at the
        // first size is there when the second is drawn).
        for area in [size(140, 44), size(72, 22)] {
            app.update(Message::Resize(crate::ui::layout::viewport_for(area, None)));
            for step in &steps {
                if let Some(action) = step {
                    app.update(Message::Action(*action));
                }
                let first = screen(&app, area);
                take_copied();
                take_reused();
                let again = screen(&app, area);
                // Every pane shown: four, or the zoomed one (the open rollout's without
                // being built again).
                let shown = if app.zoomed().is_some() { 1 } else { 4 };
                assert_eq!(
                    take_copied() + take_reused(),
                    shown,
                    "unchanged panes are copied after {step:?} at {area:?}"
                );
                assert_eq!(again, first, "after {step:?} at {area:?}");
                forget();
                assert_eq!(
                    screen(&app, area),
                    first,
                    "a fresh drawing after {step:?} at {area:?}"
                );
            }
        }
    }
}
