//! Compaction: summarises the history before the kept recent part into a checkpoint, with our
//! own summary prompt (or, given an earlier summary, a prompt that updates it).
//!
//! It only proposes a checkpoint; the caller validates and installs it (in the context and the
//! session). It never changes history, never calibrates the main budget and never offers tools.
//! A history larger than one summary call may carry is split at UTF-8 boundaries and folded in
//! turn, so nothing is dropped silently.

use tokio_util::sync::CancellationToken;

use crate::agent::budget::{Budget, MIN_REPLY_TOKENS};
use crate::agent::context::keep_boundary;
use crate::agent::validate::{self, ValidationError};
use crate::chat::{Message, Role};
use crate::chat::{estimate_message, estimate_text, split_at_budget};
use crate::protocol::{TokenStats, TurnStats};
use crate::provider::{ChatRequest, FinishReason, Provider, ProviderError, Reply};
use crate::session::Checkpoint;

/// The summariser's system prompt.
pub(crate) const SUMMARY_SYSTEM_PROMPT: &str = "You keep the working notes of a coding agent. The \
agent's earlier conversation is about to be removed from its context, and your notes are all it \
will have of it. You do not continue the conversation, answer its questions or call tools: you \
only write the notes.";

/// The structure every summary follows.
const NOTE_SECTIONS: &str = "Use exactly these Markdown headings, in this order, and write \
\"none\" under a heading with nothing to report:\n\
## Goal\nWhat the user wants overall, in their words where possible.\n\
## Constraints and preferences\nRequirements, rules and preferences the user stated.\n\
## Progress\n### Done\n### In progress\n\
## Key decisions\nWhat was decided and why.\n\
## Files\nFiles read, created or changed: exact paths and what changed.\n\
## Commands and errors\nCommands that matter and error messages, quoted exactly.\n\
## Open problems\n\
## Next steps\n\n\
Be specific: keep exact paths, names, numbers, commands and error text. Leave out \
pleasantries and anything superseded.";

/// Smallest chunk of conversation worth a summary call.
const MIN_CHUNK_TOKENS: u64 = 256;

/// Why a compaction did not produce a checkpoint. The old checkpoint stays in every case.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("nothing to compact: the history fits in the recent part that is kept verbatim")]
    NothingToCompact,
    #[error("cannot compact an invalid history")]
    Invalid(#[source] ValidationError),
    #[error("summary request failed")]
    Provider(#[source] ProviderError),
    #[error("summary rejected: {reason}")]
    Rejected { reason: String },
    #[error(
        "the summary input budget of {budget} tokens leaves no room for the conversation (the earlier summary and instructions need {needed})"
    )]
    BudgetTooSmall { budget: u64, needed: u64 },
    #[error("compaction cancelled")]
    Cancelled,
}

/// What a compaction needs besides the history.
#[derive(Debug, Clone, Copy)]
pub struct CompactRequest<'a> {
    /// Focus instructions from `/compact <instructions>`.
    pub instructions: Option<&'a str>,
    /// About how much recent history to keep verbatim.
    pub keep_recent_tokens: u64,
    /// Estimated input tokens one summary call may carry.
    pub input_budget: u64,
    /// `max_tokens` of a summary call, cut to the room the call's input leaves in `window`.
    pub max_tokens: u32,
    /// The context window the summary calls run in.
    pub window: u64,
    /// `/compact` by the user: keep at most the newest exchange (from the latest user message
    /// on), however small the history, instead of about `keep_recent_tokens`.
    pub latest_exchange_only: bool,
}

impl<'a> CompactRequest<'a> {
    pub fn new(budget: &Budget, instructions: Option<&'a str>) -> Self {
        Self {
            instructions,
            keep_recent_tokens: budget.keep_recent,
            input_budget: budget.summary_input_budget(),
            max_tokens: budget.summary_max_tokens(),
            window: budget.window,
            latest_exchange_only: false,
        }
    }
}

/// A proposed checkpoint and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactOutcome {
    pub checkpoint: Checkpoint,
    /// History messages newly folded into the summary.
    pub messages_summarized: usize,
    /// Summary calls this compaction made (also added to the stats passed in).
    pub summary_calls: u32,
    /// Their usage (also added to the stats passed in).
    pub(crate) usage: TokenStats,
    /// Chunks the new part of the history was split into.
    pub chunks: u32,
}

