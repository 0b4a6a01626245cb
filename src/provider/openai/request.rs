//! The `/chat/completions` request body. The conversation and the tool declarations (the
//! large part) are serialized once per call; the small parameters a server may refuse are
//! written around them for each attempt, as the learned [`Quirks`] say, so an adapted resend
//! does not serialize the history again.
//!
//! Reasoning kept on assistant messages is left out unless the user asked for it to be sent
//! back (`send_reasoning`).

use bytes::{Bytes, BytesMut};
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
    /// Without a forced call: send `tool_choice: "auto"` (the model profiles ask for it).
    pub auto_tool_choice: bool,
    /// Send `parallel_tool_calls` with this value.
    pub parallel_tool_calls: Option<bool>,
}

/// One call's request, ready to be written for any attempt.
#[derive(Debug)]
pub(crate) struct Payload {
    messages: Bytes,
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

/// One part of a message whose content is a list (a message with images).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

/// A message with images: `content` is its text part, then one `image_url` part (a data URL)
/// per image. Only these messages take the list form, so a text-only history is sent exactly
/// as before and its prompt-cache prefix stays the same.
#[derive(Serialize)]
struct WithImages<'a> {
    role: Role,
    content: Vec<Part<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: &'a Option<String>,
}

fn with_images(m: &Message) -> WithImages<'_> {
    let mut content = Vec::with_capacity(m.images.len() + 1);
    if !m.text().is_empty() {
        content.push(Part::Text { text: m.text() });
    }
    for image in &m.images {
        content.push(if image.has_data() {
            Part::ImageUrl {
                image_url: ImageUrl {
                    url: image.data_url(),
                },
            }
        } else {
            Part::Text {
                text: "[an image that is no longer stored]",
            }
        });
    }
    WithImages {
        role: m.role,
        content,
        tool_call_id: &m.tool_call_id,
    }
}

/// One message in its wire shape: reasoning only when it is sent back.
fn write_message(out: &mut Vec<u8>, m: &Message, send_reasoning: bool) -> serde_json::Result<()> {
    if !m.images.is_empty() {
        serde_json::to_writer(out, &with_images(m))
    } else if send_reasoning || m.reasoning.is_none() {
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

/// The encoding of the previous streamed request's messages: one buffer holding the JSON
/// array, and per position a copy of the message and where its element ends. Consecutive
/// requests of a session share everything but their last few messages, so a request escapes
/// only the messages that differ from the previous one, and the array is neither copied nor
/// rebuilt: the buffer is cut at the first difference, the new elements appended, and handed
/// to the request as shared [`Bytes`]. When that request is over the buffer is unique again
/// and is taken back without a copy (a request still in flight, e.g. a sub-agent's, only
/// costs one copy). Without this, a long goal run re-encodes, copies and page-faults its
/// whole history twice per round. A message is reused only if it is equal to the one encoded
/// at the same position (an exact comparison, far cheaper than escaping), so any other
/// caller (a sub-agent, a compaction that shifts the history) is merely a miss. It holds one
/// request's messages, which the context window bounds.
#[derive(Debug, Default)]
pub(crate) struct EncodedMessages {
    messages: Vec<Message>,
    /// `ends[i]`: the end of element `i` in `array` (before the closing bracket).
    ends: Vec<usize>,
    /// `[` + the elements + `]`; empty before the first call.
    array: Bytes,
}

impl EncodedMessages {
    /// The JSON array of `messages`, encoding only what differs from the previous call.
    fn encode(&mut self, messages: &[&Message], send_reasoning: bool) -> serde_json::Result<Bytes> {
        let same = self
            .messages
            .iter()
            .zip(messages)
            .take_while(|(cached, message)| *cached == **message)
            .count();
        self.messages.truncate(same);
        self.ends.truncate(same);
        let mut array = match std::mem::take(&mut self.array).try_into_mut() {
            Ok(unique) => unique,
            Err(shared) => BytesMut::from(&shared[..]),
        };
        array.truncate(self.ends.last().copied().unwrap_or(1));
        if array.is_empty() {
            array.extend_from_slice(b"[");
        }
        let mut json = Vec::new();
        for message in &messages[same..] {
            json.clear();
            if let Err(e) = write_message(&mut json, message, send_reasoning) {
                // The buffer no longer matches the entries: start over next time.
                *self = EncodedMessages::default();
                return Err(e);
            }
            if array.len() > 1 {
                array.extend_from_slice(b",");
            }
            array.extend_from_slice(&json);
            self.ends.push(array.len());
            self.messages.push((*message).clone());
        }
        array.extend_from_slice(b"]");
        self.array = array.freeze();
        Ok(self.array.clone())
    }
}

/// A request body as the pieces it is sent from: the messages' array is shared with the
/// [`EncodedMessages`] cache, so it is never copied into one contiguous buffer. Sent with its
/// `Content-Length` (never chunked: some servers refuse chunked requests).
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pub(crate) parts: [Bytes; 3],
}

impl Body {
    /// The body's length in bytes.
    pub(super) fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }
}

/// The JSON array of `messages`, for a one-off request that keeps nothing for the next.
fn encode_array(messages: &[&Message], send_reasoning: bool) -> serde_json::Result<Bytes> {
    let mut array = vec![b'['];
    for (index, message) in messages.iter().enumerate() {
        if index > 0 {
            array.push(b',');
        }
        write_message(&mut array, message, send_reasoning)?;
    }
    array.push(b']');
    Ok(Bytes::from(array))
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(value)
        .map_err(|e| ProviderError::Protocol(format!("could not encode the request: {e}")))
}

impl Payload {
    /// The payload of `request`. With `cache`, messages equal to the previous call's at the
    /// same position are not encoded again.
    pub(super) fn new(
        request: &ChatRequest<'_>,
        stream: bool,
        extras: Extras,
        send_reasoning: bool,
        cache: Option<&mut EncodedMessages>,
    ) -> Result<Payload, ProviderError> {
        let messages = match cache {
            Some(cache) => cache.encode(request.messages, send_reasoning),
            None => encode_array(request.messages, send_reasoning),
        };
        let messages = messages
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
            let choice = self.extras.tool_choice.is_some() || self.extras.auto_tool_choice;
            if choice && !quirks.no_tool_choice {
                out.push(Param::ToolChoice);
            }
            if self.extras.parallel_tool_calls.is_some() && !quirks.no_parallel_tool_calls {
                out.push(Param::ParallelToolCalls);
            }
        }
        out
    }

    /// The body of one attempt under `quirks`: the parameters around the shared messages.
    pub(crate) fn body(&self, model: &str, quirks: &Quirks) -> Result<Body, ProviderError> {
        let mut head = Vec::with_capacity(model.len() + 32);
        head.extend_from_slice(b"{\"model\":");
        head.extend_from_slice(&encode(model)?);
        head.extend_from_slice(b",\"messages\":");
        let tools_len = self.tools.as_ref().map_or(0, Vec::len);
        let mut out = Vec::with_capacity(tools_len + 256);
        let sent = self.refusable(quirks);
        if let Some(tools) = &self.tools {
            out.extend_from_slice(b",\"tools\":");
            out.extend_from_slice(tools);
            if sent.contains(&Param::ToolChoice) {
                let choice = match &self.extras.tool_choice {
                    Some(name) => {
                        serde_json::json!({"type": "function", "function": {"name": name}})
                    }
                    None => serde_json::json!("auto"),
                };
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
        Ok(Body {
            parts: [Bytes::from(head), self.messages.clone(), Bytes::from(out)],
        })
    }
}
