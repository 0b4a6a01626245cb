//! The one way a session is put together, for every frontend: a one-shot or full-screen run,
//! each ACP session and each daemon session. A frontend fills [`Inputs`], where everything
//! that differs between frontends is a named field; the builder chooses the MCP servers under
//! the trust rule, discovers the workspace's skills, builds the tools' context and registry,
//! and starts the core. It never loads a configuration or opens a session file: frontends do,
//! because they differ in when a failure may still stop the run.

use std::path::Path;
use std::sync::Arc;

use super::mcp::{self, Ask};
use super::skills;
use crate::agent::delegate::Subagents;
use crate::agent::recovery::Hooks;
use crate::agent::{self, Options, Setup};
use crate::config::{Config, Trust};
use crate::protocol::{AgentHandle, WindowSource};
use crate::provider::Provider;
use crate::sandbox::Policy;
use crate::session::Session;
use crate::tools::mcp::{Manager, ServerConfig};
use crate::tools::skills::Skills;
use crate::tools::{FileAccess, Registry, Secrets, ToolCtx};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Everything a frontend decides about one session. New session-wide inputs (the sandbox
/// policy, permission rules) join here as fields, so every frontend has to say what it wants.
pub(super) struct Inputs<'a> {
    /// The configuration the session runs under: its workspace's, or the daemon's one.
    pub(crate) config: &'a Config,
    /// The environment to read the user's folders from (skills, approvals).
    pub(crate) env: Env<'a>,
    /// The session's folder, canonical.
    pub(crate) workspace: &'a Path,
    /// Whether the user trusts `workspace`: its `.mcp.json` and its own skills need it.
    pub(crate) trust: Trust,
    pub(crate) provider: Arc<dyn Provider>,
    /// `false` (`--no-tools`): plain chat, with no skills, sub-agents or MCP servers either.
    pub(crate) tools: bool,
    /// Whether an unapproved `.mcp.json` server may be asked about on the terminal.
    pub(crate) ask: Ask,
    /// MCP servers a client brought (ACP); a configured server with the same id wins.
    pub(crate) client_servers: Vec<ServerConfig>,
    /// The editor's buffers instead of the disk for the file tools (ACP).
    pub(crate) files: Option<Arc<dyn FileAccess>>,
    /// `--yes`: every tool call approved without asking.
    pub(crate) auto_approve: bool,
    /// Someone can answer "run outside the sandbox?" for a call the sandbox stopped (the
    /// full-screen session, an editor); otherwise such a call fails with the way out.
    pub(crate) ask_outside_sandbox: bool,
    /// The sub-agent slots this session shares; `None`: no delegation.
    pub(crate) subagents: Option<Subagents>,
    /// The daemon's journal of tool calls and the run a crash left open.
    pub(crate) hosted: Option<Hooks>,
}

/// A session's parts before its session file exists: preparing opens no session, so a frontend
/// may still stop with an error after it, as long as it has not opened the session yet.
pub(super) struct Prepared<'a> {
    inputs: Inputs<'a>,
    servers: Vec<ServerConfig>,
    skills: Skills,
    /// The hooks the session runs (a workspace's only once approved).
    hooks: Vec<crate::hooks::Hook>,
    /// Every configured hook and whether it runs, for `/hooks`.
    pub(crate) hook_listing: Vec<String>,
    /// Notes for the user about the MCP servers and hooks (a `.mcp.json` not read, servers left out). A
    /// frontend that shows them itself takes them; those left are the core's warnings.
    pub(crate) notes: Vec<String>,
}

/// A running core and its MCP servers (starting in the background); the frontend shuts the
/// servers down once the core has ended.
pub(super) struct Started {
    pub(crate) handle: AgentHandle,
    pub(crate) mcp: Arc<Manager>,
}

