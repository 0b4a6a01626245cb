//! The model's reasoning in the transcript: a dimmed entry that shows its last lines while it
//! streams and folds to fewer once the answer (or a tool call) begins; Ctrl+O, which unfolds
//! tool output, shows it whole. Reasoning is never the answer: `/copy` takes the reply; the exit
//! transcript shows the entry as it is drawn (folded).
//!
//! Rendering only looks at the end of the text while folded, so a long think costs the same
//! per frame as a short one. No I/O; part of `update` (the two `State` methods) and of the
//! transcript's layout (`lines`).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::state::State;
use super::transcript::Kind;
use super::wrap::{self, Run, sanitize};

/// Lines shown while the reasoning streams.
pub(crate) const STREAMING_LINES: usize = 8;
/// Lines shown once the answer has begun.
pub(crate) const FOLDED_LINES: usize = 3;

/// One reply's reasoning.
#[derive(Debug, Clone, Default)]
pub struct Thought {
    /// The reasoning, leading whitespace dropped.
    pub(crate) text: String,
    /// Line ends in `text`, counted as it grows so a fold never scans the whole text.
    pub(crate) newlines: usize,
    /// Still streaming (no answer or tool call yet).
    pub(crate) open: bool,
}

impl Thought {
    fn push(&mut self, delta: &str) {
        let delta = if self.text.is_empty() {
            delta.trim_start()
        } else {
            delta
        };
        self.newlines += delta.matches('\n').count();
        self.text.push_str(delta);
    }
}

impl State {
    /// Appends streamed reasoning to the open entry, or opens one.
    pub(crate) fn reasoning_delta(&mut self, text: &str) {
        let open = self.transcript.len().checked_sub(1).filter(
            |&i| matches!(self.transcript.entries()[i].kind(), Kind::Reasoning(t) if t.open),
        );
        match open {
            Some(i) => self.transcript.edit(i, |k| {
                if let Kind::Reasoning(t) = k {
                    t.push(text);
                }
            }),
            None => {
                let mut t = Thought {
                    open: true,
                    ..Thought::default()
                };
                t.push(text);
                self.transcript.push(Kind::Reasoning(t));
            }
        }
    }

    /// The answer (or a tool call, or the end of the turn) came: fold the open reasoning.
    pub(crate) fn close_reasoning(&mut self) {
        let open = self
            .transcript
            .entries()
            .iter()
            .rposition(|e| matches!(e.kind(), Kind::Reasoning(t) if t.open));
        if let Some(i) = open {
            self.transcript.edit(i, |k| {
                if let Kind::Reasoning(t) = k {
                    t.open = false;
                }
            });
        }
    }
}

/// The entry's lines at `width`: a header, then the last lines (all when `expanded`).
pub(crate) fn lines(t: &Thought, width: usize, expanded: bool) -> Vec<Line<'static>> {
    let style = Style::new()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC);
    let keep = if expanded {
        usize::MAX
    } else if t.open {
        STREAMING_LINES
    } else {
        FOLDED_LINES
    };
    let (hidden, tail) = last_lines(t, keep);
    let header = if t.open { "thinking…" } else { "thought" };
    let mut lines = vec![Line::from(Span::styled(format!("∴ {header}"), style))];
    let indent = || vec![Span::raw("  ")];
    let mut wrapped = Vec::new();
    for l in sanitize(tail).split('\n') {
        wrapped.extend(wrap::wrap(
            &[Run::new(l.to_string(), style)],
            width,
            &indent(),
            &indent(),
        ));
    }
    // A long line wraps into many rows: the fold counts rows, not source lines.
    let cut = if expanded {
        0
    } else {
        wrapped.len().saturating_sub(keep)
    };
    let more = hidden + cut;
    if more > 0 {
        let note = format!("  … {more} earlier lines (Ctrl+O to expand)");
        lines.push(Line::from(Span::styled(note, style)));
    }
    lines.extend(wrapped.into_iter().skip(cut));
    lines
}

/// The last `n` lines of the reasoning (trailing whitespace dropped), and how many lines come
/// before them. Only the end of the text is scanned.
fn last_lines(t: &Thought, n: usize) -> (usize, &str) {
    let text = t.text.trim_end();
    if n == usize::MAX {
        return (0, text);
    }
    let mut start = text.len();
    for _ in 0..n {
        match text[..start].rfind('\n') {
            Some(at) => start = at,
            None => return (0, text),
        }
    }
    // Line ends before `start`, plus the one at it, are the hidden lines.
    let after = t.text[start..].matches('\n').count();
    let hidden = t.newlines.saturating_sub(after) + 1;
    (hidden, &text[start + 1..])
}
