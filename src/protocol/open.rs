//! Opening a session for a host frontend (ACP, the daemon): what the frontend asks for and what
//! it gets back. The CLI answers through its one session builder; a host never builds a core
//! itself, and nothing here names a tool, a provider or a configuration.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::{AgentHandle, Journal, Recovery};

/// Builds cores for a host frontend. The errors are messages for the client.
pub(crate) trait Opener: Send + Sync {
    fn open(&self, request: OpenRequest) -> Result<Opened, String>;
    /// The sessions of a workspace (`None`: the folder the host started in), newest first.
    fn list(&self, cwd: Option<PathBuf>) -> Result<Vec<Listed>, String>;
}

/// What a host asks for when it opens a session.
pub(crate) struct OpenRequest {
    /// The session's workspace: an absolute folder (not yet checked or canonical).
    pub(crate) cwd: PathBuf,
    /// The session to resume; `None`: a new one.
    pub(crate) session_id: Option<String>,
    /// MCP servers the client wants this session to use (stdio ones only; ACP).
    pub(crate) mcp_servers: Vec<McpServerSpec>,
    /// The editor's buffers, when the client offered to read and write files (ACP).
    pub(crate) files: Option<Arc<dyn EditorFiles>>,
    /// The host's journal of tool calls and the run a crash left open (the daemon).
    pub(crate) hosted: Option<Hosted>,
}

/// What a host that survives its own crashes hands the core (see `agent::recovery`).
pub(crate) struct Hosted {
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) recovery: Option<Recovery>,
}

/// An MCP server a client passed when it opened a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpServerSpec {
    pub(crate) name: String,
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

/// Files as an editor holds them (unsaved changes included): the tools read and write through
/// it instead of the disk. Paths arrive absolute and already confined to the workspace.
pub(crate) trait EditorFiles: Send + Sync + std::fmt::Debug {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>>;
    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// A session the CLI opened: its core, its id, and what to await once it is shut down (its
/// MCP servers stopping).
pub(crate) struct Opened {
    pub(crate) handle: AgentHandle,
    pub(crate) session_id: String,
    pub(crate) closing: BoxFuture<'static, ()>,
    /// Problems to show the user in the session (e.g. client MCP servers left out); empty when
    /// the core reports them itself as warnings.
    pub(crate) notes: Vec<String>,
    /// The custom slash commands this session offers (the workspace's own only when trusted).
    pub(crate) commands: Vec<super::CustomCommand>,
}

/// One stored session, as a session list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) id: String,
    /// Its workspace.
    pub(crate) cwd: PathBuf,
    /// Its first prompt.
    pub(crate) title: String,
    /// RFC 3339.
    pub(crate) updated: String,
}
