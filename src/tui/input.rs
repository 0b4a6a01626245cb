//! The draft editor of the input box: multi-line text, a cursor, word motions, kills, and
//! recall of earlier prompts. It also lays the draft out by display width for the view.
//!
//! Keys are mapped to these operations in `state`; this module must not know about the agent,
//! the transcript or the terminal.

use super::wrap::{TAB, char_width, is_control};
use crate::sanitize::is_invisible;
use crate::sanitize::text::floor_boundary;

/// A multi-line draft with a cursor at (`row`, byte offset `col`).
#[derive(Debug, Clone)]
pub struct Draft {
    lines: Vec<String>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Position while browsing history, and the draft that was there before browsing.
    browsing: Option<(usize, String)>,
}

impl Default for Draft {
    fn default() -> Self {
        Self {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
        }
    }
}

impl Draft {
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Replaces the draft, cursor at the end.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_string).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].len();
    }

    pub fn clear(&mut self) {
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.browsing = None;
    }

    /// Takes the draft for submission and remembers it for recall.
    pub fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        text
    }

    /// Adds a prompt to the recall list (e.g. from a resumed session).
    pub(crate) fn remember(&mut self, prompt: &str) {
        self.history.push(prompt.to_string());
    }

    fn line(&self) -> &str {
        &self.lines[self.row]
    }

    pub(crate) fn insert_char(&mut self, c: char) {
        if c == '\n' {
            self.newline();
            return;
        }
        let col = self.col;
        self.lines[self.row].insert(col, c);
        self.col += c.len_utf8();
    }

    /// Inserts text as is (a paste): line breaks (CRLF and CR too) split lines, tabs and
    /// everything else stay, nothing is submitted. Control characters are made inert only
    /// when the draft is laid out for the screen.
    pub fn insert_str(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            let col = self.col;
            self.lines[self.row].insert_str(col, part);
            self.col += part.len();
        }
    }

    pub fn newline(&mut self) {
        let rest = self.lines[self.row].split_off(self.col);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    pub fn backspace(&mut self) {
        if self.col > 0 {
            let prev = prev_boundary(self.line(), self.col);
            self.lines[self.row].replace_range(prev..self.col, "");
            self.col = prev;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].len();
            self.lines[self.row].push_str(&line);
        }
    }

    pub(crate) fn delete(&mut self) {
        if self.col < self.line().len() {
            let next = next_boundary(self.line(), self.col);
            self.lines[self.row].replace_range(self.col..next, "");
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    pub(crate) fn left(&mut self) {
        if self.col > 0 {
            self.col = prev_boundary(self.line(), self.col);
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.line().len();
        }
    }

    pub(crate) fn right(&mut self) {
        if self.col < self.line().len() {
            self.col = next_boundary(self.line(), self.col);
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    pub fn home(&mut self) {
        self.col = 0;
    }

    pub fn end(&mut self) {
        self.col = self.line().len();
    }

    pub fn word_left(&mut self) {
        if self.col == 0 {
            self.left();
            return;
        }
        self.col = word_start(self.line(), self.col);
    }

    pub(crate) fn word_right(&mut self) {
        let line = self.line();
        if self.col >= line.len() {
            self.right();
            return;
        }
        let rest = &line[self.col..];
        let skip_space = rest.len() - rest.trim_start().len();
        let word = rest[skip_space..]
            .find(char::is_whitespace)
            .unwrap_or(rest.len() - skip_space);
        self.col += skip_space + word;
    }

    /// Ctrl+W: deletes the word before the cursor.
    pub fn delete_word(&mut self) {
        if self.col == 0 {
            self.backspace();
            return;
        }
        let start = word_start(self.line(), self.col);
        self.lines[self.row].replace_range(start..self.col, "");
        self.col = start;
    }

    /// Ctrl+U: deletes to the start of the line.
    pub fn kill_to_start(&mut self) {
        self.lines[self.row].replace_range(..self.col, "");
        self.col = 0;
    }

    /// Ctrl+K: deletes to the end of the line.
    pub fn kill_to_end(&mut self) {
        let col = self.col;
        self.lines[self.row].truncate(col);
    }

    /// Up: previous line, or on the first line the previous prompt. False when nothing moved.
    pub fn up(&mut self) -> bool {
        if self.row > 0 {
            self.row -= 1;
            self.col = floor_boundary(self.line(), self.col);
            return true;
        }
        let pos = match &self.browsing {
            Some((p, _)) => *p,
            None => self.history.len(),
        };
        if pos == 0 {
            return false;
        }
        if self.browsing.is_none() {
            self.browsing = Some((pos, self.text()));
        }
        let text = self.history[pos - 1].clone();
        let stash = self.browsing.take().map(|(_, s)| s).unwrap_or_default();
        self.set_text(&text);
        self.row = 0;
        self.col = self.lines[0].len();
        self.browsing = Some((pos - 1, stash));
        true
    }

    /// Down: next line, or on the last line the next prompt (and finally the stashed draft).
    pub fn down(&mut self) -> bool {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = floor_boundary(self.line(), self.col);
            return true;
        }
        let Some((pos, stash)) = self.browsing.take() else {
            return false;
        };
        if pos + 1 < self.history.len() {
            let text = self.history[pos + 1].clone();
            self.set_text(&text);
            self.browsing = Some((pos + 1, stash));
        } else {
            self.set_text(&stash);
        }
        true
    }

    /// Rows of the draft wrapped to `width` columns, and the cursor's (row, column).
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(1);
        let mut rows = Vec::new();
        let mut cursor = (0, 0);
        for (r, line) in self.lines.iter().enumerate() {
            let mut cur = String::new();
            let mut used = 0;
            for (i, c) in line.char_indices() {
                let mut buf = [0u8; 4];
                let (shown, cw) = shown(c, &mut buf);
                if used + cw > width && used > 0 {
                    rows.push(std::mem::take(&mut cur));
                    used = 0;
                }
                if r == self.row && i == self.col {
                    cursor = (rows.len(), used);
                }
                cur.push_str(shown);
                used += cw;
            }
            if r == self.row && self.col >= line.len() {
                if used >= width {
                    rows.push(std::mem::take(&mut cur));
                    used = 0;
                }
                cursor = (rows.len(), used);
            }
            rows.push(cur);
        }
        (rows, cursor)
    }
}

/// How a draft character appears on screen and its width: a tab as spaces, ESC as `␛`, other
/// control characters and invisible or reordering ones (a pasted bidi override) as
/// `\u{fffd}` (as `wrap::sanitize` does), anything else as itself.
fn shown(c: char, buf: &mut [u8; 4]) -> (&str, usize) {
    match c {
        '\t' => (TAB, TAB.len()),
        '\u{1b}' => ("␛", 1),
        c if is_control(c) || is_invisible(c) => ("\u{fffd}", 1),
        c => (c.encode_utf8(buf), char_width(c)),
    }
}

fn prev_boundary(s: &str, i: usize) -> usize {
    s[..i].char_indices().next_back().map_or(0, |(j, _)| j)
}

fn next_boundary(s: &str, i: usize) -> usize {
    s[i..].chars().next().map_or(i, |c| i + c.len_utf8())
}

fn word_start(line: &str, col: usize) -> usize {
    let before = &line[..col];
    let trimmed = before.trim_end();
    trimmed.rfind(char::is_whitespace).map_or(0, |i| {
        i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
    })
}
