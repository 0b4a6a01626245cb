//! The model context: token estimates, the budget that decides when to compact, where the kept
//! recent history begins, and the assembly of a request from system prompt, project memory,
//! task ledger + summary and the kept messages.
//!
//! It owns no history (the session does) and never calls a model (compaction does). Per-message
//! estimates are cached as prefix sums, so checking the budget and building a request cost the
//! same for a 100-message and a 100,000-message history, apart from copying the references
//! that are actually sent.

use crate::chat::{Message, Role, ToolSpec, Usage, estimate_message, estimate_tools};
use crate::memory::Memory;
use crate::session::Checkpoint;

/// Default context window when the configuration names none.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 262_144;
/// Default free space kept for the reply and for estimate error, for large windows.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default size of the recent history kept verbatim by compaction, for large windows.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;
/// The smallest window compaction can work in: below it the system prompt, memory and one
/// exchange leave no room for anything.
pub const MIN_CONTEXT_WINDOW: u64 = 2048;

/// The smallest reply room a main request is sent with. Less than this left in the window
/// triggers compaction first, whatever the configured reserve.
pub const MIN_REPLY_TOKENS: u64 = 256;

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

/// Why a budget configuration cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("context_window {window} is below the minimum of {min} tokens")]
    WindowTooSmall { window: u64, min: u64 },
    #[error("reserve_tokens {reserve} must be less than half the context window ({window})")]
    ReserveTooLarge { reserve: u64, window: u64 },
    #[error(
        "keep_recent_tokens {keep} plus reserve_tokens {reserve} must be less than the context window ({window})"
    )]
    KeepTooLarge {
        keep: u64,
        reserve: u64,
        window: u64,
    },
}

/// The token budget of the main conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The model's context window.
    pub window: u64,
    /// Compact when less than this much space would remain.
    pub reserve: u64,
    /// About how much recent history compaction keeps verbatim.
    pub keep_recent: u64,
    explicit_reserve: Option<u64>,
    explicit_keep: Option<u64>,
}

impl Budget {
    /// A budget from configuration. Unset values default to 16,384 reserve and 20,000 kept
    /// tokens, scaled down for small windows (an eighth and a quarter of the window) so that an
    /// 8K or 32K local model still has room to compact. Explicit values are checked, not
    /// silently changed: a configuration that cannot work is an error.
    pub fn new(
        window: u64,
        reserve: Option<u64>,
        keep_recent: Option<u64>,
    ) -> Result<Self, BudgetError> {
        if window < MIN_CONTEXT_WINDOW {
            return Err(BudgetError::WindowTooSmall {
                window,
                min: MIN_CONTEXT_WINDOW,
            });
        }
        if let Some(r) = reserve
            && r.saturating_mul(2) >= window
        {
            return Err(BudgetError::ReserveTooLarge { reserve: r, window });
        }
        let budget = Self::derive(window, reserve, keep_recent);
        if let Some(k) = keep_recent
            && k.saturating_add(budget.reserve) >= window
        {
            return Err(BudgetError::KeepTooLarge {
                keep: k,
                reserve: budget.reserve,
                window,
            });
        }
        Ok(budget)
    }

    /// Default reserve and keep-recent for `window`, with no explicit values (never fails;
    /// a window below the minimum simply leaves little room).
    pub fn for_window(window: u64) -> Self {
        Self::derive(window, None, None)
    }

    fn derive(window: u64, reserve: Option<u64>, keep_recent: Option<u64>) -> Self {
        let reserve_value = reserve
            .unwrap_or(DEFAULT_RESERVE_TOKENS.min(window / 8))
            .min(window / 2);
        let keep_value = keep_recent
            .unwrap_or(DEFAULT_KEEP_RECENT_TOKENS.min(window / 4))
            .min(window.saturating_sub(reserve_value) / 2);
        Self {
            window,
            reserve: reserve_value,
            keep_recent: keep_value,
            explicit_reserve: reserve,
            explicit_keep: keep_recent,
        }
    }

    /// The same budget for a window the server stated (in a context-length error). Explicit
    /// values that no longer fit are clamped: the server has spoken, and compaction must still
    /// be possible for the rest of the session.
    pub fn with_window(&self, window: u64) -> Self {
        Self::derive(
            window.max(MIN_CONTEXT_WINDOW / 2),
            self.explicit_reserve,
            self.explicit_keep,
        )
    }

    /// Whether a request of `used` tokens leaves less than the reserve free (or less than
    /// [`MIN_REPLY_TOKENS`], when an explicit reserve is smaller than that).
    pub fn should_compact(&self, used: u64) -> bool {
        used.saturating_add(self.reserve.max(MIN_REPLY_TOKENS)) > self.window
    }

    /// `max_tokens` for a request of `used` input tokens: the configured value, cut to the
    /// room left in the window (servers such as vLLM refuse `input + max_tokens > window`),
    /// but never below [`MIN_REPLY_TOKENS`]. A configured 0 ("the server decides") stays 0.
    pub fn reply_tokens(&self, used: u64, configured: u32) -> u32 {
        if configured == 0 {
            return 0;
        }
        let room = self.remaining(used).max(MIN_REPLY_TOKENS);
        // `room` is only above u32::MAX for absurd windows; then the configured value wins.
        u32::try_from(room).map_or(configured, |room| configured.min(room))
    }

