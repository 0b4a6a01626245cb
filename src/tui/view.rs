//! Drawing: a pure function of [`State`] into a ratatui frame. Transcript on top, queued
//! prompts and a hint line, the input box, and a one-line status bar.
//!
//! `render` only reads state (the transcript's line cache is a memo behind `&`); it must never
//! change what `update` owns or perform I/O.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::state::State;
use super::transcript::Scroll;
use super::wrap;

/// Queued prompts listed above the input box before the rest are summarised.
const QUEUE_ROWS: usize = 3;

/// Where each part of the screen goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub(crate) transcript: Rect,
    pub(crate) queue: Rect,
    pub(crate) hint: Rect,
    pub(crate) border: Rect,
    pub input: Rect,
    pub(crate) status: Rect,
}

/// The prompt shown left of the draft.
fn prompt(state: &State) -> &'static str {
    match &state.approval {
        Some(p) if p.typing_reason => "reason › ",
        _ => "› ",
    }
}

/// Splits `area` for `state`: the input box follows the draft (1 to min(6, a third) rows).
pub fn areas(state: &State, area: Rect) -> Areas {
    let h = area.height;
    let w = area.width as usize;
    let status_h = u16::from(h >= 1);
    let text_w = w.saturating_sub(wrap::width(prompt(state)));
    let (rows, _) = state.draft.layout(text_w);
    let max_in = 6.min(h / 3).max(1);
    let input_h = (rows.len() as u16)
        .clamp(1, max_in)
        .min(h.saturating_sub(status_h));
    let border_h = u16::from(h >= 6);
    let hint_h = u16::from(has_hint(state) && h >= 8);
    let queue_rows =
        state.queue.len().min(QUEUE_ROWS) + usize::from(state.queue.len() > QUEUE_ROWS);
    let queue_h = if h >= 12 { queue_rows as u16 } else { 0 };
    let fixed = status_h + input_h + border_h + hint_h + queue_h;
    let transcript_h = h.saturating_sub(fixed);
    let mut y = area.y;
    let mut take = |n: u16| {
        let r = Rect::new(area.x, y, area.width, n);
        y += n;
        r
    };
    Areas {
        transcript: take(transcript_h),
        queue: take(queue_h),
        hint: take(hint_h),
        border: take(border_h),
        input: take(input_h),
        status: take(status_h),
    }
}

fn has_hint(state: &State) -> bool {
    state.approval.is_some()
        || !state.completions().is_empty()
        || state.hint.is_some()
        || state.queue_paused()
}

/// Shown while queued prompts wait for Enter.
pub(crate) const QUEUE_PAUSED: &str = "queue paused — Enter sends the next";

/// Draws the whole screen.
pub fn render(state: &State, frame: &mut Frame<'_>) {
    let area = frame.area();
    let a = areas(state, area);
    let buf = frame.buffer_mut();
    transcript(state, a.transcript, buf);
    if let Some(picker) = &state.picker {
        super::resume::render(picker, a.transcript, buf);
    }
    queue(state, a.queue, buf);
    hint(state, a.hint, buf);
    if a.border.height > 0 {
        let line = Line::styled(
            "─".repeat(a.border.width as usize),
            Style::new().fg(Color::DarkGray),
        );
        buf.set_line(a.border.x, a.border.y, &line, a.border.width);
    }
    if let Some(cursor) = input(state, a.input, buf) {
        frame.set_cursor_position(cursor);
    }
    status(state, a.status, frame.buffer_mut());
    super::palette::apply(state.colors, frame.buffer_mut(), area);
}

fn transcript(state: &State, area: Rect, buf: &mut Buffer) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let width = area.width as usize;
    let rows = state
        .transcript
        .window(state.scroll, width, area.height as usize);
    let current_hit = state.search.as_ref().map(|s| s.hits[s.current]);
    for (r, (entry, line)) in rows.iter().enumerate() {
        let y = area.y + r as u16;
        state.transcript.with_drawn_line(*entry, *line, width, |l| {
            buf.set_line(area.x, y, l, area.width);
        });
        let row = Rect::new(area.x, y, area.width, 1);
        if state.selected == Some(*entry) {
            // The entry chosen for folding: a dim background.
            buf.set_style(row, Style::new().bg(Color::Indexed(236)));
        }
        if let Some(s) = &state.search {
            let current = current_hit == Some((*entry, *line));
            mark_matches(buf, row, &s.query, current);
        }
        if let Some((from, to)) = state.selection.and_then(|s| s.columns(*entry, *line)) {
            let from = (from as u16).min(area.width);
            let to = to.min(area.width as usize) as u16;
            if to > from {
                buf.set_style(
                    Rect::new(area.x + from, y, to - from, 1),
                    Style::new().add_modifier(Modifier::REVERSED),
                );
            }
        }
    }
    if matches!(state.scroll, Scroll::Anchor { .. }) {
        let label = " ↓ more below · End to follow ";
        let w = wrap::width(label) as u16;
        let x = area.right().saturating_sub(w).max(area.x);
        let y = area.bottom() - 1;
        let style = Style::new().fg(Color::Black).bg(Color::Yellow);
        buf.set_line(x, y, &Line::styled(label, style), area.width);
    }
}

