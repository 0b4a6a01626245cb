//! The model context: where the kept recent history begins, and the assembly of a request from
//! system prompt, project memory, the task ledger + summary (`ledger` says what it quotes) and
//! the kept messages, with cached estimates of its size. How much room there is, and when to compact, is
//! `budget`'s.
//!
//! It owns no history (the session does) and never calls a model (compaction does). Per-message
//! estimates are cached as prefix sums, so checking the budget and building a request cost the
//! same for a 100-message and a 100,000-message history, apart from copying the references
//! that are actually sent.

mod ledger;

use super::budget::{Budget, Tracker};
use super::{goal, notice};
use crate::chat::{Message, Role, ToolSpec, Usage, estimate_message, estimate_tools};
use crate::memory::Memory;
use crate::session::Checkpoint;

/// The assistant's line after the memory/ledger message. Strict chat templates (Mistral,
/// Gemma and others on llama.cpp or vLLM) reject two user messages in a row; this keeps the
/// request alternating without storing anything in history.
pub static ACKNOWLEDGED: std::sync::LazyLock<Message> = std::sync::LazyLock::new(|| {
    Message::assistant(Some("Noted; I will follow this.".to_string()), Vec::new())
});

/// Stands between two user prompts whose turn ended before the model answered (a failed or
/// interrupted request keeps the user's prompt in history).
pub static NO_REPLY: std::sync::LazyLock<Message> = std::sync::LazyLock::new(|| {
    Message::assistant(
        Some("(no reply: that turn ended before an answer)".to_string()),
        Vec::new(),
    )
});

/// The assistant line put between two user messages: an acknowledgement after the lead or a
/// goal record, else the note that the turn ended without a reply.
fn filler(acknowledge: bool) -> &'static Message {
    if acknowledge {
        &ACKNOWLEDGED
    } else {
        &NO_REPLY
    }
}

/// Where the verbatim recent history should begin so it holds about `keep_recent_tokens`:
/// whole units only (an assistant tool-call message and all its results move together), and
/// always at least the newest unit, however large. Walks back from the end, so the cost is
/// that of the kept part only.
pub fn keep_boundary(messages: &[Message], keep_recent_tokens: u64) -> usize {
    boundary_by(messages, keep_recent_tokens, |i| {
        estimate_message(&messages[i])
    })
}

fn boundary_by(messages: &[Message], keep: u64, estimate: impl Fn(usize) -> u64) -> usize {
    let mut boundary = messages.len();
    let mut tokens = 0u64;
    for i in (0..messages.len()).rev() {
        tokens = tokens.saturating_add(estimate(i));
        if messages[i].role == Role::Tool {
            // A result cannot start the kept part: its call must come along.
            continue;
        }
        if boundary != messages.len() && tokens > keep {
            break;
        }
        boundary = i;
        if tokens >= keep {
            break;
        }
    }
    boundary
}

/// Why a checkpoint does not fit a history.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    #[error("checkpoint keeps from message {index}, but the history has only {len} messages")]
    CheckpointBeyondHistory { index: usize, len: usize },
    #[error("checkpoint keeps from message {index}, a tool result separated from its call")]
    CheckpointSplitsBatch { index: usize },
    #[error("checkpoint summary is empty")]
    EmptySummary,
}

/// Token counts of a compaction, for `Event::Compacted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adopted {
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// The parts of a request around the raw history, with cached estimates.
#[derive(Debug, Clone)]
pub struct Context {
    system: Message,
    system_tokens: u64,
    tools_tokens: u64,
    memory: Option<Message>,
    checkpoint: Option<Checkpoint>,
    /// The ledger + summary text of the checkpoint.
    ledger: Option<String>,
    /// The one user message sent after the system prompt: memory and ledger merged, because
    /// strict chat templates refuse two user messages in a row.
    lead: Option<Message>,
    lead_tokens: u64,
    /// `prefix[i]` is the estimate of `messages[..i]`; one entry per synced message, plus 0.
    /// A user message right after another user message also carries the [`NO_REPLY`] filler
    /// that `build` puts between them.
    prefix: Vec<u64>,
    /// Whether each synced message is a user message (to account for fillers at the cut).
    is_user: Vec<bool>,
    /// Whether each synced message is a goal record or a notice (the user message after one
    /// gets the [`ACKNOWLEDGED`] filler instead of [`NO_REPLY`]: it was not an unanswered turn;
    /// so does a notice after a user message).
    is_record: Vec<bool>,
    tracker: Tracker,
}

