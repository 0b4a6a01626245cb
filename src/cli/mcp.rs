//! The command-line side of MCP servers: which servers a session starts and `minicode mcp
//! list`. Servers of the config files start as configured (a workspace's file only counts
//! once the workspace is trusted: `config` enforces that). A workspace's `.mcp.json` is read
//! only in a trusted workspace, and each of its servers starts only once the user approved
//! it as it is defined now: asked here on the terminal (`/dev/tty`) and recorded in the user's
//! config. Without a terminal it is not started, and `--yes` does not approve it: `--yes`
//! approves tool calls, not programs a repository wants to run.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::Failure;
use crate::config::{self, Config, McpServer, Overrides};
use crate::sanitize::sanitize;
use crate::tools::mcp::{Manager, ServerConfig, State};
use crate::tools::{Registry, ToolCtx};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Whether an unapproved `.mcp.json` server may be asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    /// On the controlling terminal, if there is one.
    Terminal,
    /// Never (listing): it stays not started.
    Never,
}

/// The servers to hand the manager, and notes for the user (a `.mcp.json` that was not read,
/// servers left out and why).
/// `trust` is the workspace's: a host's one configuration does not carry it.
pub(super) fn servers(
    config: &Config,
    workspace: &Path,
    env: Env<'_>,
    trust: config::Trust,
    ask: Ask,
) -> (Vec<ServerConfig>, Vec<String>) {
    let mut notes = Vec::new();
    let mut servers: Vec<ServerConfig> = config
        .mcp_servers
        .iter()
        .map(|s| {
            let held = (!s.enabled).then(|| "disabled in its config (enabled = false)".into());
            to_server_config(s, workspace, held)
        })
        .collect();
    let present = std::fs::symlink_metadata(workspace.join(config::MCP_JSON)).is_ok();
    if !present {
        return (servers, notes);
    }
    if !trust.is_trusted() {
        notes.push(format!(
            "this workspace's {} was not read: the workspace is not trusted (run `minicode \
             trust` here to use its MCP servers; each is still asked about once)",
            config::MCP_JSON
        ));
        return (servers, notes);
    }
    let (found, skipped) = match config::workspace_servers(workspace) {
        Ok(found) => found,
        Err(problem) => {
            notes.push(problem);
            return (servers, notes);
        }
    };
    notes.extend(skipped);
    for server in found {
        if servers.iter().any(|s| s.id == server.id) {
            notes.push(format!(
                "MCP server `{}` of {} was left out: your config defines a server with that id",
                sanitize(&server.id),
                config::MCP_JSON
            ));
            continue;
        }
        let held = held(config, workspace, env, &server, ask, &mut notes);
        servers.push(to_server_config(&server, workspace, held));
    }
    (servers, notes)
}

/// Why a `.mcp.json` server may not start (`None`: it may): approved already as it is defined
/// now, or asked on the terminal when `ask` allows it (a yes is recorded).
fn held(
    config: &Config,
    workspace: &Path,
    env: Env<'_>,
    server: &McpServer,
    ask: Ask,
    notes: &mut Vec<String>,
) -> Option<String> {
    if config::is_approved(&config.mcp_approvals, workspace, server) {
        return None;
    }
    let answer = match ask {
        Ask::Terminal => ask_tty(server),
        Ask::Never => None,
    };
    match answer {
        Some(true) => {
            if let Err(e) = config::approve_mcp_server(env, workspace, server) {
                notes.push(format!(
                    "could not record the approval of MCP server `{}`: {e} (it starts this \
                     time only)",
                    sanitize(&server.id)
                ));
            }
            None
        }
        Some(false) => Some("you did not approve it".to_string()),
        None => {
            let why = format!(
                "it needs your approval once (start minicode in a terminal in this workspace \
                 to be asked; --yes does not approve starting programs from {})",
                config::MCP_JSON
            );
            if ask == Ask::Terminal {
                notes.push(format!(
                    "MCP server `{}` of {} was not started: {why}",
                    sanitize(&server.id),
                    config::MCP_JSON
                ));
            }
            Some(why)
        }
    }
}

