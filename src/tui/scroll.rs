//! Moving the view over the transcript: page and wheel scrolling, Home, and bringing a line
//! into view (entry selection, `/find`). Scrolling is anchored to an entry and lays out only
//! what fills the window from there, never the whole transcript.
//!
//! Part of `update`; no drawing.

use super::state::State;
use super::transcript::Scroll;

impl State {
    pub(crate) fn scroll_up(&mut self, n: usize) {
        let area = self.transcript_area();
        let (w, h) = (area.width as usize, area.height as usize);
        let top = match self.scroll {
            Scroll::Tail => self.transcript.tail_top(w, h),
            Scroll::Anchor { entry, line } => (entry, line),
        };
        let (entry, line) = self.transcript.up(top, n, w);
        // Content shorter than the window: nothing to scroll.
        if self.transcript.down((entry, line), 0, w, h).is_some() {
            self.scroll = Scroll::Anchor { entry, line };
        }
    }

    /// Home: the first line of the first entry. Lays out only what fills the window from
    /// there, never the whole transcript.
    pub(crate) fn scroll_top(&mut self) {
        let area = self.transcript_area();
        let (w, h) = (area.width as usize, area.height as usize);
        // Content shorter than the window: the tail already shows it all.
        if self.transcript.down((0, 0), 0, w, h).is_some() {
            self.scroll = Scroll::Anchor { entry: 0, line: 0 };
        }
    }

    pub(crate) fn scroll_down(&mut self, n: usize) {
        let Scroll::Anchor { entry, line } = self.scroll else {
            return;
        };
        let area = self.transcript_area();
        self.scroll =
            match self
                .transcript
                .down((entry, line), n, area.width as usize, area.height as usize)
            {
                Some((entry, line)) => Scroll::Anchor { entry, line },
                None => Scroll::Tail,
            };
    }

    pub(crate) fn page(&self) -> usize {
        (self.transcript_area().height as usize)
            .saturating_sub(1)
            .max(1)
    }

    /// Scrolls so that line `line` of `entry` is on screen (at the top when it was not).
    pub(crate) fn reveal(&mut self, entry: usize, line: usize) {
        let area = self.transcript_area();
        let (w, h) = (area.width as usize, area.height as usize);
        let rows = self.transcript.window(self.scroll, w, h);
        if rows.contains(&(entry, line)) {
            return;
        }
        // From there the window can fill: anchor; else it is within the tail.
        self.scroll = match self.transcript.down((entry, line), 0, w, h) {
            Some(_) => Scroll::Anchor { entry, line },
            None => Scroll::Tail,
        };
    }
}
