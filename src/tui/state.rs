//! The UI state and `update`: every key, paste, mouse event, resize and agent event becomes a
//! [`Msg`]; `update` changes the [`State`] and returns [`Effect`]s (ops for the core, exit,
//! clipboard, mouse capture, suspend) for the run loop to carry out.
//!
//! No I/O and no drawing here (that is `view`), and no agent logic: the core decides, this only
//! reflects what it reported and turns user intent into ops.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{KeyEvent, KeyEventKind, MouseEvent};
use ratatui::layout::Rect;

mod keys;
mod pasted;

use super::commands::TabCycle;
use super::input::Draft;
use super::transcript::{Kind, Level, Scroll, Transcript};
use super::view;
use super::wrap;
use crate::protocol::{Event, Op, WindowSource};

/// Rows moved by one mouse-wheel notch.
pub(crate) const WHEEL_ROWS: usize = 3;
/// A second Ctrl+C within this time exits.
pub(crate) const EXIT_CONFIRM: Duration = Duration::from_secs(2);
/// How long after an approval appears its answer keys (y/a/n/r) are ignored, so a key typed
/// for something else (the next word of a prompt, a second "y" for the previous approval)
/// cannot answer a request the user has not read. Each ignored key restarts the wait.
pub const APPROVAL_GUARD: Duration = Duration::from_millis(300);

pub use super::commands::COMMANDS;

/// Something that happened, for `update`.
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Paste(String),
    /// A pasted path to an image file, read and checked by the run loop (`tui::pasted`): the
    /// draft gets its label, the prompt the picture.
    PasteImage {
        name: String,
        image: crate::chat::Image,
    },
    /// A pasted path to a file named like an image that failed the checks: pasted as text,
    /// with `why` shown above the input box.
    PasteRefused {
        text: String,
        why: String,
    },
    Mouse(MouseEvent),
    Resize(u16, u16),
    Agent(Event),
}

/// Something for the run loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Op(Op),
    Exit,
    /// Put text on the clipboard (OSC 52).
    Copy(String),
    /// Turn mouse reporting on or off.
    MouseCapture(bool),
    /// Restore the terminal and stop the process until it is resumed (Ctrl+Z).
    Suspend,
}

/// What the session is doing, for the status bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Activity {
    Idle,
    Waiting,
    Streaming,
    Tool(String),
    Approval(String),
}

impl Activity {
    pub(crate) fn label(&self) -> String {
        match self {
            Activity::Idle => "idle".into(),
            Activity::Waiting => "waiting for the model".into(),
            Activity::Streaming => "streaming".into(),
            Activity::Tool(t) => format!("running {t}"),
            Activity::Approval(t) => format!("approve {t}?"),
        }
    }
}

/// An approval the core waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingApproval {
    pub(crate) call: String,
    pub(crate) tool: String,
    /// The rule an "always" answer adds for the session (`bash(ls*)`), shown on the key.
    pub(crate) always: Option<String>,
    /// The user is typing a reason for a denial (the draft holds it).
    pub(crate) typing_reason: bool,
    /// The draft that was there before the reason was typed.
    pub(crate) stashed_draft: String,
    /// Answer keys count from this moment on (see [`APPROVAL_GUARD`]).
    pub(crate) armed_at: Instant,
}

/// The transient line above the input box: a message, or a state of the session that ends
/// on its own (the turn ends, another key comes), which the session clears by what it is,
/// never by comparing the line's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hint {
    /// A message: a copy, a fold, completions, what a key does.
    Text(String),
    /// The interrupt was sent; the turn's end clears it.
    Interrupting,
    /// A first Ctrl+C: a second one soon exits; any other key clears it.
    ExitConfirm,
}

impl Hint {
    /// The line as shown.
    pub(crate) fn text(&self) -> &str {
        match self {
            Hint::Text(text) => text,
            Hint::Interrupting => "interrupting…",
            Hint::ExitConfirm => "press Ctrl+C again to exit",
        }
    }
}