fn to_server_config(s: &McpServer, workspace: &Path, held: Option<String>) -> ServerConfig {
    ServerConfig {
        id: s.id.clone(),
        command: s.command.clone(),
        args: s.args.clone(),
        env: s.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        cwd: s.cwd.as_ref().map(|c| workspace.join(c)),
        startup_timeout: s.startup_timeout,
        call_timeout: s.call_timeout,
        origin: s.origin.display().to_string(),
        held,
    }
}

/// Asks on the controlling terminal whether the repository's server may start. `None` when
/// there is no terminal. Typed-ahead input is discarded first, so only an answer to this
/// question counts.
fn ask_tty(server: &McpServer) -> Option<bool> {
    let mut question = format!(
        "\nThis workspace's {} wants minicode to start an MCP server (a program that runs with \
         your permissions):\n  {}: {}",
        config::MCP_JSON,
        server.id,
        std::iter::once(server.command.as_str())
            .chain(server.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (key, value) in &server.env {
        question.push_str(&format!("\n  env {key}={value}"));
    }
    if let Some(cwd) = &server.cwd {
        question.push_str(&format!("\n  in {cwd}"));
    }
    super::ask::remembered_yes(&question, "Start it")
}

/// `minicode mcp list`: starts every server that may start, waits until each is ready or
/// failed (at most its start-up timeout), prints them with their tools, and stops them.
pub(super) fn list(
    env: Env<'_>,
    launch: &Path,
    config_path: Option<&Path>,
) -> Result<ExitCode, Failure> {
    // The listing needs no model: load as the demo does, so no server or key is required.
    let overrides = Overrides {
        config_path: config_path.map(Path::to_path_buf),
        demo: true,
        ..Overrides::default()
    };
    let super::prelude::Started {
        config,
        log: _log,
        runtime,
    } = super::prelude::start(super::prelude::Setup {
        env,
        launch,
        overrides,
        refused: super::prelude::Refused::Fail,
        log: super::prelude::Log::OnRequest,
    })?;
    let (servers, notes) = servers(&config, launch, env, config.trust, Ask::Never);
    let mut err = std::io::stderr().lock();
    for note in &notes {
        let _ = writeln!(err, "minicode: {}", sanitize(note));
    }
    if servers.is_empty() {
        let _ = writeln!(
            err,
            "no MCP servers are configured (see docs/extensions.md for an example)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let wait = servers
        .iter()
        .map(|s| s.startup_timeout)
        .max()
        .unwrap_or_default()
        + std::time::Duration::from_secs(1);
    let ctx = ToolCtx::new(
        launch.to_path_buf(),
        config.bash_timeout,
        super::assemble::scrubbed_env(&config),
    );
    let statuses = runtime.block_on(async {
        let manager = Manager::new(servers, Arc::new(Registry::builtin()), &ctx, Vec::new());
        manager.start();
        manager.settled(wait).await;
        let statuses = manager.statuses();
        manager.shutdown().await;
        statuses
    });
    // A server that failed or never answered is a failed check, for scripts as for people.
    let failed = statuses
        .iter()
        .any(|s| matches!(s.state, State::Failed(_) | State::Starting));
    let mut out = std::io::stdout().lock();
    for s in statuses {
        let state = match &s.state {
            State::Held(why) => format!("not started: {why}"),
            State::Starting => "starting (no answer yet)".to_string(),
            State::Ready if s.tools.len() == 1 => "ready, 1 tool".to_string(),
            State::Ready => format!("ready, {} tools", s.tools.len()),
            State::Failed(why) => format!("failed: {why}"),
        };
        let _ = writeln!(out, "{} — {state}", sanitize(&s.id));
        let _ = writeln!(out, "  defined in {}", sanitize(&s.origin));
        for (name, remote) in &s.tools {
            let _ = writeln!(out, "  {} ({})", sanitize(name), sanitize(remote));
        }
        if let Some(log) = &s.log {
            let _ = writeln!(out, "  log: {}", log.display());
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
