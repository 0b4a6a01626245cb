//! The one `protocol::Opener`, through which ACP and the daemon get their sessions: each
//! request becomes the session builder's inputs. What differs between the two hosts is said
//! here once, as a [`Source`] (each workspace's own configuration, or the daemon's one) and
//! where MCP notes go; both discover skills and `.mcp.json` servers per workspace under the
//! trust rule, never asking on a terminal (a host has none).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::assemble::{self, Inputs};
use super::mcp::Ask;
use crate::agent::delegate::Subagents;
use crate::agent::recovery::Hooks;
use crate::config::{self, Config, Overrides};
use crate::protocol::{EditorFiles, Listed, McpServerSpec, OpenRequest, Opened, Opener};
use crate::provider::Provider;
use crate::session::Session;
use crate::tools::mcp::ServerConfig;
use crate::tools::{FileAccess, FileFuture};

/// Where a session's configuration and provider come from.
pub(super) enum Source {
    /// ACP: each session reads its own workspace's configuration (that workspace's file only
    /// when it is trusted) and gets its own provider and sub-agent slots.
    PerWorkspace { overrides: Overrides },
    /// The daemon: one configuration (no workspace file), one provider and one set of
    /// sub-agent slots for every session; each workspace's trust is looked up when it opens.
    Shared {
        config: Box<Config>,
        provider: Arc<dyn Provider>,
        subagents: Subagents,
    },
}

/// Who shows the user the notes about a session's MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Notes {
    /// The host, when the session is ready (ACP's agent messages).
    Host,
    /// The core, as warnings in the session's events (the daemon's clients read them there).
    Core,
}

/// Opens sessions for a host frontend.
pub(super) struct Host {
    pub(crate) source: Source,
    pub(crate) notes: Notes,
    /// The environment as it was at start (without the key): every session reads it.
    pub(crate) vars: HashMap<String, String>,
    /// The folder the host started in.
    pub(crate) launch: PathBuf,
}

impl Host {
    fn env(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
}

/// The editor's buffers as the tools' file access.
#[derive(Debug)]
struct Editor(Arc<dyn EditorFiles>);

impl FileAccess for Editor {
    fn read_text<'a>(&'a self, path: &'a Path) -> FileFuture<'a, String> {
        self.0.read_text(path)
    }

    fn write_text<'a>(&'a self, path: &'a Path, content: &'a str) -> FileFuture<'a, ()> {
        self.0.write_text(path, content)
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

/// A session's configuration, provider, trust and sub-agent slots.
type Chosen<'a> = (Cow<'a, Config>, Arc<dyn Provider>, config::Trust, Subagents);

impl Host {
    fn choose(&self, workspace: &Path) -> Result<Chosen<'_>, String> {
        let env = |name: &str| self.env(name);
        match &self.source {
            Source::PerWorkspace { overrides } => {
                let config = config::load(workspace, &env, overrides).map_err(|e| e.to_string())?;
                assemble::check(&config)?;
                let provider =
                    super::provider::build_provider(&config, &env).map_err(|f| f.message)?;
                let subagents =
                    Subagents::new(config.subagents_max_concurrent, config.subagents_timeout);
                let trust = config.trust;
                Ok((Cow::Owned(config), provider, trust, subagents))
            }
            Source::Shared {
                config,
                provider,
                subagents,
            } => Ok((
                Cow::Borrowed(&**config),
                provider.clone(),
                config::workspace_trust(&env, workspace),
                subagents.clone(),
            )),
        }
    }
}

impl Opener for Host {
    fn list(&self, cwd: Option<PathBuf>) -> Result<Vec<Listed>, String> {
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
        let (config, provider, trust, subagents) = self.choose(&workspace)?;
        let client_servers = request
            .mcp_servers
            .into_iter()
            .map(|spec| client_server(spec, &workspace))
            .collect();
        // An editor's user answers; the daemon's sessions run unattended.
        let editor = request.hosted.is_none();
        let mut prepared = assemble::prepare(Inputs {
            config: &config,
            env: &env,
            workspace: &workspace,
            trust,
            provider,
            tools: true,
            ask: Ask::Never,
            client_servers,
            files: request
                .files
                .map(|files| Arc::new(Editor(files)) as Arc<dyn FileAccess>),
            // Every approval goes to the client: a host has no --yes.
            auto_approve: false,
            ask_outside_sandbox: editor,
            subagents: Some(subagents),
            hosted: request.hosted.map(|hosted| Hooks {
                journal: Some(hosted.journal),
                recovery: hosted.recovery,
            }),
        });
        let notes = match self.notes {
            Notes::Host => std::mem::take(&mut prepared.notes),
            Notes::Core => Vec::new(),
        };
        let session = assemble::open_or_create(&workspace, request.session_id.as_deref())?;
        let session_id = session.id().to_string();
        let started = prepared.start(session);
        let mcp = started.mcp;
        let found = super::commands::discover(&env, &workspace, trust.is_trusted());
        let mut notes = notes;
        notes.extend(found.warnings);
        Ok(Opened {
            commands: found.commands,
            handle: started.handle,
            session_id,
            closing: Box::pin(async move { mcp.shutdown().await }),
            notes,
        })
    }
}