/// Highlights every occurrence of `query` (case-insensitive) in one drawn row; the row of the
/// current match gets the stronger colour.
fn mark_matches(buf: &mut Buffer, row: Rect, query: &str, current: bool) {
    let needle = query.to_lowercase();
    if needle.is_empty() {
        return;
    }
    // The row's text as drawn, with the cell each byte came from.
    let mut text = String::new();
    let mut cells = Vec::new();
    for x in row.left()..row.right() {
        let sym = buf[(x, row.y)].symbol().to_lowercase();
        for _ in 0..sym.len() {
            cells.push(x);
        }
        text.push_str(&sym);
    }
    let style = if current {
        Style::new()
            .fg(Color::Black)
            .bg(Color::LightYellow)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::new().fg(Color::Black).bg(Color::Yellow)
    };
    let mut at = 0;
    while let Some(i) = text[at..].find(&needle) {
        let start = at + i;
        let end = start + needle.len();
        let (x0, x1) = (cells[start], cells[end - 1]);
        buf.set_style(Rect::new(x0, row.y, x1 - x0 + 1, 1), style);
        at = end;
    }
}

fn queue(state: &State, area: Rect, buf: &mut Buffer) {
    let style = Style::new().fg(Color::DarkGray);
    for (i, q) in state.queue.iter().take(area.height as usize).enumerate() {
        let y = area.y + i as u16;
        let first = q.lines().next().unwrap_or("");
        let text = if i == QUEUE_ROWS {
            format!("  … {} more queued", state.queue.len() - QUEUE_ROWS)
        } else {
            let label = format!("  queued: {}", wrap::sanitize(first));
            wrap::truncate(&label, area.width.saturating_sub(14) as usize) + "  (↑ to edit)"
        };
        buf.set_line(area.x, y, &Line::styled(text, style), area.width);
    }
}

fn hint(state: &State, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let line = if let Some(p) = &state.approval {
        if p.typing_reason {
            Line::styled(
                " type why the call is refused, Enter sends · Esc back",
                Style::new().fg(Color::Yellow),
            )
        } else {
            let keys = if !state.draft.is_empty() {
                "empty the draft to answer y/a/n/r · Esc stop".to_string()
            } else if state.approval_armed() {
                // "always" covers what its rule covers, never the whole tool: the key says so.
                let always = match &p.always {
                    Some(rule) => format!(
                        "a always: {} · ",
                        wrap::sanitize(&crate::protocol::always_label(rule))
                    ),
                    None => String::new(),
                };
                format!("y yes · {always}n no · r no + reason · Esc stop")
            } else {
                // The answer keys wait a moment (state::APPROVAL_GUARD): read first.
                "read the request; answer keys in a moment · Esc stop".to_string()
            };
            Line::from(vec![
                Span::styled(
                    format!(" allow {}? ", wrap::sanitize(&p.tool)),
                    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
                ),
                Span::raw(keys),
            ])
        }
    } else if !state.completions().is_empty() {
        completion_line(state, area.width as usize)
    } else if let Some(h) = &state.hint {
        Line::styled(format!(" {}", h.text()), Style::new().fg(Color::Yellow))
    } else if state.queue_paused() {
        Line::styled(format!(" {QUEUE_PAUSED}"), Style::new().fg(Color::Yellow))
    } else {
        return;
    };
    buf.set_line(area.x, area.y, &line, area.width);
}

/// Every matching command: with descriptions when they all fit, else names only. The one Tab
/// put in the draft is highlighted.
fn completion_line(state: &State, width: usize) -> Line<'static> {
    let matches = state.completions();
    let style = Style::new().fg(Color::Cyan);
    let selected = state.completion_selected();
    let listed = state.command_list();
    let items: Vec<(&str, &str)> = listed
        .iter()
        .filter(|(c, _)| matches.contains(c))
        .map(|(c, d)| (c.as_str(), d.as_str()))
        .collect();
    let full: usize = items
        .iter()
        .map(|(c, d)| wrap::width(c) + wrap::width(d) + 3)
        .sum();
    let names: usize = items.iter().map(|(c, _)| wrap::width(c) + 1).sum();
    if full > width && names > width {
        return names_window(&items, selected, width, style);
    }
    let spans: Vec<Span<'static>> = items
        .iter()
        .map(|(c, d)| {
            let text = if full <= width {
                format!(" {c} {d} ")
            } else {
                format!("{c} ")
            };
            let s = if selected == Some(c) {
                style.add_modifier(Modifier::REVERSED)
            } else {
                style
            };
            Span::styled(text, s)
        })
        .collect();
    Line::from(spans)
}

