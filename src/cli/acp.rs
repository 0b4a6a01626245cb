//! `minicode acp`: the wiring of the Agent Client Protocol frontend. Every session the client
//! opens gets the configuration of its own `cwd` (the user's file and, only when that
//! workspace is trusted, its own; an untrusted workspace whose file wants to choose the server
//! or the key is refused, as in one-shot runs), its provider, tools, skills and MCP servers
//! (the configured ones plus the client's), and, when the client offered it, the editor's
//! file access. The protocol itself is in `acp`; this file only assembles.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::{Failure, usage};
use crate::acp::{self, ClientFiles, Listed, McpServerSpec, OpenRequest, Opened};
use crate::agent::{self, Options, Setup};
use crate::config::{self, Config, Overrides};
use crate::session::Session;
use crate::tools::mcp::{Manager, ServerConfig};
use crate::tools::{FileAccess, FileFuture, Registry, ToolCtx};

/// `minicode acp`.
#[derive(Debug, clap::Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub server: super::ServerFlags,
}

/// Serves ACP on stdin/stdout until the client closes it.
pub(super) fn run(args: &AcpArgs, launch: &Path) -> Result<ExitCode, Failure> {
    let overrides = args.server.overrides(false);
    // The environment as it was at start: every session's configuration reads it.
    let vars: HashMap<String, String> = std::env::vars().collect();
    // A bad flag or user config is better said at once than at the first session.
    let snapshot = |n: &str| vars.get(n).cloned();
    let config = match config::load(launch, &snapshot, &overrides) {
        Ok(config) => Some(config),
        // The launch folder's file is refused, but other sessions may still read the key:
        // which variable holds it is the user's own configuration's to say.
        Err(config::ConfigError::UntrustedWorkspace { .. }) => {
            let own = Overrides {
                skip_workspace_file: true,
                ..overrides.clone()
            };
            config::load(launch, &snapshot, &own).ok()
        }
        Err(e) => return Err(usage(e)),
    };
    // SAFETY: still single-threaded: only argument parsing and config loading ran; logging
    // (a writer thread) and the runtime start below. The sessions' configurations read the
    // copy taken above.
    #[allow(unsafe_code)]
    unsafe {
        super::forget_key(config.as_ref())
    };
    // Logs go to the launch folder's log file: stdout carries only the protocol.
    let _log = crate::logging::init(launch, false, None).ok().flatten();
    let wiring = Arc::new(Wiring {
        vars,
        overrides,
        launch: launch.to_path_buf(),
    });
    let runtime = super::runtime()?;
    let result = runtime.block_on(acp::serve(wiring));
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(message) => Err(Failure { code: 1, message }),
    }
}

/// What every session is built from.
struct Wiring {
    vars: HashMap<String, String>,
    /// The folder `minicode acp` started in.
    launch: std::path::PathBuf,
    overrides: Overrides,
}

impl Wiring {
    fn env(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
}

/// The editor's buffers as the tools' file access.
#[derive(Debug)]
struct EditorFiles(ClientFiles);

impl FileAccess for EditorFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> FileFuture<'a, String> {
        Box::pin(self.0.read(path))
    }

    fn write_text<'a>(&'a self, path: &'a Path, content: &'a str) -> FileFuture<'a, ()> {
        Box::pin(self.0.write(path, content))
    }
}

/// A client's MCP server: the user's editor chose it, so it starts without a question; its
/// tool calls are still approved through the client.
fn client_server(spec: McpServerSpec, workspace: &Path) -> ServerConfig {
    ServerConfig {
        id: spec.name.clone(),
        command: spec.command,
        args: spec.args,
        env: spec.env,
        cwd: Some(workspace.to_path_buf()),
        startup_timeout: crate::defaults::MCP_STARTUP_TIMEOUT,
        call_timeout: crate::defaults::MCP_CALL_TIMEOUT,
        origin: "the ACP client".to_string(),
        held: None,
    }
}

