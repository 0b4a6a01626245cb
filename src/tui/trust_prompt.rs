//! The one question asked before a full-screen session starts in an untrusted workspace whose
//! `config/config.toml` wants to choose the server, the provider or the key: trust the
//! workspace and remember it, run without the workspace's file, or quit.
//!
//! It owns only the question's state, its drawing and its small key loop on the terminal guard;
//! it gets plain text from the CLI and knows nothing of the configuration or the trust list
//! (the CLI records the answer). Everything shown that came from disk is made visible first.

use std::io;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use crate::sanitize::visible;

/// What the CLI asks about, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The workspace folder.
    pub workspace: String,
    /// The workspace's configuration file.
    pub file: String,
    /// The dotted names of the fields it may not set while untrusted.
    pub fields: Vec<String>,
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Trust the workspace, record it, and use its file.
    Trust,
    /// Start as if the workspace's file were absent.
    WithoutFile,
    Quit,
}

/// The choices in display order, with their shortcut keys.
const CHOICES: [(Answer, char, &str); 3] = [
    (
        Answer::Trust,
        't',
        "Trust this workspace and remember it (same as `minicode trust`)",
    ),
    (
        Answer::WithoutFile,
        'r',
        "Run without the workspace's config file",
    ),
    (Answer::Quit, 'q', "Quit"),
];

/// The question on screen: which choice is highlighted.
#[derive(Debug, Clone)]
pub struct Prompt {
    question: Question,
    selected: usize,
}

impl Prompt {
    /// Starts on "run without": the choice that trusts nothing and still lets the user work.
    pub fn new(question: Question) -> Self {
        Self {
            question,
            selected: 1,
        }
    }

    /// The highlighted answer.
    pub fn selected(&self) -> Answer {
        CHOICES[self.selected].0
    }

    /// Handles one key; `Some` once the user has answered. Shortcut letters answer at once;
    /// arrows (or Tab) move the highlight and Enter takes it; Esc, Ctrl+C and Ctrl+D quit.
    pub fn update(&mut self, key: KeyEvent) -> Option<Answer> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c' | 'd') if ctrl => Some(Answer::Quit),
            KeyCode::Esc => Some(Answer::Quit),
            KeyCode::Enter => Some(self.selected()),
            KeyCode::Up | KeyCode::BackTab | KeyCode::Char('k') => {
                self.selected = (self.selected + CHOICES.len() - 1) % CHOICES.len();
                None
            }
            KeyCode::Down | KeyCode::Tab | KeyCode::Char('j') => {
                self.selected = (self.selected + 1) % CHOICES.len();
                None
            }
            KeyCode::Char(c) => CHOICES
                .iter()
                .find(|(_, key, _)| *key == c.to_ascii_lowercase())
                .map(|(answer, _, _)| *answer),
            _ => None,
        }
    }

    /// Draws the question in a box in the middle of the screen.
    pub fn render(&self, frame: &mut Frame) {
        let area = frame.area();
        let width = area.width.clamp(20, 84);
        let q = &self.question;
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let mut lines = vec![
            Line::from(Span::styled("This workspace is not trusted.", bold)),
            Line::from(""),
            Line::from(format!("Workspace: {}", visible(&q.workspace))),
            Line::from(format!("Its config file {} sets:", visible(&q.file))),
            Line::from(format!("  {}", q.fields.join(", "))),
            Line::from(""),
            Line::from(
                "These choose which server receives the conversation and which key is sent \
                 with it. A repository you did not write could use them to send your key or \
                 your code to its own server.",
            ),
            Line::from(""),
        ];
        for (i, (_, key, label)) in CHOICES.iter().enumerate() {
            let marker = if i == self.selected { "›" } else { " " };
            let style = if i == self.selected {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new()
            };
            lines.push(Line::from(Span::styled(
                format!("{marker} [{key}] {label}"),
                style,
            )));
        }
        lines.push(Line::from(""));
        lines.push(Line::from("↑/↓ choose · Enter confirm · Esc quit"));
        // Rows after wrapping, estimated by width; word wrapping may need a little more, so the
        // box gets two spare rows (and never more than the screen).
        let inner_width = usize::from(width.saturating_sub(2).max(1));
        let rows: usize = lines
            .iter()
            .map(|l| l.width().div_ceil(inner_width).max(1))
            .sum();
        let paragraph = Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" minicode "));
        let height = u16::try_from(rows + 4).unwrap_or(u16::MAX).min(area.height);
        let rect = Rect {
            x: area.x + (area.width.saturating_sub(width)) / 2,
            y: area.y + (area.height.saturating_sub(height)) / 2,
            width: width.min(area.width),
            height,
        };
        frame.render_widget(paragraph, rect);
    }
}

/// Asks on the terminal (alternate screen, raw mode, restored on every exit path by the
/// terminal guard) and returns the answer. Runs before the session's own loop, so it reads
/// keys directly.
pub(crate) fn ask(question: Question) -> io::Result<Answer> {
    let _guard = super::terminal::Guard::enter(false)?;
    let mut term = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(io::stdout()))?;
    let mut prompt = Prompt::new(question);
    loop {
        term.draw(|f| prompt.render(f))?;
        if let Event::Key(key) = crossterm::event::read()?
            && let Some(answer) = prompt.update(key)
        {
            return Ok(answer);
        }
    }
}
