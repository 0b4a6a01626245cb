//! What the core does for small local models, which often write their calls as text, announce
//! an action and stop, or ramble until a timeout: calls written as text are recovered (the
//! finding is `provider::recover`'s; here they join the reply as native calls, are counted, and
//! outside the small profile the model is shown the call format once); a turn that would end
//! on an announcement gets one nudge (so does a first reply that answers a question about the
//! workspace without looking at it, in the small profile); replies are bounded (a
//! `max_tokens` from a small window, a stop on runaway repetition) with a word when one was
//! cut. In the small profile a reply with no answer in it (bare template markup, an echoed
//! attachment) is reminded like an empty one, and a rename that left the old name in files the
//! model read gets a reminder naming them, as does an answer claiming a change to a file no
//! call changed. It decides nothing about approval or running: a
//! recovered call takes the same path as any other.

mod announce;
mod claimed;
mod first_look;
mod hollow;
mod progress;
mod referenced;
mod renamed;
mod repeat;
mod runaway;
mod unchanged;
mod unlooked;

pub(super) use first_look::first_look;
pub(super) use progress::Progress;
pub(super) use repeat::Repeats;
pub(crate) use runaway::Runaway;

use super::Core;
use super::notice;
use crate::chat::{Builtin, Role, ToolCall, ToolKind, ToolSpec, ToolStatus};
use crate::protocol::{Event, TurnStats};
use crate::provider::recover;
use crate::provider::tally::Count;
use crate::provider::{FinishReason, Reply};

/// The settings of this part, from `[model]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `[model] recover_tool_calls`: treat a call written as text as the call.
    pub recover_tool_calls: bool,
    /// Whether a small window may lower `max_tokens` and runaway repetition stop a reply
    /// (false when `[model] max_tokens` is set: the user's number stands).
    pub bound_replies: bool,
    /// `[model] first_look`: in the small profile, the files and folders a prompt names are
    /// read and listed before the model's first reply (see `small/first_look.rs`).
    pub first_look: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            recover_tool_calls: true,
            bound_replies: true,
            first_look: true,
        }
    }
}

/// A window this size or smaller is a small model's (or a small server's): replies are bounded.
pub(crate) const SMALL_WINDOW: u64 = 32_768;

/// The finish reason given to a reply stopped on runaway repetition.
pub(crate) const REPETITION: &str = "repetition";

/// The reminder after an empty reply in the small profile: Qwen2.5-Coder 1.5B, after a few
/// reads, sometimes sends nothing at all, which would fail a turn whose answer is in view.
pub(super) const EMPTY_REPLY_NUDGE: &str = "Your last reply was empty. Answer the user now \
from the tool results above, or make the tool call you need next.";

/// The reminder after a reply with no answer in it (see `small/hollow.rs`).
pub(super) const HOLLOW_REPLY_NUDGE: &str = "Your last reply held no answer: only markup, or the \
attached file repeated. Answer the user now in your own words from what you have read, or make \
the tool call you need next.";

/// The note that shows the call format, once per session, after the first recovered call. Its
/// bytes never change, so it keeps the prompt cache's prefix like any other message.
const FORMAT_NOTE: &str = "Your last tool call was written as text; minicode recognised it and \
ran it. Call tools through the tool-call interface instead: one call per tool, with the tool's \
name and a JSON object of its arguments, for example {\"name\": \"read\", \"arguments\": \
{\"path\": \"README.md\"}}. Do not describe a call in prose or in a code block.";

impl Settings {
    /// Whether replies are bounded in a window of `window` tokens.
    pub(crate) fn bounded(&self, window: u64) -> bool {
        self.bound_replies && window <= SMALL_WINDOW
    }

    /// The upper bound of a main request's `max_tokens`: `configured`, or in a small window a
    /// sixteenth of it (between 1024 and 4096), so a rambling model ends within minutes on a
    /// CPU. 0 ("the server decides") stays 0.
    pub(crate) fn reply_limit(&self, configured: u32, window: u64) -> u32 {
        if configured == 0 || !self.bounded(window) {
            return configured;
        }
        let bound = (window / 16).clamp(1024, 4096);
        configured.min(u32::try_from(bound).unwrap_or(configured))
    }
}

