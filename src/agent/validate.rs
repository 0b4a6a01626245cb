//! Message validation: the local check that a context is well formed before it is sent, saved
//! or accepted as a checkpoint. It only reads messages; it never repairs them, because a
//! silently "fixed" history would hide the bug that produced it.
//!
//! Servers reject malformed contexts with vague 400s (or, worse, accept them and confuse the
//! model), so every rule here names the message index and, where one exists, the call id.

use std::collections::HashSet;

use crate::chat::{Message, Role, ToolCall};

/// Why a context is not valid. Indices count from 0 in the list that was checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error("invalid context: message {index} ({role}) {problem}")]
    Field {
        index: usize,
        role: &'static str,
        problem: &'static str,
    },
    #[error("invalid context: message {index} has a tool call with an empty id")]
    EmptyCallId { index: usize },
    #[error("invalid context: message {index} repeats tool call id {call_id:?} within its batch")]
    DuplicateCallId { index: usize, call_id: String },
    #[error("invalid context: message {index}, tool call {call_id:?} has no tool name")]
    EmptyToolName { index: usize, call_id: String },
    #[error(
        "invalid context: message {index}, tool call {call_id:?}: arguments are not a json object"
    )]
    Arguments { index: usize, call_id: String },
    #[error("invalid context: message {index} answers tool call {call_id:?}, which is not pending")]
    UnexpectedResult { index: usize, call_id: String },
    #[error(
        "invalid context: message {index} ({role}) follows before tool call {call_id:?} was answered"
    )]
    Unanswered {
        index: usize,
        role: &'static str,
        call_id: String,
    },
    #[error("invalid context: tool call {call_id:?} in message {index} has no result")]
    UnansweredAtEnd { index: usize, call_id: String },
}

/// Checks a context that is about to be sent: every rule, and every tool call answered.
///
/// Rules: a role's required fields are present and foreign ones absent; tool-call ids are
/// non-empty and unique within their batch; arguments are a JSON object; a tool result
/// answers a pending call of the batch right before it (in any order); no other role follows
/// until the whole batch is answered. Consecutive user messages and system messages outside a
/// batch are allowed.
pub fn messages(messages: &[&Message]) -> Result<(), ValidationError> {
    check(messages.iter().copied(), 0, true, &[]).map(drop)
}

/// [`messages`] for a request that borrows most of its messages from `checked`, a history
/// prefix that [`history_prefix_from`] has already passed: those skip the checks that concern
/// one message alone (fields of its tool calls, their ids, the arguments' JSON), so checking
/// each request of a long session does not re-parse its whole past. The order rules (every call
/// answered, no result without its call) are still checked for every message.
///
/// When the request carries the whole checked prefix from some message on, in order and by
/// address (the kept history of a session), that run is not walked at all: it was checked as a
/// whole, and it begins and ends with no batch open, so only what comes before it (which must
/// leave no batch open) and after it is checked. A request then costs what it adds, not its
/// whole past.
pub fn request(messages: &[&Message], checked: &[Message]) -> Result<(), ValidationError> {
    match checked_run(messages, checked) {
        Some((start, end)) => {
            check(messages[..start].iter().copied(), 0, true, &[])?;
            check(messages[end..].iter().copied(), end, true, &[]).map(drop)
        }
        None => check(messages.iter().copied(), 0, true, checked).map(drop),
    }
}

/// `messages[start..end]`, the same messages (by address) as `checked[first..]` for some
/// `first` where no batch is open (not a tool result): the end of `checked` is a settled point,
/// where none is open either.
fn checked_run(messages: &[&Message], checked: &[Message]) -> Option<(usize, usize)> {
    let range = checked.as_ptr_range();
    let start = messages
        .iter()
        .position(|m| range.contains(&std::ptr::from_ref(*m)))?;
    // Its index in `checked`, from the addresses (a walk would cost what this saves).
    let offset = std::ptr::from_ref(messages[start]).addr() - range.start.addr();
    let first = offset / std::mem::size_of::<Message>().max(1);
    if !std::ptr::eq(checked.get(first)?, messages[start]) {
        return None;
    }
    let rest = &checked[first..];
    let len = messages[start..]
        .iter()
        .zip(rest)
        .take_while(|(m, c)| std::ptr::eq(**m, *c))
        .count();
    let whole = len == rest.len() && rest.first().is_some_and(|m| m.role != Role::Tool);
    whole.then_some((start, start + len))
}

