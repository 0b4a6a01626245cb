//! Working with the transcript: the mouse selection of characters (kept in transcript
//! positions, so it stays on its text while a reply streams and the view moves; release
//! copies exactly the selected characters), the keyboard selection of an entry (Alt/Ctrl+Up
//! and Down; Enter or `o` folds it), and `/find` (matching lines, the current one shown and
//! jumped to).
//!
//! Part of `update`: state changes and effects only, no drawing and no I/O.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use super::state::{Effect, Hint, State, WHEEL_ROWS};
use super::transcript::Level;
use super::wrap;

/// A character cell of the transcript: line `line` of entry `entry`, display column `col`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Point {
    pub(crate) entry: usize,
    pub(crate) line: usize,
    pub(crate) col: usize,
}

/// A mouse selection from where the button went down to where it is (either order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Selection {
    pub(crate) anchor: Point,
    pub(crate) head: Point,
}

impl Selection {
    /// (start, end) in reading order; `end` is included.
    pub(crate) fn ordered(&self) -> (Point, Point) {
        if self.anchor <= self.head {
            (self.anchor, self.head)
        } else {
            (self.head, self.anchor)
        }
    }

    /// The selected columns of one line, `end` excluded, if any.
    pub(crate) fn columns(&self, entry: usize, line: usize) -> Option<(usize, usize)> {
        let (a, b) = self.ordered();
        let here = (entry, line);
        if here < (a.entry, a.line) || here > (b.entry, b.line) {
            return None;
        }
        let from = if here == (a.entry, a.line) { a.col } else { 0 };
        let to = if here == (b.entry, b.line) {
            b.col + 1
        } else {
            usize::MAX
        };
        Some((from, to))
    }
}

/// A search through the transcript's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    pub(crate) query: String,
    /// Lines holding a match, in order, at the width they were found.
    pub(crate) hits: Vec<(usize, usize)>,
    pub(crate) current: usize,
    pub(crate) width: usize,
}

/// The part of `text` between display columns `from` (included) and `to` (excluded).
pub(crate) fn slice_columns(text: &str, from: usize, to: usize) -> &str {
    let mut col = 0;
    let mut start = text.len();
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if col >= from && start == text.len() {
            start = i;
        }
        if col >= to {
            end = i;
            break;
        }
        col += wrap::char_width(c);
    }
    if start > end { "" } else { &text[start..end] }
}

