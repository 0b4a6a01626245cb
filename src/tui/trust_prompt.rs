//! The one question asked before a full-screen session starts in an untrusted workspace whose
//! `.minicode/config.toml` wants to choose the server, the provider or the key: trust the
//! workspace and remember it, run without the workspace's file, or quit.
//!
//! It owns only the question's state, its drawing and its small key loop on the terminal guard;
//! it gets plain text from the CLI and knows nothing of the configuration or the trust list
//! (the CLI records the answer). Everything shown that came from disk is made visible first.
//! Keys typed before the question appeared are discarded and keys typed within
//! [`QUESTION_GUARD`] of it are ignored: one stray `t` must never trust a repository.

use std::io;
use std::time::{Duration, Instant};

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
    /// When the workspace was trusted before and what trust covers changed since: one line per
    /// change. Empty for a workspace never trusted.
    pub changes: Vec<String>,
}

/// How long after the question appears its keys are ignored (each ignored key restarts the
/// wait), like the approval guard: a burst of typing meant for the session never answers.
pub const QUESTION_GUARD: Duration = Duration::from_millis(500);

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

/// The question on screen: which choice is highlighted, and when keys start to count.
#[derive(Debug, Clone)]
pub struct Prompt {
    question: Question,
    selected: usize,
    now: Instant,
    armed_at: Instant,
}

impl Prompt {
    /// The question as it appears at `shown`. It starts on "run without": the choice that
    /// trusts nothing and still lets the user work.
    pub fn new(question: Question, shown: Instant) -> Self {
        Self {
            question,
            selected: 1,
            now: shown,
            armed_at: shown + QUESTION_GUARD,
        }
    }

    /// Whether keys answer yet (the guard has passed).
    pub fn armed(&self) -> bool {
        self.now >= self.armed_at
    }

    /// When keys start to count, while they do not yet: the loop redraws then.
    fn arms_in(&self) -> Option<Duration> {
        (!self.armed()).then(|| self.armed_at - self.now)
    }

    /// Moves the clock without a key.
    pub fn tick(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    /// The highlighted answer.
    pub fn selected(&self) -> Answer {
        CHOICES[self.selected].0
    }

    /// Handles one key pressed at `now`; `Some` once the user has answered. Shortcut letters
    /// answer at once; arrows (or Tab) move the highlight and Enter takes it; Esc, Ctrl+C and
    /// Ctrl+D quit. Within the guard only quitting works: any other key is dropped and the
    /// guard starts again.
    pub fn update_at(&mut self, key: KeyEvent, now: Instant) -> Option<Answer> {
        self.tick(now);
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let quit = matches!(key.code, KeyCode::Esc)
            || ctrl && matches!(key.code, KeyCode::Char('c' | 'd'));
        if quit {
            return Some(Answer::Quit);
        }
        if !self.armed() {
            self.armed_at = self.now + QUESTION_GUARD;
            return None;
        }
        match key.code {
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
        ];
        if !q.changes.is_empty() {
            lines.push(Line::from(
                "It was trusted before, but what trust covers has changed since:",
            ));
            lines.extend(
                q.changes
                    .iter()
                    .map(|change| Line::from(format!("  {}", visible(change)))),
            );
            lines.push(Line::from(""));
        }
        lines.push(Line::from(format!("Workspace: {}", visible(&q.workspace))));
        if !q.fields.is_empty() {
            lines.extend([
                Line::from(format!("Its config file {} sets:", visible(&q.file))),
                Line::from(format!("  {}", q.fields.join(", "))),
            ]);
        }
        lines.push(Line::from(""));
        lines.push(Line::from(
            "Trusting this folder lets its config choose the server that receives your API key \
             and the conversation, and start programs on your computer (MCP servers). A \
             repository you did not write could use that to send your key or your code to its \
             own server.",
        ));
        lines.push(Line::from(""));
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
        lines.push(Line::from(if self.armed() {
            "↑/↓ choose · Enter confirm (default: run without) · Esc quit"
        } else {
            "Read first: keys are ignored for a moment."
        }));
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
    discard_typed_ahead()?;
    let mut term = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(io::stdout()))?;
    let mut prompt = Prompt::new(question, Instant::now());
    loop {
        term.draw(|f| prompt.render(f))?;
        // Until the guard passes, wake when it does so the key hint appears.
        if let Some(wait) = prompt.arms_in()
            && !crossterm::event::poll(wait)?
        {
            prompt.tick(Instant::now());
            continue;
        }
        if let Event::Key(key) = crossterm::event::read()?
            && let Some(answer) = prompt.update_at(key, Instant::now())
        {
            return Ok(answer);
        }
    }
}

/// Drops every key typed before the question appeared: the terminal's pending input, and
/// whatever crossterm already read while it queried the terminal on entry.
fn discard_typed_ahead() -> io::Result<()> {
    use nix::sys::termios::{FlushArg, tcflush};
    use std::io::IsTerminal;
    let flush = |fd: std::os::fd::BorrowedFd<'_>| tcflush(fd, FlushArg::TCIFLUSH);
    if io::stdin().is_terminal() {
        flush(std::os::fd::AsFd::as_fd(&io::stdin())).map_err(io::Error::from)?;
    } else if let Ok(tty) = std::fs::File::open("/dev/tty") {
        flush(std::os::fd::AsFd::as_fd(&tty)).map_err(io::Error::from)?;
    }
    while crossterm::event::poll(Duration::ZERO)? {
        let _ = crossterm::event::read()?;
    }
    Ok(())
}
