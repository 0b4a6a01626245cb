//! Keeps the core's model context in shape between requests: reloads project memory, checks
//! the budget before each main request, compacts (automatically, on `/compact`, or after the
//! server reports an overflow), and assembles and validates each request's messages.
//!
//! It is the glue between the pure pieces (`budget`, `context`, `compact`, `memory`,
//! `validate`) and the loop; it never streams, runs tools or touches approvals.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::Core;
use super::compact::{self, CompactError, CompactRequest};
use super::validate;
use crate::chat::Message;
use crate::memory;
use crate::protocol::{Event, TurnEnd, TurnStats};

impl Core {
    /// Reads `MiniCode.md` again, whatever its stamp. An error clears the memory (never stale
    /// content) and is returned for the caller to fail the turn with. Announces a (changed)
    /// memory. The outcome is remembered with the file's stamp for [`Core::refresh_memory`].
    pub(crate) fn reload_memory(&mut self) -> Result<(), String> {
        // Stat before reading: a change racing the read leaves a stale stamp, so the next
        // refresh reads again rather than missing it.
        let stamp = memory::stamp(&self.tool_ctx.workspace);
        let outcome = match memory::load(&self.tool_ctx.workspace) {
            Ok(Some(m)) => {
                let changed =
                    self.context.memory_message().map(Message::text) != Some(m.message().text());
                if changed {
                    self.context.set_memory(Some(&m));
                    let path = crate::fsutil::display_path(&self.tool_ctx.workspace, &m.path);
                    self.emit(Event::MemoryLoaded {
                        path,
                        tokens: m.tokens,
                    });
                }
                Ok(())
            }
            Ok(None) => {
                self.context.set_memory(None);
                Ok(())
            }
            Err(e) => {
                self.context.set_memory(None);
                Err(e.to_string())
            }
        };
        self.memory_seen = Some((stamp, outcome.clone()));
        outcome
    }

    /// Before every main request: re-reads `MiniCode.md` only if a stat shows it touched since
    /// the last load (by a tool, a bash command or the user), so memory written mid-turn is in
    /// the very next request. An untouched file that was invalid is still an error.
    pub(crate) fn refresh_memory(&mut self) -> Result<(), String> {
        if let Some((seen, outcome)) = &self.memory_seen
            && memory::stamp(&self.tool_ctx.workspace).unchanged_since(seen)
        {
            return outcome.clone();
        }
        self.reload_memory()
    }

