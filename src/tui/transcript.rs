//! The session transcript: entries (prompts, replies, tool calls, notices, stats), their
//! rendered lines cached per entry and width, and the visible window.
//!
//! Frame cost is flat in transcript length: only entries that are on screen are laid out, a
//! streaming reply re-renders only its open segment, and caches far from the view are dropped
//! so memory stays bounded. Scrolling is anchored to an entry, never to a global line number,
//! so nothing needs the height of the whole transcript. No terminal I/O here.

use std::cell::{Cell, RefCell};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown;
use super::reasoning::{self, Thought};
use super::segment::Splitter;
use super::segment_cache::ClosedSegments;
use super::wrap::{self, Run, sanitize};
use crate::chat::{ApprovalRequest, ToolStatus};
use crate::protocol::Decision;

/// Lines of tool output shown while a result is folded.
pub(crate) const FOLDED_OUTPUT_LINES: usize = 4;

/// Cached lines beyond which caches of entries far from the view are dropped.
const CACHE_LINE_BUDGET: usize = 20_000;

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// A streamed or restored assistant reply (Markdown).
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub(crate) text: String,
    splitter: Splitter,
    /// All of it arrived: its last segment is closed too (and highlighted).
    pub(crate) finished: bool,
}

impl Reply {
    /// A complete reply.
    pub fn new(text: &str) -> Self {
        let mut r = Self::default();
        r.push(text);
        r.finished = true;
        r
    }

    pub fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        self.splitter.feed(&self.text);
    }
}

/// A tool call with its approval and result.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    pub(crate) call: String,
    pub(crate) tool: String,
    pub(crate) summary: String,
    pub(crate) approval: Option<ApprovalRequest>,
    pub(crate) decision: Option<Decision>,
    pub(crate) status: Option<ToolStatus>,
    pub(crate) output: String,
    /// While it runs: its live output and elapsed time (`None` once it ended).
    pub(crate) running: Option<Box<super::live::Running>>,
}

impl ToolEntry {
    /// A call that began and has not ended.
    pub(crate) fn new(call: String, tool: String, summary: String) -> Self {
        Self {
            call,
            tool,
            summary,
            approval: None,
            decision: None,
            status: None,
            output: String::new(),
            running: None,
        }
    }
}

/// What an entry shows.
#[derive(Debug, Clone)]
pub enum Kind {
    User(String),
    Assistant(Reply),
    Tool(ToolEntry),
    Notice(Level, String),
    Stats(String),
    /// The model's reasoning before a reply (see `reasoning.rs`).
    Reasoning(Thought),
    /// The live lines of a `delegate` call's sub-agents.
    Subagents(super::subagents::Children),
    /// A titled block of rows: the welcome header, `/help`, `/model`.
    Panel(super::panel::Panel),
}

struct Layout {
    width: usize,
    rev: u64,
    /// All lines of anything but a reply.
    head: Vec<Line<'static>>,
    /// A reply's closed segments: their heights, and the lines of those read recently.
    closed: ClosedSegments,
    /// Lines of a reply's open segment, plus the blank line that ends every entry.
    tail: Vec<Line<'static>>,
}

impl Layout {
    fn new(width: usize, rev: u64) -> Self {
        Self {
            width,
            rev,
            head: Vec::new(),
            closed: ClosedSegments::default(),
            tail: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.head.len() + self.closed.lines() + self.tail.len()
    }

    /// Rendered lines held (what the cache budget counts).
    fn resident(&self) -> usize {
        self.head.len() + self.closed.resident_lines() + self.tail.len()
    }

    /// Line `i`; a closed reply segment is rendered again if its lines were dropped, and
    /// highlighted if `drawn` (see [`Transcript::with_drawn_line`]).
    fn get(&mut self, i: usize, kind: &Kind, drawn: bool) -> Option<&Line<'static>> {
        if i < self.head.len() {
            return self.head.get(i);
        }
        let i = i - self.head.len();
        if i < self.closed.lines() {
            let Kind::Assistant(reply) = kind else {
                return None;
            };
            let width = self.width;
            return self
                .closed
                .line(i, drawn, |k, highlight| segment(reply, k, width, highlight));
        }
        self.tail.get(i - self.closed.lines())
    }
}

/// One transcript entry and its render cache.
pub(crate) struct Entry {
    kind: Kind,
    rev: u64,
    /// Folded (`Some(false)`) or unfolded (`Some(true)`) by the user; `None` follows Ctrl+O.
    fold: Option<bool>,
    cache: RefCell<Option<Layout>>,
}