/// Summarises `messages[previous.first_kept_index..boundary]` (with the previous summary)
/// where `boundary` keeps about `keep_recent_tokens` of recent history verbatim.
///
/// Every summary call made, successful or not, is counted in `stats.summary_calls` and its
/// reported usage in `stats.summary_tokens`. Only a complete, non-empty summary is accepted
/// (finish reason `stop`, no tool calls). A server "context too long" answer to a summary call
/// shrinks the chunk and tries again; any other failure, or cancellation, ends the compaction
/// and the caller keeps its old checkpoint.
pub async fn compact(
    provider: &dyn Provider,
    messages: &[Message],
    previous: Option<&Checkpoint>,
    request: &CompactRequest<'_>,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
) -> Result<CompactOutcome, CompactError> {
    validate::history(messages).map_err(CompactError::Invalid)?;
    let (start, boundary) = span_to_fold(messages, previous, request)?;
    let transcript = transcript(&messages[start..boundary], start);
    let mut summary: Option<String> = previous.map(|c| c.summary.clone());
    let mut rest = transcript.as_str();
    let mut cap = u64::MAX;
    let mut outcome_usage = TokenStats::default();
    let mut calls = 0u32;
    let mut part = 0u32;
    while !rest.is_empty() {
        let fixed = estimate_text(SUMMARY_SYSTEM_PROMPT)
            + estimate_text(NOTE_SECTIONS)
            + 200
            + summary.as_deref().map_or(0, estimate_text)
            + request.instructions.map_or(0, estimate_text);
        if request.input_budget < fixed + MIN_CHUNK_TOKENS {
            return Err(CompactError::BudgetTooSmall {
                budget: request.input_budget,
                needed: fixed,
            });
        }
        let (chunk, after) = split_at_budget(rest, (request.input_budget - fixed).min(cap));
        let prompt = summary_prompt(
            summary.as_deref(),
            chunk,
            request.instructions,
            part + 1,
            !after.is_empty(),
        );
        // Counted once sent: a call cancelled halfway may still have cost tokens.
        calls += 1;
        match summary_call(provider, prompt, request, cancel, stats).await? {
            Ok(reply) => {
                stats.summary_tokens.add(reply.usage);
                outcome_usage.add(reply.usage);
                summary = Some(accept(&reply)?);
                rest = after;
                part += 1;
            }
            Err(ProviderError::ContextLength { .. })
                if (chunk_tokens(chunk) / 2) >= MIN_CHUNK_TOKENS =>
            {
                // The server counts differently from our estimate: halve the chunk and go on.
                cap = chunk_tokens(chunk) / 2;
            }
            Err(e) => return Err(CompactError::Provider(e)),
        }
    }
    let summary = summary.ok_or(CompactError::NothingToCompact)?;
    Ok(CompactOutcome {
        checkpoint: Checkpoint {
            summary,
            first_kept_index: boundary,
        },
        messages_summarized: boundary - start,
        summary_calls: calls,
        usage: outcome_usage,
        chunks: part,
    })
}

/// The part of the history a compaction folds, `start..boundary`: from the end of the previous
/// summary up to the recent history kept verbatim (for `/compact`, at most the newest exchange
/// is kept). Nothing in between is nothing to compact.
fn span_to_fold(
    messages: &[Message],
    previous: Option<&Checkpoint>,
    request: &CompactRequest<'_>,
) -> Result<(usize, usize), CompactError> {
    let start = previous
        .map_or(0, |c| c.first_kept_index)
        .min(messages.len());
    let mut boundary = keep_boundary(messages, request.keep_recent_tokens);
    if request.latest_exchange_only
        && let Some(latest) = messages.iter().rposition(|m| m.role == Role::User)
    {
        // A user message always starts a unit, so this never splits a tool batch.
        boundary = boundary.max(latest);
    }
    if boundary <= start {
        return Err(CompactError::NothingToCompact);
    }
    Ok((start, boundary))
}

/// One summary call for `prompt` inside its `model_call` span, its reply room cut to what the
/// window leaves. It is counted in `stats` once sent; the outer error is cancellation, the
/// inner one the provider's answer, which the caller may retry with a smaller chunk.
async fn summary_call(
    provider: &dyn Provider,
    prompt: String,
    request: &CompactRequest<'_>,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
) -> Result<Result<Reply, ProviderError>, CompactError> {
    let system = Message::system(SUMMARY_SYSTEM_PROMPT);
    let user = Message::user(prompt);
    let refs = [&system, &user];
    let input = estimate_message(&system) + estimate_message(&user);
    let room = request
        .window
        .saturating_sub(input)
        .clamp(MIN_REPLY_TOKENS, u64::from(u32::MAX));
    let chat = ChatRequest {
        messages: &refs,
        tools: &[],
        // Servers refuse `input + max_tokens > window`; `room` fits in u32 by the clamp.
        max_tokens: request.max_tokens.min(room as u32),
        statuses: &[],
    };
    if cancel.is_cancelled() {
        return Err(CompactError::Cancelled);
    }
    let span = super::spans::model_call(
        provider.model(),
        provider.server(),
        chat.max_tokens,
        super::spans::Purpose::Compaction,
    );
    let future = span.in_scope(|| provider.chat(&chat));
    stats.summary_calls += 1;
    let result = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            super::spans::cancel_model_call(&span);
            return Err(CompactError::Cancelled);
        }
        result = tracing::Instrument::instrument(future, span.clone()) => result,
    };
    super::spans::end_model_call(&span, result.as_ref());
    Ok(result)
}

