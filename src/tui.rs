//! The full-screen interactive session: one task owns the terminal and runs one `select!` loop
//! over terminal input, agent events, signals and a redraw timer that only runs when something
//! changed (at most one frame per [`FRAME`], no wake-ups when idle).
//!
//! The UI is one more consumer of the core's events: it turns keys into `Op`s and events into
//! state, and adds no agent logic. State and drawing live in `tui/state` and `tui/view`.

pub(crate) mod commands;
pub(crate) mod core_events;
mod diff;
pub(crate) mod goal;
pub mod help;
pub mod highlight;
pub mod input;
pub mod live;
pub mod markdown;
mod mcp;
mod mention;
pub mod palette;
pub(crate) mod panel;
pub mod pasted;
pub mod permissions;
mod processes;
pub(crate) mod reasoning;
pub(crate) mod resume;
pub(crate) mod rewind;
mod scroll;
pub mod segment;
mod segment_cache;
pub(crate) mod select;
pub mod state;
pub(crate) mod subagents;
mod syntax_packs;
pub(crate) mod terminal;
pub mod transcript;
pub mod trust_prompt;
pub mod view;
pub mod wrap;

use std::io::{self, Write};
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, EventStream};
use crossterm::terminal::{Clear, ClearType};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::protocol::{AgentHandle, OpSender};
use crate::protocol::{Event, Op};
use state::{Effect, Msg, State};

/// The shortest time between two frames (coalesces streaming redraws to ~30 fps).
pub(crate) const FRAME: Duration = Duration::from_millis(33);
/// How long to wait for the core to save and stop on exit.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);
/// Agent events handled before a frame may be drawn, so a flood cannot starve input.
const EVENT_BATCH: usize = 4096;

/// How the session starts.
pub(crate) struct Options {
    pub(crate) model: String,
    pub context_window: u64,
    /// How many of the last turns to print to the normal screen on exit (None = all, Some(0) = none).
    pub(crate) exit_transcript_turns: Option<u32>,
    /// The welcome header's facts (shown when the session starts empty).
    pub(crate) welcome: help::Welcome,
    /// `[ui] syntax_highlighting`.
    pub(crate) highlight: bool,
    /// The permission rules for `/permissions`, and how an "always" is saved as one.
    pub(crate) rulebook: Option<permissions::Rulebook>,
    /// The custom commands the CLI found, with the warnings of their discovery.
    pub(crate) commands: Vec<crate::protocol::CustomCommand>,
    pub(crate) command_warnings: Vec<String>,
    /// Every configured hook and whether it runs, one line each, for `/hooks`.
    pub hooks: Vec<String>,
    /// Where a pasted relative path is looked up (`tui::pasted`).
    pub(crate) workspace: std::path::PathBuf,
}

/// What the caller needs after the session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) session_id: Option<String>,
    /// The signal that ended the session (SIGTERM, SIGHUP, SIGINT), if one did; the CLI turns
    /// it into a failure exit code.
    pub(crate) signal: Option<i32>,
}

/// Runs the session until the user exits. Sends `Op::Shutdown` on exit and waits (bounded) for
/// `Event::ShutdownComplete`. Returns the session id last seen (for the "resume with" line).
pub(crate) async fn run(handle: AgentHandle, options: Options) -> io::Result<Outcome> {
    let (ops, mut events) = handle.split();
    let mut state = State::new(&options.model, options.context_window);
    state.set_welcome(options.welcome);
    state.custom = options.commands;
    state.hooks = options.hooks;
    for warning in options.command_warnings {
        state.notice(transcript::Level::Warning, warning);
    }
    if let Some(book) = options.rulebook {
        state.permissions = permissions::Permissions::new(book);
    }
    state.colors = palette::Depth::detect(|name| std::env::var(name).ok());
    // Without colour, highlighting would only cost time and memory.
    highlight::set_enabled(options.highlight && state.colors != palette::Depth::NoColor);
    let guard = terminal::Guard::enter(true)?;
    let result = session(&mut state, &ops, &mut events, &options.workspace).await;
    let signal = result.as_ref().ok().copied().flatten();
    drop(guard);

    ops.send(Op::Shutdown);
    let deadline = tokio::time::Instant::now() + SHUTDOWN_WAIT;
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.recv()).await {
        if event == Event::ShutdownComplete {
            break;
        }
        if let Event::SessionConfigured { session_id, .. } = &event {
            state.session_id = Some(session_id.clone());
        }
    }

    let width = crossterm::terminal::size().map_or(80, |(w, _)| w as usize);
    let text = state.exit_transcript(options.exit_transcript_turns, width.max(20));
    if !text.is_empty() {
        let mut out = io::stdout();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    result?;
    Ok(Outcome {
        session_id: state.session_id.clone(),
        signal,
    })
}