impl Entry {
    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }
}

/// Where the view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scroll {
    /// Follow the live tail.
    #[default]
    Tail,
    /// The top row shows this line of this entry; new output does not move it.
    Anchor { entry: usize, line: usize },
}

/// The entries and everything needed to draw a window of them.
#[derive(Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    expanded: bool,
    /// Entries holding a cache, and the total of their cached lines.
    cached: RefCell<Vec<usize>>,
    cached_lines: Cell<usize>,
}

impl Transcript {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.cached.borrow_mut().clear();
        self.cached_lines.set(0);
    }

    pub fn push(&mut self, kind: Kind) {
        self.entries.push(Entry {
            kind,
            rev: 0,
            fold: None,
            cache: RefCell::new(None),
        });
    }

    /// Mutates entry `i` and marks it for re-layout.
    pub fn edit(&mut self, i: usize, f: impl FnOnce(&mut Kind)) {
        if let Some(e) = self.entries.get_mut(i) {
            f(&mut e.kind);
            e.rev += 1;
        }
    }

    /// Index of the tool entry for `call`, searching from the end (recent calls are near it).
    pub(crate) fn find_tool(&self, call: &str) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| matches!(&e.kind, Kind::Tool(t) if t.call == call))
    }

    /// Folds or unfolds every tool result and reasoning (one at a time choices are reset).
    pub(crate) fn toggle_expanded(&mut self) {
        self.expanded = !self.expanded;
        for e in &mut self.entries {
            if matches!(e.kind, Kind::Tool(_) | Kind::Reasoning(_)) {
                e.fold = None;
                e.rev += 1;
            }
        }
    }

    /// Whether entry `i` has something to fold (tool output, reasoning).
    pub(crate) fn foldable(&self, i: usize) -> bool {
        self.entries
            .get(i)
            .is_some_and(|e| matches!(e.kind, Kind::Tool(_) | Kind::Reasoning(_)))
    }

    /// Folds or unfolds entry `i` alone; returns whether it is unfolded now.
    pub(crate) fn toggle_fold(&mut self, i: usize) -> Option<bool> {
        let expanded = self.expanded;
        let e = self.entries.get_mut(i)?;
        let open = !e.fold.unwrap_or(expanded);
        e.fold = Some(open);
        e.rev += 1;
        Some(open)
    }

    /// Number of lines entry `i` takes at `width`.
    pub fn height(&self, i: usize, width: usize) -> usize {
        self.with_layout(i, width, |l, _| l.len()).unwrap_or(0)
    }

    /// Line `line` of entry `i` at `width`, handed to `f`.
    pub fn with_line<R>(
        &self,
        i: usize,
        line: usize,
        width: usize,
        f: impl FnOnce(&Line<'static>) -> R,
    ) -> Option<R> {
        self.read_line(i, line, width, false, f)
    }

    /// Like [`Transcript::with_line`] for a line about to be drawn: a closed reply segment's
    /// code is highlighted only now, the first time one of its lines is on screen. A fast
    /// reply scrolls most of its code past unseen; highlighting it all as it closed cost more
    /// than the rest of rendering (and the memory of every highlighted block). The lines keep
    /// their count, so nothing moves: a segment whose count would change stays plain.
    pub fn with_drawn_line<R>(
        &self,
        i: usize,
        line: usize,
        width: usize,
        f: impl FnOnce(&Line<'static>) -> R,
    ) -> Option<R> {
        self.read_line(i, line, width, true, f)
    }

    fn read_line<R>(
        &self,
        i: usize,
        line: usize,
        width: usize,
        drawn: bool,
        f: impl FnOnce(&Line<'static>) -> R,
    ) -> Option<R> {
        self.with_layout(i, width, |l, kind| l.get(line, kind, drawn).map(f))
            .flatten()
    }

    fn with_layout<R>(
        &self,
        i: usize,
        width: usize,
        f: impl FnOnce(&mut Layout, &Kind) -> R,
    ) -> Option<R> {
        let entry = self.entries.get(i)?;
        let mut cache = entry.cache.borrow_mut();
        let old = cache.as_ref().map(Layout::resident);
        let fresh = matches!(&*cache, Some(l) if l.width == width && l.rev == entry.rev);
        if !fresh {
            let mut layout = match cache.take() {
                Some(l) if l.width == width => l,
                _ => Layout::new(width, entry.rev),
            };
            layout.rev = entry.rev;
            relayout(
                &entry.kind,
                &mut layout,
                entry.fold.unwrap_or(self.expanded),
            );
            *cache = Some(layout);
        }
        let layout = cache.as_mut()?;
        let result = f(layout, &entry.kind);
        if old.is_none() {
            self.cached.borrow_mut().push(i);
        }
        self.cached_lines
            .set(self.cached_lines.get().saturating_sub(old.unwrap_or(0)) + layout.resident());
        Some(result)
    }

    /// The rows of a `height`-row window at `width`: `(entry, line)` pairs from the top.
    /// An anchor that can no longer fill the window falls back to the tail.
    pub fn window(&self, scroll: Scroll, width: usize, height: usize) -> Vec<(usize, usize)> {
        let rows = match scroll {
            Scroll::Anchor { entry, line } => {
                let rows = self.rows_from(entry, line, width, height);
                if rows.len() == height {
                    rows
                } else {
                    self.tail_rows(width, height)
                }
            }
            Scroll::Tail => self.tail_rows(width, height),
        };
        self.evict(&rows);
        rows
    }

    fn rows_from(
        &self,
        mut entry: usize,
        mut line: usize,
        width: usize,
        height: usize,
    ) -> Vec<(usize, usize)> {
        let mut rows = Vec::with_capacity(height);
        while rows.len() < height && entry < self.entries.len() {
            let h = self.height(entry, width);
            while line < h && rows.len() < height {
                rows.push((entry, line));
                line += 1;
            }
            entry += 1;
            line = 0;
        }
        rows
    }

    fn tail_rows(&self, width: usize, height: usize) -> Vec<(usize, usize)> {
        let (entry, line) = self.tail_top(width, height);
        self.rows_from(entry, line, width, height)
    }

    /// The top row of the tail window.
    pub fn tail_top(&self, width: usize, height: usize) -> (usize, usize) {
        let mut need = height;
        let mut i = self.entries.len();
        while i > 0 {
            i -= 1;
            let h = self.height(i, width);
            if h >= need {
                return (i, h - need);
            }
            need -= h;
        }
        (0, 0)
    }

    /// Moves a position `n` rows up (towards the start).
    pub fn up(
        &self,
        (mut entry, mut line): (usize, usize),
        mut n: usize,
        width: usize,
    ) -> (usize, usize) {
        while n > 0 {
            if line >= n {
                return (entry, line - n);
            }
            n -= line;
            if entry == 0 {
                return (0, 0);
            }
            entry -= 1;
            line = self.height(entry, width);
        }
        (entry, line)
    }

    /// Moves a position `n` rows down; `None` when that reaches the tail window.
    pub(crate) fn down(
        &self,
        (mut entry, mut line): (usize, usize),
        n: usize,
        width: usize,
        height: usize,
    ) -> Option<(usize, usize)> {
        let mut left = n;
        while left > 0 && entry < self.entries.len() {
            let h = self.height(entry, width);
            let step = left.min(h.saturating_sub(line));
            line += step;
            left -= step;
            if line >= h {
                entry += 1;
                line = 0;
            }
        }
        (self.rows_from(entry, line, width, height + 1).len() > height).then_some((entry, line))
    }

    /// Drops caches of entries far from the visible rows once the budget is exceeded.
    fn evict(&self, rows: &[(usize, usize)]) {
        if self.cached_lines.get() <= CACHE_LINE_BUDGET {
            return;
        }
        let lo = rows.first().map_or(0, |r| r.0).saturating_sub(64);
        let hi = rows.last().map_or(0, |r| r.0) + 64;
        let mut cached = self.cached.borrow_mut();
        let mut total = 0;
        cached.retain(|&i| {
            let Some(e) = self.entries.get(i) else {
                return false;
            };
            if i >= lo && i <= hi {
                total += e.cache.borrow().as_ref().map_or(0, Layout::resident);
                return true;
            }
            *e.cache.borrow_mut() = None;
            false
        });
        self.cached_lines.set(total);
    }

    /// Lines currently cached (for tests and benchmarks of the memory bound).
    pub fn cached_lines(&self) -> usize {
        self.cached_lines.get()
    }
}

fn relayout(kind: &Kind, layout: &mut Layout, expanded: bool) {
    let width = layout.width;
    match kind {
        Kind::Assistant(reply) => {
            let cuts = reply.splitter.cuts();
            while layout.closed.count() < cuts.len() {
                let k = layout.closed.count();
                // Code is highlighted when first drawn, not here: most of a fast reply's
                // code scrolls past unseen.
                let fenced = has_fence(reply, k);
                layout
                    .closed
                    .push(segment(reply, k, width, !fenced), fenced);
            }
            // The open segment is re-rendered every frame: its code stays plain until it
            // closes (or the reply ends).
            layout.tail = segment(reply, cuts.len(), width, reply.finished);
            layout.tail.push(Line::default());
        }
        other => {
            layout.head = lines_of(other, width, expanded);
            layout.head.push(Line::default());
            layout.tail.clear();
        }
    }
}

/// The source text of segment `k` of a reply (the open tail when `k == cuts.len()`).
fn segment_text(reply: &Reply, k: usize) -> &str {
    let cuts = reply.splitter.cuts();
    let start = if k == 0 { 0 } else { cuts[k - 1].end };
    let end = cuts.get(k).map_or(reply.text.len(), |c| c.end);
    &reply.text[start..end]
}

/// Whether segment `k` may hold fenced code (the only thing highlighting changes), in its
/// own text or in the opener it continues.
fn has_fence(reply: &Reply, k: usize) -> bool {
    let fence = |t: &str| t.contains("```") || t.contains("~~~");
    let reopen = k
        .checked_sub(1)
        .and_then(|p| reply.splitter.cuts().get(p))
        .and_then(|c| c.reopen.as_deref());
    fence(segment_text(reply, k)) || reopen.is_some_and(fence)
}

/// Renders segment `k` of a reply (the open tail when `k == cuts.len()`), its code
/// highlighted if `highlight`.
fn segment(reply: &Reply, k: usize, width: usize, highlight: bool) -> Vec<Line<'static>> {
    let cuts = reply.splitter.cuts();
    let prev = k.checked_sub(1).and_then(|p| cuts.get(p));
    let body = segment_text(reply, k);
    let mut lines = Vec::new();
    if prev.is_some_and(|c| c.separate) && !body.trim().is_empty() {
        lines.push(Line::default());
    }
    let render = if highlight {
        markdown::render
    } else {
        markdown::render_open
    };
    let rendered = match prev.and_then(|c| c.reopen.as_deref()) {
        Some(opener) => render(&format!("{opener}\n{body}"), width),
        None => render(body, width),
    };
    lines.extend(rendered);
    lines
}

fn lines_of(kind: &Kind, width: usize, expanded: bool) -> Vec<Line<'static>> {
    match kind {
        Kind::User(text) => {
            let style = Style::new().add_modifier(Modifier::BOLD);
            let first = [Span::styled(
                "› ",
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )];
            wrap::wrap(
                &[Run::new(sanitize(text), style)],
                width,
                &first,
                &[Span::raw("  ")],
            )
        }
        Kind::Assistant(reply) => markdown::render(&reply.text, width),
        Kind::Tool(t) => tool_lines(t, width, expanded),
        Kind::Reasoning(t) => reasoning::lines(t, width, expanded),
        Kind::Subagents(c) => super::subagents::lines(c, width),
        Kind::Panel(p) => super::panel::lines(p, width),
        Kind::Notice(level, text) => {
            let (mark, style) = match level {
                Level::Info => ("· ", Style::new().fg(Color::DarkGray)),
                Level::Warning => ("⚠ ", Style::new().fg(Color::Yellow)),
                Level::Error => ("✗ ", Style::new().fg(Color::Red)),
            };
            wrap::wrap(
                &[Run::new(sanitize(text), style)],
                width,
                &[Span::styled(mark, style)],
                &[Span::raw("  ")],
            )
        }
        Kind::Stats(text) => {
            let style = Style::new().fg(Color::DarkGray);
            wrap::wrap(
                &[Run::new(sanitize(text), style)],
                width,
                &[Span::styled("  ", style)],
                &[Span::raw("  ")],
            )
        }
    }
}

