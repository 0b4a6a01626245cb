//! `/mcp`: the MCP servers the core reported, as the text of one transcript notice (state,
//! why a server failed or was not started, its tools, where its log is). Pure formatting.

use crate::protocol::{McpServer, McpState};

/// The notice for an `McpServers` event.
pub(crate) fn listing(servers: &[McpServer]) -> String {
    if servers.is_empty() {
        return "no MCP servers are configured (see docs/extensions.md)".to_string();
    }
    let mut text = String::from("MCP servers:");
    for s in servers {
        let state = match &s.state {
            McpState::NotStarted { reason } => format!("not started: {reason}"),
            McpState::Starting => "starting".to_string(),
            McpState::Ready => format!("ready, {} tools", s.tools.len()),
            McpState::Failed { reason } => format!("failed: {reason}"),
        };
        text.push_str(&format!("\n{} — {state} ({})", s.id, s.origin));
        if !s.tools.is_empty() {
            text.push_str(&format!("\n  tools: {}", s.tools.join(", ")));
        }
        if let Some(log) = &s.log {
            text.push_str(&format!("\n  log: {log}"));
        }
    }
    text.push_str("\n/mcp restart <id> restarts a server");
    text
}