/// Everything the view shows.
pub struct State {
    pub transcript: Transcript,
    pub draft: Draft,
    pub scroll: Scroll,
    pub size: (u16, u16),
    pub(crate) model: String,
    pub(crate) session_id: Option<String>,
    pub(crate) session_path: Option<String>,
    pub context_window: u64,
    /// Where the window came from, once the core said.
    pub(crate) context_window_source: Option<WindowSource>,
    pub(crate) context_tokens: Option<u64>,
    /// The sandbox profile of `bash` calls and plan mode, once the core said.
    pub(crate) sandbox: Option<crate::protocol::Profile>,
    /// Tokens (None when unavailable) and wall time of the last turn.
    pub(crate) last_turn: Option<(Option<u64>, Duration)>,
    /// The share of the last turn's prompt tokens the server served from its prompt cache, in
    /// percent, when it said.
    pub(crate) last_cache: Option<u32>,
    pub(crate) activity: Activity,
    pub(crate) busy: bool,
    pub queue: VecDeque<String>,
    pub approval: Option<PendingApproval>,
    pub(crate) mouse_capture: bool,
    /// A transient line above the input box.
    pub(crate) hint: Option<Hint>,
    /// A mouse selection of characters, in transcript positions (it follows the text while
    /// the view moves).
    pub(crate) selection: Option<super::select::Selection>,
    /// The entry chosen with Alt/Ctrl+Up/Down (Enter or `o` folds it).
    pub selected: Option<usize>,
    /// An active `/find`.
    pub search: Option<super::select::Search>,
    /// How long answer keys wait after an approval appears ([`APPROVAL_GUARD`]; tests that
    /// are not about the guard set it to zero).
    pub approval_guard: Duration,
    /// The time of the message being handled (or of the frame being drawn): time-dependent
    /// rules read it instead of the clock, so tests can inject time.
    pub(crate) now: Instant,
    pub(crate) last_ctrl_c: Option<Instant>,
    /// An Esc at idle on an empty input box: a second one soon after opens `/rewind`.
    pub(crate) last_esc: Option<Instant>,
    pub(crate) streaming: Option<usize>,
    /// The tool entry whose call runs now (its live output and elapsed time).
    pub(crate) running_tool: Option<usize>,
    pub(crate) interrupted_during: Option<String>,
    pub(crate) sessions_seen: u32,
    pub(crate) tab_cycle: Option<TabCycle>,
    /// The welcome header's facts; the header is entry 0 while `header_live`.
    pub(crate) welcome: Option<super::help::Welcome>,
    pub(crate) header_live: bool,
    /// The instruction files the core reported loaded (path, tokens), in load order.
    pub(crate) memory: Vec<(String, u64)>,
    /// The user's custom commands (found by the CLI).
    pub custom: Vec<crate::protocol::CustomCommand>,
    /// The configured hooks as `/hooks` lists them (found by the CLI).
    pub hooks: Vec<String>,
    /// The session's background processes, as the core last listed them (`/ps`).
    pub(crate) background: Vec<crate::chat::Background>,
    /// Why the model server could not be reached at session start, shown in the header.
    pub(crate) server_problem: Option<String>,
    /// What the terminal can show (`NO_COLOR`, colour depth).
    pub colors: super::palette::Depth,
    /// The session's goal as the core last reported it (for the status bar and `/goal`).
    pub(crate) goal: Option<super::goal::GoalView>,
    /// Why goal access fails, when the core said so.
    pub(crate) goal_error: Option<String>,
    /// `/goal` was typed: the next `GoalStatus` is shown in full.
    pub(crate) goal_asked: bool,
    /// The permission rules for `/permissions`, and the rule an "always" offers to save.
    pub permissions: super::permissions::Permissions,
    /// The prompt a rewind put back in the draft, while it may still be there untouched.
    pub(crate) restored_prompt: Option<String>,
    /// The open `/resume` picker.
    pub(crate) picker: Option<super::resume::Picker>,
    /// The session (id or prefix) `/resume` asked the core for, until it is configured.
    pub(crate) resuming: Option<String>,
    /// Pasted images by their label in the draft or a queued prompt: a prompt takes those
    /// whose label it still holds (see `state/pasted.rs`).
    pub(crate) pasted: Vec<(String, crate::chat::Image)>,
}

impl State {
    /// A fresh state; a resumed session's transcript arrives later as an agent event.
    pub fn new(model: &str, context_window: u64) -> Self {
        Self {
            transcript: Transcript::default(),
            draft: Draft::default(),
            scroll: Scroll::Tail,
            size: (80, 24),
            model: model.to_string(),
            session_id: None,
            session_path: None,
            context_window,
            context_window_source: None,
            sandbox: None,
            context_tokens: None,
            last_turn: None,
            last_cache: None,
            activity: Activity::Idle,
            busy: false,
            queue: VecDeque::new(),
            approval: None,
            mouse_capture: true,
            hint: None,
            selection: None,
            selected: None,
            search: None,
            approval_guard: APPROVAL_GUARD,
            now: Instant::now(),
            last_ctrl_c: None,
            last_esc: None,
            streaming: None,
            running_tool: None,
            interrupted_during: None,
            sessions_seen: 0,
            tab_cycle: None,
            welcome: None,
            header_live: false,
            memory: Vec::new(),
            custom: Vec::new(),
            hooks: Vec::new(),
            background: Vec::new(),
            server_problem: None,
            colors: super::palette::Depth::default(),
            goal: None,
            goal_error: None,
            goal_asked: false,
            permissions: super::permissions::Permissions::default(),
            restored_prompt: None,
            picker: None,
            resuming: None,
            pasted: Vec::new(),
        }
    }

    /// Starts an empty session with the welcome header (version, model and server,
    /// workspace, window, memory, hints); it scrolls away like any entry.
    pub fn set_welcome(&mut self, welcome: super::help::Welcome) {
        self.welcome = Some(welcome);
        if self.transcript.is_empty() {
            self.header_live = true;
            self.transcript
                .push(Kind::Panel(super::panel::Panel::default()));
            self.refresh_header();
        }
    }

