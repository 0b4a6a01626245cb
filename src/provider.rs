//! The model boundary: the `Provider` trait, the request and reply shapes around the `chat`
//! data model, and the one error type every provider failure is reported through. Nothing here
//! knows about terminals, tools or sessions.

pub mod compat;
pub(crate) mod demo;
pub mod http_error;
pub mod openai;
pub mod probe;
pub mod profiles;
pub(crate) mod recover;
pub mod retry;
pub mod sse;
pub mod tally;

use std::pin::Pin;

use crate::chat::{Message, ToolCall, ToolSpec, ToolStatus, Usage};
use futures_util::Stream;

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
    /// How the tool calls answered in `messages` ended, by call id. A server is sent only
    /// the results' text; the offline demo model decides its next step by these.
    pub statuses: &'a [(&'a str, ToolStatus)],
}

/// A complete reply, assembled from a stream or returned by a non-streaming call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The answer: visible text, never reasoning.
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<FinishReason>,
    pub usage: Option<Usage>,
    /// What a reasoning model thought before answering ("" when it said nothing of it). Never
    /// part of `text`; kept in history only when it is to be sent back.
    pub reasoning: String,
    /// How the server delivered the reasoning, when there was any.
    pub reasoning_format: Option<ReasoningFormat>,
}

/// Why the server stopped the reply. Servers send names beyond OpenAI's four (vLLM's `abort`,
/// a vendor's own); those are kept as they came, so no reply fails to parse over one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The reply's token limit was reached.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// The server's filter cut the reply.
    ContentFilter,
    /// A name the server chose, as sent.
    #[serde(untagged)]
    Other(String),
}

impl FinishReason {
    /// The name on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Other(name) => name,
            known => crate::chat::serde_name(known),
        }
    }
}

/// The three ways servers stream a model's reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningFormat {
    /// A `reasoning_content` delta field (DeepSeek, vLLM, llama.cpp).
    ReasoningContent,
    /// A `reasoning` delta field (OpenRouter, Ollama, newer vLLM).
    Reasoning,
    /// `<think>…</think>` at the start of the content (Qwen3, DeepSeek-R1 behind a server
    /// without a reasoning parser).
    ThinkTags,
}

impl ReasoningFormat {
    /// How a user would recognise it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ReasoningFormat::ReasoningContent => "reasoning_content field",
            ReasoningFormat::Reasoning => "reasoning field",
            ReasoningFormat::ThinkTags => "<think> tags in the content",
        }
    }
}

impl Reply {
    /// The assistant message to keep in history for this reply.
    pub(crate) fn to_message(&self) -> Message {
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
    /// A piece of the model's reasoning (never part of the answer).
    Reasoning(String),
    /// The request failed before any byte of the response and will be sent again: `attempt`
    /// (counted from 1) of at most `max_attempts` failed.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The complete reply; `[DONE]` was seen.
    Done(Box<Reply>),
}

pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;
pub type ReplyFuture =
    Pin<Box<dyn std::future::Future<Output = Result<Reply, ProviderError>> + Send>>;
pub(crate) type ProbeFuture = Pin<Box<dyn std::future::Future<Output = Option<ServerInfo>> + Send>>;

/// The model ids a server lists, or why it could not say.
pub(crate) type ModelsFuture =
    Pin<Box<dyn std::future::Future<Output = Result<Vec<String>, ProviderError>> + Send>>;

/// What a server said about itself when asked at session start (see `probe`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// The model's context window in tokens, when the server reported one.
    pub context_window: Option<u64>,
    /// Where it came from, for the user (e.g. "llama.cpp /props").
    pub via: Option<String>,
    /// The model ids `/models` listed, when it answered (at most [`probe::MAX_LISTED`]).
    pub models: Option<Vec<String>>,
    /// Whether the server's chat template can render tools, when it says (llama.cpp).
    pub supports_tools: Option<bool>,
    /// Whether the model takes images, when the server says (see `probe/vision.rs`).
    pub supports_images: Option<bool>,
    /// The kind of server, recognised by the endpoints that answered (see `profiles`).
    pub server: Option<profiles::ServerKind>,
    /// The answer came from the cache of an earlier probe.
    pub cached: bool,
    /// Why the server could not be reached at all (the connection failed): the user is told
    /// before typing a first prompt that would only fail.
    pub unreachable: Option<String>,
}

