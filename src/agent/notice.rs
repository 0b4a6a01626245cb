//! Notices: a change to the session's standing instructions (the project's instruction files,
//! plan mode) told to the model in a new user message appended to history. Local servers
//! (llama.cpp, vLLM, MLX) reuse their prompt cache only while each request extends the previous
//! one byte for byte, so the system prompt, the tool list and the memory message sent first
//! stay as they were until a compaction or `/clear` rebuilds them; anything that changes
//! later is said after everything already sent. It never rewrites a message already in history.

use super::Core;
use crate::chat::Message;

/// How a notice opens; a history message starting so is one (`is_notice`).
const OPEN: &str = crate::chat::NOTICE_OPEN;
const CLOSE: &str = "</session-notice>";

/// One notice message holding every change found before a request.
pub(crate) fn message(parts: &[String]) -> Message {
    Message::user(format!(
        "{OPEN}\nminicode reports a change since the messages above (this is not the user \
         speaking):\n\n{}\n{CLOSE}",
        parts.join("\n\n")
    ))
}

/// A reminder to the model (a nudge of the small-model path) framed as a notice, so that
/// everything reading the user's own words (the ledger, the transcript, a session's title)
/// passes over it like over any notice. Plain words, not the notice's tag: a small model
/// shown a tagged block tends to copy it back as its reply.
pub(crate) fn reminder(text: &str) -> Message {
    Message::user(format!("{} {text}", crate::chat::REMINDER_OPEN))
}

/// Whether `message` is a notice (the model's reply to it is not an answer to the user).
pub(crate) fn is_notice(message: &Message) -> bool {
    message.is_notice()
}

/// The notices in `messages`, oldest first, as their text.
pub(crate) fn notices(messages: &[Message]) -> impl DoubleEndedIterator<Item = &str> {
    messages.iter().filter(|m| is_notice(m)).map(Message::text)
}

impl Core {
    /// Appends one notice of what changed since the model was last told: instruction files
    /// edited (by a tool, a command or the user) and plan mode switched. Called before the
    /// user's prompt enters history and before every main request. An instruction file that
    /// cannot be used is the error the turn fails with (nothing is sent with it).
    pub(super) fn announce_changes(&mut self) -> Result<(), String> {
        let mut parts = Vec::new();
        parts.extend(self.upkeep.memory_notice()?);
        parts.extend(self.plan.notice(self.store.session.id()));
        if !parts.is_empty() {
            self.store.session.push(message(&parts));
        }
        Ok(())
    }
}