impl acp::Opener for Wiring {
    fn list(&self, cwd: Option<std::path::PathBuf>) -> Result<Vec<Listed>, String> {
        let workspace = cwd
            .unwrap_or_else(|| self.launch.clone())
            .canonicalize()
            .map_err(|e| format!("cannot list sessions: {e}"))?;
        let sessions = Session::list(&workspace).map_err(|e| e.to_string())?;
        Ok(sessions
            .into_iter()
            // Sub-agents' sessions and unreadable files are not conversations to resume.
            .filter(|s| s.parent.is_none() && s.problem.is_none())
            .map(|s| Listed {
                id: s.id,
                cwd: workspace.clone(),
                // A goal session's first message is its record: the objective is its title.
                title: super::sessions::title(&s.first_prompt),
                updated: humantime::format_rfc3339_seconds(s.updated).to_string(),
            })
            .collect())
    }

    fn open(&self, request: OpenRequest) -> Result<Opened, String> {
        let env = |name: &str| self.env(name);
        let workspace = request
            .cwd
            .canonicalize()
            .map_err(|e| format!("cannot use {}: {e}", request.cwd.display()))?;
        if !workspace.is_dir() {
            return Err(format!("{} is not a folder", workspace.display()));
        }
        let config = config::load(&workspace, &env, &self.overrides).map_err(|e| e.to_string())?;
        crate::agent::budget::Budget::new(
            config.context_window,
            config.reserve_tokens,
            config.keep_recent_tokens,
        )
        .map_err(|e| format!("invalid [context] settings: {e}"))?;
        let provider = super::build_provider(&config, &env).map_err(|f| f.message)?;
        crate::fsutil::sweep_temp_files(&workspace, &[crate::session::SESSIONS]);
        let (mut servers, mut notes) =
            super::mcp::servers(&config, &workspace, &env, super::mcp::Ask::Never);
        for spec in request.mcp_servers {
            if servers.iter().any(|s| s.id == spec.name) {
                notes.push(format!(
                    "the client's MCP server `{}` was left out: the configuration defines a \
                     server with that id",
                    spec.name
                ));
                continue;
            }
            servers.push(client_server(spec, &workspace));
        }
        let session = match &request.session_id {
            Some(id) => Session::open(&workspace, id),
            None => Session::create(&workspace),
        }
        .map_err(|e| e.to_string())?;
        let session_id = session.id().to_string();
        let tool_ctx = tool_ctx(&config, &workspace, request.files);
        tool_ctx.set_sandbox(config.sandbox.policy(&workspace, &session_id));
        let registry = Arc::new(Registry::builtin());
        let skills = super::skills::discover(&env, &workspace, config.trust.is_trusted());
        let mcp = Manager::new(servers, registry.clone(), &tool_ctx, Vec::new());
        let setup = Setup {
            provider,
            registry,
            tool_ctx: Arc::new(tool_ctx),
            mcp: Some(mcp.clone()),
            session,
            options: options(&config, skills),
        };
        let handle = agent::spawn(setup);
        mcp.start();
        Ok(Opened {
            handle,
            session_id,
            closing: Box::pin(async move { mcp.shutdown().await }),
            notes,
        })
    }
}

/// The tools' context for a session: the workspace, limits, secrets and the file access.
fn tool_ctx(config: &Config, workspace: &Path, files: Option<ClientFiles>) -> ToolCtx {
    let mut ctx = super::tool_ctx(config, workspace);
    ctx.files = files.map(|f| Arc::new(EditorFiles(f)) as Arc<dyn FileAccess>);
    ctx
}

fn options(config: &Config, skills: crate::tools::skills::Skills) -> Options {
    Options {
        // Every approval goes to the editor: ACP has no --yes.
        auto_approve: false,
        ask_outside_sandbox: true,
        subagents: Some(agent::delegate::Subagents::new(
            config.subagents_max_concurrent,
            config.subagents_timeout,
        )),
        ..super::agent_options(config, Arc::new(skills))
    }
}