fn tool_lines(t: &ToolEntry, width: usize, expanded: bool) -> Vec<Line<'static>> {
    let (mark, mark_style) = match t.status {
        None => ("◦", Style::new().fg(Color::Yellow)),
        Some(ToolStatus::Succeeded) => ("✓", Style::new().fg(Color::Green)),
        Some(ToolStatus::Failed) => ("✗", Style::new().fg(Color::Red)),
        Some(ToolStatus::Denied) => ("⊘", Style::new().fg(Color::Red)),
        Some(ToolStatus::Rejected) => ("!", Style::new().fg(Color::Red)),
        Some(ToolStatus::Interrupted) => ("■", Style::new().fg(Color::Yellow)),
        Some(ToolStatus::ExecutionUnknown) => ("?", Style::new().fg(Color::Yellow)),
    };
    let first = [Span::styled(format!("{mark} "), mark_style)];
    let runs = [
        Run::new(sanitize(&t.tool), Style::new().add_modifier(Modifier::BOLD)),
        Run::new(
            format!(" {}", sanitize(&t.summary)),
            Style::new().fg(Color::Gray),
        ),
    ];
    let mut lines = wrap::wrap(&runs, width, &first, &[Span::raw("  ")]);
    let indent = || vec![Span::raw("    ")];
    if let Some(req) = &t.approval {
        match req {
            ApprovalRequest::Command { command } => {
                let mut first = indent();
                first.push(Span::styled("$ ", Style::new().fg(Color::Cyan)));
                let runs = [Run::new(sanitize(command), Style::new())];
                lines.extend(wrap::wrap(&runs, width, &first, &indent()));
            }
            ApprovalRequest::Diff { path, diff } => {
                let runs = [Run::new(sanitize(path), Style::new().fg(Color::Cyan))];
                lines.extend(wrap::wrap(&runs, width, &indent(), &indent()));
                lines.extend(super::diff::lines(path, diff, width, 4));
            }
            ApprovalRequest::McpCall {
                server,
                tool,
                arguments,
            } => {
                let runs = [Run::new(
                    sanitize(&format!("MCP server {server} · tool {tool}")),
                    Style::new().fg(Color::Cyan),
                )];
                lines.extend(wrap::wrap(&runs, width, &indent(), &indent()));
                for l in sanitize(arguments).lines() {
                    lines.extend(wrap::wrap_hard(l, width, indent(), indent(), Style::new()));
                }
            }
            ApprovalRequest::OutsideSandbox { command, reason } => {
                let runs = [Run::new(
                    sanitize(&format!("run outside the sandbox? {reason}")),
                    Style::new().fg(Color::Yellow),
                )];
                lines.extend(wrap::wrap(&runs, width, &indent(), &indent()));
                let mut first = indent();
                first.push(Span::styled("$ ", Style::new().fg(Color::Cyan)));
                let runs = [Run::new(sanitize(command), Style::new())];
                lines.extend(wrap::wrap(&runs, width, &first, &indent()));
            }
            ApprovalRequest::Fetch { url } => {
                let runs = [Run::new(
                    format!("fetch {}", sanitize(url)),
                    Style::new().fg(Color::Cyan),
                )];
                lines.extend(wrap::wrap(&runs, width, &indent(), &indent()));
            }
        }
    }
    if let Some(d) = &t.decision {
        let (text, style) = match d {
            Decision::Approve => ("approved".to_string(), Style::new().fg(Color::Green)),
            Decision::ApproveTool => (
                "approved always (what its rule covers, this session)".to_string(),
                Style::new().fg(Color::Green),
            ),
            Decision::Deny { reason: None } => ("denied".to_string(), Style::new().fg(Color::Red)),
            Decision::Deny { reason: Some(r) } => {
                (format!("denied: {r}"), Style::new().fg(Color::Red))
            }
            Decision::NoTerminal => (
                "not run: no terminal to ask".to_string(),
                Style::new().fg(Color::Red),
            ),
        };
        lines.extend(wrap::wrap(
            &[Run::new(sanitize(&text), style)],
            width,
            &indent(),
            &indent(),
        ));
    }
    let waits_for_approval = t.approval.is_some() && t.decision.is_none();
    if let Some(run) = t.running.as_deref().filter(|_| !waits_for_approval)
        && t.status.is_none()
    {
        lines.extend(super::live::lines(run, width));
    }
    if t.status.is_some() && !t.output.trim().is_empty() {
        let out = sanitize(&crate::sanitize::collapse_rewrites(&t.output));
        let all: Vec<&str> = out.trim_end_matches('\n').split('\n').collect();
        let shown = if expanded {
            all.len()
        } else {
            all.len().min(FOLDED_OUTPUT_LINES)
        };
        let style = Style::new().fg(Color::DarkGray);
        for l in &all[..shown] {
            lines.extend(wrap::wrap_hard(l, width, indent(), indent(), style));
        }
        if shown < all.len() {
            let hidden = all.len() - shown;
            let noun = if hidden == 1 { "line" } else { "lines" };
            let more = format!("… {hidden} more {noun} (Ctrl+O to expand)");
            lines.push(Line::from(vec![
                Span::raw("    "),
                Span::styled(more, style.add_modifier(Modifier::ITALIC)),
            ]));
        }
    }
    lines
}