/// The configuration checks every frontend makes before it builds anything from it.
pub(super) fn check(config: &Config) -> Result<(), String> {
    crate::agent::budget::Budget::new(
        config.context_window,
        config.reserve_tokens,
        config.keep_recent_tokens,
    )
    .map(drop)
    .map_err(|e| format!("invalid [context] settings: {e}"))
}

/// Sweeps temp files a killed minicode left in the workspace, then chooses the MCP servers
/// (asking on the terminal when `inputs.ask` says so) and discovers the skills.
pub(super) fn prepare(mut inputs: Inputs<'_>) -> Prepared<'_> {
    crate::fsutil::sweep_temp_files(inputs.workspace, &[crate::session::SESSIONS]);
    let (hooks, hook_notes) = super::hooks::chosen(
        inputs.config,
        inputs.workspace,
        inputs.env,
        inputs.trust,
        inputs.ask,
    );
    let hook_listing = super::hooks::listing(inputs.config, &hooks, inputs.trust);
    if !inputs.tools {
        inputs.subagents = None;
        return Prepared {
            inputs,
            servers: Vec::new(),
            skills: Skills::default(),
            hooks,
            hook_listing,
            notes: hook_notes,
        };
    }
    let (servers, mut notes) = mcp_servers(&mut inputs);
    notes.extend(hook_notes);
    let skills = skills::discover(inputs.env, inputs.workspace, inputs.trust.is_trusted());
    Prepared {
        inputs,
        servers,
        skills,
        hooks,
        hook_listing,
        notes,
    }
}

/// The configured servers (a `.mcp.json`'s under the trust rule), then the client's.
fn mcp_servers(inputs: &mut Inputs<'_>) -> (Vec<ServerConfig>, Vec<String>) {
    let (mut servers, mut notes) = mcp::servers(
        inputs.config,
        inputs.workspace,
        inputs.env,
        inputs.trust,
        inputs.ask,
    );
    for server in std::mem::take(&mut inputs.client_servers) {
        if servers.iter().any(|s| s.id == server.id) {
            notes.push(format!(
                "the client's MCP server `{}` was left out: the configuration defines a server \
                 with that id",
                server.id
            ));
            continue;
        }
        servers.push(server);
    }
    (servers, notes)
}

impl Prepared<'_> {
    /// Plugs in the session and starts the core, and its MCP servers in the background (the
    /// first request does not wait for them). Runs on the runtime.
    pub(super) fn start(self, session: Session) -> Started {
        let Prepared {
            inputs,
            servers,
            skills,
            hooks,
            notes,
            ..
        } = self;
        let config = inputs.config;
        let mut tool_ctx = tool_ctx(config, inputs.workspace);
        tool_ctx.files = inputs.files;
        let sandbox = config.sandbox.policy(inputs.workspace, session.id());
        let registry = Arc::new(if inputs.tools {
            Registry::builtin()
        } else {
            Registry::new(Vec::new())
        });
        let mcp = Manager::new(servers, registry.clone(), &tool_ctx, notes);
        let setup = Setup {
            provider: inputs.provider,
            registry,
            tool_ctx: Arc::new(tool_ctx),
            mcp: Some(mcp.clone()),
            session,
            options: Options {
                auto_approve: inputs.auto_approve,
                ask_outside_sandbox: inputs.ask_outside_sandbox,
                subagents: inputs.subagents,
                user_memory: crate::config::user_config_path(inputs.env)
                    .and_then(|c| Some(c.parent()?.join(crate::memory::AGENTS_FILE))),
                hooks: Arc::new(hooks),
                ..agent_options(config, Arc::new(skills), sandbox)
            },
        };
        let handle = agent::spawn_hosted(setup, inputs.hosted.unwrap_or_default());
        mcp.start();
        Started { handle, mcp }
    }
}

/// The session `id` of `workspace`, or a new one.
pub(super) fn open_or_create(workspace: &Path, id: Option<&str>) -> Result<Session, String> {
    match id {
        Some(id) => Session::open(workspace, id),
        None => Session::begin(workspace),
    }
    .map_err(|e| e.to_string())
}

