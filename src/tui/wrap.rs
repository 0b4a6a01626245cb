//! Line breaking for the terminal: wraps styled runs by display width (CJK, emoji and combining
//! marks included). Everything model- or tool-supplied passes through
//! [`crate::sanitize::sanitize`] before it can reach a terminal cell; this module must not
//! know about transcripts, Markdown or widgets.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

pub(crate) use crate::sanitize::{TAB, is_control, sanitize};

/// Display width of a string in terminal columns.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// Display width of one character (0 for combining marks).
pub(crate) fn char_width(c: char) -> usize {
    UnicodeWidthChar::width(c).unwrap_or(0)
}

/// A styled piece of text before wrapping; `\n` inside forces a line break.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub(crate) text: String,
    pub(crate) style: Style,
}

impl Run {
    pub fn new(text: impl Into<String>, style: Style) -> Self {
        Self {
            text: text.into(),
            style,
        }
    }
}

/// Wraps `runs` into lines no wider than `width` columns, each starting with `first` (first
/// line) or `rest` (continuations) as prefix. Breaks at spaces, between wide (CJK) characters,
/// and inside words only when a word alone is wider than the line.
pub fn wrap(
    runs: &[Run],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut w = Wrapper::new(width, first, rest);
    for run in runs {
        w.push_run(&run.text, run.style);
    }
    w.finish()
}

struct Wrapper<'p> {
    width: usize,
    rest: &'p [Span<'static>],
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    /// Columns used on the current line, prefix included.
    used: usize,
    /// Columns taken by the current line's prefix.
    prefix_width: usize,
    /// A space seen since the last word, written only if another word follows on this line.
    pending_space: Option<Style>,
}

impl<'p> Wrapper<'p> {
    fn new(width: usize, first: &[Span<'static>], rest: &'p [Span<'static>]) -> Self {
        let prefix_width = first.iter().map(|s| width_of(s)).sum();
        Self {
            width,
            rest,
            lines: Vec::new(),
            spans: first.to_vec(),
            used: prefix_width,
            prefix_width,
            pending_space: None,
        }
    }

    /// Room for text on a line; at least one column so tiny windows still make progress.
    fn capacity(&self) -> usize {
        self.width.max(self.prefix_width + 1)
    }

    fn push_run(&mut self, text: &str, style: Style) {
        let mut word_start: Option<usize> = None;
        for (i, c) in text.char_indices() {
            let breaks = c == ' ' || c == '\n' || char_width(c) >= 2;
            if breaks {
                if let Some(s) = word_start.take() {
                    self.push_word(&text[s..i], style);
                }
                match c {
                    ' ' => {
                        if self.used > self.prefix_width {
                            self.pending_space = Some(style);
                        }
                    }
                    '\n' => self.break_line(),
                    _ => self.push_word(&text[i..i + c.len_utf8()], style),
                }
            } else if word_start.is_none() {
                word_start = Some(i);
            }
        }
        if let Some(s) = word_start {
            self.push_word(&text[s..], style);
        }
    }

    fn push_word(&mut self, word: &str, style: Style) {
        let w = width(word);
        let space = usize::from(self.pending_space.is_some());
        if self.used + space + w <= self.capacity() {
            if let Some(space_style) = self.pending_space.take() {
                self.append(" ", space_style, 1);
            }
            self.append(word, style, w);
            return;
        }
        self.pending_space = None;
        if self.used > self.prefix_width && self.prefix_width + w <= self.capacity() {
            self.break_line();
            self.append(word, style, w);
            return;
        }
        // A word wider than a whole line: split it at character boundaries.
        let mut start = 0;
        let mut piece_width = 0;
        for (i, c) in word.char_indices() {
            let cw = char_width(c);
            if self.used + piece_width + cw > self.capacity()
                && (piece_width > 0 || self.used > self.prefix_width)
            {
                self.append(&word[start..i], style, piece_width);
                self.break_line();
                start = i;
                piece_width = 0;
            }
            piece_width += cw;
        }
        self.append(&word[start..], style, piece_width);
    }

    fn append(&mut self, text: &str, style: Style, w: usize) {
        if text.is_empty() {
            return;
        }
        self.used += w;
        if let Some(last) = self.spans.last_mut()
            && last.style == style
            && self.used - w > self.prefix_width
        {
            last.content.to_mut().push_str(text);
            return;
        }
        self.spans.push(Span::styled(text.to_string(), style));
    }

    fn break_line(&mut self) {
        let spans = std::mem::replace(&mut self.spans, self.rest.to_vec());
        self.lines.push(Line::from(spans));
        self.prefix_width = self.rest.iter().map(|s| width_of(s)).sum();
        self.used = self.prefix_width;
        self.pending_space = None;
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        self.lines.push(Line::from(std::mem::take(&mut self.spans)));
        self.lines
    }
}

fn width_of(span: &Span<'_>) -> usize {
    width(&span.content)
}

/// The plain text of a rendered line (for copying and for tests).
pub fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// Cuts `text` to at most `max` columns, adding `…` when something was cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let cw = char_width(c);
        if used + cw + 1 > max {
            break;
        }
        used += cw;
        out.push(c);
    }
    out.push('…');
    out
}

