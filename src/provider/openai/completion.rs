//! A whole (non-streamed) `chat.completion` body → a [`Reply`], with the same tolerance as the
//! stream: errors inside a 200 body, `arguments` as an object, reasoning under either name, a
//! missing call id. Pure: the caller has already read (and size-capped) the body.

use serde::Deserialize;
use serde_json::Value;

use crate::chat::ToolCall;
use crate::provider::http_error::error_from_payload;
use crate::provider::sse::{ArgsText, ReplyLimits, WireTimings, WireUsage, check_calls};
use crate::provider::{FinishReason, ProviderError, ReasoningFormat, Reply};

#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(default, borrow)]
    choices: Vec<CompletionChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    timings: Option<WireTimings>,
    #[serde(default)]
    error: Option<Value>,
    /// `"error"` marks vLLM's flat error body.
    #[serde(default)]
    object: Option<String>,
}

#[derive(Deserialize)]
struct CompletionChoice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    message: Option<CompletionMessage<'a>>,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

#[derive(Deserialize)]
struct CompletionMessage<'a> {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default, borrow)]
    tool_calls: Vec<CompletionCall<'a>>,
}

/// A tool call of a whole completion; `arguments` may be a string or an object.
#[derive(Deserialize)]
struct CompletionCall<'a> {
    #[serde(default)]
    id: String,
    #[serde(default, borrow)]
    function: Option<CompletionFunction<'a>>,
}

#[derive(Deserialize)]
struct CompletionFunction<'a> {
    #[serde(default)]
    name: String,
    #[serde(default, borrow)]
    arguments: Option<ArgsText<'a>>,
}

/// Parses a whole (non-streamed) `chat.completion` body.
pub(super) fn parse_completion(
    bytes: &[u8],
    limits: ReplyLimits,
    key: Option<&str>,
) -> Result<Reply, ProviderError> {
    let c: Completion = serde_json::from_slice(bytes)
        .map_err(|e| ProviderError::Protocol(format!("malformed completion json: {e}")))?;
    if let Some(err) = &c.error {
        return Err(error_from_payload(None, err, key));
    }
    if c.object.as_deref() == Some("error") {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| ProviderError::Protocol(format!("malformed completion json: {e}")))?;
        return Err(error_from_payload(None, &v, key));
    }
    let choice = c
        .choices
        .into_iter()
        .find(|ch| ch.index == 0)
        .ok_or_else(|| ProviderError::Protocol("completion has no choice 0".into()))?;
    let Some(message) = choice.message else {
        return Ok(Reply {
            finish_reason: choice.finish_reason,
            usage: c.usage.map(|u| u.to_usage(c.timings)),
            ..Reply::default()
        });
    };
    let tool_calls: Vec<ToolCall> = message
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(i, call)| {
            let function = call.function;
            ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{i}")
                } else {
                    call.id
                },
                name: function
                    .as_ref()
                    .map(|f| f.name.clone())
                    .unwrap_or_default(),
                arguments: function
                    .and_then(|f| f.arguments)
                    .map(|a| a.0.into_owned())
                    .unwrap_or_default(),
            }
        })
        .collect();
    check_calls(&tool_calls, limits)?;
    let (reasoning, reasoning_format) = match (message.reasoning_content, message.reasoning) {
        (Some(r), _) if !r.is_empty() => (r, Some(ReasoningFormat::ReasoningContent)),
        (_, Some(r)) if !r.is_empty() => (r, Some(ReasoningFormat::Reasoning)),
        _ => (String::new(), None),
    };
    Ok(Reply {
        text: message.content.unwrap_or_default(),
        tool_calls,
        finish_reason: choice.finish_reason,
        usage: c.usage.map(|u| u.to_usage(c.timings)),
        reasoning,
        reasoning_format,
    })
}
