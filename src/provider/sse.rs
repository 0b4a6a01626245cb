//! Bytes → server-sent events → an assembled chat reply. Pure and synchronous: no I/O, no
//! clock, no allocation per byte, so it is fed straight from the network and benchmarked alone.
//!
//! Three layers: [`Parser`] splits any byte chunking into SSE events (LF, CRLF and CR line ends,
//! a leading BOM, comments, multi-line `data`, a 4 MiB bound per event); [`Assembler`] turns
//! OpenAI `chat.completion.chunk` payloads into [`StreamEvent`]s and one [`Reply`]; [`Decoder`]
//! glues the two for a streaming client. Nothing here retries, sleeps or touches a socket.

use std::borrow::Cow;

use serde::Deserialize;

use super::{ProviderError, Reply, StreamEvent};
use crate::chat::{ToolCall, Usage};

/// The largest single event accepted (data, event name and any partial line together). A
/// server that sends more is refused so a broken or hostile stream cannot grow memory unbounded.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// The largest whole reply (text plus tool-call arguments) accepted; past it the stream fails
/// with a protocol error instead of growing memory without bound.
pub const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One dispatched event, borrowed from the parser's buffers for the duration of a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, "" when absent.
    pub event: &'a str,
    /// The `data:` lines joined with "\n".
    pub data: &'a str,
}

/// Incremental SSE parser. Feed it bytes split anywhere; it calls back once per complete event.
#[derive(Debug, Default)]
pub struct Parser {
    /// The unfinished line carried over from the previous chunk.
    line: Vec<u8>,
    data: Vec<u8>,
    event: Vec<u8>,
    has_data: bool,
    /// The previous chunk ended in CR: a LF opening the next chunk belongs to that line end.
    pending_cr: bool,
    /// Bytes of the leading BOM matched so far; 3 once the stream start is behind us.
    bom_seen: u8,
    failed: bool,
}

