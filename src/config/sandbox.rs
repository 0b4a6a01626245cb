//! `[sandbox]`: which profile `bash` calls run under, whether they reach the network, and
//! which extra folders they may write, and which paths they must not see. The user's file (or the one `--config` names) sets it;
//! a trusted workspace's file may only narrow it (a stricter mode, network off, fewer roots):
//! a value that would widen it is ignored with a notice naming it, because a repository must
//! never loosen the confinement of the commands its own content may prompt. Flags
//! (`--sandbox`, `--network`) come last and may do either. Nothing here confines anything:
//! [`Sandbox::policy`] hands the choice to `sandbox::Policy`, which the helper enforces.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;
use crate::sandbox::{Mode, Policy};

/// `[sandbox]` as one file writes it.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SandboxTable {
    pub(crate) mode: Option<Mode>,
    pub(crate) network: Option<bool>,
    pub(crate) writable_roots: Option<Vec<PathBuf>>,
    pub(crate) hidden: Option<Vec<PathBuf>>,
    pub(crate) cache: Option<PathBuf>,
}

/// The sandbox the session's `bash` calls run under (see docs/configuration.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub mode: Mode,
    /// IPv4/IPv6 sockets allowed in the confined profiles.
    pub network: bool,
    /// Folders besides the workspace a command may write (absolute).
    pub writable_roots: Vec<PathBuf>,
    /// Every path a confined command must not see: the defaults (`sandbox::hidden`) and
    /// `hidden` from the files (absolute, `~` expanded).
    pub(crate) hidden: Vec<PathBuf>,
    /// The folder confined commands' caches go to (absolute, `~` expanded); `None`: a
    /// per-session folder inside their temporary folder (see `sandbox::cache`).
    pub(crate) cache: Option<PathBuf>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self {
            mode: Mode::WorkspaceWrite,
            network: false,
            writable_roots: Vec::new(),
            hidden: Vec::new(),
            cache: None,
        }
    }
}

impl Sandbox {
    /// The policy of a session of `workspace`: this profile, with the session's private
    /// temporary folder. The one place a session assembly turns configuration into a policy.
    pub(crate) fn policy(&self, workspace: &Path, session_id: &str) -> Policy {
        Policy::for_workspace(
            self.mode,
            self.network,
            workspace,
            &self.writable_roots,
            crate::sandbox::tmpdir::for_session(session_id),
        )
        .hiding(self.hidden.clone())
        .caching(self.cache.clone())
    }
}

/// The profile's short name as users write it (`workspace-write`, `read-only`, `off`).
pub(crate) fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::WorkspaceWrite => "workspace-write",
        Mode::ReadOnly => "read-only",
        Mode::Off => "off",
    }
}

/// Parses a profile name as `--sandbox` and the config take it.
pub(crate) fn parse_mode(text: &str) -> Result<Mode, String> {
    match text {
        "workspace-write" => Ok(Mode::WorkspaceWrite),
        "read-only" => Ok(Mode::ReadOnly),
        "off" => Ok(Mode::Off),
        other => Err(format!(
            "unknown sandbox mode `{}` (expected workspace-write, read-only or off)",
            crate::sanitize::visible(other)
        )),
    }
}

/// How much a mode confines: a higher rank is stricter.
fn rank(mode: Mode) -> u8 {
    match mode {
        Mode::Off => 0,
        Mode::WorkspaceWrite => 1,
        Mode::ReadOnly => 2,
    }
}

/// The `[sandbox]` tables read, in order: the user's (or `--config`'s) first, then the
/// workspace's with whether the workspace is trusted.
pub(super) struct Tables {
    pub(crate) user: Option<(SandboxTable, PathBuf)>,
    pub(crate) workspace: Option<(SandboxTable, PathBuf, bool)>,
}

/// The flags that choose the sandbox.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Flags {
    pub(crate) mode: Option<Mode>,
    pub(crate) network: bool,
}

