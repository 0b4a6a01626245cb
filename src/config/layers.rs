//! Which configuration files are read and how they combine: the user's file, then the
//! workspace's file (`.minicode/config.toml`, see `workspace_file`) laid over it field by field (or only the file `--config`
//! names), with the trust rule applied before anything is merged. It remembers which file each
//! field came from, so errors name the right one. It reads files and nothing else: no
//! environment values beyond where the user's file lives, no precedence against env or flags.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::file::{
    self, ApprovedMcpServer, ContextTable, FileConfig, McpServerTable, ModelTable, SubagentsTable,
    TelemetryTable, ToolsTable, UiTable,
};
use super::trust::{self, Listed, Trust};
use super::trust_record::{self, TRUST_ONLY};
use super::{ConfigError, Overrides};

/// The merged content of every file read, with where each field came from.
pub(super) struct Layers {
    pub(crate) file: FileConfig,
    /// Dotted field name → the file that set it (the highest one that did).
    origins: HashMap<String, PathBuf>,
    /// The parts' own tables (`[fetch]`, `[goal]`, `[checkpoints]`), laid over each other key
    /// by key; [`Layers::part`] reads one into its part's settings.
    parts: super::parts::Parts,
    /// The files read, lowest precedence first.
    pub(crate) sources: Vec<PathBuf>,
    pub(crate) trust: Trust,
    /// MCP servers by id with the file that defined them (a higher file replaces a server
    /// of the same id whole).
    pub(crate) mcp_servers: BTreeMap<String, (McpServerTable, PathBuf)>,
    /// The user's approvals of `.mcp.json` servers.
    pub(crate) approvals: Vec<ApprovedMcpServer>,
    /// Each file's `[permissions]`, with the file.
    pub(crate) permissions: Vec<(super::permissions::PermissionsTable, PathBuf)>,
    /// Things to tell the user that do not stop the run.
    pub(crate) notices: Vec<String>,
    /// Files found in the workspace that were not read, with why.
    pub(crate) ignored: Vec<(PathBuf, &'static str)>,
    /// The `[lsp]` tables, merged key by key.
    pub(crate) lsp: super::lsp::Merged,
    /// The `[sandbox]` tables, kept apart: a workspace's may only narrow the user's.
    pub(crate) sandbox: super::sandbox::Tables,
    /// Each file's `[hooks]`, with the file and whether it is the workspace's own.
    pub(crate) hooks: Vec<(super::hooks::HooksTable, PathBuf, bool)>,
    /// The user's approvals of workspaces' hooks.
    pub(crate) hook_approvals: Vec<super::hooks::ApprovedHook>,
}

impl Layers {
    /// How an error about `field` names its source: the file that set it, else the files read,
    /// else "the environment".
    pub(crate) fn origin(&self, field: &str) -> String {
        if let Some(path) = self.origins.get(field) {
            return format!("config file {}", path.display());
        }
        match self.sources.as_slice() {
            [] => "the environment".to_string(),
            [one] => format!("config file {}", one.display()),
            many => format!(
                "config files {}",
                many.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        }
    }

    /// Part `name`'s settings (see `config/parts.rs`): what the files set, the rest default.
    pub(super) fn part<T>(&self, name: &'static str) -> Result<T, ConfigError>
    where
        T: serde::de::DeserializeOwned + Default,
    {
        self.parts.get(name, self.origin(name))
    }

    fn empty(trust: Trust) -> Self {
        Self {
            file: FileConfig::default(),
            origins: HashMap::new(),
            parts: super::parts::Parts::default(),
            sources: Vec::new(),
            trust,
            mcp_servers: BTreeMap::new(),
            lsp: super::lsp::Merged::default(),
            approvals: Vec::new(),
            permissions: Vec::new(),
            notices: Vec::new(),
            ignored: Vec::new(),
            sandbox: super::sandbox::Tables {
                user: None,
                workspace: None,
            },
            hooks: Vec::new(),
            hook_approvals: Vec::new(),
        }
    }
}

/// The fields a workspace file may set only once the user trusts the workspace
/// (`trust_record::TRUST_ONLY`, with `mcp_servers`): together they decide which server
/// receives the conversation, which key goes with it and which model it pays for, where (and
/// with which credentials) telemetry is sent, what programs start, and how much disk saved
/// outputs may take. The whole `[telemetry]` table counts: a repository must not be able to
/// turn export on, point it at itself, or ask for the contents.
pub(super) fn redirecting_fields(f: &FileConfig) -> Vec<&'static str> {
    let m = &f.model;
    let t = &f.telemetry;
    let set = [
        m.provider.is_some(),
        m.base_url.is_some(),
        m.api_key.is_some(),
        m.api_key_env.is_some(),
        m.name.is_some(),
        f.tools.outputs_max_file_bytes.is_some(),
        f.tools.outputs_max_bytes.is_some(),
        t.otlp_endpoint.is_some(),
        t.headers.is_some(),
        t.protocol.is_some(),
        t.service_name.is_some(),
        t.include_content.is_some(),
    ];
    let mut fields: Vec<&'static str> = TRUST_ONLY
        .into_iter()
        .zip(set)
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
    // A server is a program the repository would have minicode run.
    if f.mcp_servers.is_some() {
        fields.push("mcp_servers");
    }
    if f.lsp.as_ref().is_some_and(|t| t.servers.is_some()) {
        fields.push("lsp.servers");
    }
    fields
}

/// Reads the files in order and merges them. The trust rule runs on the workspace's file as
/// soon as it is parsed, before anything could use it.
pub(super) fn gather(
    launch_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Layers, ConfigError> {
    let user_path = trust::user_config_path(env);
    if let Some(explicit) = &overrides.config_path {
        // The file the user named replaces both and is trusted; whether the workspace itself
        // is trusted still comes from the user's list (read leniently: `--config` is also the
        // way around a broken user file).
        let path = launch_dir.join(explicit);
        if !present(&path)? {
            return Err(ConfigError::NotFound { path });
        }
        let parsed = file::read(&path)?;
        let mut layers = Layers::empty(trust::lookup_lenient(user_path.as_deref(), launch_dir));
        layers.approvals = trust::approvals_lenient(user_path.as_deref());
        layers.hook_approvals = trust::hook_approvals_lenient(user_path.as_deref());
        layers.add(parsed, path);
        return Ok(layers);
    }

    let user = match &user_path {
        Some(path) if present(path)? => Some((file::read(path)?, path.clone())),
        _ => None,
    };
    let listed = match &user {
        Some((parsed, path)) => {
            trust::lookup(parsed.trusted_workspaces.as_deref(), path, launch_dir)?
        }
        None => Listed::No,
    };
    let (trust, notice) = check_record(&listed, launch_dir, overrides)?;
    let mut layers = Layers::empty(trust);
    layers.notices.extend(notice);
    if let Some((parsed, path)) = user {
        layers.add(parsed, path);
    }

    if overrides.skip_workspace_file {
        return Ok(layers);
    }
    let located = super::workspace_file::locate(launch_dir);
    layers.ignored.extend(located.ignored.iter().cloned());
    let Some(workspace_path) = located.file.clone() else {
        return Ok(layers);
    };
    if same_file(user_path.as_deref(), &workspace_path) {
        return Ok(layers);
    }
    layers.notices.extend(located.notice());
    let parsed = file::read_confined(launch_dir, &workspace_path)?;
    if parsed.trusted_workspaces.is_some() {
        return Err(ConfigError::MisplacedTrustList {
            path: workspace_path,
        });
    }
    if parsed.approved_mcp_servers.is_some() || parsed.approved_hooks.is_some() {
        return Err(ConfigError::MisplacedApprovals {
            path: workspace_path,
        });
    }
    if !trust.is_trusted() {
        let fields = redirecting_fields(&parsed);
        if !fields.is_empty() {
            return Err(ConfigError::UntrustedWorkspace {
                path: workspace_path,
                fields,
            });
        }
    }
    let mut parsed = parsed;
    if let Some(table) = parsed.sandbox.take() {
        let trusted = trust.is_trusted();
        layers.sandbox.workspace = Some((table, workspace_path.clone(), trusted));
    }
    // A workspace's hooks are its own: they run only in a trusted workspace, and there only
    // once the user approved each (see `config/hooks.rs`).
    if let Some(hooks) = parsed.hooks.take() {
        if trust.is_trusted() {
            layers.hooks.push((hooks, workspace_path.clone(), true));
        } else {
            layers
                .notices
                .push(super::hooks::untrusted_notice(&workspace_path));
        }
    }
    if !trust.is_trusted() {
        layers.notices.extend(super::permissions::drop_untrusted(
            &mut parsed,
            &workspace_path,
        ));
    }
    layers.add(parsed, workspace_path);
    Ok(layers)
}

/// Trust as the user's list gives it, checked against what it covered when it was given: a
/// change is an error (asked about, or refused), or, when the user chose to run without the
/// workspace's file, makes this run untrusted. An entry by path alone is honoured as before,
/// with a notice that recording it closes the gap.
fn check_record(
    listed: &Listed,
    launch_dir: &Path,
    overrides: &Overrides,
) -> Result<(Trust, Option<String>), ConfigError> {
    match listed {
        Listed::No => Ok((Trust::Untrusted, None)),
        Listed::PathOnly => Ok((
            Trust::Trusted,
            Some(
                "this workspace is trusted by its path alone, so a change to its server, key \
                 or MCP servers would not be asked about: run `minicode trust` in it once to \
                 record what you trust"
                    .to_string(),
            ),
        )),
        Listed::Recorded(recorded) => {
            let changes = trust_record::current(launch_dir)?.changes(recorded);
            if changes.is_empty() {
                Ok((Trust::Trusted, None))
            } else if overrides.skip_workspace_file {
                Ok((Trust::Untrusted, None))
            } else {
                Err(ConfigError::TrustChanged {
                    workspace: trust::canonical(launch_dir),
                    changes,
                })
            }
        }
    }
}

/// Whether something exists at `path` in any form (even a dangling link or a folder), so a
/// broken file is reported rather than silently skipped.
fn present(path: &Path) -> Result<bool, ConfigError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(false)
        }
        Err(source) => Err(ConfigError::Unreadable {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The workspace's file is the user's own file (a user working in their config folder): read
/// it once, as the user's.
fn same_file(user: Option<&Path>, workspace: &Path) -> bool {
    match (user.map(Path::canonicalize), workspace.canonicalize()) {
        (Some(Ok(a)), Ok(b)) => a == b,
        _ => false,
    }
}

/// Lays one file over what is there, field by field.
macro_rules! lay {
    ($layers:ident, $over:ident, $path:ident; $($table:ident . $field:ident),* $(,)?) => {
        $(
            if let Some(value) = $over.$table.$field.take() {
                $layers.file.$table.$field = Some(value);
                $layers.origins.insert(
                    concat!(stringify!($table), ".", stringify!($field)).to_string(),
                    $path.clone(),
                );
            }
        )*
    };
}

impl Layers {
    fn add(&mut self, mut over: FileConfig, path: PathBuf) {
        // The key is one choice: a file that sets `api_key` or `api_key_env` replaces both from
        // the files below, so a user's `api_key_env` and a workspace's `api_key` never clash.
        if over.model.api_key.is_some() || over.model.api_key_env.is_some() {
            self.file.model.api_key = None;
            self.file.model.api_key_env = None;
            self.origins.remove("model.api_key");
            self.origins.remove("model.api_key_env");
        }
        if let Some(servers) = over.mcp_servers.take() {
            for (id, table) in servers {
                self.mcp_servers.insert(id, (table, path.clone()));
            }
        }
        if let Some(lsp) = over.lsp.take() {
            self.lsp.add(lsp, path.clone());
        }
        if let Some(permissions) = over.permissions.take() {
            self.permissions.push((permissions, path.clone()));
        }
        if let Some(approvals) = over.approved_mcp_servers.take() {
            self.approvals.extend(approvals);
        }
        // Only the user's file (or `--config`'s) arrives here with `[hooks]`: the workspace's
        // were taken out first (see `gather`).
        if let Some(hooks) = over.hooks.take() {
            self.hooks.push((hooks, path.clone(), false));
        }
        if let Some(approvals) = over.approved_hooks.take() {
            self.hook_approvals.extend(approvals);
        }
        // Only the user's file (or `--config`'s) arrives here with `[sandbox]`: the workspace's
        // table was taken out first (see `gather`).
        if let Some(table) = over.sandbox.take() {
            self.sandbox.user = Some((table, path.clone()));
        }
        self.parts.lay(&mut over.written, &path, &mut self.origins);
        let layers = self;
        lay!(layers, over, path;
            model.provider, model.base_url, model.name, model.api_key, model.api_key_env,
            model.context_window, model.max_tokens, model.request_timeout_secs,
            model.stream_idle_timeout_secs, model.max_tool_calls, model.send_reasoning,
            model.recover_tool_calls, model.first_look,
            model.profile, model.tools,
            tools.bash_timeout_secs, tools.max_rounds, tools.outputs_max_file_bytes,
            tools.outputs_max_bytes, tools.outputs_max_age_days, tools.max_background,
            context.reserve_tokens, context.keep_recent_tokens,
            ui.exit_transcript_turns, ui.syntax_highlighting,
            subagents.max_concurrent, subagents.timeout_secs,
            telemetry.otlp_endpoint, telemetry.headers, telemetry.protocol,
            telemetry.service_name, telemetry.include_content,
        );
        // Every field must be laid above: this pattern stops compiling when one is added.
        let FileConfig {
            trusted_workspaces: _,
            model:
                ModelTable {
                    provider: _,
                    base_url: _,
                    name: _,
                    api_key: _,
                    api_key_env: _,
                    context_window: _,
                    max_tokens: _,
                    request_timeout_secs: _,
                    stream_idle_timeout_secs: _,
                    max_tool_calls: _,
                    send_reasoning: _,
                    recover_tool_calls: _,
                    first_look: _,
                    profile: _,
                    tools: _,
                },
            tools:
                ToolsTable {
                    bash_timeout_secs: _,
                    max_rounds: _,
                    outputs_max_file_bytes: _,
                    outputs_max_bytes: _,
                    outputs_max_age_days: _,
                    max_background: _,
                },
            context:
                ContextTable {
                    reserve_tokens: _,
                    keep_recent_tokens: _,
                },
            ui:
                UiTable {
                    exit_transcript_turns: _,
                    syntax_highlighting: _,
                },
            mcp_servers: _,
            lsp: _,
            approved_mcp_servers: _,
            permissions: _,
            hooks: _,
            approved_hooks: _,
            subagents:
                SubagentsTable {
                    max_concurrent: _,
                    timeout_secs: _,
                },
            fetch: _,
            goal: _,
            checkpoints: _,
            written: _,
            sandbox: _,
            telemetry:
                TelemetryTable {
                    otlp_endpoint: _,
                    headers: _,
                    protocol: _,
                    service_name: _,
                    include_content: _,
                },
        } = over;
        layers.sources.push(path);
    }
}