    /// Rebuilds the header from what is known now (the core's window and memory reports).
    pub(crate) fn refresh_header(&mut self) {
        if !self.header_live {
            return;
        }
        let Some(w) = self.welcome.clone() else {
            return;
        };
        let panel = super::help::header(self, &w);
        self.transcript.edit(0, |k| *k = Kind::Panel(panel));
    }

    pub(crate) fn transcript_area(&self) -> Rect {
        view::areas(self, Rect::new(0, 0, self.size.0, self.size.1)).transcript
    }

    pub(crate) fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.transcript.push(Kind::Notice(level, text.into()));
    }

    /// One step of the Elm loop, at the current time.
    /// The line shown above the input box, if any.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_ref().map(Hint::text)
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        self.update_at(msg, Instant::now())
    }

    /// One step of the Elm loop with `msg` arriving at `now`.
    pub fn update_at(&mut self, msg: Msg, now: Instant) -> Vec<Effect> {
        self.now = now;
        match msg {
            Msg::Key(k) if k.kind == KeyEventKind::Release => Vec::new(),
            Msg::Key(k) => self.key(k),
            Msg::Paste(text) => {
                self.typed_over_restored(&text);
                self.draft.insert_str(&text);
                Vec::new()
            }
            Msg::PasteImage { name, image } => self.paste_image(&name, image),
            Msg::PasteRefused { text, why } => {
                self.typed_over_restored(&text);
                self.draft.insert_str(&text);
                self.hint = Some(Hint::Text(why));
                Vec::new()
            }
            Msg::Mouse(m) => self.mouse(m),
            Msg::Resize(w, h) => {
                self.size = (w, h);
                self.selection = None;
                Vec::new()
            }
            Msg::Agent(e) => self.agent(e),
        }
    }

    /// Whether a pending approval takes answer keys yet (its guard has passed).
    pub(crate) fn approval_armed(&self) -> bool {
        self.approval
            .as_ref()
            .is_some_and(|p| self.now >= p.armed_at)
    }

    /// When the pending approval starts taking answer keys, if it does not yet: the run loop
    /// redraws then, so the key hint appears.
    pub fn approval_arms_at(&self) -> Option<Instant> {
        self.approval
            .as_ref()
            .map(|p| p.armed_at)
            .filter(|&t| t > self.now)
    }

    /// Moves the clock to `now` without any message (the run loop's frame time): a running
    /// call's elapsed time follows it.
    pub fn set_now(&mut self, now: Instant) {
        self.now = now;
        let Some(i) = self.running_tool else { return };
        let secs = match self.transcript.entries().get(i).map(|e| e.kind()) {
            Some(Kind::Tool(t)) => t
                .running
                .as_ref()
                .map(|r| (now.saturating_duration_since(r.started).as_secs(), r.secs)),
            _ => None,
        };
        if let Some((secs, shown)) = secs
            && secs != shown
        {
            self.transcript.edit(i, |k| {
                if let Kind::Tool(t) = k
                    && let Some(r) = &mut t.running
                {
                    r.secs = secs;
                }
            });
        }
    }

    /// When the screen must change without any event: a pending approval starts taking
    /// answer keys, or a running call's elapsed time moves on to the next second.
    pub fn wake_at(&self) -> Option<Instant> {
        let tick = self
            .running_tool
            .and_then(|i| match self.transcript.entries().get(i)?.kind() {
                // A call waiting for its approval is not running yet.
                Kind::Tool(t) if t.approval.is_none() || t.decision.is_some() => {
                    let r = t.running.as_ref()?;
                    Some(r.started + Duration::from_secs(r.secs + 1))
                }
                _ => None,
            });
        match (self.approval_arms_at(), tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Queued prompts wait for Enter (the last turn was interrupted or failed).
    pub(crate) fn queue_paused(&self) -> bool {
        !self.busy && !self.queue.is_empty()
    }

    /// Sends a prompt, with the pasted images whose labels it holds.
    pub(crate) fn submit(&mut self, text: String) -> Vec<Effect> {
        self.header_live = false;
        self.transcript.push(Kind::User(text.clone()));
        self.busy = true;
        self.activity = Activity::Waiting;
        self.hint = None;
        let images = self.take_pasted(&text);
        if images.is_empty() {
            return vec![Effect::Op(Op::Submit(text))];
        }
        vec![Effect::Op(Op::SubmitImages { text, images })]
    }

    /// Plain text of the transcript (or its last `turns` turns) for the normal screen on exit.
    pub fn exit_transcript(&self, turns: Option<u32>, width: usize) -> String {
        let entries = self.transcript.entries();
        let start = match turns {
            None => 0,
            Some(0) => return String::new(),
            Some(n) => {
                let starts: Vec<usize> = entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| matches!(e.kind(), Kind::User(_)))
                    .map(|(i, _)| i)
                    .collect();
                starts
                    .len()
                    .checked_sub(n as usize)
                    .map_or(0, |k| starts[k])
            }
        };
        let mut out = String::new();
        for i in start..entries.len() {
            for l in 0..self.transcript.height(i, width) {
                if let Some(text) = self.transcript.with_line(i, l, width, wrap::line_text) {
                    out.push_str(text.trim_end());
                    out.push('\n');
                }
            }
        }
        out
    }
}