/// What recovery found in one reply, for what follows it in the turn.
#[derive(Debug, Default)]
pub(super) struct Recovered {
    /// Calls were recovered (the format note may be due).
    pub(crate) calls: bool,
    /// Names of call-shaped text that named no offered tool.
    pub(crate) unknown: Vec<String>,
}

/// A reply with no native call whose text holds calls to offered tools gets them as its calls
/// (the text that was the call removed), counted in `stats` and per model. `tools` are the
/// tools the request offered; `salt` makes the new calls' ids unique in the session.
pub(super) fn recover_calls(
    core: &Core,
    reply: &mut Reply,
    tools: &[ToolSpec],
    stats: &mut TurnStats,
) -> Recovered {
    if !core.options.small.recover_tool_calls || !reply.tool_calls.is_empty() || tools.is_empty() {
        return Recovered::default();
    }
    let found = recover::recover(&reply.text, tools);
    if found.calls.is_empty() {
        return Recovered {
            calls: false,
            unknown: found.unknown,
        };
    }
    let salt = core.store.session.messages().len();
    reply.tool_calls = found
        .calls
        .into_iter()
        .enumerate()
        .map(|(i, call)| ToolCall {
            id: format!("call_text_{salt}_{i}"),
            name: call.name,
            arguments: call.arguments,
        })
        .collect();
    reply.text = found.text;
    let count = reply.tool_calls.len();
    stats.recovered_calls += u32::try_from(count).unwrap_or(u32::MAX);
    for _ in 0..count {
        core.provider.count(Count::RecoveredCall);
    }
    let names: Vec<&str> = reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
    tracing::info!(tools = ?names, "tool calls recovered from the reply's text");
    core.emit(Event::Warning {
        message: format!(
            "the model wrote {} as text; it runs as a tool call",
            if count == 1 {
                format!("a call of {}", names.join(", "))
            } else {
                format!("{count} calls ({})", names.join(", "))
            }
        ),
    });
    Recovered {
        calls: true,
        unknown: Vec::new(),
    }
}

/// After a batch that ran recovered calls: the call format shown once per session (a notice
/// after everything already sent, so the cached prefix stays as it was). Not in the small
/// profile: a small model cannot switch to native calls, and in real runs the notice, coming
/// between a tool's result and the answer, made Qwen2.5-Coder-1.5B echo it and run its
/// example call instead of answering from the result.
pub(super) fn teach_format(core: &mut Core) {
    if core.upkeep.is_small() {
        return;
    }
    let shown = notice::notices(core.store.session.messages()).any(|n| n.contains(FORMAT_NOTE));
    if !shown {
        core.store
            .session
            .push(notice::message(&[FORMAT_NOTE.to_string()]));
    }
}

/// The correction for a reply that would end the turn while it only announced a call or
/// wrote one to a tool that does not exist; `None` when the reply reads as an answer (or no
/// tools are offered).
pub(super) fn nudge(text: &str, unknown: &[String], tools: &[ToolSpec]) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let offered: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let offered = offered.join(", ");
    if let Some(name) = unknown.first() {
        return Some(format!(
            "There is no tool named \"{name}\", and nothing was run. The tools you can call \
             are: {offered}. Call one of them through the tool-call interface, or give your \
             final answer if the task is done (or cannot or should not be done: then say why)."
        ));
    }
    announce::announces(text).then(|| {
        format!(
            "You said what you would do next but made no tool call, so nothing happened. The \
             tools you can call are: {offered}. Make the call now through the tool-call \
             interface, or give your final answer if the task is done (or cannot or should \
             not be done: then say why)."
        )
    })
}

