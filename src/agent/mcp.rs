//! The agent's side of MCP servers: `/mcp` and `/mcp restart` answered with the manager's
//! state as typed events, and the manager's notices (a server failed, a name was taken)
//! passed on as warnings before each request. The servers themselves live in `tools::mcp`;
//! the CLI starts and stops them.

use tokio::sync::mpsc;

use crate::protocol::{Event, McpServer, McpState};
use crate::tools::mcp::{Manager, State};

/// The servers as a frontend shows them.
pub(crate) fn servers(mcp: Option<&Manager>) -> Event {
    let servers = mcp
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
pub(crate) fn restart(mcp: Option<&Manager>, id: &str) -> Event {
    let result = match mcp {
        Some(manager) => manager.restart(id),
        None => Err("no MCP server is configured".to_string()),
    };
    match result {
        Ok(()) => servers(mcp),
        Err(message) => Event::Error { message },
    }
}

/// Reports what the servers did since the last look (failures above all) as warnings.
pub(crate) fn notices(mcp: Option<&Manager>, events: &mpsc::UnboundedSender<Event>) {
    for message in mcp.map(Manager::take_notices).unwrap_or_default() {
        let _ = events.send(Event::Warning { message });
    }
}
