//! Live output of a running tool call: while `bash` runs, what it prints is handed, in
//! coalesced and redacted pieces, to whoever scoped the call with [`scope`] (the agent turns
//! the pieces into protocol events). A call run without a scope streams nowhere.
//!
//! Tools never learn who listens: no protocol types here, only a callback. The pieces are
//! what the full output will contain (same redaction), never more, and a fast command costs
//! at most one piece per [`INTERVAL`] (or per [`MAX_PIECE`] bytes).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::secrets::Secrets;

/// Where the pieces of one call go.
pub type Sink = Arc<dyn Fn(String) + Send + Sync>;

/// Pieces are handed on at most this often (a UI draws at about 30 frames a second).
pub(crate) const INTERVAL: Duration = Duration::from_millis(50);
/// A piece is handed on at once when it grows this large, so memory stays bounded.
pub(crate) const MAX_PIECE: usize = 64 * 1024;

tokio::task_local! {
    static SINK: Sink;
}

/// Runs `call` with its live output going to `sink`.
pub async fn scope<F: Future>(sink: Sink, call: F) -> F::Output {
    SINK.scope(sink, call).await
}

fn current() -> Option<Sink> {
    SINK.try_with(Sink::clone).ok()
}

/// Turns a tool's raw output bytes into pieces for the sink: redacted as a stream (a secret
/// split across two reads is still caught: only bytes that could begin one wait), cut at
/// UTF-8 character boundaries, and coalesced in time.
pub(crate) struct Feed<'a> {
    sink: Option<Sink>,
    secrets: &'a Secrets,
    /// Output not handed on yet (not redacted yet).
    pending: Vec<u8>,
    /// When the last piece was handed on.
    last: Option<Instant>,
}

impl<'a> Feed<'a> {
    /// A feed to the current scope's sink (or a feed that drops everything without one).
    pub(crate) fn new(secrets: &'a Secrets) -> Self {
        Self {
            sink: current(),
            secrets,
            pending: Vec::new(),
            last: None,
        }
    }

    /// Takes a read's bytes; hands a piece on when one is due.
    pub(crate) fn push(&mut self, bytes: &[u8], now: Instant) {
        if self.sink.is_none() {
            return;
        }
        self.pending.extend_from_slice(bytes);
        let due = self.last.is_none_or(|t| now >= t + INTERVAL);
        if due || self.pending.len() >= MAX_PIECE {
            self.flush(now);
        }
    }

    /// When the bytes held back must be handed on (`None` when nothing waits).
    pub(crate) fn due_at(&self) -> Option<Instant> {
        // When only the start of a character or of a secret waits, nothing can be handed on
        // before more output comes.
        let held = incomplete_suffix(&self.pending).max(self.secrets.open_suffix(&self.pending));
        let waiting = self.sink.is_some() && self.pending.len() > held;
        waiting.then(|| self.last.map_or_else(Instant::now, |t| t + INTERVAL))
    }

    /// Hands on everything held back except an incomplete character at the end.
    pub(crate) fn flush(&mut self, now: Instant) {
        let Some(sink) = &self.sink else { return };
        self.last = Some(now);
        // Hold back the start of a secret that may continue, never a part of a whole one,
        // and a character not complete yet.
        let open = self.secrets.open_suffix(&self.pending);
        let mut end = self
            .secrets
            .tail_cut(&self.pending, self.pending.len() - open);
        end -= incomplete_suffix(&self.pending[..end]);
        if end == 0 {
            return;
        }
        let shown = self.secrets.redact_bytes(&self.pending[..end]);
        self.pending.drain(..end);
        sink(String::from_utf8_lossy(&shown).into_owned());
    }

    /// The end of the output: everything left, the redactor's held-back bytes included.
    pub(crate) fn finish(mut self) {
        let Some(sink) = self.sink.take() else { return };
        if !self.pending.is_empty() {
            let shown = self.secrets.redact_bytes(&self.pending);
            sink(String::from_utf8_lossy(&shown).into_owned());
        }
    }
}

/// Bytes at the end of `bytes` that start a UTF-8 character not complete yet (0 to 3).
fn incomplete_suffix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => 0,
        // `error_len() == None`: the input ended in the middle of a character.
        Err(e) if e.error_len().is_none() => bytes.len() - e.valid_up_to(),
        Err(_) => {
            // Invalid bytes somewhere (replaced when handed on); look only at the end.
            let start = bytes.len().saturating_sub(3);
            for i in start..bytes.len() {
                if let Err(e) = std::str::from_utf8(&bytes[i..])
                    && e.error_len().is_none()
                    && e.valid_up_to() == 0
                {
                    return bytes.len() - i;
                }
            }
            0
        }
    }
}