/// Breaks `text` at exactly `width` columns, keeping every space (for code).
pub(crate) fn wrap_hard(
    text: &str,
    width: usize,
    first: Vec<Span<'static>>,
    rest: Vec<Span<'static>>,
    style: Style,
) -> Vec<Line<'static>> {
    wrap_hard_runs(&[(style, text)], width, first, rest)
}

/// [`wrap_hard`] for styled runs (highlighted code).
pub(crate) fn wrap_hard_runs(
    runs: &[(Style, &str)],
    width: usize,
    first: Vec<Span<'static>>,
    rest: Vec<Span<'static>>,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut spans = first;
    let mut used: usize = spans
        .iter()
        .map(|s| UnicodeWidthStr::width(s.content.as_ref()))
        .sum();
    let mut prefix_w = used;
    for (style, text) in runs {
        let mut cur = String::new();
        for c in text.chars() {
            let cw = char_width(c);
            if used + cw > width.max(prefix_w + 1) && used > prefix_w {
                if !cur.is_empty() {
                    spans.push(Span::styled(std::mem::take(&mut cur), *style));
                }
                lines.push(Line::from(std::mem::replace(&mut spans, rest.clone())));
                used = rest
                    .iter()
                    .map(|s| UnicodeWidthStr::width(s.content.as_ref()))
                    .sum();
                prefix_w = used;
            }
            cur.push(c);
            used += cw;
        }
        if !cur.is_empty() {
            spans.push(Span::styled(cur, *style));
        }
    }
    lines.push(Line::from(spans));
    lines
}

#[cfg(test)]
mod tests {
    use ratatui::style::Style;
    use ratatui::text::Span;

    use super::{Run, line_text, truncate, width, wrap, wrap_hard};

    fn lines(runs: &[Run], width: usize, first: &str, rest: &str) -> Vec<String> {
        let first = [Span::raw(first.to_string())];
        let rest = [Span::raw(rest.to_string())];
        wrap(runs, width, &first, &rest)
            .iter()
            .map(line_text)
            .collect()
    }

    #[test]
    fn words_break_at_spaces_and_continuations_get_their_prefix() {
        let run = Run::new("the quick brown fox jumps", Style::default());
        let out = lines(&[run], 12, "> ", "  ");
        assert_eq!(out, ["> the quick", "  brown fox", "  jumps"]);
        assert!(out.iter().all(|l| width(l) <= 12));
    }

    #[test]
    fn a_word_wider_than_the_line_is_cut_and_a_newline_forces_a_break() {
        let run = Run::new("abcdefghij\nxy", Style::default());
        let out = lines(&[run], 4, "", "");
        assert_eq!(out, ["abcd", "efgh", "ij", "xy"]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let run = Run::new("漢字漢字漢字", Style::default());
        let out = lines(&[run], 5, "", "");
        assert_eq!(out, ["漢字", "漢字", "漢字"]);
    }

    #[test]
    fn truncate_marks_what_it_cut() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("a long line", 6), "a lon…");
        assert!(width(&truncate("漢字漢字", 5)) <= 5);
    }

    #[test]
    fn hard_wrap_keeps_every_space() {
        let out: Vec<String> = wrap_hard("a  b  c", 3, vec![], vec![], Style::default())
            .iter()
            .map(line_text)
            .collect();
        assert_eq!(out.concat(), "a  b  c");
        assert_eq!(out[0], "a  ");
    }
}
