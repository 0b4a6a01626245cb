//! What the session tells about itself: the welcome header of an empty session, `/help` (every
//! key and command on one screen, from [`KEYS`] and `commands::COMMANDS`, so a new binding or
//! command is one table row) and `/model` (each value and where it came from).
//!
//! Builds panels from state only; no I/O.

use super::panel::Panel;
use super::state::State;
use crate::protocol::WindowSource;

/// The key bindings, grouped, as `/help` lists them.
pub const KEYS: &[(&str, &[(&str, &str)])] = &[
    (
        "Prompt",
        &[
            ("Enter", "send (queued while the agent works)"),
            ("Shift/Alt+Enter, Ctrl+J", "new line"),
            ("Up / Down", "move between lines, recall earlier prompts"),
            ("Ctrl+A/E, Alt+B/F", "line start / end, word left / right"),
            (
                "Ctrl+W / Ctrl+U / Ctrl+K",
                "delete word / to line start / to line end",
            ),
            ("Tab", "complete a slash command"),
        ],
    ),
    (
        "Transcript",
        &[
            ("PageUp/PageDown, wheel", "scroll"),
            ("Ctrl+Home / Ctrl+End", "top / follow the live tail"),
            (
                "Alt+Up / Alt+Down",
                "select an entry (empty draft; also Ctrl+Up/Down)",
            ),
            ("Enter or o", "fold / unfold the selected entry"),
            ("Ctrl+O", "fold / unfold all tool output and reasoning"),
            ("Ctrl+F", "find in the transcript (Enter next, Esc close)"),
            (
                "mouse drag",
                "select characters; release copies them (OSC 52)",
            ),
            ("F2", "mouse capture on/off (off: the terminal selects)"),
        ],
    ),
    (
        "Session",
        &[
            ("Esc", "interrupt the turn; close selection or search"),
            ("Ctrl+C", "interrupt; at idle clear, twice to exit"),
            ("Ctrl+D", "exit (empty draft)"),
            ("Ctrl+Z", "suspend"),
            (
                "y / a / n / r",
                "approve once / always / deny / deny with a reason",
            ),
        ],
    ),
];

/// Everything `/help` shows.
pub(crate) fn help(custom: &[crate::protocol::CustomCommand]) -> Panel {
    let mut p = Panel::new("Keys and commands");
    for (group, keys) in KEYS {
        p = p.section(*group);
        for (k, d) in *keys {
            p = p.row(*k, *d);
        }
    }
    p = p.section("Commands");
    for (c, d) in super::commands::COMMANDS {
        p = p.row(*c, *d);
    }
    if !custom.is_empty() {
        p = p.section("Custom commands");
        for c in custom {
            let hint = c
                .argument_hint
                .as_deref()
                .map_or(String::new(), |h| format!(" {h}"));
            p = p.row(
                format!("{}{hint}", c.slash()),
                format!("{} ({})", c.description, c.source),
            );
        }
    }
    p.footer("docs/tui.md has the details")
}

/// What the welcome header says: handed to the session at start (the frontend's own facts,
/// like the version), completed by the core's events (window, memory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Welcome {
    pub version: String,
    /// The server's host and port (empty for the demo model).
    pub server: String,
    pub workspace: String,
    /// Where the model, the server and the configured window came from.
    pub model_origin: String,
    pub server_origin: String,
    pub window_origin: String,
}

impl Welcome {
    /// The host (and port) of a base URL, without scheme, path or credentials.
    pub fn host_of(base_url: &str) -> String {
        let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
        let authority = rest.split('/').next().unwrap_or(rest);
        authority
            .rsplit('@')
            .next()
            .unwrap_or(authority)
            .to_string()
    }
}

fn window_text(state: &State) -> String {
    let source = match state.context_window_source {
        Some(WindowSource::Probe) => " (the server said)",
        Some(WindowSource::ServerError) => " (from a server error)",
        Some(WindowSource::Config) => " (config)",
        Some(WindowSource::Default) | None => " (built-in default)",
    };
    format!("{} tokens{source}", group(state.context_window))
}

/// The header of an empty session.
pub(crate) fn header(state: &State, w: &Welcome) -> Panel {
    let server = if w.server.is_empty() {
        String::new()
    } else {
        format!(" · {}", w.server)
    };
    let memory = memory_text(state, "none (MiniCode.md)");
    let panel = Panel::new(format!("minicode {}", w.version))
        .row("model", format!("{}{server}", state.model));
    let panel = match &state.server_problem {
        Some(why) => panel.row(
            "server",
            format!("not reachable: run `minicode doctor` to see what to fix ({why})"),
        ),
        None => panel,
    };
    let panel = panel.row("workspace", &w.workspace);
    let panel = match &state.sandbox {
        Some(profile) => panel.row("sandbox", profile.describe()),
        None => panel,
    };
    panel
        .row("context", window_text(state))
        .row("memory", memory)
        .footer("/help keys and commands · Shift+Enter new line · F2 mouse on/off")
}

/// The instruction files in use, each with its cost per request, or `none`.
pub(crate) fn memory_text(state: &State, none: &str) -> String {
    if state.memory.is_empty() {
        return none.to_string();
    }
    let files: Vec<String> = state
        .memory
        .iter()
        .map(|(path, tokens)| format!("{path} loaded ({} tokens)", group(*tokens)))
        .collect();
    files.join(", ")
}

/// `/model`: the values in use and where each came from.
pub(crate) fn model(state: &State) -> Panel {
    let w = state.welcome.clone().unwrap_or_default();
    let or = |s: &str, fallback: &str| {
        if s.is_empty() {
            fallback.to_string()
        } else {
            s.to_string()
        }
    };
    let window_origin = match state.context_window_source {
        Some(WindowSource::Probe) => "the server, asked at session start".to_string(),
        Some(WindowSource::ServerError) => "the server, named in a context-length error".into(),
        Some(WindowSource::Config) => or(&w.window_origin, "the config file"),
        Some(WindowSource::Default) | None => "the built-in default".to_string(),
    };
    Panel::new("Model")
        .row("model", state.model.clone())
        .row("  from", or(&w.model_origin, "unknown"))
        .row("server", or(&w.server, "none (demo)"))
        .row("  from", or(&w.server_origin, "unknown"))
        .row("context", format!("{} tokens", group(state.context_window)))
        .row("  from", window_origin)
        .footer("change with --model / --base-url, MINICODE_MODEL / MINICODE_BASE_URL, or [model] in config.toml")
}

/// 131072 → "131,072".
fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
