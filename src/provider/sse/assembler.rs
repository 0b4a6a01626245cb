//! OpenAI `chat.completion.chunk` payloads → [`StreamEvent`]s and one [`Reply`], within the
//! bounds of [`ReplyLimits`]: every byte kept counts toward the reply size, calls are counted,
//! ids and names are length-checked, and errors a server puts inside the stream are classified
//! like HTTP errors. Pure: it never sees bytes of the wire, only parsed SSE events.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;

use super::SseEvent;
use super::think::{Part, ThinkSplitter};
use crate::chat::{ToolCall, Usage};
use crate::provider::http_error;
use crate::provider::{FinishReason, ProviderError, ReasoningFormat, Reply, StreamEvent};

/// The largest whole reply accepted (text, reasoning, tool-call ids, names and arguments, plus
/// [`CALL_OVERHEAD_BYTES`] per call); past it the stream fails with a protocol error instead of
/// growing memory without bound.
pub const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

/// Tool calls one reply may carry by default. Models ask for a handful at a time; thousands are
/// a broken or hostile server, and each one would cost an approval and a tool run.
pub const MAX_TOOL_CALLS: usize = crate::defaults::MAX_TOOL_CALLS;

/// The longest tool-call id or name accepted. Real ids are ~30 bytes and names are ours (or an
/// MCP server's, which are short); anything longer is garbage that would end up in history,
/// in every later request and on screen.
pub const MAX_CALL_FIELD_BYTES: usize = 256;

/// What each tool call costs beyond its strings (its bookkeeping), counted toward the reply
/// size so that even calls with empty fields cannot grow memory without bound.
pub const CALL_OVERHEAD_BYTES: usize = 64;

/// The bounds of one assembled reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// See [`MAX_REPLY_BYTES`].
    pub max_bytes: usize,
    /// More calls than this in one reply is a protocol error.
    pub max_tool_calls: usize,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        Self {
            max_bytes: MAX_REPLY_BYTES,
            max_tool_calls: MAX_TOOL_CALLS,
        }
    }
}

/// The same bounds for a reply that arrived whole (a non-streamed completion), whose size the
/// caller already capped while reading it.
pub fn check_calls(calls: &[ToolCall], limits: ReplyLimits) -> Result<(), ProviderError> {
    if calls.len() > limits.max_tool_calls {
        return Err(ProviderError::Protocol(format!(
            "the reply has more than {} tool calls",
            limits.max_tool_calls
        )));
    }
    for (index, call) in calls.iter().enumerate() {
        for (what, value) in [("id", &call.id), ("name", &call.name)] {
            if value.len() > MAX_CALL_FIELD_BYTES {
                return Err(ProviderError::Protocol(format!(
                    "tool call {index} has a {what} longer than {MAX_CALL_FIELD_BYTES} bytes"
                )));
            }
        }
    }
    Ok(())
}

pub fn reply_too_large(max: usize) -> ProviderError {
    let size = if max >= 1 << 20 {
        format!("{} MiB", max >> 20)
    } else {
        format!("{max} bytes")
    };
    ProviderError::Protocol(format!("reply larger than {size}"))
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    timings: Option<WireTimings>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// `"error"` marks vLLM's flat error body (`message`, `type`, `code` at the top level).
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    /// Reasoning text (DeepSeek, vLLM, llama.cpp: `reasoning_content`; OpenRouter, Ollama:
    /// `reasoning`; newer vLLM sends both with the same text). Counted toward the reply size
    /// like the answer, so an endless think is cut off.
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<ArgsText<'a>>,
}

/// Tool-call `arguments` as text: the standard JSON string, or (some servers) the arguments
/// object itself, which is written back out as JSON text.
pub struct ArgsText<'a>(pub(crate) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for ArgsText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = ArgsText<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON string or object")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ArgsText(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ArgsText(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(ArgsText(Cow::Owned(v)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                let value = serde_json::Value::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(ArgsText(Cow::Owned(value.to_string())))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(ArgsText(Cow::Borrowed("")))
            }
        }
        d.deserialize_any(Text)
    }
}

