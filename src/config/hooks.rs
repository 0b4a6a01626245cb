//! `[[hooks.<Event>]]`: commands the user wants run at points of a session (see
//! docs/hooks.md), checked into [`Hook`]s with the file each came from, and the user's
//! approvals of a trusted workspace's hooks (`[[approved_hooks]]`, recorded in the user's
//! config and keyed by workspace, event and a SHA-256 of the definition, as `.mcp.json`
//! servers are). An untrusted workspace's hooks are left out with a notice. Nothing here runs
//! a hook (the core's hooks part does, confined like `bash`) or asks the user (the CLI does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::hooks::{Hook, HookEvent};
use toml_edit::{ArrayOfTables, Item, Table};

use super::user_file::UserFile;
use super::{ConfigError, TrustError};

/// The default deadline of one hook run.
const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// The most `max_blocks` may be: each block is another model call.
const MAX_STOP_BLOCKS: u32 = 100;
/// A recorded approval of a workspace's hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookApproval {
    pub(crate) workspace: String,
    pub(crate) event: String,
    pub(crate) sha256: String,
}

/// One `[[hooks.<Event>]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HookTable {
    pub(crate) matcher: Option<String>,
    pub(crate) command: String,
    /// Seconds.
    pub(crate) timeout: Option<u64>,
    /// `Stop` hooks only: consecutive blocks allowed in one turn.
    pub(crate) max_blocks: Option<u32>,
    /// `"on"` (the default: the session's `bash` sandbox) or `"off"` (user file only).
    pub(crate) sandbox: Option<String>,
}

/// `[hooks]` of one file: event name → its hooks.
pub(super) type HooksTable = BTreeMap<String, Vec<HookTable>>;

/// One `[[approved_hooks]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovedHook {
    pub(crate) workspace: String,
    pub(crate) event: String,
    pub(crate) sha256: String,
}

/// Checks the hooks of each file (`from_workspace`: the trusted workspace's own file).
pub(super) fn from_tables(
    tables: Vec<(HooksTable, PathBuf, bool)>,
) -> Result<Vec<Hook>, ConfigError> {
    let mut hooks = Vec::new();
    for (table, origin, from_workspace) in tables {
        let invalid = |field: &'static str, reason: String| ConfigError::Invalid {
            origin: format!("config file {}", origin.display()),
            field,
            reason,
        };
        for (name, entries) in table {
            let Some(event) = HookEvent::parse(&name) else {
                let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
                return Err(invalid(
                    "hooks",
                    format!(
                        "unknown event `{}` (known: {})",
                        crate::sanitize::visible(&name),
                        known.join(", ")
                    ),
                ));
            };
            for entry in entries {
                if entry.command.trim().is_empty() {
                    return Err(invalid("hooks.command", "must not be empty".into()));
                }
                if entry.matcher.is_some() && !event.is_tool_event() {
                    return Err(invalid(
                        "hooks.matcher",
                        format!(
                            "{} hooks take no matcher (only PreToolUse and PostToolUse do)",
                            event.as_str()
                        ),
                    ));
                }
                let max = crate::defaults::bounds::TIMEOUT_SECS;
                let secs = entry.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
                if secs == 0 || secs > max {
                    return Err(invalid(
                        "hooks.timeout",
                        format!("must be between 1 and {max}"),
                    ));
                }
                if entry.max_blocks.is_some() && event != HookEvent::Stop {
                    return Err(invalid(
                        "hooks.max_blocks",
                        "only Stop hooks take max_blocks".into(),
                    ));
                }
                let max_blocks = entry
                    .max_blocks
                    .unwrap_or(crate::hooks::DEFAULT_STOP_MAX_BLOCKS);
                if !(1..=MAX_STOP_BLOCKS).contains(&max_blocks) {
                    return Err(invalid(
                        "hooks.max_blocks",
                        format!("must be between 1 and {MAX_STOP_BLOCKS}"),
                    ));
                }
                let unconfined = unconfined(entry.sandbox.as_deref(), from_workspace)
                    .map_err(|reason| invalid("hooks.sandbox", reason))?;
                let matcher = entry.matcher.filter(|m| !m.trim().is_empty() && m != "*");
                hooks.push(Hook {
                    event,
                    matcher,
                    command: entry.command,
                    timeout: Duration::from_secs(secs),
                    origin: origin.clone(),
                    from_workspace,
                    max_blocks,
                    unconfined,
                });
            }
        }
    }
    Ok(hooks)
}

