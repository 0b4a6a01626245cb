//! Keeps the core's model context in shape between requests: reloads project memory, checks
//! the budget before each main request, compacts (automatically, on `/compact`, or after the
//! server reports an overflow), tracks the window in use (`window.rs`), and assembles and
//! validates each request's messages.
//!
//! It is the glue between the pure pieces (`budget`, `context`, `compact`, `memory`,
//! `validate`) and the loop; it never streams, runs tools or touches approvals.

mod instructions;
mod profile;
mod window;

pub(crate) use profile::ProfileChoice;

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::compact::{self, CompactError, CompactRequest};
use super::{Emitter, budget, context, validate};
use crate::chat::{Message, ToolSpec};
use crate::memory;
use crate::protocol::{Event, TurnEnd, TurnStats, WindowSource};
use crate::provider::Provider;
use crate::session::Session;
use crate::tools::{Registry, ToolCtx};

/// The core's context upkeep. Its invariant: the estimates in `context` always describe the
/// session's messages and the tools last declared, so every request is checked against the
/// window actually in use (`budget`), whichever source set it.
pub(crate) struct Upkeep {
    /// System prompt, memory, checkpoint ledger and cached estimates of the model context.
    context: context::Context,
    /// The main conversation's token budget (its window may be replaced by a server-stated one).
    budget: budget::Budget,
    /// Where the budget's window came from.
    window_source: WindowSource,
    /// The probe of the server started with the session, until it lands.
    probe: window::PendingProbe,
    /// Where the instruction files (MiniCode.md, AGENTS.md) are looked for.
    memory_sources: memory::Sources,
    /// The stamps of the instruction files at their last load and that load's outcome, so the
    /// check before each request re-reads them only when one was touched.
    memory_seen: Option<(Vec<memory::Stamp>, Result<(), String>)>,
    /// The memory text the model was last given (in the memory message sent after the system
    /// prompt, or in a later notice); `None`: none.
    memory_known: Option<String>,
    /// What the last request declared, and the registry generation it was taken at.
    tool_specs: (u64, Arc<[ToolSpec]>),
    provider: Arc<dyn Provider>,
    registry: Arc<Registry>,
    /// The workspace, and the output limit that follows the window.
    tool_ctx: Arc<ToolCtx>,
    events: Emitter,
    /// The model profile, chosen before the first main request.
    profile: ProfileChoice,
}

/// What [`Upkeep::new`] starts from.
pub(crate) struct Start {
    pub(crate) system_prompt: String,
    pub(crate) window: u64,
    pub(crate) window_source: WindowSource,
    pub(crate) reserve: Option<u64>,
    pub(crate) keep: Option<u64>,
    /// The user's own `AGENTS.md` (beside the user config file), if the CLI named one.
    pub(crate) user_memory: Option<std::path::PathBuf>,
    /// What the model profile is chosen from.
    pub(crate) profile: ProfileChoice,
}

impl Upkeep {
    /// The context for `session`: the system prompt, the registry's tools as they are now, the
    /// session's checkpoint. A checkpoint that does not fit the history is dropped; the error
    /// says why, for the start-up warning.
    pub(crate) fn new(
        start: Start,
        session: &Session,
        provider: Arc<dyn Provider>,
        registry: Arc<Registry>,
        tool_ctx: Arc<ToolCtx>,
        events: Emitter,
    ) -> (Self, Option<String>) {
        let specs = registry.specs();
        let generation = registry.generation();
        let mut context = context::Context::new(start.system_prompt, &specs);
        tool_ctx.set_output_limit(start.window);
        // The CLI validated these already; a library caller with odd values gets the defaults.
        let budget = budget::Budget::new(start.window, start.reserve, start.keep)
            .unwrap_or_else(|_| budget::Budget::for_window(start.window));
        let problem = context
            .set_checkpoint(session.checkpoint().cloned(), session.messages())
            .err()
            .map(|e| e.to_string());
        let upkeep = Self {
            context,
            budget,
            window_source: start.window_source,
            probe: None,
            memory_sources: memory::Sources::new(&tool_ctx.workspace, start.user_memory.as_deref()),
            memory_seen: None,
            memory_known: None,
            tool_specs: (generation, specs),
            provider,
            registry,
            tool_ctx,
            events,
            profile: start.profile,
        };
        (upkeep, problem)
    }

    /// Another session took the place of the last one: its checkpoint replaces the old one and
    /// the cached estimates (an error says why the checkpoint was dropped).
    pub(crate) fn reset(&mut self, session: &Session) -> Result<(), String> {
        self.context
            .set_checkpoint(session.checkpoint().cloned(), session.messages())
            .map_err(|e| e.to_string())
    }

    /// Takes the registry's tools for the next main request when they changed since the last
    /// one, and refreshes the context's estimate of the declarations with them.
    pub(crate) fn current_tools(&mut self) {
        let generation = self.registry.generation();
        if generation != self.tool_specs.0 {
            let specs = self.registry.specs();
            self.context.set_tools(&specs);
            self.tool_specs = (generation, specs);
        }
    }

    /// The tools the next main request declares.
    pub(crate) fn tool_specs(&self) -> Arc<[ToolSpec]> {
        self.tool_specs.1.clone()
    }

    /// The window in use: the server's, once it stated one, else the configured one.
    pub(crate) fn window(&self) -> u64 {
        self.budget.window
    }

    /// The calibrated size of the next request.
    pub(crate) fn used_tokens(&self) -> u64 {
        self.context.used_tokens()
    }

    /// What a reply may ask for beside `input` tokens, within `max_tokens`.
    pub(crate) fn reply_tokens(&self, input: u64, max_tokens: u32) -> u32 {
        self.budget.reply_tokens(input, max_tokens)
    }