/// `usage` as OpenAI-compatible servers send it; missing numbers count as 0.
#[derive(Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    /// OpenAI's (and vLLM's, newer llama.cpp's) count of prompt tokens served from the cache.
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// llama.cpp's `timings`: `cache_n` prompt tokens reused from its cache, `prompt_n` evaluated.
#[derive(Debug, Deserialize, Clone, Copy)]
pub struct WireTimings {
    #[serde(default)]
    cache_n: Option<u64>,
    #[serde(default)]
    prompt_n: Option<u64>,
}

impl WireUsage {
    /// The usage, with the cached share from the details or else from llama.cpp's timings.
    pub(crate) fn to_usage(&self, timings: Option<WireTimings>) -> Usage {
        let n = |v: Option<u64>| v.unwrap_or(0);
        let mut usage = Usage::new(
            n(self.prompt_tokens),
            n(self.completion_tokens),
            n(self.total_tokens),
        );
        usage.cached_tokens = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or_else(|| timings.and_then(|t| t.cache_n));
        if let Some(WireTimings {
            cache_n: Some(cached),
            prompt_n: Some(evaluated),
        }) = timings
            && usage.input_tokens == 0
        {
            usage.input_tokens = cached + evaluated;
        }
        usage
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles OpenAI `chat.completion.chunk` payloads into one [`Reply`]. Reusable by any
/// provider that speaks the same chunk format; only choice index 0 is read.
#[derive(Debug, Default)]
pub struct Assembler {
    /// Bytes kept so far (see [`MAX_REPLY_BYTES`]), checked against `limits.max_bytes`.
    size: usize,
    limits: ReplyLimits,
    /// The API key, removed from a server's in-stream error message before it is shortened.
    key: Option<Arc<str>>,
    text: String,
    reasoning: String,
    reasoning_format: Option<ReasoningFormat>,
    /// Inline `<think>` reasoning at the start of the content.
    think: ThinkSplitter,
    calls: Vec<PartialCall>,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    /// llama.cpp's timings, which may come in another chunk than the usage.
    timings: Option<WireTimings>,
    done: bool,
}

impl Assembler {
    /// An assembler with these bounds that scrubs `key` from error messages the server sends.
    pub(crate) fn with(limits: ReplyLimits, key: Option<Arc<str>>) -> Self {
        Self {
            limits,
            key,
            ..Self::default()
        }
    }

    /// Whether `[DONE]` was seen.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Accounts for `bytes` more of the reply, failing once the whole exceeds the limit.
    fn grow(&mut self, bytes: usize) -> Result<(), ProviderError> {
        self.size = self.size.saturating_add(bytes);
        if self.size > self.limits.max_bytes {
            return Err(reply_too_large(self.limits.max_bytes));
        }
        Ok(())
    }

    /// The error a server put inside the stream, classified like an HTTP error.
    fn server_error(&self, payload: &serde_json::Value) -> ProviderError {
        http_error::error_from_payload(None, payload, self.key.as_deref())
    }

    /// Applies one event. Visible progress is appended to `out` (text is merged into a trailing
    /// `Text`); on `[DONE]` a `Done(reply)` is appended and `Ok(false)` returned: stop reading.
    pub fn push(
        &mut self,
        ev: SseEvent<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        if self.done {
            return Ok(false);
        }
        let data = ev.data.trim_ascii();
        if data == "[DONE]" {
            self.finish_content(Some(out));
            let reply = self.take_reply()?;
            out.push(StreamEvent::Done(Box::new(reply)));
            return Ok(false);
        }
        if data.is_empty() {
            return Ok(true);
        }
        if ev.event == "error" {
            let v = serde_json::from_str(data)
                .unwrap_or_else(|_| serde_json::Value::String(data.to_owned()));
            return Err(self.server_error(v.get("error").unwrap_or(&v)));
        }
        let chunk: Chunk<'_> = serde_json::from_str(data)
            .map_err(|e| ProviderError::Protocol(format!("malformed chunk json: {e}")))?;
        if let Some(err) = &chunk.error {
            return Err(self.server_error(err));
        }
        if chunk.object.as_deref() == Some("error") {
            // vLLM's flat shape: the whole payload is the error object.
            let v: serde_json::Value = serde_json::from_str(data)
                .map_err(|e| ProviderError::Protocol(format!("malformed chunk json: {e}")))?;
            return Err(self.server_error(&v));
        }
        if chunk.timings.is_some() {
            self.timings = chunk.timings;
        }
        if let Some(u) = &chunk.usage {
            self.usage = Some(u.to_usage(self.timings));
        } else if let (Some(t), Some(usage)) = (chunk.timings, self.usage.as_mut())
            && usage.cached_tokens.is_none()
        {
            usage.cached_tokens = t.cache_n;
        }
        for choice in chunk.choices.iter().flatten().filter(|c| c.index == 0) {
            if let Some(delta) = &choice.delta {
                self.apply_delta(delta, out)?;
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.clone());
            }
        }
        Ok(true)
    }

    fn apply_delta(
        &mut self,
        delta: &Delta<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        // Newer vLLM sends the same text under both names: one is enough.
        let thought = match (&delta.reasoning_content, &delta.reasoning) {
            (Some(t), _) if !t.is_empty() => Some((t, ReasoningFormat::ReasoningContent)),
            (_, Some(t)) if !t.is_empty() => Some((t, ReasoningFormat::Reasoning)),
            _ => None,
        };
        if let Some((thought, format)) = thought {
            self.grow(thought.len())?;
            self.reasoning_format.get_or_insert(format);
            self.add(Part::Reasoning, thought, out);
        }
        if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            self.grow(text.len())?;
            let mut think = std::mem::take(&mut self.think);
            think.push(text, &mut |part, piece| self.add(part, piece, out));
            if think.seen {
                self.reasoning_format
                    .get_or_insert(ReasoningFormat::ThinkTags);
            }
            self.think = think;
        }
        for piece in delta.tool_calls.iter().flatten() {
            self.apply_tool_piece(piece)?;
        }
        Ok(())
    }

