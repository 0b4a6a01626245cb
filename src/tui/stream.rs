//! Splits a growing Markdown reply into segments that can be rendered independently, so a
//! streaming reply costs one small re-render per frame however long it grows.
//!
//! A segment closes at a blank line followed by an unindented line (a new top-level block), or
//! every [`FENCE_CHUNK`] lines inside a fenced code block (the next segment re-opens the fence).
//! This module only finds cut points; it must not render or cache.

/// Lines of a code fence kept in one segment before it is cut.
const FENCE_CHUNK: usize = 64;

/// Where a closed segment ends and how the next one starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// Byte offset in the text where the segment ends.
    pub end: usize,
    /// A fence opener to prepend to the next segment (the cut fell inside a code block).
    pub reopen: Option<String>,
    /// The next segment is a new block: separate it by a blank line.
    pub separate: bool,
}

#[derive(Debug, Clone)]
struct Fence {
    ch: u8,
    len: usize,
    opener: String,
}

/// Incremental cut finder over an append-only text.
#[derive(Debug, Clone, Default)]
pub struct Splitter {
    cuts: Vec<Cut>,
    /// Start of the first line not yet scanned (an incomplete line).
    line_start: usize,
    fence: Option<Fence>,
    fence_lines: usize,
    blank_end: Option<usize>,
}

impl Splitter {
    pub fn cuts(&self) -> &[Cut] {
        &self.cuts
    }

    /// Scans the complete lines of `text` not seen yet. `text` must extend the text given to
    /// earlier calls.
    pub fn feed(&mut self, text: &str) {
        while let Some(nl) = text[self.line_start..].find('\n') {
            let start = self.line_start;
            let end = start + nl + 1;
            self.line(&text[start..end - 1], end);
            self.line_start = end;
        }
    }

    fn line(&mut self, line: &str, end: usize) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(f) = &self.fence {
            if closes(line, f) {
                self.fence = None;
                self.fence_lines = 0;
            } else {
                self.fence_lines += 1;
                if self.fence_lines >= FENCE_CHUNK {
                    self.fence_lines = 0;
                    let reopen = Some(f.opener.clone());
                    self.cuts.push(Cut {
                        end,
                        reopen,
                        separate: false,
                    });
                }
            }
            return;
        }
        if line.trim().is_empty() {
            self.blank_end = Some(end);
            return;
        }
        if let Some(b) = self.blank_end.take()
            && !line.starts_with([' ', '\t'])
        {
            self.cuts.push(Cut {
                end: b,
                reopen: None,
                separate: true,
            });
        }
        self.fence = opens(line);
        self.fence_lines = 0;
    }
}

fn strip_indent(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    (line.len() - trimmed.len() <= 3).then_some(trimmed)
}

fn opens(line: &str) -> Option<Fence> {
    let t = strip_indent(line)?;
    let ch = *t.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = t.bytes().take_while(|b| *b == ch).count();
    if len < 3 || (ch == b'`' && t[len..].contains('`')) {
        return None;
    }
    Some(Fence {
        ch,
        len,
        opener: line.to_string(),
    })
}

fn closes(line: &str, f: &Fence) -> bool {
    let Some(t) = strip_indent(line) else {
        return false;
    };
    let len = t.bytes().take_while(|b| *b == f.ch).count();
    len >= f.len && t[len..].trim().is_empty()
}