/// [`messages`] for an owned history slice (a session's raw history).
pub fn history(messages: &[Message]) -> Result<(), ValidationError> {
    check(messages.iter(), 0, true, &[]).map(drop)
}

/// Like [`history`], but the last batch may still be waiting for results: the shape a
/// session has while its tools run, which is what an autosave in the middle of a turn sees.
pub fn history_prefix(messages: &[Message]) -> Result<(), ValidationError> {
    check(messages.iter(), 0, false, &[]).map(drop)
}

/// [`history_prefix`] for a history that only grew since a check of it returned `settled`:
/// only the messages from `settled` on are checked, so saving after every step of a long
/// session does not re-check its whole past each time. Returns the new settled length: the
/// end of the longest checked prefix with no batch waiting for results, where the rules
/// start afresh. A `settled` beyond the history (it was replaced) checks it all.
pub fn history_prefix_from(messages: &[Message], settled: usize) -> Result<usize, ValidationError> {
    let from = if settled > messages.len() { 0 } else { settled };
    check(messages[from..].iter(), from, false, &[])
}

/// Replaces tool-call arguments that are not a JSON object with `{}` in an assistant message
/// about to enter history. A model may emit broken arguments; the call is rejected with a
/// result explaining why, but the broken text must not stay in history, or every later request
/// (which servers would refuse) fails validation. Returns how many calls were changed.
pub(crate) fn normalize_arguments(message: &mut Message) -> usize {
    let mut changed = 0;
    for call in &mut message.tool_calls {
        if !is_json_object(&call.arguments) {
            call.arguments = "{}".to_string();
            changed += 1;
        }
    }
    changed
}

/// Gives every call in a reply a distinct, non-empty id (a server that repeats or omits ids
/// would otherwise leave a history no later request could validate). Renamed calls get
/// `<id>_<n>`, except Mistral-style ids (exactly 9 letters and digits, which Mistral's API
/// insists on when they are sent back): those get another 9-character id. Returns how many
/// were renamed.
pub fn unique_call_ids(calls: &mut [crate::chat::ToolCall]) -> usize {
    let mut seen = std::collections::HashSet::new();
    let mut renamed = 0;
    for index in 0..calls.len() {
        if !calls[index].id.is_empty() && seen.insert(calls[index].id.clone()) {
            continue;
        }
        let base = if calls[index].id.is_empty() {
            "call"
        } else {
            calls[index].id.as_str()
        };
        let mistral = base.len() == 9 && base.bytes().all(|b| b.is_ascii_alphanumeric());
        let mut n = index + 1;
        let id = loop {
            let candidate = if mistral {
                let suffix = base36(n);
                format!("{}{suffix}", &base[..9usize.saturating_sub(suffix.len())])
            } else {
                format!("{base}_{n}")
            };
            if !calls.iter().any(|c| c.id == candidate) && !seen.contains(&candidate) {
                break candidate;
            }
            n += 1;
        };
        seen.insert(id.clone());
        calls[index].id = id;
        renamed += 1;
    }
    renamed
}

/// `n` in base 36 (digits, then lowercase letters).
fn base36(mut n: usize) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[n % 36]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The rules of one tool call on its own; `ids` holds the ids seen so far in its batch.
fn check_call<'a>(
    call: &'a ToolCall,
    index: usize,
    ids: &mut HashSet<&'a str>,
) -> Result<(), ValidationError> {
    if call.id.is_empty() {
        return Err(ValidationError::EmptyCallId { index });
    }
    if !ids.insert(call.id.as_str()) {
        return Err(ValidationError::DuplicateCallId {
            index,
            call_id: call.id.clone(),
        });
    }
    if call.name.is_empty() {
        return Err(ValidationError::EmptyToolName {
            index,
            call_id: call.id.clone(),
        });
    }
    if !is_json_object(&call.arguments) {
        return Err(ValidationError::Arguments {
            index,
            call_id: call.id.clone(),
        });
    }
    Ok(())
}