/// The reminder to look for a turn's first reply that, in the small profile, answered a
/// prompt about the workspace with no call at all (see `small/unlooked.rs`); `None` when the
/// reply needs no look (a refusal, a question back, a prompt about nothing in the workspace).
pub(super) fn look_first(core: &Core, reply: &str, tools: &[ToolSpec]) -> Option<String> {
    if tools.is_empty() || !core.upkeep.is_small() {
        return None;
    }
    let prompt = last_prompt(core)?;
    // A prompt that came with files or a listing (`@file`, a first look) was answered with
    // them in view.
    let text = prompt.text();
    if text.contains("\n<attached-file path=\"") || text.contains("\n<attached-listing path=\"") {
        return None;
    }
    let example = match unlooked::unlooked(prompt.text(), reply, &core.tool_ctx.workspace)? {
        unlooked::Subject::File(path) => {
            format!(" For example: {}.", call_example(Builtin::Read, &path))
        }
        unlooked::Subject::Folder(path) => {
            format!(" For example: {}.", call_example(Builtin::List, &path))
        }
        unlooked::Subject::Words => String::new(),
    };
    let offered: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    Some(format!(
        "You replied without calling any tool, so nothing in the workspace was looked at or \
         changed, and your reply may be a guess. The task is about the files here: call a \
         tool now (one of: {}) to look or to act, then answer from what it shows (or, if the \
         task should not be done, say why).{example}",
        offered.join(", ")
    ))
}

/// The reminder for a turn that, in the small profile, would end with nothing changed though
/// its prompt orders a change (see `small/unchanged.rs`): the model described or planned the
/// change instead of making it, or its one attempt was refused. `None` when the reply declines
/// or asks back.
pub(super) fn change_first(core: &Core, reply: &str, tools: &[ToolSpec]) -> Option<String> {
    if tools.is_empty() || !core.upkeep.is_small() || unlooked::declines_or_asks(reply) {
        return None;
    }
    let prompt = last_prompt(core)?;
    if !unchanged::asks_for_change(prompt.text()) {
        return None;
    }
    let offered: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    Some(format!(
        "Nothing in the workspace has changed yet, but the task asks for a change: describing \
         it does not make it. Make the change now with a tool call (one of: {}). If it cannot \
         or should not be made, say so and why.",
        offered.join(", ")
    ))
}

/// Whether a reply with no call is, in the small profile, no answer at all: empty template
/// markup or an echo of an attachment (see `small/hollow.rs`). It is reminded as an empty one.
pub(super) fn hollow(core: &Core, reply: &Reply) -> bool {
    core.upkeep.is_small() && reply.tool_calls.is_empty() && hollow::hollow(&reply.text)
}

/// Whether one of `calls` that can change the workspace (an edit or a command) succeeded.
pub(super) fn changed_something(core: &Core, calls: &[ToolCall]) -> bool {
    succeeded(core, calls).any(|call| {
        core.registry
            .get(&call.name)
            .is_some_and(|t| matches!(t.kind(), ToolKind::Edit | ToolKind::Execute))
    })
}

/// Those of `calls` whose results (the last messages of the session) say they succeeded.
fn succeeded<'a>(core: &'a Core, calls: &'a [ToolCall]) -> impl Iterator<Item = &'a ToolCall> {
    let messages = core.store.session.messages();
    // One more: a user message showing images `read` returned may follow the results.
    let first = messages.len().saturating_sub(calls.len() + 1);
    (first..messages.len()).filter_map(move |index| {
        let id = messages[index].tool_call_id.as_deref()?;
        let call = calls.iter().find(|c| c.id == id)?;
        let ok = core
            .store
            .session
            .result_info(index)
            .is_some_and(|info| info.status == Some(ToolStatus::Succeeded));
        ok.then_some(call)
    })
}

/// The user's last prompt (not a notice of minicode's).
fn last_prompt(core: &Core) -> Option<&crate::chat::Message> {
    core.store
        .session
        .messages()
        .iter()
        .rev()
        .find(|m| m.role == Role::User && !m.is_notice())
}

/// A call of `tool` on `path`, in the JSON form the format note shows.
fn call_example(tool: Builtin, path: &str) -> String {
    serde_json::json!({"name": tool.name(), "arguments": {"path": path}}).to_string()
}

/// Pushes a nudge into history, counted; `why` is what the user is told.
pub(super) fn send_nudge(core: &mut Core, text: String, why: &str, stats: &mut TurnStats) {
    stats.nudges += 1;
    core.provider.count(Count::Nudge);
    core.emit(Event::Warning {
        message: format!("{why}; reminding it once"),
    });
    // Framed as a session notice: minicode's words, not the user's, so the ledger, the
    // transcript, the session's title and the next reminder's prompt search pass over it.
    core.store.session.push(notice::reminder(&text));
}

