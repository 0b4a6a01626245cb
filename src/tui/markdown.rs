//! Markdown → styled terminal lines at a given width: headings, emphasis, inline and fenced
//! code, quotes, nested lists, tables, links and rules. Unclosed constructs render as they
//! stand (a streaming reply is re-laid out as more arrives).
//!
//! Pure: text in, lines out. It must not cache, know entries, or touch a terminal; all text is
//! sanitized here, so nothing from the model reaches a cell raw.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{self, Run, sanitize, wrap_hard, wrap_hard_runs};

/// Renders `src` to lines no wider than `width` (except where a window is too narrow to
/// hold even one character after indentation). Fenced code with a known language tag is
/// highlighted: use it for text that is complete (a closed segment, a finished reply).
pub fn render(src: &str, width: usize) -> Vec<Line<'static>> {
    render_with(src, width, true)
}

/// Like [`render`] for text still arriving (a reply's open segment): code stays plain, so the
/// segment re-rendered every frame never runs the highlighter.
pub(crate) fn render_open(src: &str, width: usize) -> Vec<Line<'static>> {
    render_with(src, width, false)
}

fn render_with(src: &str, width: usize, highlight: bool) -> Vec<Line<'static>> {
    let mut r = Renderer::new(width.max(1));
    r.highlight = highlight;
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(src, opts) {
        r.event(event);
    }
    r.finish()
}

