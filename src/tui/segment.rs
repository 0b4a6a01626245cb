//! Splits a growing Markdown reply into segments that can be rendered independently, so a
//! streaming reply costs one small re-render per frame however long it grows, whatever its
//! shape.
//!
//! A segment closes:
//! - at a blank line followed by an unindented line (a new top-level block);
//! - before each top-level item of a list that goes on with the same marker (no blank line:
//!   tight items render the same apart as together, and ordered items keep their number);
//! - every [`TABLE_CHUNK`] rows of a table (the next segment repeats the header row, so each
//!   segment renders as a table of its own, header included);
//! - every [`FENCE_CHUNK`] lines inside a fenced code block (the next segment re-opens the
//!   fence);
//! - inside a paragraph of more than [`PARAGRAPH_CHUNK`] lines, before a line that plainly
//!   continues it (starts with a letter), so the wrap restarts there.
//!
//! This module only finds cut points; it must not render or cache.

/// Lines of a code fence kept in one segment before it is cut.
const FENCE_CHUNK: usize = 64;
/// Table rows kept in one segment before it is cut (the header is repeated after the cut).
pub const TABLE_CHUNK: usize = 64;
/// Lines of one paragraph kept in one segment before it is cut at a line end.
pub const PARAGRAPH_CHUNK: usize = 32;

/// Where a closed segment ends and how the next one starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// Byte offset in the text where the segment ends.
    pub end: usize,
    /// Lines to prepend to the next segment: a fence opener (the cut fell inside a code block)
    /// or a table's header and delimiter rows.
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

/// A list marker: its bullet character, or the delimiter after an ordered item's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Bullet(u8),
    Ordered(u8),
}

/// The top-level block the last lines belong to, as far as cutting needs to know.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Block {
    /// Nothing yet, or a blank line just passed.
    #[default]
    None,
    /// A paragraph of `lines` lines (since it started or was last cut).
    Paragraph { lines: usize },
    /// A list whose top-level items use this marker.
    List(Marker),
    /// A table: its header and delimiter rows, and rows since it started or was last cut.
    Table { head: String, rows: usize },
    /// Anything else (headings, quotes, HTML, a list's lazy continuation…): never cut inside.
    Other,
}

/// Incremental cut finder over an append-only text.
#[derive(Debug, Clone, Default)]
pub struct Splitter {
    cuts: Vec<Cut>,
    /// Start of the first line not yet scanned (an incomplete line).
    line_start: usize,
    /// How far the incomplete line has been searched for its end (so a long line costs once).
    searched: usize,
    /// Bytes searched for line ends over all calls: the work `feed` did, which a test can bound.
    work: usize,
    /// Start and end of the previous line (a table header is known only at its delimiter row).
    prev_line: (usize, usize),
    /// The previous line started a block (a table header must).
    prev_started: bool,
    fence: Option<Fence>,
    fence_lines: usize,
    blank_end: Option<usize>,
    block: Block,
}

impl Splitter {
    pub fn cuts(&self) -> &[Cut] {
        &self.cuts
    }

    /// How many bytes all calls to [`Splitter::feed`] searched in all: each byte once when the
    /// text grows by appends, however long its lines. Lets a test catch a rescan that is
    /// quadratic without timing it.
    pub fn scanned_bytes(&self) -> usize {
        self.work
    }

    /// Scans the complete lines of `text` not seen yet. `text` must extend the text given to
    /// earlier calls.
    pub fn feed(&mut self, text: &str) {
        let from = self.searched.max(self.line_start);
        self.work += text.len() - from;
        let Some(nl) = text[from..].find('\n') else {
            self.searched = text.len();
            return;
        };
        let mut nl = from + nl;
        loop {
            let start = self.line_start;
            let end = nl + 1;
            let starts_block = self.block == Block::None;
            self.line(text, start, nl);
            self.prev_line = (start, nl);
            self.prev_started = starts_block;
            self.line_start = end;
            match text[end..].find('\n') {
                Some(n) => nl = end + n,
                None => break,
            }
        }
        self.searched = text.len();
    }

    fn cut(&mut self, end: usize, reopen: Option<String>, separate: bool) {
        self.cuts.push(Cut {
            end,
            reopen,
            separate,
        });
    }

