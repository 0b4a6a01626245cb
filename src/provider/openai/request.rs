//! The `/chat/completions` request body. The conversation and the tool declarations (the
//! large part) are serialized once per call; the small parameters a server may refuse are
//! written around them for each attempt, as the learned [`Quirks`] say, so an adapted resend
//! does not serialize the history again.
//!
//! Reasoning kept on assistant messages is left out unless the user asked for it to be sent
//! back (`send_reasoning`).

use bytes::Bytes;
use serde::Serialize;
use serde::ser::SerializeSeq;

use crate::chat::{Message, Role, ToolCall, ToolSpec};
use crate::provider::compat::{Param, Quirks, TokenLimit};
use crate::provider::{ChatRequest, ProviderError};

/// Request parameters beyond [`ChatRequest`] that only some callers use (`doctor` forces a
/// tool call with them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    /// Force a call of this tool (`tool_choice: {"type": "function", ...}`).
    pub tool_choice: Option<String>,
    /// Send `parallel_tool_calls` with this value.
    pub parallel_tool_calls: Option<bool>,
}

/// One call's request, ready to be written for any attempt.
#[derive(Debug)]
pub(crate) struct Payload {
    messages: Vec<u8>,
    tools: Option<Vec<u8>>,
    max_tokens: u32,
    stream: bool,
    extras: Extras,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: &'a ToolSpec,
}

/// A message without its reasoning (the wire shape of `chat::Message` otherwise).
#[derive(Serialize)]
struct Plain<'a> {
    role: Role,
    content: &'a Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tool_calls: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: &'a Option<String>,
}

struct Messages<'a> {
    messages: &'a [&'a Message],
    send_reasoning: bool,
}

impl Serialize for Messages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.messages.len()))?;
        for m in self.messages {
            if self.send_reasoning || m.reasoning.is_none() {
                seq.serialize_element(m)?;
            } else {
                seq.serialize_element(&Plain {
                    role: m.role,
                    content: &m.content,
                    tool_calls: &m.tool_calls,
                    tool_call_id: &m.tool_call_id,
                })?;
            }
        }
        seq.end()
    }
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(value)
        .map_err(|e| ProviderError::Protocol(format!("could not encode the request: {e}")))
}

impl Payload {
    pub(crate) fn new(
        request: &ChatRequest<'_>,
        stream: bool,
        extras: Extras,
        send_reasoning: bool,
    ) -> Result<Payload, ProviderError> {
        let messages = encode(&Messages {
            messages: request.messages,
            send_reasoning,
        })?;
        let tools = if request.tools.is_empty() {
            None
        } else {
            let wire: Vec<WireTool<'_>> = request
                .tools
                .iter()
                .map(|function| WireTool {
                    kind: "function",
                    function,
                })
                .collect();
            Some(encode(&wire)?)
        };
        Ok(Payload {
            messages,
            tools,
            max_tokens: request.max_tokens,
            stream,
            extras,
        })
    }

    /// The parameters a server may refuse that this payload sends under `quirks`.
    pub(crate) fn refusable(&self, quirks: &Quirks) -> Vec<Param> {
        let mut out = Vec::new();
        if self.max_tokens > 0 {
            match quirks.token_limit {
                TokenLimit::MaxTokens => out.push(Param::MaxTokens),
                TokenLimit::MaxCompletionTokens => out.push(Param::MaxCompletionTokens),
                TokenLimit::Omit => {}
            }
        }
        if self.stream && !quirks.no_stream_options {
            out.push(Param::StreamOptions);
        }
        if self.tools.is_some() {
            if self.extras.tool_choice.is_some() && !quirks.no_tool_choice {
                out.push(Param::ToolChoice);
            }
            if self.extras.parallel_tool_calls.is_some() && !quirks.no_parallel_tool_calls {
                out.push(Param::ParallelToolCalls);
            }
        }
        out
    }

    /// The body of one attempt under `quirks`.
    pub(crate) fn body(&self, model: &str, quirks: &Quirks) -> Result<Bytes, ProviderError> {
        let tools_len = self.tools.as_ref().map_or(0, Vec::len);
        let mut out = Vec::with_capacity(self.messages.len() + tools_len + 256);
        out.extend_from_slice(b"{\"model\":");
        out.extend_from_slice(&encode(model)?);
        out.extend_from_slice(b",\"messages\":");
        out.extend_from_slice(&self.messages);
        let sent = self.refusable(quirks);
        if let Some(tools) = &self.tools {
            out.extend_from_slice(b",\"tools\":");
            out.extend_from_slice(tools);
            if let (Some(name), true) =
                (&self.extras.tool_choice, sent.contains(&Param::ToolChoice))
            {
                let choice = serde_json::json!({"type": "function", "function": {"name": name}});
                out.extend_from_slice(b",\"tool_choice\":");
                out.extend_from_slice(&encode(&choice)?);
            }
            if let (Some(parallel), true) = (
                self.extras.parallel_tool_calls,
                sent.contains(&Param::ParallelToolCalls),
            ) {
                out.extend_from_slice(format!(",\"parallel_tool_calls\":{parallel}").as_bytes());
            }
        }
        if sent.contains(&Param::MaxTokens) {
            out.extend_from_slice(format!(",\"max_tokens\":{}", self.max_tokens).as_bytes());
        } else if sent.contains(&Param::MaxCompletionTokens) {
            let field = format!(",\"max_completion_tokens\":{}", self.max_tokens);
            out.extend_from_slice(field.as_bytes());
        }
        out.extend_from_slice(format!(",\"stream\":{}", self.stream).as_bytes());
        if sent.contains(&Param::StreamOptions) {
            out.extend_from_slice(b",\"stream_options\":{\"include_usage\":true}");
        }
        out.push(b'}');
        Ok(Bytes::from(out))
    }
}