/// A model server. Both calls serialize the request before returning, so the returned stream or
/// future owns everything it needs and the caller's history can be borrowed only briefly.
pub trait Provider: Send + Sync {
    /// Streams a reply.
    fn stream(&self, request: &ChatRequest<'_>) -> EventStream;
    /// Asks for a whole reply at once (used for summaries, where no one watches it arrive).
    fn chat(&self, request: &ChatRequest<'_>) -> ReplyFuture;
    /// The model name, for display.
    fn model(&self) -> &str;
    /// Asks the server what it is (its context window), bounded in time; `None` when it
    /// cannot say. Called once at session start, in the background. Failures are only logged.
    fn probe(&self) -> ProbeFuture {
        Box::pin(std::future::ready(None))
    }
    /// The kind of server the probe recognised (see `profiles`), once it has; `None` before,
    /// or when it could not tell.
    fn server_kind(&self) -> Option<profiles::ServerKind> {
        None
    }
    /// The host and port requests go to, for telemetry (`server.address`, `server.port`);
    /// `None` for a provider that reaches no server.
    fn server(&self) -> Option<(&str, u16)> {
        None
    }
    /// Counts something this model did that is worth knowing across runs (see [`tally`]);
    /// a provider without a server cache forgets it.
    fn count(&self, _what: tally::Count) {}
    /// The same server with `model` instead, for the rest of a session (`/model NAME`); `None`
    /// when this provider cannot switch.
    fn with_model(&self, _model: &str) -> Option<std::sync::Arc<dyn Provider>> {
        None
    }
    /// Whether this provider reads [`ChatRequest::statuses`]: only the offline demo does, so
    /// a real server's requests do not gather them from the whole history each time.
    fn reads_statuses(&self) -> bool {
        false
    }
    /// The model ids the server lists (`GET /models`), asked now.
    fn models(&self) -> ModelsFuture {
        Box::pin(std::future::ready(Err(ProviderError::Protocol(
            "this provider lists no models".to_string(),
        ))))
    }
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
    /// The server or the model cannot take tool declarations ("does not support tools", a
    /// chat template that cannot render them, a server started without tool parsing).
    #[error("this model or server does not support tool calls ({status}): {message}")]
    NoTools { status: u16, message: String },
    /// The model does not take images and the request holds one: `status` 0 when the probe
    /// learnt it and nothing was sent, else the status of the server's refusal.
    #[error("this model does not take images ({status}): {message}")]
    NoImages { status: u16, message: String },
    #[error("network error: {0}")]
    Network(String),
    /// A connection failure before any response byte arrived; safe to send again.
    #[error("could not connect: {0}")]
    Connect(String),
    /// The connection was made and the request sent, then the server closed it without a byte
    /// of answer (an overloaded or restarting server, a proxy dropping it); safe to send again.
    #[error("the server closed the connection without answering")]
    Closed,
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
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited {
                quota_exhausted, ..
            } => !quota_exhausted,
            ProviderError::Server { .. } | ProviderError::Connect(_) | ProviderError::Closed => {
                true
            }
            _ => false,
        }
    }

    /// A short, fixed name of the failure's class (`error.type` in telemetry): never the
    /// message, which may quote the server.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ProviderError::Auth { .. } => "auth",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Server { .. } => "server_error",
            ProviderError::ContextLength { .. } => "context_length",
            ProviderError::Request { .. } => "request_refused",
            ProviderError::NoTools { .. } => "no_tools",
            ProviderError::NoImages { .. } => "no_images",
            ProviderError::Network(_) => "network",
            ProviderError::Connect(_) => "connect",
            ProviderError::Closed => "connection_closed",
            ProviderError::Timeout(_) => "timeout",
            ProviderError::Cancelled => "cancelled",
            ProviderError::Protocol(_) => "protocol",
        }
    }

    /// The server-requested wait before a retry, if it named one.
    pub(crate) fn retry_after_ms(&self) -> Option<u64> {
        match self {
            ProviderError::RateLimited { retry_after_ms, .. }
            | ProviderError::Server { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        }
    }
}