/// The one loop that owns the terminal: it waits for whichever comes first (a signal, a key,
/// an agent event, a timer), lets the state turn it into effects, and carries them out. Each
/// source has its own step below, so the loop itself only dispatches.
async fn session(
    state: &mut State,
    ops: &OpSender,
    events: &mut UnboundedReceiver<Event>,
    workspace: &std::path::Path,
) -> io::Result<Option<i32>> {
    let mut term = fresh_terminal()?;
    let size = term.size()?;
    state.size = (size.width, size.height);

    let mut signals = Signals::install()?;
    let mut reader = EventStream::new();

    let mut dirty = true;
    let mut last_draw = Instant::now() - FRAME;
    loop {
        let next_frame = tokio::time::Instant::from_std((last_draw + FRAME).max(Instant::now()));
        // A pending approval starts taking answer keys after a moment, a running call's clock
        // moves on: redraw then.
        let wake_at = state.wake_at().map(tokio::time::Instant::from_std);
        let effects = tokio::select! {
            _ = signals.term.recv() => return Ok(Some(libc::SIGTERM)),
            _ = signals.hup.recv() => return Ok(Some(libc::SIGHUP)),
            _ = signals.int.recv() => return Ok(Some(libc::SIGINT)),
            _ = signals.tstp.recv() => vec![Effect::Suspend],
            input = reader.next() => match input {
                Some(Ok(ev)) => terminal_input(state, &mut term, &mut dirty, ev, workspace)?,
                Some(Err(e)) => return Err(e),
                None => return Ok(None),
            },
            event = events.recv() => {
                let Some(event) = event else { return Ok(None) };
                dirty = true;
                agent_burst(state, event, events)
            }
            _ = tokio::time::sleep_until(wake_at.unwrap_or(next_frame)), if wake_at.is_some() => {
                dirty = true;
                state.set_now(Instant::now());
                Vec::new()
            }
            _ = tokio::time::sleep_until(next_frame), if dirty => {
                state.set_now(Instant::now());
                draw(&mut term, state)?;
                last_draw = Instant::now();
                dirty = false;
                Vec::new()
            }
        };
        if carry_out(effects, ops, &mut term, &mut dirty)? == Flow::Exit {
            return Ok(None);
        }
    }
}

/// The signals the loop answers: the first three end the session (the caller reports which),
/// SIGTSTP suspends it. Installed once, before the loop, so none is missed between frames.
struct Signals {
    term: Signal,
    hup: Signal,
    int: Signal,
    tstp: Signal,
}

impl Signals {
    fn install() -> io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
            tstp: signal(SignalKind::from_raw(libc::SIGTSTP))?,
        })
    }
}

/// One terminal event (key, mouse, paste, resize) into the state. A resize gets a fresh
/// terminal, so the next frame repaints everything at the new size. A paste that is the path
/// of an image file becomes that image here, where I/O is allowed.
fn terminal_input(
    state: &mut State,
    term: &mut Screen,
    dirty: &mut bool,
    ev: TermEvent,
    workspace: &std::path::Path,
) -> io::Result<Vec<Effect>> {
    let msg = match to_msg(ev) {
        Some(Msg::Paste(text)) => pasted::classify(text, workspace),
        Some(msg) => msg,
        None => return Ok(Vec::new()),
    };
    *dirty = true;
    if matches!(msg, Msg::Resize(..)) {
        *term = fresh_terminal()?;
    }
    Ok(state.update(msg))
}

/// One agent event and whatever else is already waiting (up to `EVENT_BATCH`), so a burst of
/// stream deltas costs one frame rather than one each.
fn agent_burst(
    state: &mut State,
    first: Event,
    events: &mut UnboundedReceiver<Event>,
) -> Vec<Effect> {
    let mut effects = state.update(Msg::Agent(first));
    for _ in 0..EVENT_BATCH {
        match events.try_recv() {
            Ok(e) => effects.extend(state.update(Msg::Agent(e))),
            Err(_) => break,
        }
    }
    effects
}

/// Whether the loop goes on after a batch of effects.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Exit,
}

/// Carries out what the state asked for: ops to the core, clipboard and mouse changes, a
/// suspension (after which the screen is repainted whole), or the end of the session.
fn carry_out(
    effects: Vec<Effect>,
    ops: &OpSender,
    term: &mut Screen,
    dirty: &mut bool,
) -> io::Result<Flow> {
    for effect in effects {
        match effect {
            Effect::Op(op) => ops.send(op),
            Effect::Exit => return Ok(Flow::Exit),
            Effect::Copy(text) => terminal::copy_to_clipboard(&text)?,
            Effect::MouseCapture(on) => terminal::set_mouse(on)?,
            Effect::Suspend => {
                terminal::suspend()?;
                *term = fresh_terminal()?;
                *dirty = true;
            }
        }
    }
    Ok(Flow::Continue)
}

/// A terminal with empty buffers over a cleared screen, so the next frame paints everything.
/// (`Terminal::clear` would ask the terminal for the cursor position, a round trip we avoid.)
/// Frames are written through one large buffer (flushed once per frame by ratatui) instead
/// of stdout's line buffer, which would split a frame into many small writes.
type Screen = Terminal<CrosstermBackend<io::BufWriter<io::Stdout>>>;

fn fresh_terminal() -> io::Result<Screen> {
    crossterm::execute!(io::stdout(), Clear(ClearType::All))?;
    Terminal::new(CrosstermBackend::new(io::BufWriter::with_capacity(
        256 * 1024,
        io::stdout(),
    )))
}

/// Draws one frame as a synchronized update, so terminals that support it (DEC mode 2026)
/// show it at once instead of painting it while it arrives; others ignore the markers.
fn draw(term: &mut Screen, state: &State) -> io::Result<()> {
    crossterm::queue!(
        term.backend_mut(),
        crossterm::terminal::BeginSynchronizedUpdate
    )?;
    term.draw(|f| view::render(state, f))?;
    crossterm::execute!(
        term.backend_mut(),
        crossterm::terminal::EndSynchronizedUpdate
    )
}

fn to_msg(ev: TermEvent) -> Option<Msg> {
    match ev {
        TermEvent::Key(k) => Some(Msg::Key(k)),
        TermEvent::Paste(p) => Some(Msg::Paste(p)),
        TermEvent::Mouse(m) => Some(Msg::Mouse(m)),
        TermEvent::Resize(w, h) => Some(Msg::Resize(w, h)),
        TermEvent::FocusGained | TermEvent::FocusLost => None,
    }
}