/// Variables tools must never see: the fixed key variables, the OpenTelemetry headers (a
/// collector's credentials) and the configured key variable.
pub(super) fn scrubbed_env(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = crate::defaults::SECRET_ENV_VARS
        .iter()
        .map(|n| n.to_string())
        .collect();
    names.extend(
        [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ]
        .map(String::from),
    );
    names.extend(config.api_key_env.clone());
    names
}

/// The agent options taken from `config` alone, with the session's `sandbox` policy (built
/// from config for the session's id). What differs by frontend is left off: no
/// auto-approval, no sub-agents.
fn agent_options(config: &Config, skills: Arc<Skills>, sandbox: Policy) -> Options {
    Options {
        max_rounds: config.max_rounds,
        max_tokens: config.max_tokens,
        context_window: config.context_window,
        context_window_source: if config.context_window_configured {
            WindowSource::Config
        } else {
            WindowSource::Default
        },
        send_reasoning: config.send_reasoning,
        auto_approve: false,
        reserve_tokens: config.reserve_tokens,
        keep_recent_tokens: config.keep_recent_tokens,
        // Message contents in the exported spans only where an exporter runs and was asked to.
        trace_content: super::prelude::trace_content(config),
        subagents: None,
        skills,
        goal: config.goal,
        plan: config.plan,
        ask_outside_sandbox: false,
        checkpoints: checkpoint_settings(config),
        lsp: config.lsp.clone(),
        user_memory: None,
        hooks: Arc::default(),
        small: config.small,
        model_profile: config.model_profile.clone(),
        sandbox,
    }
}

/// `[checkpoints]` with what the store must know and cannot name itself: the `write` tool's
/// protected paths (never written by a rewind), which sessions exist (another session's
/// journal is evidence only if its session does), and the secrets a stored file must not
/// hold (the same values tool output is redacted of).
pub(crate) fn checkpoint_settings(config: &Config) -> crate::checkpoints::Settings {
    let header_values = config.telemetry.iter().flat_map(|t| &t.headers);
    crate::checkpoints::Settings {
        guard: crate::checkpoints::Guard {
            protected: Some(crate::tools::protected::reason),
            session_exists: Some(session_exists),
            secrets: config
                .api_key
                .iter()
                .chain(header_values.map(|(_, value)| value))
                .map(|k| k.expose().to_string())
                .collect(),
        },
        ..config.checkpoints.clone()
    }
}

/// Whether session `id` has a session file in `workspace`.
fn session_exists(workspace: &Path, id: &str) -> bool {
    crate::session::is_valid_id(id)
        && crate::session::sessions_dir(workspace)
            .join(format!("{id}.json"))
            .is_file()
}

/// The tools' context: the workspace, the bash timeout, a scrubbed environment, the secrets to
/// redact (the key and the telemetry headers, a collector's credentials) and the saved-output
/// limits, with old outputs pruned.
fn tool_ctx(config: &Config, workspace: &Path) -> ToolCtx {
    let mut ctx = ToolCtx::new(
        workspace.to_path_buf(),
        config.bash_timeout,
        scrubbed_env(config),
    );
    let header_values = config.telemetry.iter().flat_map(|t| &t.headers);
    ctx.secrets = Secrets::new(
        config
            .api_key
            .iter()
            .chain(header_values.map(|(_, value)| value))
            .map(|k| k.expose().to_string()),
    );
    ctx.outputs = crate::tools::outputs::Limits {
        max_file_bytes: config.outputs_max_file_bytes,
        max_total_bytes: config.outputs_max_bytes,
        max_age: config.outputs_max_age,
    };
    ctx.fetch = config.fetch;
    ctx.supervisor = crate::process::supervisor::program();
    ctx.background = crate::tools::background::Jobs::new(config.max_background);
    if !config.permissions.is_empty() {
        ctx.permissions = Some(Arc::new(config.permissions.clone()));
    }
    ctx.prune_outputs();
    ctx
}
