//! Helpers shared by the integration-test modules: a test workspace, the mock OpenAI server,
//! the scripted fake model, the agent starter, waiting for events, the provider stream
//! collector, the user's config file and the runner for binary tests, and the child-process
//! isolation helper.

pub mod agent;
pub mod binary;
pub mod daemon;
pub mod events;
pub mod fake;
pub mod isolated;
pub mod mcp_server;
pub mod mock_openai;
pub mod otlp_receiver;
pub mod screen;
pub mod stream;
pub mod tree;
pub mod user_config;

/// A fresh temporary workspace and its canonical path (symlinks such as macOS's /tmp resolved,
/// as the agent and the session store see it). Keep the `TempDir` alive while it is used.
pub fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}
