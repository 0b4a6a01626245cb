//! The model boundary: chat messages as the OpenAI wire format spells them, the `Provider`
//! trait, and the one error type every provider failure is reported through.
//!
//! Messages serialize exactly as `/chat/completions` expects, so the same type is sent to the
//! server, kept in history and stored in session files. Nothing here knows about terminals.

pub mod demo;
pub mod http_error;
pub mod openai;
pub mod retry;
pub mod sse;

use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One chat message. `content` stays `null` (not omitted) beside assistant tool calls, and a
/// tool result with no output is sent as `""`, because some servers reject anything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text.into())
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text.into())
    }

    pub fn assistant(text: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            role: Role::Assistant,
            content: text,
            tool_calls,
            tool_call_id: None,
        }
    }

    pub fn tool_result(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: Some(output.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }

    fn plain(role: Role, text: String) -> Self {
        Self {
            role,
            content: Some(text),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The text content, or "" when there is none.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }
}

/// A tool call as the model made it. `arguments` is the raw JSON text from the wire; it is
/// parsed and validated by the tool registry, never trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Wire shape: `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Serialize, Deserialize)]
struct WireToolCall<'a> {
    id: std::borrow::Cow<'a, str>,
    #[serde(rename = "type", default = "function_kind")]
    kind: std::borrow::Cow<'a, str>,
    function: WireFunction<'a>,
}

#[derive(Serialize, Deserialize)]
struct WireFunction<'a> {
    name: std::borrow::Cow<'a, str>,
    #[serde(default)]
    arguments: std::borrow::Cow<'a, str>,
}

fn function_kind() -> std::borrow::Cow<'static, str> {
    "function".into()
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        WireToolCall {
            id: self.id.as_str().into(),
            kind: "function".into(),
            function: WireFunction {
                name: self.name.as_str().into(),
                arguments: self.arguments.as_str().into(),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireToolCall::deserialize(d)?;
        if w.kind != "function" {
            return Err(serde::de::Error::custom(format!(
                "unsupported tool call type {:?}",
                w.kind
            )));
        }
        Ok(ToolCall {
            id: w.id.into_owned(),
            name: w.function.name.into_owned(),
            arguments: w.function.arguments.into_owned(),
        })
    }
}

/// A tool declaration sent with a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Token counts as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// Builds usage from server numbers; a total of 0 beside real counts means "not filled in".
    pub fn new(input: u64, output: u64, total: u64) -> Self {
        let total = if total == 0 { input + output } else { total };
        Self {
            input_tokens: input,
            output_tokens: output,
            total_tokens: total,
        }
    }
}

/// What to ask the model. Borrows the history so building a request never clones it.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    /// The messages in order; a slice of references so a prefix (system prompt, memory) and a
    /// window of history can be sent without copying either.
    pub messages: &'a [&'a Message],
    /// Tools offered; empty means a plain-text request.
    pub tools: &'a [ToolSpec],
    /// `max_tokens`; 0 leaves it to the server.
    pub max_tokens: u32,
}

/// A complete reply, assembled from a stream or returned by a non-streaming call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

impl Reply {
    /// The assistant message to keep in history for this reply.
    pub fn to_message(&self) -> Message {
        let text = (!self.text.is_empty() || self.tool_calls.is_empty()).then(|| self.text.clone());
        Message::assistant(text, self.tool_calls.clone())
    }
}

/// One step of a streamed reply. A stream ends with exactly one `Done` or one `Err`; anything
/// after an `Err` is never produced. Dropping the stream cancels the request at once.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of visible assistant text.
    Text(String),
    /// A tool call was first seen (name known, arguments still arriving).
    ToolCallStarted { index: usize, name: String },
    /// The request failed before any byte of the response and will be sent again.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The complete reply; `[DONE]` was seen.
    Done(Reply),
}

pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;
pub type ReplyFuture =
    Pin<Box<dyn std::future::Future<Output = Result<Reply, ProviderError>> + Send>>;

/// A model server. Both calls serialize the request before returning, so the returned stream or
/// future owns everything it needs and the caller's history can be borrowed only briefly.
pub trait Provider: Send + Sync {
    /// Streams a reply.
    fn stream(&self, request: &ChatRequest<'_>) -> EventStream;
    /// Asks for a whole reply at once (used for summaries, where no one watches it arrive).
    fn chat(&self, request: &ChatRequest<'_>) -> ReplyFuture;
    /// The model name, for display.
    fn model(&self) -> &str;
}

/// Every way a model call can fail. Messages are lowercase and never contain the API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error("authentication failed ({status}): {message}")]
    Auth { status: u16, message: String },
    #[error("rate limited (429): {message}")]
    RateLimited {
        message: String,
        retry_after_ms: Option<u64>,
        quota_exhausted: bool,
    },
    #[error("server error ({status}): {message}")]
    Server {
        status: u16,
        message: String,
        retry_after_ms: Option<u64>,
    },
    #[error("context length exceeded: {message}")]
    ContextLength {
        message: String,
        window: Option<u64>,
    },
    #[error("request refused ({status}): {message}")]
    Request { status: u16, message: String },
    #[error("network error: {0}")]
    Network(String),
    /// A connection failure before any response byte arrived; safe to send again.
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("cancelled")]
    Cancelled,
    #[error("protocol error: {0}")]
    Protocol(String),
}

impl ProviderError {
    /// Whether sending the same request again may succeed. Only failures before any response
    /// byte arrived qualify; an exhausted quota does not.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited {
                quota_exhausted, ..
            } => !quota_exhausted,
            ProviderError::Server { .. } | ProviderError::Connect(_) => true,
            _ => false,
        }
    }

    /// The server-requested wait before a retry, if it named one.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            ProviderError::RateLimited { retry_after_ms, .. }
            | ProviderError::Server { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        }
    }
}
