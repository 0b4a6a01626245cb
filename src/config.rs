//! The configuration: built once at start-up from the user's file, the workspace's file, the
//! `MINICODE_*` environment and command-line overrides, validated, and immutable afterwards.
//! It owns where the files are looked for, the precedence user file < workspace file <
//! environment < flags, and the workspace trust rule (a repository's file may not choose the
//! server, the provider or the key until the user trusts the workspace; see `config/trust.rs`).
//! It must not touch the network or the process environment (the environment is read through a
//! closure so tests never mutate it), and no error or `Debug` output may ever contain the key.
//!
//! The parts: `file` reads and parses one file, `layers` finds the files, enforces trust and
//! merges them field by field, `parts` merges the tables that are a part's own settings struct
//! (`[fetch]`, `[goal]`, `[checkpoints]`) key by key and reads each into that struct whole,
//! `resolve` applies precedence and checks every value, `trust` reads and edits the user's
//! list of trusted workspaces.

mod file;
mod hooks;
mod layers;
mod lsp;
mod mcp;
mod model_setup;
mod parts;
mod permissions;
mod resolve;
mod sandbox;
mod telemetry;
mod trust;
mod trust_record;
mod user_file;
mod workspace_file;

use crate::hooks::Hook;
pub(crate) use hooks::HookApproval;
pub(crate) use hooks::{approve_hook, is_approved as is_hook_approved};
pub(crate) use mcp::{MCP_JSON, approve_mcp_server, is_approved, workspace_servers};
pub use mcp::{McpApproval, McpServer};
pub(crate) use model_setup::{ModelChoice, SetupError, write_model};
pub use permissions::save_allow_rule;
pub(crate) use sandbox::{Sandbox, parse_mode};
pub use trust::Trust;
pub(crate) use trust::{
    TrustChange, TrustError, trust_workspace, untrust_workspace, user_config_path, workspace_trust,
};
pub(crate) use workspace_file::{WORKSPACE_FILE, locate as locate_workspace_file};

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The model name reported by the built-in demo provider.
pub(crate) const DEMO_MODEL: &str = "demo";

/// Environment variables that override the file.
pub(crate) const ENV_BASE_URL: &str = "MINICODE_BASE_URL";
pub(crate) const ENV_MODEL: &str = "MINICODE_MODEL";
pub(crate) const ENV_API_KEY: &str = "MINICODE_API_KEY";
/// The standard OpenTelemetry variables minicode reads (see docs/telemetry.md).
pub(crate) const ENV_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
pub(crate) const ENV_OTLP_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
pub(crate) const ENV_OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
pub(crate) const ENV_OTLP_TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
pub(crate) const ENV_OTEL_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
pub(crate) const ENV_OTEL_SDK_DISABLED: &str = "OTEL_SDK_DISABLED";

/// Which provider implementation to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Any OpenAI-compatible `/chat/completions` server.
    #[default]
    OpenAi,
    /// The offline, deterministic demo model.
    Demo,
}

/// `[model] profile`: how much prompt the model gets (see `provider::profiles::Profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ModelProfile {
    /// The core tools, brief descriptions, a short system prompt.
    Small,
    /// Every tool and the full system prompt.
    Full,
}

/// How spans are encoded for the collector (the OTLP/HTTP flavours; gRPC is not built in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum OtlpProtocol {
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "http/json")]
    HttpJson,
}

/// OpenTelemetry export, present in [`Config`] only when it is on (an endpoint is configured
/// and `OTEL_SDK_DISABLED` is not `true`). See docs/telemetry.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Telemetry {
    /// The full URL spans are posted to: `<endpoint>/v1/traces`, or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given.
    pub traces_url: String,
    /// Extra request headers from the files (e.g. `Authorization`); `OTEL_EXPORTER_OTLP_HEADERS`
    /// is added on top by the exporter itself. Values are secrets.
    pub headers: Vec<(String, Secret)>,
    pub protocol: OtlpProtocol,
    /// `service.name` of the exported resource (default `minicode`).
    pub service_name: String,
    /// Whether message contents, tool arguments and results are exported (default false).
    pub include_content: bool,
}

/// A value that must never be shown: `Debug` and `Display` print `***`, so a `Config` can be
/// logged or put in an error without leaking the key. Use [`Secret::expose`] only where the
/// value is actually sent.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub(crate) fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the `Authorization` header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where a value came from, as shown to the user: a flag, an environment variable, a config
/// file (with its path), or the built-in default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    pub model: String,
    pub(crate) base_url: String,
    pub(crate) context_window: String,
}

