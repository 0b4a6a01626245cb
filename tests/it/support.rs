//! Helpers shared by the integration-test modules: a test workspace, the mock OpenAI server,
//! the scripted fake model, the agent starter, waiting for events, the provider stream
//! collector, the user's config file and the runner for binary tests, and the child-process
//! isolation helper.

pub mod agent;
pub mod bash;
pub mod binary;
pub mod daemon;
pub mod events;
pub mod fake;
pub mod isolated;
pub mod kernel;
pub mod mcp_server;
pub mod mock_openai;
pub mod otlp_receiver;
pub mod provider;
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

/// For tool tests: a temp root holding the workspace `p` (with room beside it for paths that
/// lead out), the workspace, and a tool context confined to it.
pub fn tool_workspace() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    minicode::tools::ToolCtx,
) {
    let (dir, root) = workspace();
    let ws = root.join("p");
    std::fs::create_dir(&ws).unwrap();
    let ctx =
        minicode::tools::ToolCtx::new(ws.clone(), std::time::Duration::from_secs(60), Vec::new());
    (dir, ws, ctx)
}

/// Writes `content` to `rel` under `ws`, making its folders.
pub fn put(ws: &std::path::Path, rel: &str, content: &str) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}
