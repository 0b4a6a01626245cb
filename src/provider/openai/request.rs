//! The `/chat/completions` request body. The conversation and the tool declarations (the
//! large part) are serialized once per call; the small parameters a server may refuse are
//! written around them for each attempt, as the learned [`Quirks`] say, so an adapted resend
//! does not serialize the history again.
//!
//! Reasoning kept on assistant messages is left out unless the user asked for it to be sent
//! back (`send_reasoning`).

use bytes::Bytes;
use serde::Serialize;

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

/// One message in its wire shape: reasoning only when it is sent back.
fn write_message(out: &mut Vec<u8>, m: &Message, send_reasoning: bool) -> serde_json::Result<()> {
    if send_reasoning || m.reasoning.is_none() {
        serde_json::to_writer(out, m)
    } else {
        serde_json::to_writer(
            out,
            &Plain {
                role: m.role,
                content: &m.content,
                tool_calls: &m.tool_calls,
                tool_call_id: &m.tool_call_id,
            },
        )
    }
}

/// The encoding of the previous streamed request's messages, by position. Consecutive requests
/// of a session share everything but their last few messages, so each message is escaped into
/// JSON once instead of once per request: without this, a long goal run re-encodes its whole
/// history twice per round. A message is reused only if it is equal to the one encoded at the
/// same position (an exact comparison, far cheaper than escaping), so any other caller (a
/// sub-agent, a compaction that shifts the history) is merely a miss. It holds one request's
/// messages, which the context window bounds.
#[derive(Debug, Default)]
pub(crate) struct EncodedMessages {
    entries: Vec<Encoded>,
}

#[derive(Debug)]
struct Encoded {
    message: Message,
    json: Vec<u8>,
}

impl EncodedMessages {
    /// The JSON array of `messages`, encoding only what differs from the previous call.
    fn encode(
        &mut self,
        messages: &[&Message],
        send_reasoning: bool,
    ) -> serde_json::Result<Vec<u8>> {
        self.entries.truncate(messages.len());
        let mut size = 2;
        for (index, message) in messages.iter().enumerate() {
            let fresh = match self.entries.get(index) {
                Some(entry) if entry.message == **message => None,
                _ => {
                    let mut json = Vec::new();
                    write_message(&mut json, message, send_reasoning)?;
                    Some(Encoded {
                        message: (*message).clone(),
                        json,
                    })
                }
            };
            if let Some(fresh) = fresh {
                if index < self.entries.len() {
                    self.entries[index] = fresh;
                } else {
                    self.entries.push(fresh);
                }
            }
            size += self.entries[index].json.len() + 1;
        }
        let mut out = Vec::with_capacity(size);
        out.push(b'[');
        for (index, entry) in self.entries.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&entry.json);
        }
        out.push(b']');
        Ok(out)
    }
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(value)
        .map_err(|e| ProviderError::Protocol(format!("could not encode the request: {e}")))
}

impl Payload {
    /// The payload of `request`. With `cache`, messages equal to the previous call's at the
    /// same position are not encoded again.
    pub(crate) fn new(
        request: &ChatRequest<'_>,
        stream: bool,
        extras: Extras,
        send_reasoning: bool,
        cache: Option<&mut EncodedMessages>,
    ) -> Result<Payload, ProviderError> {
        let mut scratch = EncodedMessages::default();
        let messages = cache
            .unwrap_or(&mut scratch)
            .encode(request.messages, send_reasoning)
            .map_err(|e| ProviderError::Protocol(format!("could not encode the request: {e}")))?;
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
