//! A streamed reply whose tool-call arguments are not valid JSON once the stream ended (vLLM's
//! Hermes parser does this with small models) is asked for once more without streaming, where
//! the server parses the whole reply at once. It happens right after the reply, before any of
//! its calls runs, so nothing ever runs twice; it is announced and counted per model.
//!
//! If the second answer is broken too (or cannot be had), the turn goes on as before: each
//! broken call is refused with the parse error, which the model reads.
//!
//! A reply the server cut at its output limit (`finish_reason: "length"`) is not a broken
//! stream: asking again would only be cut again. Its half-written call fails the turn, saying
//! the limit was reached, and nothing runs.

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::Core;
use crate::agent::spans::{self, Purpose};
use crate::chat::ToolCall;
use crate::protocol::{Event, TurnEnd, TurnStats};
use crate::provider::tally::Count;
use crate::provider::{ChatRequest, FinishReason, Reply};

/// Whether a call's arguments cannot be used: neither empty (read as `{}`) nor a JSON object.
fn broken(call: &ToolCall) -> bool {
    let text = call.arguments.trim();
    !text.is_empty()
        && !matches!(
            serde_json::from_str::<serde_json::Value>(text),
            Ok(serde_json::Value::Object(_))
        )
}

/// The names of the calls whose arguments are broken, for the notice.
fn broken_names(reply: &Reply) -> Vec<&str> {
    reply
        .tool_calls
        .iter()
        .filter(|c| broken(c))
        .map(|c| c.name.as_str())
        .collect()
}

/// `reply` as it came, or, when its tool calls' arguments are broken, the server's answer to
/// the same request without streaming. `Err` when the user interrupted meanwhile, or when the
/// reply was cut at the output limit inside a call's arguments.
pub(super) async fn checked(
    core: &Core,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
    reply: Reply,
) -> Result<Reply, TurnEnd> {
    let names = broken_names(&reply);
    if names.is_empty() {
        return Ok(reply);
    }
    if reply.finish_reason == Some(FinishReason::Length) {
        return Err(TurnEnd::Failed {
            error: cut_at_limit(&names),
        });
    }
    core.emit(Event::Warning {
        message: format!(
            "the streamed reply's tool-call arguments are not valid JSON ({}); asking the \
             model again without streaming, before anything runs",
            names.join(", ")
        ),
    });
    core.provider.count(Count::StreamFallback);
    tracing::info!(tools = ?names, "broken tool arguments in a stream; asking without streaming");
    let again = match whole_reply(core, cancel, stats).await {
        Ok(Some(again)) => again,
        Ok(None) => return Err(TurnEnd::Interrupted),
        Err(error) => {
            core.emit(Event::Warning {
                message: format!(
                    "asking again without streaming failed ({error}); the calls with broken \
                     arguments are refused"
                ),
            });
            return Ok(reply);
        }
    };
    let still = broken_names(&again);
    if !still.is_empty() {
        core.emit(Event::Warning {
            message: format!(
                "the tool-call arguments are not valid JSON without streaming either ({}); \
                 the calls are refused with the parse error for the model to correct",
                still.join(", ")
            ),
        });
    }
    Ok(again)
}

/// Why a reply cut at the output limit inside the arguments of `names` ends the turn.
fn cut_at_limit(names: &[&str]) -> String {
    format!(
        "the model's reply reached the output limit (finish_reason: length) in the middle of \
         the arguments of {}; nothing ran (raise [model] max_tokens, or ask for smaller steps)",
        names.join(", ")
    )
}

/// The current request sent once without streaming, inside its own model-call span. `None`
/// when the user interrupted.
async fn whole_reply(
    core: &Core,
    cancel: &CancellationToken,
    stats: &mut TurnStats,
) -> Result<Option<Reply>, String> {
    let specs = core.upkeep.tool_specs();
    let messages = core
        .upkeep
        .request_messages(&core.store.session, None)
        .map_err(|e| e.to_string())?;
    let statuses = super::statuses(core);
    let request = ChatRequest {
        messages: &messages,
        tools: &specs,
        max_tokens: core
            .upkeep
            .reply_tokens(core.upkeep.used_tokens(), super::reply_limit(core)),
        statuses: &statuses,
    };
    let span = spans::model_call(
        core.provider.model(),
        core.provider.server(),
        request.max_tokens,
        Purpose::Turn,
    );
    let call = span.in_scope(|| core.provider.chat(&request));
    drop(messages);
    stats.model_calls += 1;
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            spans::cancel_model_call(&span);
            return Ok(None);
        }
        outcome = call.instrument(span.clone()) => outcome,
    };
    spans::end_model_call(&span, outcome.as_ref());
    let reply = outcome.map_err(|e| e.to_string())?;
    stats.tokens.add(reply.usage);
    Ok(Some(reply))
}