impl Parser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `bytes`, calling `on_event` for every completed event. The callback returns
    /// `Ok(false)` to stop early (the rest of `bytes` is then ignored). After an error the
    /// parser stays failed.
    pub fn feed<F>(&mut self, mut bytes: &[u8], on_event: &mut F) -> Result<(), ProviderError>
    where
        F: FnMut(SseEvent<'_>) -> Result<bool, ProviderError>,
    {
        if self.failed {
            return Err(ProviderError::Protocol(
                "event stream already failed".into(),
            ));
        }
        while self.bom_seen < 3 {
            let Some(&b) = bytes.first() else {
                return Ok(());
            };
            if b == BOM[usize::from(self.bom_seen)] {
                self.bom_seen += 1;
                bytes = &bytes[1..];
            } else {
                self.line
                    .extend_from_slice(&BOM[..usize::from(self.bom_seen)]);
                self.bom_seen = 3;
            }
        }
        if self.pending_cr {
            let Some(&first) = bytes.first() else {
                return Ok(());
            };
            if first == b'\n' {
                bytes = &bytes[1..];
            }
            self.pending_cr = false;
        }
        let result = self.feed_lines(bytes, on_event);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn feed_lines<F>(&mut self, mut bytes: &[u8], on_event: &mut F) -> Result<(), ProviderError>
    where
        F: FnMut(SseEvent<'_>) -> Result<bool, ProviderError>,
    {
        loop {
            let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                if self.pending_len() + bytes.len() > MAX_EVENT_BYTES {
                    return Err(too_big());
                }
                self.line.extend_from_slice(bytes);
                return Ok(());
            };
            let next = match (bytes[end], bytes.get(end + 1)) {
                (b'\r', Some(b'\n')) => end + 2,
                (b'\r', None) => {
                    self.pending_cr = true;
                    end + 1
                }
                _ => end + 1,
            };
            let keep_going = if self.line.is_empty() {
                self.line_done(&bytes[..end], on_event)?
            } else {
                if self.pending_len() + end > MAX_EVENT_BYTES {
                    return Err(too_big());
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                let r = self.line_done(&line, on_event);
                line.clear();
                self.line = line;
                r?
            };
            bytes = &bytes[next..];
            if !keep_going {
                return Ok(());
            }
        }
    }

    fn pending_len(&self) -> usize {
        self.line.len() + self.data.len() + self.event.len()
    }

    fn line_done<F>(&mut self, line: &[u8], on_event: &mut F) -> Result<bool, ProviderError>
    where
        F: FnMut(SseEvent<'_>) -> Result<bool, ProviderError>,
    {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(true);
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.data.len() + self.event.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(too_big());
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            _ => {}
        }
        Ok(true)
    }

    fn dispatch<F>(&mut self, on_event: &mut F) -> Result<bool, ProviderError>
    where
        F: FnMut(SseEvent<'_>) -> Result<bool, ProviderError>,
    {
        if !self.has_data {
            self.event.clear();
            return Ok(true);
        }
        let data = std::str::from_utf8(&self.data)
            .map_err(|_| ProviderError::Protocol("event data is not valid utf-8".into()))?;
        let event = std::str::from_utf8(&self.event)
            .map_err(|_| ProviderError::Protocol("event name is not valid utf-8".into()))?;
        let r = on_event(SseEvent { event, data });
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        r
    }
}

fn too_big() -> ProviderError {
    ProviderError::Protocol(format!(
        "event exceeds the {} MiB limit",
        MAX_EVENT_BYTES >> 20
    ))
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
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
    arguments: Option<Cow<'a, str>>,
}

/// `usage` as OpenAI-compatible servers send it; missing numbers count as 0.
#[derive(Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl WireUsage {
    pub(crate) fn to_usage(&self) -> Usage {
        let n = |v: Option<u64>| v.unwrap_or(0);
        Usage::new(
            n(self.prompt_tokens),
            n(self.completion_tokens),
            n(self.total_tokens),
        )
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
    /// Bytes of text and arguments so far, checked against `MAX_REPLY_BYTES`.
    size: usize,
    text: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `[DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Accounts for `bytes` more of the reply, failing once the whole exceeds the limit.
    fn grow(&mut self, bytes: usize) -> Result<(), ProviderError> {
        self.size += bytes;
        if self.size > MAX_REPLY_BYTES {
            return Err(ProviderError::Protocol(format!(
                "reply larger than {} MiB",
                MAX_REPLY_BYTES / (1024 * 1024)
            )));
        }
        Ok(())
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
            let reply = self.take_reply()?;
            out.push(StreamEvent::Done(reply));
            return Ok(false);
        }
        if data.is_empty() {
            return Ok(true);
        }
        if ev.event == "error" {
            let v = serde_json::from_str(data)
                .unwrap_or_else(|_| serde_json::Value::String(data.to_owned()));
            return Err(super::http_error::error_from_payload(
                None,
                v.get("error").unwrap_or(&v),
            ));
        }
        let chunk: Chunk<'_> = serde_json::from_str(data)
            .map_err(|e| ProviderError::Protocol(format!("malformed chunk json: {e}")))?;
        if let Some(err) = &chunk.error {
            return Err(super::http_error::error_from_payload(None, err));
        }
        if let Some(u) = &chunk.usage {
            self.usage = Some(u.to_usage());
        }
        for choice in chunk.choices.iter().flatten().filter(|c| c.index == 0) {
            if let Some(delta) = &choice.delta {
                self.apply_delta(delta, out)?;
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.clone().into_owned());
            }
        }
        Ok(true)
    }

    fn apply_delta(
        &mut self,
        delta: &Delta<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            self.grow(text.len())?;
            self.text.push_str(text);
            match out.last_mut() {
                Some(StreamEvent::Text(prev)) => prev.push_str(text),
                _ => out.push(StreamEvent::Text(text.to_owned())),
            }
        }
        for piece in delta.tool_calls.iter().flatten() {
            self.apply_tool_piece(piece, out)?;
        }
        Ok(())
    }

    fn apply_tool_piece(
        &mut self,
        piece: &ToolDelta<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let id = piece.id.as_deref().filter(|s| !s.is_empty());
        let index = match piece.index {
            Some(i) => i,
            // Some servers omit the index: a new id starts a new call, else the last continues.
            None => match (id, self.calls.last()) {
                (_, None) => 0,
                (Some(id), Some(last)) if !last.id.is_empty() && last.id != id => self.calls.len(),
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
            self.calls.push(PartialCall::default());
        }
        if let Some(kind) = piece
            .kind
            .as_deref()
            .filter(|k| !k.is_empty() && *k != "function")
        {
            return Err(ProviderError::Protocol(format!(
                "tool call {index} has unsupported type {kind:?}"
            )));
        }
        if let Some(args) = piece.function.as_ref().and_then(|f| f.arguments.as_ref()) {
            self.grow(args.len())?;
        }
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
        if let Some(name) = function.name.as_deref().filter(|s| !s.is_empty()) {
            if call.name.is_empty() {
                call.name.push_str(name);
                out.push(StreamEvent::ToolCallStarted {
                    index,
                    name: name.to_owned(),
                });
            } else if call.name != name {
                return Err(ProviderError::Protocol(format!(
                    "tool call {index} changed its name"
                )));
            }
        }
        if let Some(args) = &function.arguments {
            call.arguments.push_str(args);
        }
        Ok(())
    }

    /// Marks the reply complete and hands it over (as on `[DONE]`), for providers that know the
    /// end by other means. Fails if a tool call never got a name.
    pub fn take_reply(&mut self) -> Result<Reply, ProviderError> {
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
        Ok(Reply {
            text: std::mem::take(&mut self.text),
            tool_calls,
            finish_reason: self.finish_reason.take(),
            usage: self.usage.take(),
        })
    }
}

/// Parser and assembler together: raw response bytes in, [`StreamEvent`]s out.
#[derive(Debug, Default)]
pub struct Decoder {
    parser: Parser,
    assembler: Assembler,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds response bytes; events are appended to `out`, ending with `Done` once `[DONE]`
    /// arrives (bytes after it are ignored).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.assembler.is_done() {
            return Ok(());
        }
        let assembler = &mut self.assembler;
        self.parser.feed(bytes, &mut |ev| assembler.push(ev, out))
    }

    /// Whether `[DONE]` was seen (the `Done` event was produced).
    pub fn is_done(&self) -> bool {
        self.assembler.is_done()
    }

    /// Call at end of input: an error unless `[DONE]` was seen; nothing partial is returned.
    pub fn end(&self) -> Result<(), ProviderError> {
        if self.is_done() {
            Ok(())
        } else {
            Err(ProviderError::Protocol("stream ended before [DONE]".into()))
        }
    }

    /// Decodes a whole recorded stream into its events (tests and benchmarks).
    pub fn decode_all(bytes: &[u8]) -> Result<Vec<StreamEvent>, ProviderError> {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        d.feed(bytes, &mut out)?;
        d.end()?;
        Ok(out)
    }
}