impl State {
    pub(crate) fn mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        let area = self.transcript_area();
        match m.kind {
            MouseEventKind::ScrollUp => self.scroll_up(WHEEL_ROWS),
            MouseEventKind::ScrollDown => self.scroll_down(WHEEL_ROWS),
            MouseEventKind::Down(MouseButton::Left) if m.row < area.bottom() => {
                self.selection = self
                    .point_at(m.column, m.row)
                    .map(|p| Selection { anchor: p, head: p });
            }
            MouseEventKind::Drag(MouseButton::Left) => {
                // Past the edges of the transcript: the first or last row it shows.
                let row = m.row.clamp(area.y, area.bottom().saturating_sub(1));
                if let (Some(sel), Some(p)) = (self.selection, self.point_at(m.column, row)) {
                    self.selection = Some(Selection { head: p, ..sel });
                }
            }
            MouseEventKind::Up(MouseButton::Left) => {
                if let Some(sel) = self.selection {
                    if sel.anchor == sel.head {
                        self.selection = None;
                        return Vec::new();
                    }
                    let text = self.selected_text();
                    let chars = text.chars().count();
                    let lines = text.lines().count().max(1);
                    self.hint = Some(Hint::Text(format!(
                        "copied {chars} characters ({lines} lines)"
                    )));
                    return vec![Effect::Copy(text)];
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// The transcript position under screen cell (x, y), if the transcript shows a line there.
    fn point_at(&self, x: u16, y: u16) -> Option<Point> {
        let area = self.transcript_area();
        let rows = self
            .transcript
            .window(self.scroll, area.width as usize, area.height as usize);
        let r = y.checked_sub(area.y)? as usize;
        let (entry, line) = *rows.get(r)?;
        Some(Point {
            entry,
            line,
            col: x.saturating_sub(area.x) as usize,
        })
    }

    /// Exactly the selected characters, lines joined by `\n`, trailing blanks of each line cut.
    pub(crate) fn selected_text(&self) -> String {
        let Some(sel) = self.selection else {
            return String::new();
        };
        let width = self.transcript_area().width as usize;
        let (a, b) = sel.ordered();
        let mut out: Vec<String> = Vec::new();
        for entry in a.entry..=b.entry.min(self.transcript.len().saturating_sub(1)) {
            let first = if entry == a.entry { a.line } else { 0 };
            let last = if entry == b.entry {
                b.line
            } else {
                self.transcript.height(entry, width).saturating_sub(1)
            };
            for line in first..=last {
                let Some((from, to)) = sel.columns(entry, line) else {
                    continue;
                };
                let text = self
                    .transcript
                    .with_line(entry, line, width, wrap::line_text)
                    .unwrap_or_default();
                out.push(slice_columns(&text, from, to).trim_end().to_string());
            }
        }
        out.join("\n")
    }

    /// Alt/Ctrl+Up (`-1`) or Down (`+1`): moves the entry selection and brings it into view.
    pub(crate) fn select_entry(&mut self, step: isize) {
        let n = self.transcript.len();
        if n == 0 {
            return;
        }
        let next = match self.selected {
            None if step < 0 => n - 1,
            None => 0,
            Some(i) => i.saturating_add_signed(step).min(n - 1),
        };
        self.selected = Some(next);
        self.reveal(next, 0);
        self.hint = Some(Hint::Text(if self.transcript.foldable(next) {
            "entry selected · Enter or o folds/unfolds · Esc done".to_string()
        } else {
            "entry selected · Alt+Up/Down moves · Esc done".to_string()
        }));
    }

    /// Enter or `o` on a selected entry.
    pub(crate) fn toggle_selected(&mut self) {
        let Some(i) = self.selected else { return };
        if !self.transcript.foldable(i) {
            self.hint = Some(Hint::Text("nothing to fold in this entry".into()));
            return;
        }
        let open = self.transcript.toggle_fold(i);
        self.hint = Some(Hint::Text(
            if open == Some(true) {
                "unfolded"
            } else {
                "folded"
            }
            .to_string(),
        ));
    }

    /// `/find text`: every line holding `text` (case-insensitive), the first one after the
    /// view's top shown. `/find` alone ends the search.
    pub(crate) fn find(&mut self, query: &str) {
        if query.is_empty() {
            self.search = None;
            self.hint = None;
            return;
        }
        let width = self.transcript_area().width as usize;
        let needle = query.to_lowercase();
        let mut hits = Vec::new();
        for entry in 0..self.transcript.len() {
            for line in 0..self.transcript.height(entry, width) {
                let found = self.transcript.with_line(entry, line, width, |l| {
                    wrap::line_text(l).to_lowercase().contains(&needle)
                });
                if found == Some(true) {
                    hits.push((entry, line));
                }
            }
        }
        if hits.is_empty() {
            self.search = None;
            self.notice(Level::Info, format!("no match for “{query}”"));
            return;
        }
        // The last match first: the most recent text is what one looks for most.
        let current = hits.len() - 1;
        self.search = Some(Search {
            query: query.to_string(),
            hits,
            current,
            width,
        });
        self.show_hit();
    }

    /// Ctrl+F: the previous match (towards the start), wrapping; with no search, starts one.
    pub(crate) fn find_key(&mut self) {
        match &mut self.search {
            Some(s) => {
                s.current = s.current.checked_sub(1).unwrap_or(s.hits.len() - 1);
                self.show_hit();
            }
            None if self.draft.is_empty() => {
                self.draft.set_text("/find ");
                self.hint = Some(Hint::Text("type what to find, Enter searches".into()));
            }
            None => {}
        }
    }

    fn show_hit(&mut self) {
        let Some(s) = &self.search else { return };
        let (entry, line) = s.hits[s.current];
        let hint = format!(
            "find “{}”: {}/{} · Ctrl+F previous · Esc closes",
            s.query,
            s.current + 1,
            s.hits.len()
        );
        self.reveal(entry, line);
        self.hint = Some(Hint::Text(hint));
    }

    /// Esc closes a selection, an entry selection or a search before it interrupts anything.
    pub(crate) fn close_overlays(&mut self) -> bool {
        let open = self.selection.is_some() || self.selected.is_some() || self.search.is_some();
        if open {
            self.selection = None;
            self.selected = None;
            self.search = None;
            self.hint = None;
        }
        open
    }
}
