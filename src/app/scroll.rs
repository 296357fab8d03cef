//! Scrolling, once for every pane: a selection in a list shown a window at a time
//! ([`ScrollList`]), and a plain scrolled text ([`Scroll`]). Both clamp at both ends, so no
//! key can scroll past the content and then seem dead.

use std::ops::Range;

/// A selected item in `len` items, shown `height` rows at a time from `top`.
///
/// The window moves only as far as needed to keep the selection on screen (as a pager does),
/// and `top` never leaves `0..=len - height`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrollList {
    selected: usize,
    top: usize,
    len: usize,
    height: usize,
}

impl ScrollList {
    /// An empty list shown `height` rows at a time.
    pub fn new(len: usize, height: usize) -> ScrollList {
        let mut list = ScrollList {
            len,
            height,
            ..ScrollList::default()
        };
        list.follow();
        list
    }

    /// The selected item (0 when empty).
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// The first visible item.
    pub fn top(&self) -> usize {
        self.top
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rows shown at a time.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The items on screen.
    pub fn visible(&self) -> Range<usize> {
        self.top..(self.top + self.height).min(self.len)
    }

    /// The items changed in number: keep the selection (clamped) and the window valid.
    pub(crate) fn set_len(&mut self, len: usize) {
        self.len = len;
        self.selected = self.selected.min(len.saturating_sub(1));
        self.follow();
    }

    /// The pane changed size.
    pub(crate) fn set_height(&mut self, height: usize) {
        self.height = height;
        self.follow();
    }

    /// Select an item (clamped); whether the selection changed.
    pub fn select(&mut self, index: usize) -> bool {
        let before = self.selected;
        self.selected = index.min(self.len.saturating_sub(1));
        self.follow();
        before != self.selected
    }

    /// Move the selection by `delta` items (clamped); whether it changed.
    pub(crate) fn move_by(&mut self, delta: isize) -> bool {
        let target = (self.selected as isize).saturating_add(delta).max(0) as usize;
        self.select(target)
    }

    /// Rows of a page (at least one).
    pub fn page(&self) -> usize {
        self.height.max(1)
    }

    /// The item at a visible row (mouse hit-testing), if there is one.
    pub fn hit(&self, row: usize) -> Option<usize> {
        (row < self.height)
            .then_some(self.top + row)
            .filter(|&i| i < self.len)
    }

    /// Scroll the window by `delta` rows without moving past either end; the selection
    /// stays on screen (mouse wheel).
    pub(crate) fn scroll_by(&mut self, delta: isize) {
        let max_top = self.len.saturating_sub(self.height);
        self.top = ((self.top as isize).saturating_add(delta).max(0) as usize).min(max_top);
        if self.height > 0 {
            let last = self.top + self.height - 1;
            self.selected = self
                .selected
                .clamp(self.top, last.min(self.len.saturating_sub(1)));
        }
    }

    fn follow(&mut self) {
        if self.selected < self.top {
            self.top = self.selected;
        } else if self.height > 0 && self.selected >= self.top + self.height {
            self.top = self.selected + 1 - self.height;
        }
        self.top = self.top.min(self.len.saturating_sub(self.height.max(1)));
    }
}

/// A scrolled text of `len` lines shown `height` at a time (no selection).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scroll {
    top: usize,
    len: usize,
    height: usize,
}

impl Scroll {
    /// The first visible line.
    pub fn top(&self) -> usize {
        self.top
    }

    /// The text or the pane changed size: keep the window valid.
    pub(crate) fn set_size(&mut self, len: usize, height: usize) {
        self.len = len;
        self.height = height;
        self.top = self.top.min(self.max_top());
    }

    /// Scroll by `delta` lines, clamped.
    pub(crate) fn move_by(&mut self, delta: isize) {
        let target = (self.top as isize).saturating_add(delta).max(0) as usize;
        self.top = target.min(self.max_top());
    }

    /// To the first line.
    pub(crate) fn home(&mut self) {
        self.top = 0;
    }

    /// The last line at the bottom of the pane.
    pub fn end(&mut self) {
        self.top = self.max_top();
    }

    /// Lines of a page (at least one).
    pub fn page(&self) -> usize {
        self.height.max(1)
    }

    fn max_top(&self) -> usize {
        self.len.saturating_sub(self.height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_the_selection_and_clamps() {
        let mut list = ScrollList::new(100, 10);
        assert_eq!(list.visible(), 0..10);
        list.move_by(12);
        assert_eq!((list.selected(), list.top()), (12, 3));
        list.move_by(-5);
        assert_eq!(
            (list.selected(), list.top()),
            (7, 3),
            "no jump while on screen"
        );
        list.move_by(isize::MAX);
        assert_eq!((list.selected(), list.top()), (99, 90));
        list.move_by(isize::MIN);
        assert_eq!((list.selected(), list.top()), (0, 0));
        // Items vanish: the selection and the window stay valid.
        list.select(95);
        list.set_len(20);
        assert_eq!((list.selected(), list.top()), (19, 10));
        list.set_len(0);
        assert_eq!((list.selected(), list.top(), list.visible()), (0, 0, 0..0));
    }

    #[test]
    fn hits_and_wheel() {
        let mut list = ScrollList::new(30, 10);
        list.select(25);
        assert_eq!(list.top(), 16);
        assert_eq!(list.hit(0), Some(16));
        assert_eq!(list.hit(9), Some(25));
        assert_eq!(list.hit(10), None);
        list.scroll_by(-100);
        assert_eq!(
            (list.top(), list.selected()),
            (0, 9),
            "the selection stays visible"
        );
        list.scroll_by(100);
        assert_eq!(list.top(), 20);
        let short = ScrollList::new(3, 10);
        assert_eq!(short.hit(3), None);
        // Growing the pane pulls the window back so the end stays at the bottom.
        list.set_height(25);
        assert_eq!(list.top(), 5);
    }

    #[test]
    fn text_scroll_ends_at_the_bottom_and_comes_back() {
        let mut text = Scroll::default();
        text.set_size(50, 20);
        text.end();
        assert_eq!(text.top(), 30, "the last line at the bottom");
        text.move_by(-1);
        assert_eq!(text.top(), 29, "and one line up from there at once");
        text.move_by(1000);
        assert_eq!(text.top(), 30);
        text.set_size(10, 20);
        assert_eq!(text.top(), 0);
        text.home();
        text.move_by(-3);
        assert_eq!(text.top(), 0);
    }
}