    /// Keeps a decided piece of content and reports it (merged into a trailing event of the
    /// same kind, so a read of many small deltas yields one event).
    fn add(&mut self, part: Part, piece: &str, out: &mut Vec<StreamEvent>) {
        match part {
            Part::Answer => {
                self.text.push_str(piece);
                match out.last_mut() {
                    Some(StreamEvent::Text(prev)) => prev.push_str(piece),
                    _ => out.push(StreamEvent::Text(piece.to_owned())),
                }
            }
            Part::Reasoning => {
                self.reasoning.push_str(piece);
                match out.last_mut() {
                    Some(StreamEvent::Reasoning(prev)) => prev.push_str(piece),
                    _ => out.push(StreamEvent::Reasoning(piece.to_owned())),
                }
            }
        }
    }

    /// The content is complete: what the think splitter held back is decided (reported when
    /// `out` is given).
    fn finish_content(&mut self, out: Option<&mut Vec<StreamEvent>>) {
        let mut think = std::mem::take(&mut self.think);
        let mut sink = Vec::new();
        let out = out.unwrap_or(&mut sink);
        think.finish(&mut |part, piece| self.add(part, piece, out));
        self.think = think;
    }

    fn apply_tool_piece(&mut self, piece: &ToolDelta<'_>) -> Result<(), ProviderError> {
        let id = piece.id.as_deref().filter(|s| !s.is_empty());
        let named = piece
            .function
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .is_some_and(|n| !n.is_empty());
        let index = match piece.index {
            Some(i) => i,
            // Some servers omit the index (and some send each call whole in one piece): a new
            // id, or a name after the last call already has one, starts a new call; anything
            // else continues the last.
            None => match (id, self.calls.last()) {
                (_, None) => 0,
                (Some(id), Some(last)) if !last.id.is_empty() && last.id != id => self.calls.len(),
                (None, Some(last)) if named && !last.name.is_empty() => self.calls.len(),
                _ => self.calls.len() - 1,
            },
        };
        if index > self.calls.len() {
            return Err(ProviderError::Protocol(format!(
                "tool call index {index} skips index {}",
                self.calls.len()
            )));
        }
        if index == self.calls.len() {
            if index >= self.limits.max_tool_calls {
                return Err(ProviderError::Protocol(format!(
                    "the reply has more than {} tool calls",
                    self.limits.max_tool_calls
                )));
            }
            self.grow(CALL_OVERHEAD_BYTES)?;
            self.calls.push(PartialCall::default());
        }
        if let Some(kind) = piece
            .kind
            .as_deref()
            .filter(|k| !k.is_empty() && *k != "function")
        {
            let kind = http_error::quote(kind, self.key.as_deref(), 40);
            return Err(ProviderError::Protocol(format!(
                "tool call {index} has unsupported type {kind:?}"
            )));
        }
        let name = piece
            .function
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .filter(|s| !s.is_empty());
        for (what, value) in [("id", id), ("name", name)] {
            if value.is_some_and(|v| v.len() > MAX_CALL_FIELD_BYTES) {
                return Err(ProviderError::Protocol(format!(
                    "tool call {index} has a {what} longer than {MAX_CALL_FIELD_BYTES} bytes"
                )));
            }
        }
        let call = &self.calls[index];
        let new_id = id.filter(|_| call.id.is_empty()).map_or(0, str::len);
        let new_name = name.filter(|_| call.name.is_empty()).map_or(0, str::len);
        let args = piece
            .function
            .as_ref()
            .and_then(|f| f.arguments.as_ref())
            .map_or(0, |a| a.0.len());
        self.grow(new_id + new_name + args)?;
        let call = &mut self.calls[index];
        if let Some(id) = id {
            if call.id.is_empty() {
                call.id.push_str(id);
            } else if call.id != id {
                return Err(ProviderError::Protocol(format!(
                    "tool call {index} changed its id"
                )));
            }
        }
        let Some(function) = &piece.function else {
            return Ok(());
        };
        if let Some(name) = name {
            if call.name.is_empty() {
                call.name.push_str(name);
            } else if call.name != name {
                return Err(ProviderError::Protocol(format!(
                    "tool call {index} changed its name"
                )));
            }
        }
        if let Some(args) = &function.arguments {
            call.arguments.push_str(&args.0);
        }
        Ok(())
    }

