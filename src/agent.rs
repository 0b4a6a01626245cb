//! The agent core: `spawn` starts one task that owns the session, reads `Op`s and emits
//! `Event`s. Frontends hold an `AgentHandle` and nothing else; the core never touches a
//! terminal and asks for approvals only through `Event::ApprovalRequested` / `Op::Decide`.

pub mod turn;

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::protocol::{Event, Op};
use crate::provider::Provider;
use crate::session::Session;
use crate::tools::{Registry, ToolCtx};

/// Knobs of the loop that come from configuration.
#[derive(Debug, Clone)]
pub struct Options {
    /// Tool rounds allowed per turn before a final summary is requested.
    pub max_rounds: u32,
    /// `max_tokens` for every request.
    pub max_tokens: u32,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// Approve every tool call without asking (`--yes`).
    pub auto_approve: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { max_rounds: 500, max_tokens: 8192, context_window: 262_144, auto_approve: false }
    }
}

/// Everything the core needs, assembled by the CLI (or a test).
pub struct Setup {
    pub provider: Arc<dyn Provider>,
    pub registry: Arc<Registry>,
    pub tools: Arc<ToolCtx>,
    pub session: Session,
    pub options: Options,
}

/// A frontend's end of the core: send ops, receive events.
pub struct AgentHandle {
    ops: mpsc::UnboundedSender<Op>,
    events: mpsc::UnboundedReceiver<Event>,
}

/// The sending half alone, for frontends that read events in one place and send ops from
/// another (e.g. a signal handler).
#[derive(Clone)]
pub struct OpSender(mpsc::UnboundedSender<Op>);

impl OpSender {
    /// Sends an op; silently ignored once the core has shut down.
    pub fn send(&self, op: Op) {
        let _ = self.0.send(op);
    }
}

impl AgentHandle {
    pub fn send(&self, op: Op) {
        let _ = self.ops.send(op);
    }

    pub fn sender(&self) -> OpSender {
        OpSender(self.ops.clone())
    }

    /// The next event; `None` once the core has stopped.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// Splits into a cloneable op sender and the event receiver.
    pub fn split(self) -> (OpSender, mpsc::UnboundedReceiver<Event>) {
        (OpSender(self.ops), self.events)
    }
}

/// Starts the core on the current tokio runtime. The first event is `SessionConfigured`.
pub fn spawn(setup: Setup) -> AgentHandle {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    tokio::spawn(run_core(setup, ops_rx, events_tx));
    AgentHandle { ops: ops_tx, events: events_rx }
}

async fn run_core(_setup: Setup, _ops: mpsc::UnboundedReceiver<Op>, _events: mpsc::UnboundedSender<Event>) {}