    /// The messages of the next main request, validated. `extra` is a transient instruction
    /// appended for this request only.
    pub(crate) fn request_messages<'a>(
        &'a self,
        session: &'a Session,
        extra: Option<&'a Message>,
    ) -> Result<Vec<&'a Message>, String> {
        let history = session.messages();
        let mut messages = self.context.build(history);
        messages.extend(extra);
        // What the last save checked is not parsed again (see `validate::request`).
        let checked = &history[..session.settled().min(history.len())];
        validate::request(&messages, checked).map_err(|e| e.to_string())?;
        Ok(messages)
    }

    /// Whether [`Self::ensure_budget`] is about to compact (estimates brought up to date):
    /// `PreCompact` hooks run first.
    pub(crate) fn will_compact(&mut self, session: &Session) -> bool {
        self.context.sync(session.messages());
        self.context.needs_compaction(&self.budget)
    }

    /// Before a main request: brings estimates up to date and compacts when less than the
    /// reserve would remain. Returns the estimate of the request about to be sent (for
    /// calibration). A failed automatic compaction is reported and the request still goes
    /// out; only cancellation is an error.
    pub(crate) async fn ensure_budget(
        &mut self,
        session: &mut Session,
        cancel: &CancellationToken,
        stats: &mut TurnStats,
    ) -> Result<u64, CompactError> {
        self.context.sync(session.messages());
        if self.context.needs_compaction(&self.budget) {
            match self.compact_now(session, None, false, cancel, stats).await {
                Ok(()) | Err(CompactError::NothingToCompact) => {}
                Err(CompactError::Cancelled) => return Err(CompactError::Cancelled),
                Err(e) => self.events.emit(Event::Warning {
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
        session: &mut Session,
        window: Option<u64>,
        cancel: &CancellationToken,
        stats: &mut TurnStats,
    ) -> Result<u64, CompactError> {
        if let Some(w) = window.filter(|w| *w != self.budget.window) {
            self.set_window(w, WindowSource::ServerError, session.messages());
            self.events.emit(Event::Warning {
                message: format!(
                    "the server's context window is {w} tokens; using it for this session"
                ),
            });
        }
        self.compact_now(session, None, false, cancel, stats)
            .await?;
        Ok(self.context.estimated_tokens())
    }

    /// Compacts now and installs the result in the context and the session, or leaves both as
    /// they were. `manual` (`/compact`) keeps only the newest exchange verbatim.
    pub(crate) async fn compact_now(
        &mut self,
        session: &mut Session,
        instructions: Option<&str>,
        manual: bool,
        cancel: &CancellationToken,
        stats: &mut TurnStats,
    ) -> Result<(), CompactError> {
        use tracing::Instrument;
        let span = super::spans::compaction(manual);
        let result = self
            .compact_in_span(session, instructions, manual, cancel, stats, &span)
            .instrument(span.clone())
            .await;
        if let Err(e) = &result {
            super::spans::end_compaction_failed(&span, e);
        }
        result
    }

    async fn compact_in_span(
        &mut self,
        session: &mut Session,
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
            session.messages(),
            previous.as_ref(),
            &request,
            cancel,
            stats,
        )
        .await?;
        // A compaction rebuilds the start of the request anyway: the instruction files are
        // read into it again (`/compact` read them before it began).
        if !manual {
            let _ = self.reload_memory();
        }
        let messages = session.messages();
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
        session.set_checkpoint(Some(outcome.checkpoint));
        super::spans::end_compaction(
            span,
            outcome.messages_summarized,
            adopted.tokens_before,
            adopted.tokens_after,
        );
        self.events.emit(Event::Compacted {
            tokens_before: adopted.tokens_before,
            tokens_after: adopted.tokens_after,
            messages_summarized: outcome.messages_summarized,
        });
        self.report_context(session.messages());
        Ok(())
    }

    /// `/compact [instructions]` between turns: reload memory, compact, report. The caller
    /// serves ops meanwhile (so `cancel` fires on an interrupt), then adds the stats to the
    /// totals and saves. Having nothing to compact is a warning, not a failure.
    pub(crate) async fn manual_compact(
        &mut self,
        session: &mut Session,
        instructions: Option<String>,
        cancel: &CancellationToken,
    ) -> (TurnEnd, TurnStats) {
        let started = Instant::now();
        let mut stats = TurnStats::default();
        let end = match self.reload_memory() {
            Err(error) => TurnEnd::Failed { error },
            Ok(()) => match self
                .compact_now(session, instructions.as_deref(), true, cancel, &mut stats)
                .await
            {
                Ok(()) => TurnEnd::Completed,
                Err(CompactError::Cancelled) => TurnEnd::Interrupted,
                Err(e @ CompactError::NothingToCompact) => {
                    self.events.emit(Event::Warning { message: chain(&e) });
                    TurnEnd::Completed
                }
                Err(e) => TurnEnd::Failed { error: chain(&e) },
            },
        };
        stats.wall = started.elapsed();
        (end, stats)
    }

    /// Reports the calibrated size of the context after a main request.
    pub(crate) fn report_usage(
        &mut self,
        messages: &[Message],
        sent_estimate: u64,
        usage: Option<crate::chat::Usage>,
    ) {
        self.context.calibrate(sent_estimate, usage);
        self.report_context(messages);
    }

    /// Emits `ContextUsage`: the calibrated size of the next request against the window in
    /// use (the server's, once it stated one). Sent at session start and resume, after every
    /// main request and after every compaction.
    pub(crate) fn report_context(&mut self, messages: &[Message]) {
        self.context.sync(messages);
        self.events.emit(Event::ContextUsage {
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