impl Context {
    /// A context with this system prompt and these tool declarations (counted in every
    /// estimate, because they are sent with every main request).
    pub fn new(system_prompt: impl Into<String>, tools: &[ToolSpec]) -> Self {
        let system = Message::system(system_prompt);
        Self {
            system_tokens: estimate_message(&system),
            system,
            tools_tokens: estimate_tools(tools),
            memory: None,
            checkpoint: None,
            ledger: None,
            lead: None,
            lead_tokens: 0,
            prefix: vec![0],
            is_user: Vec::new(),
            is_record: Vec::new(),
            tracker: Tracker::default(),
        }
    }

    /// Re-counts the tool declarations after the set of tools changed (an MCP server's tools
    /// joined, a goal added its tools).
    pub(crate) fn set_tools(&mut self, tools: &[ToolSpec]) {
        self.tools_tokens = estimate_tools(tools);
    }

    /// Replaces the system prompt: the small model profile's, chosen before the first request.
    pub(crate) fn set_system_prompt(&mut self, system_prompt: String) {
        self.system = Message::system(system_prompt);
        self.system_tokens = estimate_message(&self.system);
    }

    /// Replaces the project memory message (a fresh load, or `None` for no memory).
    pub fn set_memory(&mut self, memory: Option<&Memory>) {
        self.set_memory_message(memory.map(Memory::message));
    }

    /// Replaces the memory message with one built from several files (`memory::Loaded`).
    pub(crate) fn set_memory_message(&mut self, message: Option<Message>) {
        self.memory = message;
        self.rebuild_lead();
    }

    /// Merges memory and ledger into the leading user message.
    fn rebuild_lead(&mut self) {
        self.lead = match (&self.memory, &self.ledger) {
            (Some(memory), Some(ledger)) => {
                Some(Message::user(format!("{}\n\n{ledger}", memory.text())))
            }
            (Some(memory), None) => Some(memory.clone()),
            (None, Some(ledger)) => Some(Message::user(ledger.as_str())),
            (None, None) => None,
        };
        self.lead_tokens = self.lead.as_ref().map_or(0, estimate_message);
    }

    /// Rebuilds the ledger from the checkpoint and the history (see [`ledger::Ledger::of`]).
    fn rebuild_ledger(&mut self, messages: &[Message]) {
        let ledger = self.checkpoint.as_ref().map(|c| {
            let before = &messages[..c.first_kept_index.min(messages.len())];
            ledger::Ledger::of(&c.summary, before)
        });
        self.ledger = ledger.map(|l| l.text);
        self.rebuild_lead();
    }