/// Whether `raw` is one complete JSON object. Parsing into `IgnoredAny` checks the syntax
/// without building a value, so validating a long history stays cheap.
fn is_json_object(raw: &str) -> bool {
    raw.trim_start().starts_with('{') && serde_json::from_str::<serde::de::IgnoredAny>(raw).is_ok()
}

/// A message's own fields for its role: a text message carries text and nothing of tools, an
/// assistant message has something to say, a tool result has content and names its call.
fn check_shape(message: &Message, index: usize) -> Result<(), ValidationError> {
    let field = |problem| {
        Err(ValidationError::Field {
            index,
            role: message.role.as_str(),
            problem,
        })
    };
    match message.role {
        Role::System | Role::User => {
            if message.content.is_none() {
                return field("has no content");
            }
            if !message.tool_calls.is_empty() {
                return field("carries tool calls");
            }
            if message.tool_call_id.is_some() {
                return field("carries a tool call id");
            }
        }
        Role::Assistant => {
            if message.tool_call_id.is_some() {
                return field("carries a tool call id");
            }
            if message.content.is_none() && message.tool_calls.is_empty() {
                return field("has neither content nor tool calls");
            }
        }
        Role::Tool => {
            if !message.tool_calls.is_empty() {
                return field("carries tool calls");
            }
            if message.content.is_none() {
                return field("has no content");
            }
            if message.tool_call_id.as_deref().is_none_or(str::is_empty) {
                return field("has no tool call id");
            }
        }
    }
    Ok(())
}

/// Checks messages numbered from `first`; a message that lies in `checked` (by address) was
/// checked on its own before. Returns the settled length (see [`history_prefix_from`]).
fn check<'a>(
    messages: impl Iterator<Item = &'a Message>,
    first: usize,
    require_complete: bool,
    checked: &[Message],
) -> Result<usize, ValidationError> {
    let checked = checked.as_ptr_range();
    // Ids of the open batch still waiting for a result, and the index of its assistant message.
    let mut pending: Vec<&str> = Vec::new();
    let mut batch_index = 0;
    let mut ids: HashSet<&str> = HashSet::new();
    let mut settled = first;
    for (index, message) in (first..).zip(messages) {
        let role = message.role.as_str();
        if message.role != Role::Tool
            && let Some(call_id) = pending.first()
        {
            return Err(ValidationError::Unanswered {
                index,
                role,
                call_id: (*call_id).to_string(),
            });
        }
        check_shape(message, index)?;
        match message.role {
            Role::System | Role::User => {}
            Role::Assistant => {
                ids.clear();
                let known = checked.contains(&std::ptr::from_ref(message));
                for call in &message.tool_calls {
                    if !known {
                        check_call(call, index, &mut ids)?;
                    }
                    pending.push(call.id.as_str());
                }
                batch_index = index;
            }
            Role::Tool => {
                // `check_shape` made sure a result names its call.
                let call_id = message.tool_call_id.as_deref().unwrap_or_default();
                match pending.iter().position(|id| *id == call_id) {
                    Some(at) => {
                        pending.remove(at);
                    }
                    None => {
                        return Err(ValidationError::UnexpectedResult {
                            index,
                            call_id: call_id.to_string(),
                        });
                    }
                }
            }
        }
        if pending.is_empty() {
            settled = index + 1;
        }
    }
    match pending.first() {
        Some(call_id) if require_complete => Err(ValidationError::UnansweredAtEnd {
            index: batch_index,
            call_id: (*call_id).to_string(),
        }),
        _ => Ok(settled),
    }
}