/// The effective configuration. See `docs/configuration.md` for every field.
#[derive(Debug, Clone)]
pub struct Config {
    pub provider: ProviderKind,
    /// Without a trailing `/`; empty for the demo provider.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    /// The environment variable the key was read from (the configured `api_key_env`, or
    /// `MINICODE_API_KEY`), so tools can remove it from child processes; also set when that
    /// variable is unset (no key), so a 401 can say which variable to set.
    pub api_key_env: Option<String>,
    pub context_window: u64,
    /// Whether `[model] context_window` was set in a file (a probed window never replaces it).
    pub(crate) context_window_configured: bool,
    pub max_tokens: u32,
    /// The deadline of one model call, streaming included (heartbeats do not extend it).
    pub request_timeout: Duration,
    pub stream_idle_timeout: Duration,
    /// More tool calls than this in one reply is a protocol error.
    pub max_tool_calls: u32,
    /// Send the model's reasoning back to the server in later requests.
    pub(crate) send_reasoning: bool,
    /// What the core does for small local models (`[model] recover_tool_calls`,
    /// `first_look`, and whether `max_tokens` was set), handed to the agent whole.
    pub(crate) small: crate::agent::small::Settings,
    /// `[model] profile` and `[model] tools`, handed to the agent whole.
    pub(crate) model_profile: crate::provider::profiles::Settings,
    pub bash_timeout: Duration,
    pub max_rounds: u32,
    /// Saved bash outputs: bytes per call, bytes in all, how long one is kept.
    pub outputs_max_file_bytes: u64,
    pub outputs_max_bytes: u64,
    pub outputs_max_age: Duration,
    /// `[tools] max_background`: background processes running at once in a session.
    pub(crate) max_background: usize,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
    /// Sub-agents (`delegate`) running at once across the process.
    pub subagents_max_concurrent: usize,
    /// How long one sub-agent may take before it is stopped.
    pub subagents_timeout: Duration,
    /// `[fetch]`: how long and how much one `fetch` of a web page may take.
    pub fetch: crate::tools::fetch::Limits,
    /// `[goal]`: goal mode's round limits.
    pub goal: crate::agent::goal::Settings,
    /// `[checkpoints]`: the undo record of tool calls (its `guard` is left empty here: the
    /// CLI fills it when it hands the settings to a session).
    pub checkpoints: crate::checkpoints::Settings,
    /// `[lsp]`: the language servers asked for diagnostics after an edit.
    pub lsp: crate::lsp::Settings,
    /// How many of the last turns the full-screen UI prints to the normal screen on exit:
    /// `None` = all, `Some(0)` = none.
    pub exit_transcript_turns: Option<u32>,
    /// Highlight fenced code and diffs in the full-screen UI (`[ui] syntax_highlighting`).
    pub syntax_highlighting: bool,
    /// Where the model, the server and the window came from (`/model` shows them).
    pub origins: Origins,
    /// The configuration files that were read, lowest precedence first (the user's, then the
    /// workspace's; or the one `--config` named).
    pub sources: Vec<PathBuf>,
    /// Files in the workspace that were looked at and not read, with why (a service's own
    /// `config/config.toml`, say): `doctor` lists them.
    pub(crate) ignored_sources: Vec<(PathBuf, &'static str)>,
    /// Whether the user trusts the launch directory. Everything a workspace supplies that can
    /// run code or reach the network must ask this first (see [`Trust`]).
    pub trust: Trust,
    /// MCP servers of the config files (a workspace's only when it is trusted), by id.
    pub mcp_servers: Vec<McpServer>,
    /// The user's approvals of workspaces' `.mcp.json` servers.
    pub(crate) mcp_approvals: Vec<McpApproval>,
    /// OpenTelemetry export; `None` (the default) means off: no exporter, no extra layer.
    pub telemetry: Option<Telemetry>,
    /// `[permissions]` of the user's file and a trusted workspace's, each rule with its file.
    pub(crate) permissions: crate::permissions::Rules,
    /// `[[hooks.<Event>]]` of the user's file and a trusted workspace's (those run only once
    /// approved, see [`Hook::from_workspace`]).
    pub hooks: Vec<Hook>,
    /// The user's approvals of workspaces' hooks.
    pub(crate) hook_approvals: Vec<HookApproval>,
    /// The sandbox `bash` calls run under (`[sandbox]`, `--sandbox`, `--network`).
    pub sandbox: Sandbox,
    /// Sessions start in plan mode (`--plan`).
    pub(crate) plan: bool,
    /// Things the user should hear about that do not stop the run (e.g. an `OTEL_*` setting
    /// meant for another program that minicode cannot honour); the CLI shows them on stderr.
    pub notices: Vec<String>,
}

/// Command-line flags that take part in configuration.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--config PATH`: this file and no other; it must exist.
    pub config_path: Option<PathBuf>,
    /// `--model`
    pub model: Option<String>,
    /// `--base-url`
    pub base_url: Option<String>,
    /// `--demo`
    pub demo: bool,
    /// `--sandbox MODE`: the profile, whatever the files say.
    pub sandbox: Option<crate::sandbox::Mode>,
    /// `--network`: IPv4/IPv6 sockets allowed in the confined profiles.
    pub network: bool,
    /// `--plan`: sessions start in plan mode.
    pub plan: bool,
    /// `--no-hooks` (hidden, what `minicode eval` gives its runs): no configured hook runs.
    pub no_hooks: bool,
    /// Load as if the workspace's config file were absent: the user chose "run without
    /// the workspace file" when asked about an untrusted workspace.
    pub skip_workspace_file: bool,
}

