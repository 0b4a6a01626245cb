//! The payloads of `Op::ListRewind` / `Op::Rewind` and their events: the session's user turns
//! with the files each changed, and what a rewind did. Plain data; the checkpoint store that
//! fills them is the core's business.

use serde::{Deserialize, Serialize};

/// What happened to a file over a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    Created,
    Modified,
    Deleted,
    ModeChanged,
}

/// One user turn that a rewind can go back before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindTurn {
    /// 1 for the session's first user message.
    pub turn: u32,
    /// The user's message (its first line is what a listing shows).
    pub prompt: String,
    /// The files the turn's calls changed.
    pub files: Vec<(String, FileChangeKind)>,
    /// Files the turn changed that were too large to record: a rewind cannot bring them back.
    pub skipped: Vec<String>,
    /// Files the turn changed that hold a configured secret (the API key): never stored, so a
    /// rewind cannot bring them back either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<String>,
    /// Its changes were already undone by a rewind.
    pub undone: bool,
    /// What a rewind of this turn cannot undo, in words: calls that ran unrecorded
    /// (checkpoints off, or recording failed), commands whose effects outside the workspace
    /// (network, other programs, files elsewhere) stay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

/// What `Op::Rewind` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindScope {
    /// Restore the files only.
    Code,
    /// Fork the session before the turn (the original stays).
    Conversation,
    Both,
}

impl RewindScope {
    pub(crate) fn code(self) -> bool {
        matches!(self, RewindScope::Code | RewindScope::Both)
    }

    pub(crate) fn conversation(self) -> bool {
        matches!(self, RewindScope::Conversation | RewindScope::Both)
    }
}

/// One turn of a listing, as lines: `N. first prompt line (undone)`, then one per file
/// (`+` created, `~` modified, `-` deleted, `m` mode changed), per file too large to record
/// (`!`) and per caveat (`?`). Every frontend's listing is made of these.
pub(crate) fn turn_lines(t: &RewindTurn) -> Vec<String> {
    let first = t.prompt.lines().next().unwrap_or_default();
    let undone = if t.undone { " (undone)" } else { "" };
    let mut lines = vec![format!("{}. {first}{undone}", t.turn)];
    for (path, change) in &t.files {
        let mark = match change {
            FileChangeKind::Created => "+",
            FileChangeKind::Modified => "~",
            FileChangeKind::Deleted => "-",
            FileChangeKind::ModeChanged => "m",
        };
        lines.push(format!("{mark} {path}"));
    }
    for path in &t.skipped {
        lines.push(format!(
            "! {path} (too large: not recorded, cannot be undone)"
        ));
    }
    for path in &t.withheld {
        lines.push(format!(
            "! {path} (holds a configured secret: not recorded, cannot be undone)"
        ));
    }
    for caveat in &t.caveats {
        lines.push(format!("? {caveat}"));
    }
    lines
}

/// A listing in words, for frontends that show plain text (ACP).
pub(crate) fn describe_list(turns: &[RewindTurn], enabled: bool) -> String {
    if !enabled {
        return "Checkpoints are off ([checkpoints] enabled = false): nothing to rewind.\n".into();
    }
    if turns.is_empty() {
        return "No turn of this session changed files.\n".into();
    }
    let mut text = String::from(
        "Turns that changed files (newest first; `/rewind N` restores the files to before turn N):\n",
    );
    for t in turns {
        for (i, line) in turn_lines(t).iter().enumerate() {
            let indent = if i == 0 { "" } else { "   " };
            text.push_str(&format!("{indent}{line}\n"));
        }
    }
    text
}

/// What a rewind did, in words.
pub(crate) fn describe_rewound(
    turn: u32,
    restored: &[String],
    conflicts: &[String],
    error: Option<&str>,
) -> String {
    let mut text = format!("Rewound the files to before turn {turn}.");
    if !restored.is_empty() {
        text.push_str(&format!(" Restored: {}.", restored.join(", ")));
    }
    if !conflicts.is_empty() {
        text.push_str(&format!(
            " Conflicts (changed since the agent wrote them): {}.",
            conflicts.join(", ")
        ));
    }
    if let Some(error) = error {
        text.push_str(&format!(" {error}."));
    }
    text.push('\n');
    text
}