/// Whether a hook's `sandbox` setting lets it run unconfined. `"off"` is the user's own say
/// about their own command; a workspace's file may not say it (a repository must never lift
/// the sandbox), and that is a config error rather than a hook quietly run confined, so the
/// author learns at once why it cannot reach what it needs.
fn unconfined(setting: Option<&str>, from_workspace: bool) -> Result<bool, String> {
    match setting {
        None | Some("on") => Ok(false),
        Some("off") if from_workspace => Err(
            "`sandbox = \"off\"` is allowed only in your user config; a workspace's hooks \
             always run under the sandbox"
                .into(),
        ),
        Some("off") => Ok(true),
        Some(other) => Err(format!(
            "must be \"on\" or \"off\", not `{}`",
            crate::sanitize::visible(other)
        )),
    }
}

/// The recorded approvals, as the config holds them.
pub(super) fn approvals(list: Vec<ApprovedHook>) -> Vec<HookApproval> {
    list.into_iter()
        .map(|a| HookApproval {
            workspace: a.workspace,
            event: a.event,
            sha256: a.sha256,
        })
        .collect()
}

/// The notice for an untrusted workspace's hooks, which are left out.
pub(super) fn untrusted_notice(path: &Path) -> String {
    format!(
        "config file {}: its [hooks] are ignored because this workspace is not trusted (run \
         `minicode trust` in it; each hook is then still asked about once)",
        path.display()
    )
}

/// Whether `hook` of `workspace` (canonical) was approved as it is defined now. A hook of the
/// user's own file needs no approval.
pub(crate) fn is_approved(approvals: &[HookApproval], workspace: &Path, hook: &Hook) -> bool {
    if !hook.from_workspace {
        return true;
    }
    let hash = hook.definition_hash();
    approvals.iter().any(|a| {
        Path::new(&a.workspace) == workspace && a.event == hook.event.as_str() && a.sha256 == hash
    })
}

/// Records in the user's config that `hook` of `workspace` may run as it is defined now,
/// keeping the rest of the file as it was.
pub(crate) fn approve_hook(
    env: &dyn Fn(&str) -> Option<String>,
    workspace: &Path,
    hook: &Hook,
) -> Result<PathBuf, TrustError> {
    let mut user = UserFile::open(env)?;
    let workspace = workspace.to_str().ok_or_else(|| TrustError::NotUtf8 {
        path: workspace.to_path_buf(),
    })?;
    let file = user.path.clone();
    let doc = &mut user.doc;
    if doc.get("approved_hooks").is_none() {
        doc.insert("approved_hooks", Item::ArrayOfTables(ArrayOfTables::new()));
    }
    let list = doc
        .get_mut("approved_hooks")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or_else(|| TrustError::Shape { path: file.clone() })?;
    let hash = hook.definition_hash();
    let known = list.iter().any(|t| {
        t.get("workspace").and_then(Item::as_str) == Some(workspace)
            && t.get("sha256").and_then(Item::as_str) == Some(hash.as_str())
    });
    if !known {
        let mut entry = Table::new();
        entry.insert("workspace", toml_edit::value(workspace));
        entry.insert("event", toml_edit::value(hook.event.as_str()));
        entry.insert("sha256", toml_edit::value(hash));
        list.push(entry);
    }
    user.save()
}