/// The fenced and indented code blocks of `src`, in order (for `/copy code`).
pub(crate) fn code_blocks(src: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<String> = None;
    for event in Parser::new_ext(src, Options::empty()) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => open = Some(String::new()),
            Event::Text(t) => {
                if let Some(code) = &mut open {
                    code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    blocks
}

pub(crate) fn code_style() -> Style {
    Style::new().fg(Color::LightYellow)
}

fn quote_style() -> Style {
    Style::new().fg(Color::Green)
}

fn marker_style() -> Style {
    Style::new().fg(Color::Cyan)
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

enum Container {
    Quote,
    /// A list item: its marker is shown on the first line of its first block only.
    Item {
        marker: Option<String>,
        indent: usize,
    },
}

#[derive(Default)]
struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<String>>,
    header_rows: usize,
    cell: String,
    in_head: bool,
}

struct Renderer {
    width: usize,
    lines: Vec<Line<'static>>,
    runs: Vec<Run>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Next number of each open list (`None` for bullets).
    lists: Vec<Option<u64>>,
    links: Vec<String>,
    code: Option<String>,
    /// The open fence's language tag.
    lang: String,
    /// Whether closed fences are highlighted.
    highlight: bool,
    table: Option<Table>,
    need_blank: bool,
}

impl Renderer {
    fn new(width: usize) -> Self {
        Self {
            width,
            lines: Vec::new(),
            runs: Vec::new(),
            styles: vec![Style::new()],
            containers: Vec::new(),
            lists: Vec::new(),
            links: Vec::new(),
            code: None,
            lang: String::new(),
            highlight: false,
            table: None,
            need_blank: false,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, patch: Style) {
        let s = self.style().patch(patch);
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn text(&mut self, text: &str, style: Style) {
        if let Some(t) = &mut self.table {
            t.cell.push_str(&sanitize(text));
            return;
        }
        self.runs.push(Run::new(sanitize(text), style));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if let Some(code) = &mut self.code {
                    code.push_str(&t);
                } else {
                    let s = self.style();
                    self.text(&t, s);
                }
            }
            Event::Code(t) => {
                let s = self.style().patch(code_style());
                self.text(&t, s);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let s = self.style().patch(code_style());
                self.text(&t, s);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let s = self.style().patch(dim());
                self.text(t.trim_end_matches('\n'), s);
            }
            Event::FootnoteReference(t) => {
                let s = self.style();
                self.text(&format!("[^{t}]"), s);
            }
            Event::SoftBreak => {
                let s = self.style();
                self.text(" ", s);
            }
            Event::HardBreak => {
                let s = self.style();
                self.text("\n", s);
            }
            Event::Rule => {
                self.block_start();
                let (first, _) = self.prefixes();
                let used: usize = first.iter().map(|s| wrap::width(&s.content)).sum();
                let mut spans = first;
                spans.push(Span::styled(
                    "─".repeat(self.width.saturating_sub(used).max(1)),
                    dim(),
                ));
                self.lines.push(Line::from(spans));
                self.need_blank = true;
            }
            Event::TaskListMarker(done) => {
                let s = self.style().patch(marker_style());
                self.text(if done { "[x] " } else { "[ ] " }, s);
            }
        }
    }

    /// A Markdown element opens: one arm per tag, the longer ones in a method of their own.
    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                self.push_style(heading_style(level));
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.block_start();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => self.code_block_start(kind),
            Tag::HtmlBlock => self.block_start(),
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.block_start();
                }
                self.lists.push(start);
            }
            Tag::Item => self.item_start(),
            Tag::Table(aligns) => {
                self.block_start();
                self.table = Some(Table {
                    aligns,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => self.table_part_start(&tag),
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.push_style(
                    Style::new()
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED),
                );
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                let s = self.style().patch(dim());
                self.text("[image: ", s);
                self.push_style(dim());
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => self.block_start(),
        }
    }

    /// A Markdown element closes: one arm per tag, the longer ones in a method of their own.
    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.end_block(),
            TagEnd::Heading(_) => {
                self.pop_style();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.need_blank = true;
            }
            TagEnd::CodeBlock => self.code_block_end(),
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.need_blank = true;
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_lines(t);
                }
                self.need_blank = true;
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = false;
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    if let Some(row) = t.rows.last_mut() {
                        row.push(cell);
                    }
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => self.link_end(),
            TagEnd::Image => {
                self.pop_style();
                self.links.pop();
                let s = self.style().patch(dim());
                self.text("]", s);
            }
            _ => self.end_block(),
        }
    }

    /// A code block opens: its language (the first word of a fence's info string, shown above
    /// the code) and an empty body to collect.
    fn code_block_start(&mut self, kind: CodeBlockKind<'_>) {
        self.block_start();
        self.lang = match &kind {
            // The first word of the info string (```rust,ignore → rust).
            CodeBlockKind::Fenced(info) => info
                .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
                .next()
                .unwrap_or("")
                .to_string(),
            CodeBlockKind::Indented => String::new(),
        };
        if let CodeBlockKind::Fenced(lang) = kind
            && !lang.is_empty()
        {
            let (first, _) = self.prefixes();
            let mut spans = first;
            spans.push(Span::styled(format!("  {}", sanitize(&lang)), dim()));
            self.lines.push(Line::from(spans));
        }
        self.code = Some(String::new());
    }

    /// A code block closes: its body highlighted when the language is known, plain otherwise.
    fn code_block_end(&mut self) {
        let code = self.code.take().unwrap_or_default();
        let lang = std::mem::take(&mut self.lang);
        let highlighted = if self.highlight && !lang.is_empty() {
            let body = sanitize(&code);
            let body = body.strip_suffix('\n').unwrap_or(&body).to_string();
            super::highlight::code(&lang, &body, code_style())
        } else {
            None
        };
        match highlighted {
            Some(lines) => self.highlighted_lines(&lines),
            None => self.code_lines(&code),
        }
        self.need_blank = true;
    }

    /// A list item opens with its marker: the next number of an ordered list, a bullet else.
    fn item_start(&mut self) {
        self.flush();
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let m = format!("{n}. ");
                *n += 1;
                m
            }
            _ => "• ".to_string(),
        };
        let indent = wrap::width(&marker);
        self.containers.push(Container::Item {
            marker: Some(marker),
            indent,
        });
        self.need_blank = false;
    }

    /// A table's head, row or cell opens: rows and cells are collected, laid out at its end.
    fn table_part_start(&mut self, tag: &Tag<'_>) {
        let Some(t) = &mut self.table else {
            return;
        };
        match tag {
            Tag::TableHead => {
                t.in_head = true;
                t.rows.push(Vec::new());
            }
            Tag::TableRow => t.rows.push(Vec::new()),
            Tag::TableCell => t.cell.clear(),
            _ => {}
        }
    }

    /// A link closes: its address follows in brackets unless the text already shows it.
    fn link_end(&mut self) {
        self.pop_style();
        if let Some(url) = self.links.pop() {
            let shown: String = self
                .runs
                .iter()
                .rev()
                .take(1)
                .map(|r| r.text.clone())
                .collect();
            if !url.is_empty() && shown != url {
                self.text(&format!(" ({url})"), dim());
            }
        }
    }

    /// Separates a new block from the previous one by a blank line (quote bars continue).
    fn block_start(&mut self) {
        self.flush();
        if self.need_blank && !self.lines.is_empty() {
            let spans: Vec<Span<'static>> = self
                .containers
                .iter()
                .map(|c| match c {
                    Container::Quote => Span::styled("│ ", quote_style()),
                    Container::Item { indent, .. } => Span::raw(" ".repeat(*indent)),
                })
                .collect();
            self.lines.push(Line::from(spans));
        }
        self.need_blank = false;
    }

    fn end_block(&mut self) {
        self.flush();
        self.need_blank = true;
    }

    /// Prefix spans for the first line of the next block and for its continuation lines.
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    first.push(Span::styled("│ ", quote_style()));
                    rest.push(Span::styled("│ ", quote_style()));
                }
                Container::Item { marker, indent } => {
                    match marker.take() {
                        Some(m) => first.push(Span::styled(m, marker_style())),
                        None => first.push(Span::raw(" ".repeat(*indent))),
                    }
                    rest.push(Span::raw(" ".repeat(*indent)));
                }
            }
        }
        (first, rest)
    }

    /// Wraps the pending inline runs into lines.
    fn flush(&mut self) {
        if self.runs.is_empty() {
            return;
        }
        let runs = std::mem::take(&mut self.runs);
        let (first, rest) = self.prefixes();
        let lines = wrap::wrap(&runs, self.width, &first, &rest);
        self.lines.extend(lines);
    }

    fn code_lines(&mut self, code: &str) {
        let code = sanitize(code);
        let body = code.strip_suffix('\n').unwrap_or(&code);
        for src in body.split('\n') {
            let (mut first, mut rest) = self.prefixes();
            first.push(Span::raw("  "));
            rest.push(Span::raw("  "));
            // Code keeps its spaces: wrap character by character, never at words.
            let lines = wrap_hard(src, self.width, first, rest, code_style());
            self.lines.extend(lines);
        }
    }

    fn highlighted_lines(&mut self, lines: &[super::highlight::Runs]) {
        for runs in lines {
            let (mut first, mut rest) = self.prefixes();
            first.push(Span::raw("  "));
            rest.push(Span::raw("  "));
            let runs: Vec<(Style, &str)> = runs.iter().map(|(s, t)| (*s, t.as_str())).collect();
            self.lines
                .extend(wrap_hard_runs(&runs, self.width, first, rest));
        }
    }

    fn table_lines(&mut self, t: Table) {
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        if cols == 0 {
            return;
        }
        let (first, rest) = self.prefixes();
        let prefix_w: usize = rest.iter().map(|s| wrap::width(&s.content)).sum();
        let avail = self
            .width
            .saturating_sub(prefix_w + 3 * (cols - 1))
            .max(cols);
        let mut natural = vec![1usize; cols];
        for row in &t.rows {
            for (i, cell) in row.iter().enumerate() {
                natural[i] = natural[i].max(wrap::width(cell));
            }
        }
        let widths = fit_columns(&natural, avail);
        let sep = Span::styled(" │ ", dim());
        let mut prefix = first;
        for (r, row) in t.rows.iter().enumerate() {
            let style = if r < t.header_rows {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
            let cells: Vec<Vec<String>> = (0..cols)
                .map(|i| {
                    let text = row.get(i).map(String::as_str).unwrap_or("");
                    wrap::wrap(&[Run::new(text, Style::new())], widths[i], &[], &[])
                        .iter()
                        .map(wrap::line_text)
                        .collect()
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for l in 0..height {
                let mut spans = std::mem::replace(&mut prefix, rest.clone());
                for (i, cell) in cells.iter().enumerate() {
                    if i > 0 {
                        spans.push(sep.clone());
                    }
                    let text = cell.get(l).map(String::as_str).unwrap_or("");
                    let pad = widths[i].saturating_sub(wrap::width(text));
                    let (left, right) = match t.aligns.get(i) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    spans.push(Span::styled(
                        format!("{}{}{}", " ".repeat(left), text, " ".repeat(right)),
                        style,
                    ));
                }
                self.lines.push(Line::from(spans));
            }
            if r + 1 == t.header_rows {
                let mut spans = rest.clone();
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                spans.push(Span::styled(rule.join("─┼─"), dim()));
                self.lines.push(Line::from(spans));
            }
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if let Some(code) = self.code.take() {
            // An unclosed fence while streaming: show what arrived so far.
            self.code_lines(&code);
        }
        if let Some(t) = self.table.take() {
            self.table_lines(t);
        }
        self.flush();
        self.lines
    }
}

/// Shrinks the widest columns first until the row fits `avail` columns.
fn fit_columns(natural: &[usize], avail: usize) -> Vec<usize> {
    let mut widths = natural.to_vec();
    while widths.iter().sum::<usize>() > avail {
        let Some((i, &w)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
            break;
        };
        if w <= 1 {
            break;
        }
        widths[i] = w - 1;
    }
    widths
}

/// A heading's look: the two top levels stand out, the others are bold.
fn heading_style(level: HeadingLevel) -> Style {
    match level {
        HeadingLevel::H1 => Style::new()
            .fg(Color::Magenta)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        HeadingLevel::H2 => Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        _ => Style::new().add_modifier(Modifier::BOLD),
    }
}
