//! One user turn: stream a reply → validate, approve and run its tool calls in order → append
//! the results → ask again, until a reply has no tool calls, the round limit is hit, the user
//! interrupts, or a provider error ends it.
//!
//! Invariants kept here: a failed or cancelled stream adds nothing to history and runs none of
//! its calls (an empty reply counts as failed); every tool call in history gets exactly one
//! result, in call order, even when the turn is interrupted halfway through a batch.

pub(super) mod batch;
mod fallback;

use batch::not_run;
pub(super) use batch::{observed, run_batch, settle};

use std::time::Instant;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Core;
use super::compact::CompactError;
use super::context_upkeep::chain;
use super::small;
use super::spans::{self, Purpose};
use crate::chat::estimate_message;
use crate::chat::{Message, Role};
use crate::protocol::{CallId, Decision, Event, TurnEnd, TurnStats};
use crate::provider::{ChatRequest, EventStream, FinishReason, ProviderError, Reply, StreamEvent};

/// How a turn fails when the model answered with nothing: no text and no tool call.
const EMPTY_REPLY: &str = "the model returned an empty reply";

/// How a turn fails when the model only reasoned: reasoning is never the answer.
const REASONING_ONLY: &str = "the model returned only reasoning, with no answer and no tool call";

/// The instruction for the last request once the round limit is reached.
const ROUND_LIMIT_PROMPT: &str = "You have used the maximum number of tool rounds for this task. \
Do not call any tools. Reply with a short summary: what was done, what remains, and what the \
user should do next.";

/// What starts a turn: the user's prompt, or the instruction that opens a goal round (written
/// by the goal driver, already attributed to the goal; it never loads skills by trigger).
pub(crate) enum Input {
    User(String, Vec<crate::chat::Image>),
    GoalRound(String),
}

/// What ended the wait for one streamed reply.
enum StreamOutcome {
    Reply(Reply),
    Failed(ProviderError),
    Cancelled,
}