/// The names that fit around the selected one, with how many are left out on each side
/// (`… 3 more`), so a narrow window never hides commands without saying so.
fn names_window(
    items: &[(&str, &str)],
    selected: Option<&str>,
    width: usize,
    style: Style,
) -> Line<'static> {
    if items.is_empty() {
        return Line::default();
    }
    let at = items
        .iter()
        .position(|(c, _)| Some(*c) == selected)
        .unwrap_or(0);
    // Room kept for both markers; a name is its width and a space.
    let room = width.saturating_sub(24);
    let fits = |from: usize, to: usize| -> bool {
        items[from..=to]
            .iter()
            .map(|(c, _)| wrap::width(c) + 1)
            .sum::<usize>()
            <= room
    };
    let mut start = 0;
    while start < at && !fits(start, at) {
        start += 1;
    }
    let mut end = at;
    while end + 1 < items.len() && fits(start, end + 1) {
        end += 1;
    }
    let mut spans = Vec::new();
    if start > 0 {
        spans.push(Span::styled(format!("… {start} more "), style));
    }
    for (c, _) in &items[start..=end] {
        let s = if selected == Some(*c) {
            style.add_modifier(Modifier::REVERSED)
        } else {
            style
        };
        spans.push(Span::styled(format!("{c} "), s));
    }
    let after = items.len() - end - 1;
    if after > 0 {
        spans.push(Span::styled(format!("… {after} more (Tab)"), style));
    }
    Line::from(spans)
}

/// Draws the draft and returns where the cursor goes.
fn input(state: &State, area: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
    if area.height == 0 || area.width == 0 {
        return None;
    }
    let prompt = prompt(state);
    let pw = wrap::width(prompt);
    let text_w = (area.width as usize).saturating_sub(pw).max(1);
    let (rows, (crow, ccol)) = state.draft.layout(text_w);
    let h = area.height as usize;
    // Keep the cursor row visible.
    let first = crow.saturating_sub(h - 1).min(rows.len().saturating_sub(h));
    let prompt_style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    for (i, row) in rows.iter().skip(first).take(h).enumerate() {
        let y = area.y + i as u16;
        let lead = if first + i == 0 {
            prompt.to_string()
        } else {
            " ".repeat(pw)
        };
        let line = Line::from(vec![
            Span::styled(lead, prompt_style),
            Span::raw(row.clone()),
        ]);
        buf.set_line(area.x, y, &line, area.width);
    }
    if state.draft.is_empty() && state.approval.is_none() {
        let placeholder = if state.busy {
            "type to queue a prompt · Esc interrupts"
        } else {
            "ask anything · /help"
        };
        let line = Line::styled(placeholder, Style::new().fg(Color::DarkGray));
        buf.set_line(
            area.x + pw as u16,
            area.y,
            &line,
            area.width.saturating_sub(pw as u16),
        );
    }
    let x = (area.x as usize + pw + ccol).min(area.right().saturating_sub(1) as usize) as u16;
    let y = area.y + (crow - first) as u16;
    Some((x, y))
}

fn status(state: &State, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    // The state first: a narrow window cuts the end, and a pending approval must stay visible.
    let mut parts = vec![state.activity.label()];
    if let Some(p) = &state.approval {
        parts[0] = if p.typing_reason {
            format!("deny {}: type a reason", wrap::sanitize(&p.tool))
        } else {
            format!("approve {}? y/a/n/r", wrap::sanitize(&p.tool))
        };
    }
    if let Some(goal) = &state.goal {
        parts.push(goal.status());
    }
    match state.running_background() {
        0 => {}
        n => parts.push(format!("{n} bg (/ps)")),
    }
    if let Some(profile) = &state.sandbox {
        parts.push(profile.describe());
    }
    parts.push(wrap::sanitize(&state.model));
    if let Some(id) = &state.session_id {
        parts.push(id.chars().take(8).collect());
    }
    if let Some(t) = state.context_tokens {
        let pct = (t * 100).checked_div(state.context_window).unwrap_or(0);
        parts.push(format!("ctx {} ({pct}%)", tokens(t)));
    }
    // Where the window came from, unless it is the built-in default.
    if let Some(source) = state
        .context_window_source
        .filter(|s| *s != crate::protocol::WindowSource::Default)
    {
        let window = tokens(state.context_window);
        parts.push(format!("window {window} ({})", source.as_str()));
    }
    if let Some((t, wall)) = state.last_turn {
        let t = t.map_or("n/a".to_string(), tokens);
        parts.push(format!("last {t} tok {:.1}s", wall.as_secs_f64()));
        if let Some(pct) = state.last_cache {
            parts.push(format!("cache {pct}%"));
        }
    }
    parts.push(format!(
        "mouse {} (F2)",
        if state.mouse_capture { "on" } else { "off" }
    ));
    let text = wrap::truncate(&format!(" {}", parts.join(" · ")), area.width as usize);
    let style = Style::new().fg(Color::Black).bg(Color::Gray);
    buf.set_style(area, style);
    buf.set_line(area.x, area.y, &Line::styled(text, style), area.width);
}

fn tokens(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}