    /// Free space left by a request of `used` tokens.
    pub fn remaining(&self, used: u64) -> u64 {
        self.window.saturating_sub(used)
    }

    /// `max_tokens` for a summary call: an eighth of the window, between 512 and 8192.
    pub fn summary_max_tokens(&self) -> u32 {
        (self.window / 8).clamp(512, 8192) as u32
    }

    /// How many input tokens one summary call may carry: the window less the summary's own
    /// output and a sixteenth for estimate error.
    pub fn summary_input_budget(&self) -> u64 {
        self.window
            .saturating_sub(u64::from(self.summary_max_tokens()))
            .saturating_sub(self.window / 16)
    }
}

/// Calibrates the local estimate with the server's real prompt size. Only main requests feed
/// it; summary calls have a different context and would corrupt it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tracker {
    /// (local estimate of the request, tokens the server counted for it)
    last: Option<(u64, u64)>,
}

impl Tracker {
    /// Records that a main request estimated at `sent_estimate` was counted as
    /// `usage.input_tokens` by the server. A reply without usage leaves the tracker as it was.
    pub fn calibrate(&mut self, sent_estimate: u64, usage: Option<Usage>) {
        if let Some(u) = usage.filter(|u| u.input_tokens > 0) {
            self.last = Some((sent_estimate, u.input_tokens));
        }
    }

    /// Forgets the calibration (after compaction the context is a different one).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The best guess for a request now estimated at `estimate`: the last real count plus what
    /// changed since, by estimate. Without a calibration, the estimate itself.
    pub fn current(&self, estimate: u64) -> u64 {
        match self.last {
            Some((sent, real)) if estimate >= sent => real + (estimate - sent),
            Some((sent, real)) => real.saturating_sub(sent - estimate),
            None => estimate,
        }
    }

    pub fn is_calibrated(&self) -> bool {
        self.last.is_some()
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

/// The text of the ledger + summary message. The first request and the latest user message are
/// quoted verbatim because summaries lose them: that is the failure users of other agents
/// report most.
pub fn ledger_text(
    summary: &str,
    first_request: Option<&str>,
    latest_request: Option<&str>,
) -> String {
    let mut text = String::from(
        "<task-ledger>\nThe earlier conversation was compacted. The user's own words below are \
         verbatim and authoritative; the summary after them is your notes of the work so far. \
         The messages after this one are the recent conversation, verbatim.\n",
    );
    if let Some(first) = first_request {
        text.push_str("<first-request>\n");
        text.push_str(first);
        text.push_str("\n</first-request>\n");
    }
    if let Some(latest) = latest_request {
        text.push_str("<latest-user-message>\n");
        text.push_str(latest);
        text.push_str("\n</latest-user-message>\n");
    }
    text.push_str("</task-ledger>\n<summary>\n");
    text.push_str(summary);
    text.push_str("\n</summary>");
    text
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
    /// Whether the ledger quotes the latest user message (no user message is kept verbatim);
    /// the first user message appended to the kept part drops that quote.
    ledger_quotes_latest: bool,
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
            ledger_quotes_latest: false,
            lead: None,
            lead_tokens: 0,
            prefix: vec![0],
            is_user: Vec::new(),
            tracker: Tracker::default(),
        }
    }

    /// Replaces the project memory message (a fresh load, or `None` for no memory).
    pub fn set_memory(&mut self, memory: Option<&Memory>) {
        self.memory = memory.map(Memory::message);
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

    /// Rebuilds the ledger from the history: the first user message and, when no user message
    /// is among the kept ones, the latest user message (which then lies before them).
    fn rebuild_ledger(&mut self, messages: &[Message]) {
        self.ledger_quotes_latest = false;
        self.ledger = self.checkpoint.as_ref().map(|c| {
            let (before, kept) = messages.split_at(c.first_kept_index.min(messages.len()));
            let first = before.iter().position(|m| m.role == Role::User);
            let latest = if kept.iter().any(|m| m.role == Role::User) {
                None
            } else {
                before
                    .iter()
                    .rposition(|m| m.role == Role::User)
                    .filter(|at| Some(*at) != first)
            };
            self.ledger_quotes_latest = latest.is_some();
            let text = |at: usize| before[at].text();
            ledger_text(&c.summary, first.map(text), latest.map(text))
        });
        self.rebuild_lead();
    }

    pub fn memory_message(&self) -> Option<&Message> {
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
    /// history: the first user message and, if no user message is among the kept ones, the
    /// latest user message. The ledger is a function of the checkpoint and the history, so a
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
            return;
        }
        self.prefix.reserve(messages.len() - synced);
        self.is_user.reserve(messages.len() - synced);
        let mut total = self.prefix[synced];
        let mut new_user = false;
        for m in &messages[synced..] {
            let user = m.role == Role::User;
            total += estimate_message(m);
            if user && self.is_user.last() == Some(&true) {
                total += estimate_message(&NO_REPLY);
            }
            self.prefix.push(total);
            self.is_user.push(user);
            new_user |= user;
        }
        if new_user && self.ledger_quotes_latest {
            // A newer user message is now kept verbatim; the quoted one is no longer the latest.
            self.rebuild_ledger(messages);
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
                out.push(if lead { &ACKNOWLEDGED } else { &NO_REPLY });
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
                total -= estimate_message(&NO_REPLY);
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
