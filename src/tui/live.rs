//! A running tool call's live output (`ToolOutputDelta` events): the last few lines under the
//! call with the elapsed time, until `ToolCallEnded` replaces them with the capped result.
//!
//! Memory and work are bounded whatever the command prints: only the last [`TAIL_LINES`]
//! lines are kept (each cut at [`LINE_CAP`] bytes), a piece of output is scanned once, and a
//! `\r` progress rewrite replaces the line instead of adding one. No I/O; the state decides
//! when the elapsed time moves.

use std::collections::VecDeque;
use std::time::Instant;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{sanitize, truncate};
use crate::sanitize::text::floor_boundary;

/// Lines of live output shown under a running call.
pub(crate) const TAIL_LINES: usize = 5;
/// Bytes of one line kept (a line without end stays bounded).
const LINE_CAP: usize = 1024;

/// The output of a call while it runs.
#[derive(Debug, Clone)]
pub(crate) struct Running {
    /// When it started running (after its approval, if it needed one).
    pub(crate) started: Instant,
    /// Whole seconds since `started`, as last drawn.
    pub(crate) secs: u64,
    pub(crate) tail: Tail,
}

impl Running {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            started: now,
            secs: 0,
            tail: Tail::default(),
        }
    }
}

/// The last lines of a stream of terminal-style output.
#[derive(Debug, Clone, Default)]
pub struct Tail {
    done: VecDeque<String>,
    /// The line being written (not ended by `\n` yet).
    current: String,
    /// The last piece ended with `\r`: unless `\n` follows, the next text rewrites the line.
    rewrite: bool,
    /// Lines ended so far, and bytes received.
    pub lines: u64,
    pub(crate) bytes: u64,
}

impl Tail {
    /// Takes the next piece of output.
    pub fn push(&mut self, text: &str) {
        self.bytes += text.len() as u64;
        let ends = memchr_count(text.as_bytes(), b'\n');
        // Lines that end in this piece and would scroll out of the tail anyway are skipped
        // without being copied.
        let skip_below = ends.saturating_sub(TAIL_LINES as u64);
        for (i, part) in text.split('\n').enumerate() {
            let i = i as u64;
            if i > 0 {
                self.end_line(i <= skip_below);
            }
            if i < skip_below && i > 0 {
                continue;
            }
            self.write(part);
        }
    }

    fn end_line(&mut self, skipped: bool) {
        // `\r\n` ends the line; it is not a rewrite.
        self.rewrite = false;
        self.lines += 1;
        let line = std::mem::take(&mut self.current);
        if skipped {
            return;
        }
        self.done.push_back(line);
        while self.done.len() > TAIL_LINES {
            self.done.pop_front();
        }
    }

    /// Text within one line: after a `\r`, what follows replaces the line.
    fn write(&mut self, part: &str) {
        if part.is_empty() {
            return;
        }
        if self.rewrite {
            self.current.clear();
            self.rewrite = false;
        }
        let (body, ends_cr) = match part.strip_suffix('\r') {
            Some(b) => (b, true),
            None => (part, false),
        };
        let latest = match body.rfind('\r') {
            Some(at) => {
                self.current.clear();
                &body[at + 1..]
            }
            None => body,
        };
        let room = LINE_CAP.saturating_sub(self.current.len());
        if room > 0 {
            let end = floor_boundary(latest, room);
            self.current.push_str(&latest[..end]);
        }
        self.rewrite = ends_cr;
    }

    /// The lines to show, oldest first: the last complete ones and the line being written.
    pub fn shown(&self) -> Vec<&str> {
        let mut lines: Vec<&str> = self.done.iter().map(String::as_str).collect();
        if !self.current.is_empty() {
            lines.push(&self.current);
        }
        let extra = lines.len().saturating_sub(TAIL_LINES);
        lines.drain(..extra);
        lines
    }
}

fn memchr_count(bytes: &[u8], b: u8) -> u64 {
    bytes.iter().filter(|&&c| c == b).count() as u64
}

/// The lines drawn under a running call: its tail (one row each, cut to the width) and a line
/// with the elapsed time and how much it printed.
pub(crate) fn lines(run: &Running, width: usize) -> Vec<Line<'static>> {
    let style = Style::new().fg(Color::DarkGray);
    let mut out = Vec::new();
    for l in run.tail.shown() {
        let text = truncate(&sanitize(l.trim_end()), width.saturating_sub(6));
        out.push(Line::from(vec![
            Span::styled("    │ ", style),
            Span::styled(text, style),
        ]));
    }
    let mut status = format!("running {}s", run.secs);
    if run.tail.bytes > 0 {
        status.push_str(&format!(
            " · {} lines · {}",
            run.tail.lines,
            bytes(run.tail.bytes)
        ));
    }
    out.push(Line::from(vec![
        Span::raw("    "),
        Span::styled(
            truncate(&status, width.saturating_sub(4)),
            style.add_modifier(Modifier::ITALIC),
        ),
    ]));
    out
}

fn bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MB", n as f64 / (1u64 << 20) as f64)
    } else if n >= 1 << 10 {
        format!("{:.1} KB", n as f64 / 1024.0)
    } else {
        format!("{n} B")
    }
}
