//! The context window in use and where it came from: the configuration (always wins), the
//! probe the provider runs at session start, a context-length error that names the server's
//! window, or the default. The probe runs in the background; the first request waits for it
//! (it is bounded by the provider, about 1.5 s), an idle session applies it as soon as it
//! lands. Every change is reported with `ContextWindowSet`.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Upkeep;
use crate::chat::Message;
use crate::protocol::{Event, WindowSource};
use crate::provider::ServerInfo;

/// The probe in flight, if any.
pub(crate) type PendingProbe = Option<JoinHandle<Option<ServerInfo>>>;

impl Upkeep {
    /// Starts the probe unless the configuration named the window.
    pub(crate) fn start_probe(&mut self) {
        if self.window_source != WindowSource::Config {
            self.probe = Some(tokio::spawn(self.provider.probe()));
        }
    }

    /// Another model answers from now on: its window is probed again (a configured window
    /// stays; until the probe lands the last window holds).
    pub(crate) fn set_provider(&mut self, provider: std::sync::Arc<dyn crate::provider::Provider>) {
        self.provider = provider;
        self.probe = None;
        if self.window_source != WindowSource::Config {
            self.window_source = WindowSource::Default;
            self.start_probe();
        }
    }

    /// Waits for the probe still in flight (the provider bounds it), unless the turn is
    /// cancelled meanwhile; then it is dropped.
    pub(crate) async fn await_probe(&mut self, cancel: &CancellationToken, messages: &[Message]) {
        let Some(handle) = self.probe.as_mut() else {
            return;
        };
        let landed = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            landed = handle => Some(landed),
        };
        self.probe = None;
        if let Some(Ok(info)) = landed {
            self.apply_probe(info, messages);
        }
    }

    /// Adopts a probed window: it replaces the default, never a configured window or one the
    /// server named in an error.
    pub(crate) fn apply_probe(&mut self, info: Option<ServerInfo>, messages: &[Message]) {
        self.probe = None;
        let Some(info) = info else {
            return;
        };
        if let Some(message) = info.unreachable {
            tracing::info!(%message, "the model server is not reachable");
            self.events.emit(Event::ServerUnreachable { message });
            return;
        }
        let Some(tokens) = info.context_window else {
            tracing::info!("the server did not state its context window; keeping the default");
            return;
        };
        if self.window_source != WindowSource::Default {
            return;
        }
        tracing::info!(tokens, via = ?info.via, cached = info.cached, "context window from the server");
        self.set_window(tokens, WindowSource::Probe, messages);
    }

    /// Uses `tokens` as the window from now on and tells the frontends.
    pub(crate) fn set_window(&mut self, tokens: u64, source: WindowSource, messages: &[Message]) {
        self.budget = self.budget.with_window(tokens);
        self.tool_ctx.set_output_limit(tokens);
        self.window_source = source;
        self.events.emit(self.window_set());
        self.report_context(messages);
    }

    /// The window in use and where it came from.
    pub(crate) fn window_set(&self) -> Event {
        Event::ContextWindowSet {
            tokens: self.budget.window,
            source: self.window_source,
        }
    }

    /// A probe still in flight, for the idle op loop to wait on beside the ops.
    pub(crate) fn pending_probe(&mut self) -> Option<&mut JoinHandle<Option<ServerInfo>>> {
        self.probe.as_mut()
    }
}
