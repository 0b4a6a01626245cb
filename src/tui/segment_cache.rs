//! A reply's closed segments at one width: the height of every one of them, but the rendered
//! lines of only those read recently.
//!
//! A long reply used to keep every rendered line: a `Line` with its spans and their strings
//! costs a few hundred bytes, so a 200 KB reply held ~6 MB of lines of which a screenful is
//! ever on screen at once. The layout needs heights (to scroll and to find the tail window),
//! and heights are known once a segment was rendered; the lines themselves are cheap to
//! render again from the reply's text on the rare occasion a far-away segment is read
//! (scrolling back, a search, a copy). So memory is bounded by [`RESIDENT_LINES`] per reply,
//! whatever its length, and the frame cost stays what it was.
//!
//! Pure bookkeeping: rendering is the caller's, given as a closure.

use ratatui::text::Line;

/// Rendered lines kept per reply beyond the segment just read: several screens' worth, so
/// scrolling near the tail and a frame's rows never re-render.
const RESIDENT_LINES: usize = 1024;

/// Whether a closed segment's fenced code is highlighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    /// No fence: highlighting changes nothing.
    None,
    /// A fence, never drawn yet: rendered plain.
    Plain,
    /// Drawn once: rendered highlighted from now on.
    Highlighted,
    /// Highlighting would have changed its line count, so it stays plain (nothing moves).
    KeptPlain,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    /// First line of the segment among the closed segments' lines.
    start: usize,
    len: usize,
    code: Code,
}

struct Resident {
    segment: usize,
    /// When it was last read (a counter): the least recent is dropped first.
    used: u64,
    lines: Vec<Line<'static>>,
}

/// The closed segments of one reply at one width.
#[derive(Default)]
pub(crate) struct ClosedSegments {
    segments: Vec<Segment>,
    lines: usize,
    resident: Vec<Resident>,
    resident_lines: usize,
    clock: u64,
}

impl ClosedSegments {
    /// Segments closed so far.
    pub(crate) fn count(&self) -> usize {
        self.segments.len()
    }

    /// Lines of all closed segments together.
    pub(super) fn lines(&self) -> usize {
        self.lines
    }

    /// Rendered lines held now.
    pub(crate) fn resident_lines(&self) -> usize {
        self.resident_lines
    }

    /// Adds the next closed segment, rendered as `lines`; `fenced` if it may hold code that
    /// highlighting would colour (it was rendered plain, and is highlighted when drawn).
    pub(super) fn push(&mut self, lines: Vec<Line<'static>>, fenced: bool) {
        let segment = self.segments.len();
        self.segments.push(Segment {
            start: self.lines,
            len: lines.len(),
            code: if fenced { Code::Plain } else { Code::None },
        });
        self.lines += lines.len();
        self.keep(segment, lines);
    }

    /// Line `line` of the closed segments, rendered again by `render(segment, highlight)` if it
    /// was dropped.
    /// `drawn`: it is about to be on screen, so a fenced segment is highlighted now (the
    /// first time only; a fast reply's code mostly scrolls past unseen and is never
    /// highlighted at all).
    pub(crate) fn line(
        &mut self,
        line: usize,
        drawn: bool,
        render: impl Fn(usize, bool) -> Vec<Line<'static>>,
    ) -> Option<&Line<'static>> {
        if line >= self.lines {
            return None;
        }
        let k = self.segments.partition_point(|s| s.start + s.len <= line);
        let seg = *self.segments.get(k)?;
        if drawn && seg.code == Code::Plain {
            let lines = render(k, true);
            let fits = lines.len() == seg.len;
            self.segments[k].code = if fits {
                Code::Highlighted
            } else {
                Code::KeptPlain
            };
            if fits {
                self.drop_resident(k);
                self.keep(k, lines);
            }
        }
        let at = match self.resident.iter().position(|r| r.segment == k) {
            Some(at) => at,
            None => {
                let lines = render(k, self.segments[k].code == Code::Highlighted);
                if lines.len() != seg.len {
                    // The text a segment renders from never changes once closed; a different
                    // count would be a bug, and showing nothing beats showing wrong lines.
                    return None;
                }
                self.keep(k, lines)
            }
        };
        self.clock += 1;
        let resident = &mut self.resident[at];
        resident.used = self.clock;
        resident.lines.get(line - seg.start)
    }

    /// Holds `lines` as segment `k`'s, dropping the least recently read others while over
    /// the budget; returns where they are held.
    fn keep(&mut self, k: usize, lines: Vec<Line<'static>>) -> usize {
        self.resident_lines += lines.len();
        while self.resident_lines > RESIDENT_LINES && !self.resident.is_empty() {
            let oldest = self
                .resident
                .iter()
                .enumerate()
                .min_by_key(|(_, r)| r.used)
                .map_or(0, |(i, _)| i);
            let gone = self.resident.swap_remove(oldest);
            self.resident_lines -= gone.lines.len();
        }
        self.clock += 1;
        self.resident.push(Resident {
            segment: k,
            used: self.clock,
            lines,
        });
        self.resident.len() - 1
    }

    fn drop_resident(&mut self, k: usize) {
        if let Some(at) = self.resident.iter().position(|r| r.segment == k) {
            let gone = self.resident.swap_remove(at);
            self.resident_lines -= gone.lines.len();
        }
    }
}