/// Answers `calls` without running them when, in the small profile, every one repeats a
/// read-only call made since the last change (see `small/repeat.rs`): the model is pointed at
/// the earlier results, told in a warning and counted as a nudge. Returns whether it did.
pub(super) fn held_back(
    core: &mut Core,
    calls: &[ToolCall],
    repeats: &Repeats,
    stats: &mut TurnStats,
) -> bool {
    if calls.is_empty() || !core.upkeep.is_small() {
        return false;
    }
    if !all_repeat(core, calls, repeats) {
        return false;
    }
    stats.nudges += 1;
    core.provider.count(Count::Nudge);
    core.emit(Event::Warning {
        message: "the model repeated a call it had just made; it was pointed at the earlier \
                  result instead of running it again"
            .to_string(),
    });
    for call in calls {
        core.store.session.push_result(
            call.id.clone(),
            repeat::REPEATED,
            crate::chat::ToolStatus::Rejected,
            None,
        );
    }
    true
}

/// Drops the calls of a reply that, in the small profile, answers in words and sends back
/// only read-only calls it already made since the last change: Qwen2.5-Coder 1.5B signs off
/// an answer with the call that found it, and running that again (or pointing it at the
/// earlier result) sent it round once more, where it changed a right answer into a wrong one.
/// The answer stands. Returns whether it did.
pub(super) fn answer_beside_repeats(core: &Core, reply: &mut Reply, repeats: &Repeats) -> bool {
    if !core.upkeep.is_small()
        || reply.tool_calls.is_empty()
        || reply.text.trim().is_empty()
        || announce::announces(&reply.text)
    {
        return false;
    }
    if !all_repeat(core, &reply.tool_calls, repeats) {
        return false;
    }
    reply.tool_calls.clear();
    core.emit(Event::Warning {
        message: "the model answered and sent back a call it had just made; the answer stands \
                  and the call was not run again"
            .to_string(),
    });
    true
}

/// Whether every one of `calls` repeats a read-only call made since the last change.
fn all_repeat(core: &Core, calls: &[ToolCall], repeats: &Repeats) -> bool {
    calls.iter().all(|c| {
        let kind = core.registry.get(&c.name).map(|t| t.kind());
        repeats.repeats(c, kind)
    })
}

/// Notes the calls of a batch that ran, for [`held_back`].
pub(super) fn ran(core: &Core, calls: &[ToolCall], repeats: &mut Repeats) {
    for call in calls {
        repeats.ran(call, core.registry.get(&call.name).map(|t| t.kind()));
    }
}

/// Says when a reply was cut (at the token limit, or stopped on runaway repetition), counted.
pub(super) fn note_cut(core: &Core, reply: &Reply, stats: &mut TurnStats) {
    let why = match &reply.finish_reason {
        Some(FinishReason::Length) => {
            "the reply was cut at its token limit ([model] max_tokens, or the room left in the \
             window)"
        }
        Some(FinishReason::Other(r)) if r == REPETITION => {
            "the reply was stopped: the model was repeating itself"
        }
        _ => return,
    };
    stats.cut_replies += 1;
    core.emit(Event::Warning {
        message: why.to_string(),
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_small_window_bounds_replies_unless_max_tokens_is_configured() {
        let on = Settings::default();
        assert_eq!(on.reply_limit(8192, 32_768), 2048);
        assert_eq!(on.reply_limit(8192, 8192), 1024);
        assert_eq!(on.reply_limit(8192, 131_072), 8192);
        assert_eq!(on.reply_limit(512, 32_768), 512);
        assert_eq!(on.reply_limit(0, 8192), 0);
        let off = Settings {
            bound_replies: false,
            ..on
        };
        assert_eq!(off.reply_limit(8192, 8192), 8192);
    }

    #[test]
    fn a_nudge_names_the_offered_tools() {
        let tools = [ToolSpec {
            name: "read".into(),
            description: "".into(),
            parameters: serde_json::json!({}),
        }];
        let n = nudge("Done: the answer is 4.", &["open".to_string()], &tools).unwrap();
        assert!(n.contains("\"open\"") && n.contains("read"), "{n}");
        let n = nudge("I'll read the file to check.", &[], &tools).unwrap();
        assert!(n.contains("read"), "{n}");
        assert!(nudge("The answer is 4.", &[], &tools).is_none());
        assert!(nudge("I'll read the file.", &[], &[]).is_none());
    }
}
