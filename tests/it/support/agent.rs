//! Starts the agent core in a test workspace, with the built-in tools: on a fresh session, or
//! on one opened from disk (a resume).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use minicode::agent::{self, Options, Setup};
use minicode::protocol::AgentHandle;
use minicode::provider::Provider;
use minicode::session::Session;
use minicode::tools::{Registry, ToolCtx};

/// How many tools [`spawn`] declares to the model: counted from the built-in registry, so a
/// new built-in tool changes no test.
pub fn builtin_tools() -> usize {
    Registry::builtin().specs().len()
}

/// A new session in `dir` (canonicalised), bash timeout 30 s, no secrets to scrub.
pub fn spawn(dir: &Path, provider: impl Provider + 'static, options: Options) -> AgentHandle {
    let workspace = dir.canonicalize().expect("canonical workspace");
    let session = Session::create(&workspace).expect("new session");
    spawn_session(session, provider, options)
}

/// The core on an existing session (its workspace), bash timeout 30 s, no secrets to scrub.
pub fn spawn_session(
    session: Session,
    provider: impl Provider + 'static,
    options: Options,
) -> AgentHandle {
    let workspace = session.workspace().to_path_buf();
    agent::spawn(Setup {
        provider: Arc::new(provider),
        registry: Arc::new(Registry::builtin()),
        tool_ctx: Arc::new(ToolCtx::new(workspace, Duration::from_secs(30), Vec::new())),
        session,
        options,
        mcp: None,
    })
}