/// Resolves the sandbox: the user's table, narrowed by a trusted workspace's, then the flags.
/// A relative root is an error (in any file); a widening workspace value is a notice. Hidden
/// paths add up: the defaults, the user's, and a trusted workspace's (hiding more only
/// narrows).
pub(super) fn resolve(
    tables: Tables,
    flags: Flags,
    env: &dyn Fn(&str) -> Option<String>,
    notices: &mut Vec<String>,
) -> Result<Sandbox, ConfigError> {
    let mut sandbox = Sandbox::default();
    let mut hidden = Vec::new();
    if let Some((table, path)) = &tables.user {
        check_roots(table, path)?;
        hidden.extend(hidden_paths(table, path, env)?);
        sandbox.mode = table.mode.unwrap_or(sandbox.mode);
        sandbox.network = table.network.unwrap_or(sandbox.network);
        sandbox.writable_roots = table.writable_roots.clone().unwrap_or_default();
        sandbox.cache = cache_root(table, path, env)?;
    }
    if let Some((table, path, trusted)) = &tables.workspace {
        check_roots(table, path)?;
        let extra = hidden_paths(table, path, env)?;
        let cache = cache_root(table, path, env)?;
        if *trusted {
            narrow(&mut sandbox, table, path, notices);
            if cache.is_some() && cache != sandbox.cache {
                notices.push(format!(
                    "config file {}: sandbox.cache is ignored: a workspace's config may narrow \
                     the sandbox but not widen it (your user config may set it)",
                    path.display()
                ));
            }
            hidden.extend(extra);
        } else if table.mode.is_some()
            || table.network.is_some()
            || table.writable_roots.is_some()
            || table.hidden.is_some()
            || table.cache.is_some()
        {
            notices.push(format!(
                "config file {}: [sandbox] is ignored: this workspace is not trusted (run \
                 `minicode trust` to let it narrow the sandbox)",
                path.display()
            ));
        }
    }
    if let Some(mode) = flags.mode {
        sandbox.mode = mode;
    }
    if flags.network {
        sandbox.network = true;
    }
    sandbox.hidden =
        crate::sandbox::hidden::list(env, super::user_config_path(env).as_deref(), &hidden);
    Ok(sandbox)
}

/// `hidden` of one file, `~` expanded; a path that is still not absolute is an error.
fn hidden_paths(
    table: &SandboxTable,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<PathBuf>, ConfigError> {
    let mut out = Vec::new();
    for entry in table.hidden.iter().flatten() {
        match crate::sandbox::hidden::expand(entry, env) {
            Some(full) => out.push(full),
            None => {
                return Err(ConfigError::Invalid {
                    origin: format!("config file {}", path.display()),
                    field: "sandbox.hidden",
                    reason: format!(
                        "`{}` is relative; every hidden path must be absolute or start with `~/`",
                        crate::sanitize::visible(&entry.to_string_lossy())
                    ),
                });
            }
        }
    }
    Ok(out)
}

/// Lays a workspace's table over the user's choice, keeping only what makes it stricter.
fn narrow(sandbox: &mut Sandbox, table: &SandboxTable, path: &Path, notices: &mut Vec<String>) {
    let ignored = |field: &str, value: &str| {
        format!(
            "config file {}: sandbox.{field} = {value} is ignored: a workspace's config may \
             narrow the sandbox but not widen it (your user config or a flag may)",
            path.display()
        )
    };
    if let Some(mode) = table.mode {
        if rank(mode) >= rank(sandbox.mode) {
            sandbox.mode = mode;
        } else {
            notices.push(ignored("mode", &format!("\"{}\"", mode_name(mode))));
        }
    }
    match table.network {
        Some(false) => sandbox.network = false,
        Some(true) if !sandbox.network => notices.push(ignored("network", "true")),
        _ => {}
    }
    if let Some(roots) = &table.writable_roots {
        let mut kept = Vec::new();
        for root in roots {
            if sandbox.writable_roots.contains(root) {
                kept.push(root.clone());
            } else {
                let shown = format!("\"{}\"", crate::sanitize::visible(&root.to_string_lossy()));
                notices.push(ignored("writable_roots", &shown));
            }
        }
        sandbox.writable_roots = kept;
    }
}

/// Every writable root must be absolute and one the sandbox can honour: never inside a git
/// directory (its config and hooks stay read-only whatever the config says, and git may
/// write its data there without a root) nor inside `.minicode`.
fn check_roots(table: &SandboxTable, path: &Path) -> Result<(), ConfigError> {
    let error = |root: &Path, why: &str| ConfigError::Invalid {
        origin: format!("config file {}", path.display()),
        field: "sandbox.writable_roots",
        reason: format!(
            "`{}` {why}",
            crate::sanitize::visible(&root.to_string_lossy())
        ),
    };
    for root in table.writable_roots.iter().flatten() {
        if !root.is_absolute() {
            return Err(error(
                root,
                "is relative; every writable root must be an absolute path",
            ));
        }
        let inside = |name: &str| root.components().any(|c| c.as_os_str() == name);
        if inside(".git") {
            return Err(error(
                root,
                "is inside a git directory, which the sandbox cannot make writable: its \
                 config and hooks stay read-only, and git may write its data without a root",
            ));
        }
        if inside(".minicode") {
            return Err(error(
                root,
                "is inside .minicode, which the sandbox keeps read-only",
            ));
        }
    }
    Ok(())
}

/// `cache` of one file, `~` expanded; a path that is still not absolute is an error.
fn cache_root(
    table: &SandboxTable,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<PathBuf>, ConfigError> {
    let Some(cache) = &table.cache else {
        return Ok(None);
    };
    match crate::sandbox::hidden::expand(cache, env) {
        Some(full) => Ok(Some(full)),
        None => Err(ConfigError::Invalid {
            origin: format!("config file {}", path.display()),
            field: "sandbox.cache",
            reason: format!(
                "`{}` is relative; the cache folder must be absolute or start with `~/`",
                crate::sanitize::visible(&cache.to_string_lossy())
            ),
        }),
    }
}
