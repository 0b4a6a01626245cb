//! The agent's side of MCP servers: `/mcp` and `/mcp restart` answered with the manager's
//! state as typed events, and the manager's notices (a server failed, a name was taken)
//! passed on as warnings before each request. The servers themselves live in `tools::mcp`;
//! the CLI starts and stops them.

use std::sync::Arc;

use super::Emitter;
use crate::protocol::{Event, McpServer, McpState};
use crate::tools::mcp::{Manager, State};

/// MCP as a part of the core: a handle on the CLI's manager (none without servers). It owns
/// no server state of its own, so it can answer `/mcp` while a turn runs (a clone shares the
/// manager) without touching the conversation.
#[derive(Clone)]
pub(crate) struct Servers {
    manager: Option<Arc<Manager>>,
    events: Emitter,
}

impl Servers {
    pub(crate) fn new(manager: Option<Arc<Manager>>, events: Emitter) -> Self {
        Self { manager, events }
    }

    /// The servers as a frontend shows them.
    pub(crate) fn listed(&self) -> Event {
        let servers = self
            .manager
            .as_deref()
            .map(Manager::statuses)
            .unwrap_or_default()
            .into_iter()
            .map(|s| McpServer {
                id: s.id,
                origin: s.origin,
                state: match s.state {
                    State::Held(reason) => McpState::NotStarted { reason },
                    State::Starting => McpState::Starting,
                    State::Ready => McpState::Ready,
                    State::Failed(reason) => McpState::Failed { reason },
                },
                tools: s.tools.into_iter().map(|(name, _)| name).collect(),
                log: s.log.map(|p| p.display().to_string()),
            })
            .collect();
        Event::McpServers { servers }
    }

    /// `Op::McpRestart`: the new state, or why the server cannot be restarted.
    pub(crate) fn restart(&self, id: &str) -> Event {
        let result = match &self.manager {
            Some(manager) => manager.restart(id),
            None => Err("no MCP server is configured".to_string()),
        };
        match result {
            Ok(()) => self.listed(),
            Err(message) => Event::Error { message },
        }
    }

    /// Reports what the servers did since the last look (failures above all) as warnings.
    pub(crate) fn notices(&self) {
        let notices = self.manager.as_deref().map(Manager::take_notices);
        for message in notices.unwrap_or_default() {
            self.events.emit(Event::Warning { message });
        }
    }
}
