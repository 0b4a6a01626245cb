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
    /// Its changes were already undone by a rewind.
    pub undone: bool,
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
    pub fn code(self) -> bool {
        matches!(self, RewindScope::Code | RewindScope::Both)
    }

    pub fn conversation(self) -> bool {
        matches!(self, RewindScope::Conversation | RewindScope::Both)
    }
}