/// How to set a model up, naming the user config file minicode reads (`None`: neither HOME
/// nor XDG_CONFIG_HOME says where it would be).
fn howto(user_file: &Option<PathBuf>) -> String {
    let file = match user_file {
        Some(path) => path.display().to_string(),
        None => "your user config (set HOME or XDG_CONFIG_HOME)".to_string(),
    };
    format!(
        "no model is configured. To set one up, either:
  - run `minicode init`, which asks a few questions and writes {file}
    (or write [model] base_url and name there yourself: config/config.example.toml shows
    every setting; a workspace may keep its own in .minicode/config.toml once trusted), or
  - set MINICODE_BASE_URL and MINICODE_MODEL (and MINICODE_API_KEY if the server needs a key);
or try the built-in offline model with `minicode --demo`."
    )
}

/// Why no configuration could be built. Every variant is a usage error (exit status 2).
/// Messages name the file, line and field, never a value from the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}", howto(.user_file))]
    Missing { user_file: Option<PathBuf> },
    #[error("config file {} does not exist", .path.display())]
    NotFound { path: PathBuf },
    #[error("cannot read config file {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {}, line {line}, column {column}: syntax error: {message}", .path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("config file {}, line {line}, column {column}: field `{field}`: {reason}", .path.display())]
    Field {
        path: PathBuf,
        line: usize,
        column: usize,
        field: String,
        reason: String,
    },
    /// A required field is absent from every source. `origin` is the file or "the environment".
    #[error("{origin}: missing required field `{field}` (or set {env})")]
    Required {
        origin: String,
        field: &'static str,
        env: &'static str,
    },
    /// A value of the right type that is not acceptable (zero, empty, out of range).
    #[error("{origin}: field `{field}`: {reason}")]
    Invalid {
        origin: String,
        field: &'static str,
        reason: String,
    },
    /// The workspace's file sets fields that choose where the conversation goes or with which
    /// key, and the user has not trusted the workspace. Nothing was sent anywhere.
    #[error(
        "config file {} sets {}, but this workspace is not trusted: a repository's config may \
         not choose the server, the provider, the model, the API key, where telemetry is sent \
         or the caps on saved output, nor start MCP servers. If you \
         trust this folder, run \
         `minicode trust` in it (it is recorded in your user config); otherwise remove {} from \
         that file (your user config or MINICODE_* variables can set them)",
        .path.display(),
        list_fields(.fields),
        if .fields.len() == 1 { "it" } else { "them" }
    )]
    UntrustedWorkspace {
        path: PathBuf,
        fields: Vec<&'static str>,
    },
    /// The workspace is trusted, but what trust covers (its config's trust-only fields, its
    /// `[mcp_servers]`, its `.mcp.json`) changed since the user trusted it. Nothing was sent.
    #[error(
        "{} was trusted, but what trust covers has changed since: {}. Check the change; if \
         you trust it as it is now, run `minicode trust` in it (or `minicode untrust` to stop \
         trusting it)",
        .workspace.display(),
        .changes.join("; ")
    )]
    TrustChanged {
        workspace: PathBuf,
        changes: Vec<String>,
    },
    /// `trusted_workspaces` in a file other than the user's: a repository must not be able to
    /// trust itself.
    #[error(
        "config file {}: `trusted_workspaces` is read only from your user config \
         ($XDG_CONFIG_HOME/minicode/config.toml or ~/.config/minicode/config.toml); remove it \
         from this file and run `minicode trust` to trust a workspace",
        .path.display()
    )]
    MisplacedTrustList { path: PathBuf },
    /// `approved_mcp_servers` in a workspace's file: a repository must not approve its own
    /// servers.
    #[error(
        "config file {}: `approved_mcp_servers` and `approved_hooks` are read only from your \
         user config; remove them from this file (minicode records your approvals there when \
         you allow a server or a hook)",
        .path.display()
    )]
    MisplacedApprovals { path: PathBuf },
    /// A `[permissions]` rule that cannot be read.
    #[error("config file {}: [permissions] {list}: {message}", .path.display())]
    Rule {
        path: PathBuf,
        list: &'static str,
        message: String,
    },
}

fn list_fields(fields: &[&str]) -> String {
    fields
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The user's cache folder for minicode (what was learned about servers):
/// `$XDG_CACHE_HOME/minicode`, or `$HOME/.cache/minicode` when `XDG_CACHE_HOME` is unset,
/// empty or relative; `None` without either.
pub(crate) fn cache_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let xdg = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let dir = xdg.or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(dir.join("minicode"))
}

/// Builds the configuration. `launch_dir` is the workspace, where `.minicode/config.toml` (or
/// a minicode-only `config/config.toml`) is looked for; `env` reads an environment variable (an empty value counts as unset).
pub fn load(
    launch_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let layers = layers::gather(launch_dir, &env, overrides)?;
    resolve::resolve(layers, &env, overrides)
}