    /// Looks at the complete line `text[start..nl]` (its `\n` at `nl`).
    fn line(&mut self, text: &str, start: usize, nl: usize) {
        let raw = &text[start..nl];
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(f) = &self.fence {
            if closes(line, f) {
                self.fence = None;
                self.fence_lines = 0;
            } else {
                self.fence_lines += 1;
                if self.fence_lines >= FENCE_CHUNK {
                    self.fence_lines = 0;
                    let reopen = Some(f.opener.clone());
                    self.cut(nl + 1, reopen, false);
                }
            }
            return;
        }
        if line.trim().is_empty() {
            self.blank_end = Some(nl + 1);
            // A table ends at a blank line; a list or paragraph may go on after it.
            if matches!(self.block, Block::Table { .. } | Block::Paragraph { .. }) {
                self.block = Block::None;
            }
            return;
        }
        let indented = line.starts_with([' ', '\t']);
        if let Some(b) = self.blank_end.take()
            && !indented
        {
            self.cut(b, None, true);
            self.block = Block::None;
        }
        self.block_line(text, line, start, indented);
        self.fence = opens(line);
        self.fence_lines = 0;
    }

    /// Follows the top-level block through one non-blank line outside a fence, cutting before
    /// the line where a new segment renders the same as the text as a whole.
    fn block_line(&mut self, text: &str, line: &str, start: usize, indented: bool) {
        let block = std::mem::take(&mut self.block);
        self.block = match block {
            Block::Table { head, rows } if line.contains('|') => {
                if rows >= TABLE_CHUNK {
                    self.cut(start, Some(head.clone()), false);
                    Block::Table { head, rows: 1 }
                } else {
                    Block::Table {
                        head,
                        rows: rows + 1,
                    }
                }
            }
            _ if indented => match block {
                // An indented line continues a list item or a paragraph; not a place to cut.
                Block::Paragraph { lines } => Block::Paragraph { lines: lines + 1 },
                Block::List(m) => Block::List(m),
                _ => Block::Other,
            },
            _ if is_delimiter_row(line)
                && self.prev_started
                && text[self.prev_line.0..self.prev_line.1].contains('|') =>
            {
                let (s, e) = self.prev_line;
                let head = text[s..e].strip_suffix('\r').unwrap_or(&text[s..e]);
                Block::Table {
                    head: format!("{head}\n{line}"),
                    rows: 0,
                }
            }
            // An ATX heading is a block of one line.
            _ if is_heading(line) => Block::None,
            _ => match item_marker(line) {
                // Only a bullet with content or an ordered item numbered 1 can interrupt a
                // paragraph; anything else is paragraph text.
                Some(m)
                    if matches!(block, Block::Paragraph { .. })
                        && (line.trim_end().len() <= 1
                            || (matches!(m, Marker::Ordered(_))
                                && !line.starts_with("1.")
                                && !line.starts_with("1)"))) =>
                {
                    match block {
                        Block::Paragraph { lines } => Block::Paragraph { lines: lines + 1 },
                        other => other,
                    }
                }
                Some(m) => {
                    if block == Block::List(m) {
                        self.cut(start, None, false);
                    }
                    Block::List(m)
                }
                None if starts_plainly(line) => match block {
                    Block::None => Block::Paragraph { lines: 1 },
                    Block::Paragraph { lines } if lines >= PARAGRAPH_CHUNK => {
                        self.cut(start, None, false);
                        Block::Paragraph { lines: 1 }
                    }
                    Block::Paragraph { lines } => Block::Paragraph { lines: lines + 1 },
                    _ => Block::Other,
                },
                None => Block::Other,
            },
        };
    }
}

/// A line that can only continue a paragraph (or start one): it begins with a letter, so it
/// is no list item, heading, quote, fence, table delimiter, setext underline or HTML.
fn starts_plainly(line: &str) -> bool {
    line.chars().next().is_some_and(char::is_alphabetic)
}

fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && matches!(line.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
}

/// The marker of a list item that starts at column 0 (a thematic break is not an item).
fn item_marker(line: &str) -> Option<Marker> {
    let b = line.as_bytes();
    match b.first()? {
        c @ (b'-' | b'*' | b'+') => {
            let spaced = b.len() == 1 || b[1] == b' ' || b[1] == b'\t';
            let rule = b
                .iter()
                .filter(|x| !x.is_ascii_whitespace())
                .all(|x| x == c)
                && b.iter().filter(|x| *x == c).count() >= 3;
            (spaced && !rule).then_some(Marker::Bullet(*c))
        }
        b'0'..=b'9' => {
            let digits = b.iter().take_while(|x| x.is_ascii_digit()).count();
            let delim = *b.get(digits)?;
            let after = b.get(digits + 1);
            (digits <= 9
                && (delim == b'.' || delim == b')')
                && after.is_none_or(|x| *x == b' ' || *x == b'\t'))
            .then_some(Marker::Ordered(delim))
        }
        _ => None,
    }
}

/// A table's delimiter row: pipes, dashes, colons and spaces, with at least one pipe and dash.
fn is_delimiter_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('|')
        && t.contains('-')
        && t.bytes()
            .all(|b| matches!(b, b'|' | b'-' | b':' | b' ' | b'\t'))
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