    pub(crate) fn memory_message(&self) -> Option<&Message> {
        self.memory.as_ref()
    }

    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        self.checkpoint.as_ref()
    }

    /// Index of the first history message sent verbatim (0 without a checkpoint).
    pub fn first_kept_index(&self) -> usize {
        self.checkpoint.as_ref().map_or(0, |c| c.first_kept_index)
    }

    /// Installs a checkpoint (on resume, or after compaction) and rebuilds the ledger from the
    /// history: the first user message and the last one of the compacted part. The ledger is a function of the checkpoint and the history, so a
    /// resumed session sends what the live one did. The calibration is dropped: the context
    /// changed.
    pub fn set_checkpoint(
        &mut self,
        checkpoint: Option<Checkpoint>,
        messages: &[Message],
    ) -> Result<(), ContextError> {
        if let Some(c) = &checkpoint {
            if c.first_kept_index > messages.len() {
                return Err(ContextError::CheckpointBeyondHistory {
                    index: c.first_kept_index,
                    len: messages.len(),
                });
            }
            if messages
                .get(c.first_kept_index)
                .is_some_and(|m| m.role == Role::Tool)
            {
                return Err(ContextError::CheckpointSplitsBatch {
                    index: c.first_kept_index,
                });
            }
            if c.summary.trim().is_empty() {
                return Err(ContextError::EmptySummary);
            }
        }
        self.checkpoint = checkpoint;
        self.rebuild_ledger(messages);
        self.tracker.reset();
        self.sync(messages);
        Ok(())
    }

    /// Installs the checkpoint a compaction produced and reports the estimated size before and
    /// after. On error nothing changes.
    pub fn adopt(
        &mut self,
        checkpoint: Checkpoint,
        messages: &[Message],
    ) -> Result<Adopted, ContextError> {
        self.sync(messages);
        let estimate_before = self.estimated_tokens();
        let tokens_before = self.used_tokens();
        // set_checkpoint checks everything before it changes anything.
        self.set_checkpoint(Some(checkpoint), messages)?;
        // Report both sides on one scale: the new estimate corrected by the same ratio the
        // server's last count implied for the old context (a raw estimate beside a calibrated
        // count could make a compaction look like growth).
        let estimate_after = self.estimated_tokens();
        let tokens_after = if estimate_before == 0 {
            estimate_after
        } else {
            (u128::from(estimate_after) * u128::from(tokens_before) / u128::from(estimate_before))
                as u64
        };
        Ok(Adopted {
            tokens_before,
            tokens_after,
        })
    }

    /// Brings the cached estimates up to date with an append-only history. A shorter history
    /// (a new session) drops the cache past its end.
    pub fn sync(&mut self, messages: &[Message]) {
        let synced = self.prefix.len() - 1;
        if messages.len() < synced {
            self.prefix.truncate(messages.len() + 1);
            self.is_user.truncate(messages.len());
            self.is_record.truncate(messages.len());
            return;
        }
        self.prefix.reserve(messages.len() - synced);
        self.is_user.reserve(messages.len() - synced);
        self.is_record.reserve(messages.len() - synced);
        let mut total = self.prefix[synced];
        for m in &messages[synced..] {
            let user = m.role == Role::User;
            total += estimate_message(m);
            if user && self.is_user.last() == Some(&true) {
                let acknowledge = self.is_record.last() == Some(&true) || notice::is_notice(m);
                total += estimate_message(filler(acknowledge));
            }
            self.prefix.push(total);
            self.is_user.push(user);
            self.is_record
                .push(goal::record::is_record(m) || notice::is_notice(m));
        }
    }

    /// The messages of the next request: system prompt, one user message holding project
    /// memory and ledger + summary (either may be absent), then `messages[first_kept_index..]`.
    /// Two user messages never follow each other: a short assistant line goes between them
    /// (see [`ACKNOWLEDGED`] and [`NO_REPLY`]). References only; nothing is copied.
    pub fn build<'a>(&'a self, messages: &'a [Message]) -> Vec<&'a Message> {
        let kept = &messages[self.first_kept_index().min(messages.len())..];
        let mut out = Vec::with_capacity(kept.len() + 3);
        out.push(&self.system);
        out.extend(self.lead.as_ref());
        for message in kept {
            if message.role == Role::User
                && let Some(previous) = out.last()
                && previous.role == Role::User
            {
                let lead = self
                    .lead
                    .as_ref()
                    .is_some_and(|l| std::ptr::eq(*previous, l));
                let notices = notice::is_notice(previous) || notice::is_notice(message);
                out.push(filler(lead || notices || goal::record::is_record(previous)));
            }
            out.push(message);
        }
        out
    }

    /// Local estimate of the next request (call [`Context::sync`] first): everything
    /// [`Context::build`] returns plus the tool declarations.
    pub fn estimated_tokens(&self) -> u64 {
        let synced = self.prefix.len() - 1;
        let kept = self.first_kept_index().min(synced);
        let mut total = self.system_tokens
            + self.tools_tokens
            + self.lead_tokens
            + (self.prefix[synced] - self.prefix[kept]);
        // At the cut the first kept user message follows the lead (an acknowledgement goes
        // between them) or the system prompt (nothing does), not the message before it.
        if self.is_user.get(kept) == Some(&true) {
            if kept > 0 && self.is_user[kept - 1] {
                total -= estimate_message(filler(self.is_record[kept - 1]));
            }
            if self.lead.is_some() {
                total += estimate_message(&ACKNOWLEDGED);
            }
        }
        total
    }

    /// The calibrated size of the next request.
    pub fn used_tokens(&self) -> u64 {
        self.tracker.current(self.estimated_tokens())
    }

    /// Feeds a main request's real usage back; `sent_estimate` is [`Context::estimated_tokens`]
    /// taken just before that request was sent.
    pub fn calibrate(&mut self, sent_estimate: u64, usage: Option<Usage>) {
        self.tracker.calibrate(sent_estimate, usage);
    }

    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    /// Whether the next request leaves less than the budget's reserve free.
    pub fn needs_compaction(&self, budget: &Budget) -> bool {
        budget.should_compact(self.used_tokens())
    }

    /// [`keep_boundary`] over the cached estimates (call [`Context::sync`] first).
    pub fn keep_boundary(&self, messages: &[Message], keep_recent_tokens: u64) -> usize {
        let synced = (self.prefix.len() - 1).min(messages.len());
        let messages = &messages[..synced];
        boundary_by(messages, keep_recent_tokens, |i| {
            self.prefix[i + 1] - self.prefix[i]
        })
    }
}