fn chunk_tokens(chunk: &str) -> u64 {
    estimate_text(chunk)
}

/// Accepts only a complete, non-empty, tool-free summary.
fn accept(reply: &Reply) -> Result<String, CompactError> {
    let reject = |reason: String| Err(CompactError::Rejected { reason });
    if !reply.tool_calls.is_empty() {
        return reject("the summariser called a tool".to_string());
    }
    match &reply.finish_reason {
        Some(FinishReason::Stop) => {}
        Some(other) => {
            return reject(format!(
                "the summary is incomplete (finish reason {:?})",
                other.as_str()
            ));
        }
        None => return reject("the summary is incomplete (no finish reason)".to_string()),
    }
    let text = reply.text.trim();
    if text.is_empty() {
        return reject("the summary is empty".to_string());
    }
    Ok(text.to_string())
}

/// The user prompt of one summary call. `part` counts from 1; `more` says another chunk
/// follows, so the notes must not treat this one as the end of the conversation.
pub(crate) fn summary_prompt(
    previous: Option<&str>,
    chunk: &str,
    instructions: Option<&str>,
    part: u32,
    more: bool,
) -> String {
    let mut p = String::with_capacity(chunk.len() + previous.map_or(0, str::len) + 2048);
    match previous {
        None => p.push_str(
            "Below, inside <conversation>, is the earlier part of a conversation between a user \
             and a coding agent. Write working notes from which the agent can carry on without it.\n\n",
        ),
        Some(notes) => {
            p.push_str(
                "Below, inside <previous-notes>, are your notes of the conversation so far, and \
                 inside <conversation> what happened after them. Update the notes so they cover \
                 both: keep everything in the earlier notes that still holds, add what is new, \
                 move finished work from in progress to done, and drop only what the new part \
                 shows to be obsolete.\n\n<previous-notes>\n",
            );
            p.push_str(notes);
            p.push_str("\n</previous-notes>\n\n");
        }
    }
    p.push_str(NOTE_SECTIONS);
    p.push_str("\n\n");
    if let Some(focus) = instructions.map(str::trim).filter(|f| !f.is_empty()) {
        p.push_str("The user asked the notes to focus on this:\n<focus>\n");
        p.push_str(focus);
        p.push_str("\n</focus>\n\n");
    }
    if part > 1 || more {
        p.push_str(&format!(
            "The conversation is long, so it comes in parts; this is part {part}{}.\n\n",
            if more {
                " and more parts follow"
            } else {
                ", the last one"
            }
        ));
    }
    p.push_str("<conversation>\n");
    p.push_str(chunk);
    p.push_str("\n</conversation>");
    p
}

/// Renders messages as plain text for the summariser: every text, tool name, call id, full
/// arguments and full result. Nothing is shortened here; chunking handles size.
pub fn transcript(messages: &[Message], first_index: usize) -> String {
    let size: usize = messages
        .iter()
        .map(|m| {
            m.text().len()
                + m.tool_calls
                    .iter()
                    .map(|c| c.arguments.len() + 64)
                    .sum::<usize>()
                + 48
        })
        .sum();
    let mut out = String::with_capacity(size);
    for (offset, m) in messages.iter().enumerate() {
        let index = first_index + offset;
        match m.role {
            Role::System => out.push_str(&format!("[#{index} system]\n")),
            Role::User => out.push_str(&format!("[#{index} user]\n")),
            Role::Assistant => out.push_str(&format!("[#{index} assistant]\n")),
            Role::Tool => out.push_str(&format!(
                "[#{index} tool result for call {}]\n",
                m.tool_call_id.as_deref().unwrap_or("?")
            )),
        }
        if !m.text().is_empty() {
            out.push_str(m.text());
            out.push('\n');
        }
        for call in &m.tool_calls {
            out.push_str(&format!("[tool call {} id {}]\n", call.name, call.id));
            out.push_str(&call.arguments);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}