    /// Marks the reply complete and hands it over (as on `[DONE]`), for providers that know the
    /// end by other means. Fails if a tool call never got a name.
    pub(crate) fn take_reply(&mut self) -> Result<Reply, ProviderError> {
        self.finish_content(None);
        self.done = true;
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (i, c) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            if c.name.is_empty() {
                return Err(ProviderError::Protocol(format!(
                    "tool call {i} has no name"
                )));
            }
            // Some local servers omit ids; the history still needs one to pair the result.
            let id = if c.id.is_empty() {
                format!("call_{i}")
            } else {
                c.id
            };
            tool_calls.push(ToolCall {
                id,
                name: c.name,
                arguments: c.arguments,
            });
        }
        let mut text = std::mem::take(&mut self.text);
        let mut reasoning = std::mem::take(&mut self.reasoning);
        let mut reasoning_format = self.reasoning_format.take();
        if reasoning_format.is_none()
            && let Some((thought, answer)) = split_unopened_think(&text)
        {
            // A server without a reasoning parser in front of a model whose template opens
            // the think in the prompt: the answer starts with reasoning and a lone `</think>`.
            reasoning = thought.to_string();
            text = answer.to_string();
            reasoning_format = Some(ReasoningFormat::ThinkTags);
        }
        Ok(Reply {
            text,
            tool_calls,
            finish_reason: self.finish_reason.take(),
            usage: self.usage.take(),
            reasoning,
            reasoning_format,
        })
    }
}

/// `reasoning</think>answer` (no opening tag): the reasoning and the answer, or `None` when the
/// text has no closing tag. Only text before any `<think>` counts, so a reply that writes about
/// the tags is left alone.
fn split_unopened_think(text: &str) -> Option<(&str, &str)> {
    let at = text.find("</think>")?;
    if text[..at].contains("<think>") {
        return None;
    }
    Some((&text[..at], text[at + "</think>".len()..].trim_start()))
}
