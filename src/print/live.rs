//! The one-shot mode's live tail of a running command on a terminal stderr: one line, the
//! latest state of the command's last output line (`\r` progress rewrites replace it), with
//! the elapsed time, rewritten in place (`\r` and spaces, no escape sequences) and erased
//! before anything else is written.
//!
//! Only used when stderr is a terminal; never written to a pipe or a file, where the final
//! result line says what happened.

use std::io::Write;
use std::time::Instant;

use crate::sanitize::sanitize;

/// Characters of the command's line shown at most.
const SHOWN: usize = 100;

/// The tail line and whether it is on screen.
#[derive(Debug, Default)]
pub(super) struct Tail {
    /// The latest complete line, or the line being written.
    line: String,
    /// The partial line being written, if the last piece did not end a line.
    partial: String,
    /// A `\r` ended the last piece: the next text rewrites the line.
    rewrite: bool,
    started: Option<Instant>,
    /// Columns of the tail line on screen (0: none).
    shown: usize,
}

impl Tail {
    /// A call began: its output starts now.
    pub(super) fn start(&mut self, now: Instant) {
        *self = Tail {
            started: Some(now),
            ..Tail::default()
        };
    }

    /// Takes a piece of output and redraws the tail line.
    pub(super) fn push(&mut self, err: &mut impl Write, text: &str, now: Instant) {
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                // A line ended (a `\r` right before it was a CRLF, not a rewrite).
                self.rewrite = false;
                if !self.partial.trim().is_empty() {
                    self.line = std::mem::take(&mut self.partial);
                }
                self.partial.clear();
            }
            if part.is_empty() {
                continue;
            }
            if self.rewrite {
                self.partial.clear();
                self.rewrite = false;
            }
            let (body, ends_cr) = match part.strip_suffix('\r') {
                Some(b) => (b, true),
                None => (part, false),
            };
            let latest = body.rsplit('\r').next().unwrap_or(body);
            if latest.len() != body.len() {
                self.partial.clear();
            }
            if self.partial.len() < 4 * SHOWN {
                self.partial.push_str(latest);
            }
            self.rewrite = ends_cr;
        }
        self.draw(err, now);
    }

    fn draw(&mut self, err: &mut impl Write, now: Instant) {
        let current = if self.partial.trim().is_empty() {
            &self.line
        } else {
            &self.partial
        };
        let shown: String = sanitize(current.trim_end()).chars().take(SHOWN).collect();
        let secs = self
            .started
            .map_or(0, |t| now.saturating_duration_since(t).as_secs());
        // Plain `\r` and spaces, no escape sequence: what is written is text only.
        let line = format!("  │ {shown}  ({secs}s)");
        let width = line.chars().count();
        let pad = " ".repeat(self.shown.saturating_sub(width));
        let _ = write!(err, "\r{line}{pad}");
        let _ = err.flush();
        self.shown = width;
    }

    /// Erases the tail line, if it is shown, so the next line starts clean.
    pub(super) fn clear(&mut self, err: &mut impl Write) {
        if self.shown > 0 {
            let _ = write!(err, "\r{}\r", " ".repeat(self.shown));
            let _ = err.flush();
            self.shown = 0;
        }
    }
}
