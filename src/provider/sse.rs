//! Bytes → server-sent events → an assembled chat reply. Pure and synchronous: no I/O, no
//! clock, no allocation per byte, so it is fed straight from the network and benchmarked alone.
//!
//! Three layers: [`Parser`] (here) splits any byte chunking into SSE events (LF, CRLF and CR line
//! ends, a leading BOM, comments, multi-line `data`, a 4 MiB bound per event); [`Assembler`]
//! (`sse/assembler.rs`) turns OpenAI `chat.completion.chunk` payloads into [`StreamEvent`]s and
//! one [`Reply`](super::Reply); [`Decoder`] glues the two for a streaming client. Nothing here
//! retries, sleeps or touches a socket.
//!
//! Memory is bounded for any input: the parser holds at most one event, the assembler at most
//! [`ReplyLimits::max_bytes`] of reply (every byte it keeps counts) and
//! [`ReplyLimits::max_tool_calls`] calls. Time is not bounded here: the driver's deadline is.

mod assembler;
#[cfg(test)]
mod tests;
mod think;

use std::sync::Arc;

pub use assembler::{ArgsText, WireTimings, WireUsage, check_calls, reply_too_large};
pub use assembler::{
    Assembler, CALL_OVERHEAD_BYTES, MAX_CALL_FIELD_BYTES, MAX_REPLY_BYTES, MAX_TOOL_CALLS,
    ReplyLimits,
};

use super::{ProviderError, StreamEvent};

/// The largest single event accepted (data, event name and any partial line together). A
/// server that sends more is refused so a broken or hostile stream cannot grow memory unbounded.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

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
            let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) else {
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
                if self.data.len() + value.len() > MAX_EVENT_BYTES {
                    return Err(too_big());
                }
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

    /// A decoder with these reply bounds that scrubs `key` from in-stream error messages.
    pub(crate) fn with(limits: ReplyLimits, key: Option<Arc<str>>) -> Self {
        Self {
            parser: Parser::new(),
            assembler: Assembler::with(limits, key),
        }
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
    pub(crate) fn is_done(&self) -> bool {
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