/// Runs one turn to its end and reports how it ended. History and totals in `core.store.session` are
/// updated as it goes; the caller saves at the end.
pub(crate) async fn run(
    core: &mut Core,
    input: Input,
    cancel: CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> (TurnEnd, TurnStats) {
    let started = Instant::now();
    let mut stats = TurnStats::default();
    let mut images = Vec::new();
    let (input, triggered) = match input {
        // A prompt that looks like a goal message is the user's text, not a record: it is
        // kept apart from them by a leading space.
        Input::User(text, attached) => {
            images = attached;
            let text = super::goal::record::escape_user_text(text);
            let triggered = core.skills.triggered(&text);
            // `UserPromptSubmit` hooks see the prompt before the model: one may refuse it
            // (nothing enters history) or add context to it.
            let site = core.hook_site();
            match core.hooks.prompt(text, &site, &cancel).await {
                // The files it mentions go with it, and what `!command`s printed since the
                // last prompt goes before it.
                Ok(text) => {
                    let asked = text.clone();
                    let (text, mentioned) = core.attach_mentions(text, &cancel).await;
                    images.extend(mentioned);
                    // In the small profile, what the prompt names goes with it too.
                    let text = match small::first_look(core, &asked, text, &cancel).await {
                        Ok(text) => text,
                        Err(end) => {
                            stats.wall = started.elapsed();
                            return (end, stats);
                        }
                    };
                    (core.shell.with_pending(text), triggered)
                }
                Err(error) => {
                    stats.wall = started.elapsed();
                    return (TurnEnd::Failed { error }, stats);
                }
            }
        }
        Input::GoalRound(text) => (text, Vec::new()),
    };
    let session = &core.store.session;
    let span = spans::turn(session.id(), session.parent().is_some());
    let ctx = core.tool_ctx.clone();
    let content = core.content(&ctx);
    if let Some(content) = content {
        content.turn_text(&span, Role::User, &input);
    }
    // An edited instruction file or a plan-mode switch is told in a notice before the prompt;
    // a bad file fails the turn before the prompt enters history, so no unanswered user
    // message is left behind (the frontend still shows the prompt, and the user can send it
    // again once the file is fixed).
    if let Err(error) = core.announce_changes() {
        stats.wall = started.elapsed();
        return (TurnEnd::Failed { error }, stats);
    }
    core.store
        .session
        .push(Message::user_with_images(input, images));
    // A goal round counts from here on.
    core.goal.sync(core.store.session.messages());
    // The prompt is on disk before any request goes out: a crash or a kill during the reply
    // keeps it, and `--continue` finds the conversation instead of an empty session. A prompt
    // the file cannot keep (a full disk) fails the turn before the model is asked anything.
    if let Err(error) = core.store.try_save() {
        stats.wall = started.elapsed();
        return (TurnEnd::Failed { error }, stats);
    }
    // A skill whose trigger the message names joins history right after it, before the
    // first request (see agent/skills.rs).
    let (skills, ctx) = (core.skills.clone(), core.tool_ctx.clone());
    skills
        .load_triggered(triggered, &mut core.store.session, &ctx)
        .await;
    let end = rounds(core, &cancel, decisions, &mut stats, 0)
        .instrument(span.clone())
        .await;
    stats.wall = started.elapsed();
    spans::end_turn(&span, &end, &stats);
    if let (Some(content), TurnEnd::Completed | TurnEnd::RoundLimit { .. }) = (content, &end)
        && let Some(answer) = core
            .store
            .session
            .messages()
            .last()
            .and_then(|m| m.content.as_deref())
    {
        content.turn_text(&span, Role::Assistant, answer);
    }
    (end, stats)
}

/// Model requests and their tool rounds until a reply without tool calls, the round limit, an
/// interrupt or a failure; `round` is the number of rounds already run in this turn.
pub(super) async fn rounds(
    core: &mut Core,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
    stats: &mut TurnStats,
    mut round: u32,
) -> TurnEnd {
    let mut stop_blocks = 0u32;
    let mut nudged = false;
    // What the turn did so far, for the small model's reminders (see `small::Progress`).
    let mut progress = small::Progress::new(round > 0);
    loop {
        if round >= core.options.max_rounds {
            return final_summary(core, cancel, stats, round).await;
        }
        round += 1;
        let (mut reply, sent) = match request(core, cancel, stats, Some(round), None).await {
            Ok(done) => done,
            Err(end) => return end,
        };
        // Only the small profile lets an empty reply through: it is reminded once, as a
        // reply that only announced a call is, and fails the turn after that. A hollow one
        // (markup only, an attachment echoed) is reminded once too, and stands after that.
        if is_empty(&reply) || (!nudged && small::hollow(core, &reply)) {
            if nudged {
                return TurnEnd::Failed {
                    error: empty_reply_error(&reply),
                };
            }
            nudged = true;
            let (why, text) = if is_empty(&reply) {
                ("the model sent an empty reply", small::EMPTY_REPLY_NUDGE)
            } else {
                (
                    "the model's reply held no answer",
                    small::HOLLOW_REPLY_NUDGE,
                )
            };
            small::send_nudge(core, text.to_string(), why, stats);
            continue;
        }
        // Calls written as text join the reply as native ones (see agent/small.rs).
        let specs = core.upkeep.tool_specs();
        let recovered = small::recover_calls(core, &mut reply, &specs, stats);
        small::note_cut(core, &reply, stats);
        small::answer_beside_repeats(core, &mut reply, &progress.repeats);
        super::validate::unique_call_ids(&mut reply.tool_calls);
        let mut message = reply.to_message();
        if core.options.send_reasoning && !reply.reasoning.is_empty() {
            message.reasoning = Some(std::mem::take(&mut reply.reasoning));
        }
        // Broken arguments are answered by a rejection below; history keeps `{}`.
        super::validate::normalize_arguments(&mut message);
        core.store.session.push(message);
        core.upkeep
            .report_usage(core.store.session.messages(), sent, reply.usage);
        if reply.tool_calls.is_empty() {
            // A reply that only announced a call, answered unlooked, described a change or
            // claimed one it did not make is reminded once per turn before the turn may end.
            if !nudged
                && let Some((why, text)) =
                    progress.reminder(core, &reply.text, &recovered.unknown, &specs)
            {
                nudged = true;
                small::send_nudge(core, text, why, stats);
                continue;
            }
            // A `Stop` hook may send the model back to work, with its reason.
            if stop_hooks_let_end(core, cancel, &mut stop_blocks).await {
                return TurnEnd::Completed;
            }
            continue;
        }
        // Persist the calls before running them: after a crash the resumed session marks
        // the call in flight as interrupted instead of losing (and re-running) the round. A
        // call the file cannot record does not run at all.
        if let Err(error) = core.store.try_save() {
            not_run(core, &reply.tool_calls, &error);
            return TurnEnd::Failed { error };
        }
        // A small model sending back calls it just made is pointed at their results.
        if small::held_back(core, &reply.tool_calls, &progress.repeats, stats) {
            continue;
        }
        let batch = run_batch(core, &reply.tool_calls, cancel, decisions, stats).await;
        progress.ran(core, &reply.tool_calls);
        if let Some(end) = settle(core, batch) {
            return end;
        }
        if recovered.calls {
            small::teach_format(core);
        }
    }
}

/// Whether the turn may end now: no `Stop` hook blocks, or they already blocked it as many
/// times in a row as they allow (said in a warning). Otherwise the hook's reason is added for
/// the model and `blocks` counts one more.
async fn stop_hooks_let_end(core: &mut Core, cancel: &CancellationToken, blocks: &mut u32) -> bool {
    let Some(reason) = core.stop_hooks(*blocks > 0, cancel).await else {
        return true;
    };
    if *blocks >= core.hooks.stop_max_blocks() {
        let times = match *blocks {
            1 => "once".to_string(),
            n => format!("{n} times in a row"),
        };
        core.emit(Event::Warning {
            message: format!(
                "a Stop hook blocked the end of this turn {times}; the turn ends anyway (a Stop \
                 hook's max_blocks sets the limit). It said: {reason}"
            ),
        });
        return true;
    }
    *blocks += 1;
    core.emit(Event::Warning {
        message: format!("a Stop hook asks the model to go on: {reason}"),
    });
    core.store.session.push(Message::user(format!(
        "[A Stop hook did not let the turn end yet. It says:]\n{reason}"
    )));
    false
}

/// One main request with the context kept in shape around it: the budget check (compacting
/// when too little room would remain) before it, and after a context-length answer one
/// compaction and one resend of the same request. Tools are not part of it, so a resend never
/// re-runs any. `round` is announced with `ModelRequestStarted` (the round-limit summary has
/// none); `extra` is a transient instruction for this request only. Returns the reply and the
/// estimate of the request that produced it (for calibration), or how the turn ends.
async fn request(
    core: &mut Core,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
    round: Option<u32>,
    extra: Option<&Message>,
) -> Result<(Reply, u64), TurnEnd> {
    let mut sent = make_room(core, cancel, stats).await?;
    if let Some(round) = round {
        core.emit(Event::ModelRequestStarted { round });
    }
    let mut outcome = stream_reply(core, cancel, stats, extra).await;
    if let StreamOutcome::Failed(ProviderError::ContextLength { window, message }) = &outcome {
        core.pre_compact_hooks(crate::hooks::CompactTrigger::Auto, None)
            .await;
        let session = &mut core.store.session;
        match core
            .upkeep
            .recover_overflow(session, *window, cancel, stats)
            .await
        {
            Ok(estimate) => sent = estimate,
            Err(CompactError::Cancelled) => return Err(TurnEnd::Interrupted),
            // The server's own words (its window, what was asked for) say what to change;
            // ours alone ("nothing to compact") would not.
            Err(e) => {
                return Err(TurnEnd::Failed {
                    error: format!(
                        "context too long and compaction failed: {} (the server said: {message})",
                        chain(&e)
                    ),
                });
            }
        }
        outcome = stream_reply(core, cancel, stats, extra).await;
    }
    // A small model's empty reply inside the rounds gets a reminder there instead of ending
    // the turn (see `small::empty_reply`).
    let empty_allowed = round.is_some() && extra.is_none() && core.upkeep.is_small();
    let mut reply = answered(core, outcome, empty_allowed)?;
    // Tool calls are only offered (and run) without `extra`: broken arguments there are
    // asked for again before any of them runs.
    if extra.is_none() {
        reply = fallback::checked(core, cancel, stats, reply).await?;
    }
    Ok((reply, sent))
}

/// Before a main request: the tools and the window brought up to date, memory re-read, and
/// room made in the context (compacting when too little would remain). Returns the estimate
/// of the request about to be sent, or how the turn ends when it must not be sent.
async fn make_room(
    core: &mut Core,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
) -> Result<u64, TurnEnd> {
    // An interrupt that arrived while the last batch finished (e.g. right after a denial)
    // must not let another request start.
    if cancel.is_cancelled() {
        return Err(TurnEnd::Interrupted);
    }
    // Tools that joined (or left) since the last request are declared and counted now.
    core.mcp.notices();
    // The first request of a session waits for the probe (bounded by the provider), so it is
    // sent with the server's window, not the default, and the model profile follows it.
    core.upkeep
        .await_probe(cancel, core.store.session.messages())
        .await;
    if cancel.is_cancelled() {
        return Err(TurnEnd::Interrupted);
    }
    core.upkeep.settle_profile(core.store.session.messages());
    core.upkeep.current_tools();
    // A tool (or a bash command) may have rewritten MiniCode.md: a notice after the newest
    // message carries the file as it is now (nothing sent before changes), and an invalid
    // one fails the turn.
    if let Err(error) = core.announce_changes() {
        return Err(TurnEnd::Failed { error });
    }
    if core.hooks.has(crate::hooks::HookEvent::PreCompact)
        && core.upkeep.will_compact(&core.store.session)
    {
        core.pre_compact_hooks(crate::hooks::CompactTrigger::Auto, None)
            .await;
    }
    let budget = core
        .upkeep
        .ensure_budget(&mut core.store.session, cancel, stats);
    let Ok(sent) = budget.await else {
        return Err(TurnEnd::Interrupted);
    };
    // Compaction keeps the newest exchange verbatim; when that alone is far beyond the window
    // (a huge tool argument, a giant paste) no server will take the request: say so here
    // instead of sending it. The margin leaves room for our estimate being pessimistic.
    let used = core.upkeep.used_tokens();
    let window = core.upkeep.window();
    if used > window + window / 4 {
        return Err(TurnEnd::Failed {
            error: format!(
                "the conversation needs about {used} tokens even after compaction, more than the \
                 model's window of {window}: the latest exchange alone is too large (start a new \
                 request that does less at once, or /clear)"
            ),
        });
    }
    Ok(sent)
}

/// The reply a request produced, or how the turn ends: an empty reply, a failure (an exhausted
/// quota is noted for goal mode) or the user's interrupt.
fn answered(
    core: &mut Core,
    outcome: StreamOutcome,
    empty_allowed: bool,
) -> Result<Reply, TurnEnd> {
    match outcome {
        // Nothing is added to history: the prompt stays unanswered, and the context puts its
        // NO_REPLY filler before the next one, as after any failed request.
        StreamOutcome::Reply(reply) if is_empty(&reply) && !empty_allowed => Err(TurnEnd::Failed {
            error: empty_reply_error(&reply),
        }),
        StreamOutcome::Reply(reply) => Ok(reply),
        StreamOutcome::Failed(e @ ProviderError::NoTools { .. }) => Err(TurnEnd::Failed {
            error: format!(
                "{e}. Use a model that supports tool calls, or run minicode with --no-tools for \
                 plain chat"
            ),
        }),
        StreamOutcome::Failed(e) => {
            core.goal.note_failure(&e);
            Err(TurnEnd::Failed {
                error: e.to_string(),
            })
        }
        StreamOutcome::Cancelled => Err(TurnEnd::Interrupted),
    }
}

/// The results' statuses a request carries, gathered only for a provider that reads them.
fn statuses(core: &Core) -> Vec<(&str, crate::chat::ToolStatus)> {
    if core.provider.reads_statuses() {
        core.store.session.statuses()
    } else {
        Vec::new()
    }
}

/// Whether a reply has neither text nor a tool call.
fn is_empty(reply: &Reply) -> bool {
    reply.text.is_empty() && reply.tool_calls.is_empty()
}

/// [`EMPTY_REPLY`] (or [`REASONING_ONLY`] when the model did think), with the server's finish
/// reason when it explains something ("length": the output budget was spent, e.g. on
/// reasoning).
fn empty_reply_error(reply: &Reply) -> String {
    let what = if reply.reasoning.trim().is_empty() {
        EMPTY_REPLY
    } else {
        REASONING_ONLY
    };
    match reply
        .finish_reason
        .as_ref()
        .filter(|r| !r.as_str().is_empty() && **r != FinishReason::Stop)
    {
        Some(reason) => {
            let hint = if *reason == FinishReason::Length && what == REASONING_ONLY {
                "; the reply's token limit was spent on reasoning (raise [model] max_tokens)"
            } else {
                ""
            };
            let reason: String = reason
                .as_str()
                .chars()
                .filter(|c| !c.is_control())
                .take(40)
                .collect();
            format!("{what} (finish_reason: {reason}){hint}")
        }
        None => what.to_string(),
    }
}

/// Streams one reply, forwarding text as it arrives. `extra` is a transient instruction added
/// after the history for this request only.
async fn stream_reply(
    core: &Core,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
    extra: Option<&Message>,
) -> StreamOutcome {
    if cancel.is_cancelled() {
        return StreamOutcome::Cancelled;
    }
    let specs = core.upkeep.tool_specs();
    let messages = match core.upkeep.request_messages(&core.store.session, extra) {
        Ok(messages) => messages,
        Err(e) => return StreamOutcome::Failed(ProviderError::Protocol(e)),
    };
    let tools = if extra.is_some() { &[][..] } else { &specs[..] };
    // The reply must fit beside the input: `ensure_budget` compacted if less than
    // MIN_REPLY_TOKENS would remain, so this only trims a too-large configured value.
    let input = core.upkeep.used_tokens() + extra.map_or(0, estimate_message);
    let statuses = statuses(core);
    let request = ChatRequest {
        messages: &messages,
        tools,
        max_tokens: core.upkeep.reply_tokens(input, reply_limit(core)),
        statuses: &statuses,
    };
    let purpose = if extra.is_some() {
        Purpose::RoundLimitSummary
    } else {
        Purpose::Turn
    };
    let span = spans::model_call(
        core.provider.model(),
        core.provider.server(),
        request.max_tokens,
        purpose,
    );
    let content = core.content(&core.tool_ctx);
    if let Some(content) = content {
        content.input_messages(&span, &messages);
    }
    // Opened inside the span, so the provider's own `http_request` span is its child.
    let stream = span.in_scope(|| core.provider.stream(&request));
    drop((messages, statuses));
    stats.model_calls += 1;
    let outcome = forward(core, stream, cancel).instrument(span.clone()).await;
    match &outcome {
        StreamOutcome::Reply(reply) => {
            spans::end_model_call(&span, Ok(reply));
            if let Some(content) = content {
                content.output_reply(&span, reply);
            }
        }
        StreamOutcome::Failed(e) => spans::end_model_call(&span, Err(e)),
        StreamOutcome::Cancelled => spans::cancel_model_call(&span),
    }
    drop(span);
    if let StreamOutcome::Reply(reply) = &outcome {
        stats.tokens.add(reply.usage);
        tracing::debug!(usage = ?reply.usage, tools = reply.tool_calls.len(), "model call finished");
        core.emit(Event::AssistantMessage {
            text: reply.text.clone(),
        });
    } else if let StreamOutcome::Failed(e) = &outcome {
        tracing::warn!(error = %e, "model call failed");
    }
    outcome
}

/// The upper bound of a main request's `max_tokens` (a small window lowers it).
pub(super) fn reply_limit(core: &Core) -> u32 {
    core.options
        .small
        .reply_limit(core.options.max_tokens, core.upkeep.window())
}

/// Forwards a reply's stream to frontends as it arrives, until it ends: with the reply, a
/// failure (a stream that stops short is one) or the user's interrupt. In a small window, a
/// reply that repeats itself without end is stopped there (dropping the stream cancels the
/// request) and ends with the text before the repetition.
async fn forward(
    core: &Core,
    mut stream: EventStream,
    cancel: &CancellationToken,
) -> StreamOutcome {
    let mut runaway = core
        .options
        .small
        .bounded(core.upkeep.window())
        .then(small::Runaway::default);
    // One wait for the interrupt for the whole reply: a new one per delta registered and
    // removed a waiter on the token each time, for every few bytes of a fast stream.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    loop {
        let next = tokio::select! {
            biased;
            _ = &mut cancelled => return StreamOutcome::Cancelled,
            next = stream.next() => next,
        };
        match next {
            Some(Ok(StreamEvent::Text(text))) => {
                let ran_away = runaway.as_mut().is_some_and(|r| r.push(&text));
                core.emit(Event::TextDelta { text });
                if ran_away && let Some(runaway) = runaway.take() {
                    return StreamOutcome::Reply(Reply {
                        text: runaway.into_text(),
                        finish_reason: Some(FinishReason::Other(small::REPETITION.into())),
                        ..Reply::default()
                    });
                }
            }
            Some(Ok(StreamEvent::Reasoning(text))) => {
                core.emit(Event::ReasoningDelta { text });
            }
            Some(Ok(StreamEvent::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            })) => {
                core.emit(Event::Retrying {
                    attempt,
                    max_attempts,
                    delay_ms,
                    reason,
                });
            }
            Some(Ok(StreamEvent::Done(reply))) => return StreamOutcome::Reply(*reply),
            Some(Err(e)) => return StreamOutcome::Failed(e),
            None => {
                return StreamOutcome::Failed(ProviderError::Protocol(
                    "stream ended without a complete reply".to_string(),
                ));
            }
        }
    }
}

/// The round limit was reached: one last request without tools for a summary. It goes
/// through the same budget check and overflow recovery as every main request.
async fn final_summary(
    core: &mut Core,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
    rounds: u32,
) -> TurnEnd {
    core.emit(Event::Warning {
        message: format!(
            "reached the limit of {rounds} tool rounds; asking the model for a summary"
        ),
    });
    let instruction = Message::user(ROUND_LIMIT_PROMPT);
    match request(core, cancel, stats, None, Some(&instruction)).await {
        Ok((reply, sent)) => {
            // Only the text is kept: a model that still asks for tools is not obeyed.
            core.store
                .session
                .push(Message::assistant(Some(reply.text), Vec::new()));
            // No calibration: this request carried no tool declarations, so its real count
            // does not match the estimate, which includes them.
            core.upkeep
                .report_usage(core.store.session.messages(), sent, None);
            TurnEnd::RoundLimit { rounds }
        }
        Err(end) => end,
    }
}