    /// The messages of the next main request, validated. `extra` is a transient instruction
    /// appended for this request only.
    pub(crate) fn request_messages<'a>(
        &'a self,
        extra: Option<&'a Message>,
    ) -> Result<Vec<&'a Message>, String> {
        let history = self.session.messages();
        let mut messages = self.context.build(history);
        messages.extend(extra);
        // What the last save checked is not parsed again (see `validate::request`).
        let checked = &history[..self.session.settled().min(history.len())];
        validate::request(&messages, checked).map_err(|e| e.to_string())?;
        Ok(messages)
    }

    /// Before a main request: brings estimates up to date and compacts when less than the
    /// reserve would remain. Returns the estimate of the request about to be sent (for
    /// calibration). A failed automatic compaction is reported and the request still goes
    /// out; only cancellation is an error.
    pub(crate) async fn ensure_budget(
        &mut self,
        cancel: &CancellationToken,
        stats: &mut TurnStats,
    ) -> Result<u64, CompactError> {
        self.context.sync(self.session.messages());
        if self.context.needs_compaction(&self.budget) {
            match self.compact_now(None, false, cancel, stats).await {
                Ok(()) | Err(CompactError::NothingToCompact) => {}
                Err(CompactError::Cancelled) => return Err(CompactError::Cancelled),
                Err(e) => self.emit(Event::Warning {
                    message: format!("automatic compaction failed: {}", chain(&e)),
                }),
            }
        }
        Ok(self.context.estimated_tokens())
    }

    /// The server said the context is too long: adopt its window if it named one, then
    /// compact so the same request can be sent once more.
    pub(crate) async fn recover_overflow(
        &mut self,
        window: Option<u64>,
        cancel: &CancellationToken,
        stats: &mut TurnStats,
    ) -> Result<u64, CompactError> {
        if let Some(w) = window.filter(|w| *w != self.budget.window) {
            self.set_window(w, crate::protocol::WindowSource::ServerError);
            self.emit(Event::Warning {
                message: format!(
                    "the server's context window is {w} tokens; using it for this session"
                ),
            });
        }
        self.compact_now(None, false, cancel, stats).await?;
        Ok(self.context.estimated_tokens())
    }

    /// Compacts now and installs the result in the context and the session, or leaves both as
    /// they were. `manual` (`/compact`) keeps only the newest exchange verbatim.
    pub(crate) async fn compact_now(
        &mut self,
        instructions: Option<&str>,
        manual: bool,
        cancel: &CancellationToken,
        stats: &mut TurnStats,
    ) -> Result<(), CompactError> {
        use tracing::Instrument;
        let span = super::spans::compaction(manual);
        let result = self
            .compact_in_span(instructions, manual, cancel, stats, &span)
            .instrument(span.clone())
            .await;
        if let Err(e) = &result {
            super::spans::end_compaction_failed(&span, e);
        }
        result
    }

    async fn compact_in_span(
        &mut self,
        instructions: Option<&str>,
        manual: bool,
        cancel: &CancellationToken,
        stats: &mut TurnStats,
        span: &tracing::Span,
    ) -> Result<(), CompactError> {
        let request = CompactRequest {
            latest_exchange_only: manual,
            ..CompactRequest::new(&self.budget, instructions)
        };
        let previous = self.context.checkpoint().cloned();
        let outcome = compact::compact(
            self.provider.as_ref(),
            self.session.messages(),
            previous.as_ref(),
            &request,
            cancel,
            stats,
        )
        .await?;
        let messages = self.session.messages();
        let adopted = self
            .context
            .adopt(outcome.checkpoint.clone(), messages)
            .map_err(|e| CompactError::Rejected {
                reason: e.to_string(),
            });
        let adopted = match adopted.and_then(|a| {
            validate::messages(&self.context.build(messages)).map_err(CompactError::Invalid)?;
            Ok(a)
        }) {
            Ok(a) => a,
            Err(e) => {
                // Put the old checkpoint back; it was valid when it was installed.
                let _ = self.context.set_checkpoint(previous, messages);
                return Err(e);
            }
        };
        self.session.set_checkpoint(Some(outcome.checkpoint));
        super::spans::end_compaction(
            span,
            outcome.messages_summarized,
            adopted.tokens_before,
            adopted.tokens_after,
        );
        self.emit(Event::Compacted {
            tokens_before: adopted.tokens_before,
            tokens_after: adopted.tokens_after,
            messages_summarized: outcome.messages_summarized,
        });
        self.report_context();
        Ok(())
    }

    /// `/compact [instructions]` between turns: reload memory, compact, report. The caller
    /// serves ops meanwhile (so `cancel` fires on an interrupt), then adds the stats to the
    /// totals and saves. Having nothing to compact is a warning, not a failure.
    pub(crate) async fn manual_compact(
        &mut self,
        instructions: Option<String>,
        cancel: &CancellationToken,
    ) -> (TurnEnd, TurnStats) {
        let started = Instant::now();
        let mut stats = TurnStats::default();
        let end = match self.reload_memory() {
            Err(error) => TurnEnd::Failed { error },
            Ok(()) => match self
                .compact_now(instructions.as_deref(), true, cancel, &mut stats)
                .await
            {
                Ok(()) => TurnEnd::Completed,
                Err(CompactError::Cancelled) => TurnEnd::Interrupted,
                Err(e @ CompactError::NothingToCompact) => {
                    self.emit(Event::Warning { message: chain(&e) });
                    TurnEnd::Completed
                }
                Err(e) => TurnEnd::Failed { error: chain(&e) },
            },
        };
        stats.wall = started.elapsed();
        (end, stats)
    }

    /// Reports the calibrated size of the context after a main request.
    pub(crate) fn report_usage(&mut self, sent_estimate: u64, usage: Option<crate::chat::Usage>) {
        self.context.calibrate(sent_estimate, usage);
        self.report_context();
    }

    /// Emits `ContextUsage`: the calibrated size of the next request against the window in
    /// use (the server's, once it stated one). Sent at session start and resume, after every
    /// main request and after every compaction.
    pub(crate) fn report_context(&mut self) {
        self.context.sync(self.session.messages());
        self.emit(Event::ContextUsage {
            tokens: self.context.used_tokens(),
            window: self.budget.window,
        });
    }
}

/// An error with its causes, for the user.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
