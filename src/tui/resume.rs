//! `/resume`: a picker of this workspace's sessions (title, age, turns) drawn over the bottom
//! of the transcript; ↑/↓ move, Enter resumes the chosen one in this window (as `--session`
//! would), Esc closes it. `/resume ID` resumes at once.
//!
//! Part of `update` (the keys) and `view` (the drawing); the listing and the switch are the
//! core's (`Op::ListSessions`, `Op::Resume`).

use std::time::SystemTime;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::state::{Effect, State};
use super::transcript::Level;
use super::wrap;
use crate::protocol::sessions::age;
use crate::protocol::{Op, SessionSummary};

/// Rows of sessions the picker shows at most.
const ROWS: usize = 10;

/// The open picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Picker {
    /// The sessions, newest first, each with its age as it was when listed.
    pub(crate) rows: Vec<(SessionSummary, String)>,
    pub(crate) selected: usize,
}

impl State {
    /// `/resume` lists (the picker opens on the answer); `/resume ID` resumes at once.
    pub(crate) fn resume_command(&mut self, arg: &str) -> Vec<Effect> {
        if self.busy {
            self.notice(Level::Warning, "/resume waits for an idle session");
            return Vec::new();
        }
        if arg.is_empty() {
            return vec![Effect::Op(Op::ListSessions)];
        }
        self.resume(arg.to_string())
    }

    /// The core's list: opens the picker, or says there is nothing to resume.
    pub(crate) fn sessions_listed(&mut self, sessions: Vec<SessionSummary>, now: SystemTime) {
        if sessions.iter().all(|s| s.current) {
            self.notice(Level::Info, "no other session of this workspace to resume");
            return;
        }
        let rows: Vec<_> = sessions
            .into_iter()
            .map(|s| {
                let when = age(s.updated, now);
                (s, when)
            })
            .collect();
        let selected = rows.iter().position(|(s, _)| !s.current).unwrap_or(0);
        self.picker = Some(Picker { rows, selected });
    }

    /// Keys while the picker is open: it takes them all but Ctrl+C (which closes it first).
    pub(crate) fn picker_key(&mut self, k: &KeyEvent) -> Option<Vec<Effect>> {
        let picker = self.picker.as_mut()?;
        let last = picker.rows.len().saturating_sub(1);
        match k.code {
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => picker.selected = (picker.selected + 1).min(last),
            KeyCode::PageUp => picker.selected = picker.selected.saturating_sub(ROWS),
            KeyCode::PageDown => picker.selected = (picker.selected + ROWS).min(last),
            KeyCode::Enter => {
                let chosen = picker.rows.get(picker.selected).map(|(s, _)| s.clone());
                self.picker = None;
                return Some(match chosen {
                    Some(s) if s.current => {
                        self.notice(Level::Info, "that is the session running now");
                        Vec::new()
                    }
                    Some(s) => self.resume(s.id),
                    None => Vec::new(),
                });
            }
            KeyCode::Esc => self.picker = None,
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                self.picker = None;
            }
            _ => {}
        }
        Some(Vec::new())
    }

    /// Asks for the session `id` names; its `SessionConfigured` empties the transcript and
    /// its history follows (see `core_events`), so a resume that fails loses nothing.
    fn resume(&mut self, id: String) -> Vec<Effect> {
        self.notice(Level::Info, format!("resuming session {id}…"));
        self.resuming = Some(id.clone());
        vec![Effect::Op(Op::Resume { id })]
    }
}

/// Draws the picker over the bottom of `area` (the transcript's).
pub(crate) fn render(picker: &Picker, area: Rect, buf: &mut Buffer) {
    let shown = picker.rows.len().min(ROWS);
    let height = (shown as u16 + 2).min(area.height);
    if height < 3 || area.width < 20 {
        return;
    }
    let rect = Rect::new(area.x, area.bottom() - height, area.width, height);
    Clear.render(rect, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" resume a session · ↑↓ choose · Enter resume · Esc close ");
    let inner = block.inner(rect);
    block.render(rect, buf);
    let first = picker
        .selected
        .saturating_sub(inner.height.saturating_sub(1) as usize);
    let width = inner.width as usize;
    for (row, (i, (s, when))) in picker
        .rows
        .iter()
        .enumerate()
        .skip(first)
        .take(inner.height as usize)
        .enumerate()
    {
        let turns = match s.turns {
            1 => "1 turn".to_string(),
            n => format!("{n} turns"),
        };
        let mark = if s.current { " (this session)" } else { "" };
        let right = format!("  {when} · {turns}{mark}");
        let short = s.id.get(..8).unwrap_or(&s.id);
        let title = if s.title.is_empty() {
            "(no prompt)".to_string()
        } else {
            wrap::sanitize(&s.title)
        };
        let left_w = width.saturating_sub(wrap::width(&right) + 2);
        let left = wrap::truncate(&format!("{short}  {title}"), left_w);
        let pad = width.saturating_sub(wrap::width(&left) + wrap::width(&right) + 2);
        let text = format!(
            "{} {left}{}{right}",
            if i == picker.selected { "›" } else { " " },
            " ".repeat(pad)
        );
        let style = if i == picker.selected {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new().fg(Color::Gray)
        };
        let y = inner.y + row as u16;
        buf.set_line(inner.x, y, &Line::styled(text, style), inner.width);
    }
}
