//! Workspace trust: the user's list of trusted workspaces (`trusted_workspaces` in the user's
//! own config file, never in a repository), the [`Trust`] every repository-supplied capability
//! must consult, and the edits behind `minicode trust` and `minicode untrust`.
//!
//! The rule: a workspace is trusted when its canonical path is listed exactly (no prefix
//! matching: trusting `/home/u` does not trust `/home/u/cloned-repo`). Until then its
//! `.minicode/config.toml` may not choose the server, the provider or the key, and later
//! extensions a workspace supplies that can run code or reach the network (MCP servers,
//! skills, hooks) must not start. The edits keep the rest of the user's file as it was,
//! comments included (hence `toml_edit`). This module must not decide what an untrusted
//! workspace may do beyond answering the question; callers apply it.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, InlineTable, Item, Value};

use super::ConfigError;
use super::file::TrustEntry;
use super::trust_record::{self, Record};
use super::user_file::UserFile;

/// Whether the user trusts the workspace minicode was started in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Listed in the user's `trusted_workspaces`.
    Trusted,
    /// Not listed: anything the repository supplies is treated as untrusted input.
    Untrusted,
}

impl Trust {
    /// The one question every repository-supplied capability asks before it may run code or
    /// reach the network.
    pub(crate) fn is_trusted(self) -> bool {
        self == Trust::Trusted
    }
}

/// The user's config file: `$XDG_CONFIG_HOME/minicode/config.toml`, or
/// `$HOME/.config/minicode/config.toml` when `XDG_CONFIG_HOME` is unset, empty or relative.
pub(crate) fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let xdg = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let dir = xdg.or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(dir.join("minicode").join("config.toml"))
}

/// How the user's list names a workspace.
pub(super) enum Listed {
    No,
    /// By path alone (as versions before the digests wrote it): trusted, whatever it holds.
    PathOnly,
    /// With digests of what trust covered then (`config/trust_record.rs`).
    Recorded(Record),
}

/// Looks `launch_dir` up in the list read from the user's file `file`.
pub(super) fn lookup(
    list: Option<&[TrustEntry]>,
    file: &Path,
    launch_dir: &Path,
) -> Result<Listed, ConfigError> {
    let Some(list) = list else {
        return Ok(Listed::No);
    };
    if list
        .iter()
        .any(|entry| !Path::new(entry.path()).is_absolute())
    {
        return Err(ConfigError::Invalid {
            origin: format!("config file {}", file.display()),
            field: "trusted_workspaces",
            reason: "every entry must be an absolute, canonical path (as `minicode trust` \
                     writes it)"
                .to_string(),
        });
    }
    let workspace = canonical(launch_dir);
    let entry = list
        .iter()
        .rev()
        .find(|entry| Path::new(entry.path()) == workspace);
    Ok(match entry {
        None => Listed::No,
        Some(TrustEntry::Path(_)) => Listed::PathOnly,
        Some(TrustEntry::Recorded { settings, .. }) => Listed::Recorded(settings.clone()),
    })
}

/// [`lookup`] when the user's file is not otherwise used (`--config`): any problem reading it
/// means untrusted, never an error, and so does a change to what trust covered.
pub(super) fn lookup_lenient(user_file: Option<&Path>, launch_dir: &Path) -> Trust {
    let Some(file) = user_file.filter(|f| f.exists()) else {
        return Trust::Untrusted;
    };
    let listed = super::file::read(file)
        .ok()
        .and_then(|parsed| lookup(parsed.trusted_workspaces.as_deref(), file, launch_dir).ok());
    match listed {
        Some(Listed::PathOnly) => Trust::Trusted,
        Some(Listed::Recorded(recorded)) => {
            let unchanged = trust_record::current(launch_dir)
                .is_ok_and(|current| current.changes(&recorded).is_empty());
            if unchanged {
                Trust::Trusted
            } else {
                Trust::Untrusted
            }
        }
        _ => Trust::Untrusted,
    }
}

/// The `.mcp.json` approvals in the user's file when it is not otherwise used (`--config`):
/// any problem reading it means none.
pub(super) fn approvals_lenient(user_file: Option<&Path>) -> Vec<super::file::ApprovedMcpServer> {
    user_file
        .filter(|f| f.exists())
        .and_then(|file| super::file::read(file).ok())
        .and_then(|parsed| parsed.approved_mcp_servers)
        .unwrap_or_default()
}

/// The user's approvals of workspaces' hooks, read leniently like [`approvals_lenient`].
pub(super) fn hook_approvals_lenient(user_file: Option<&Path>) -> Vec<super::hooks::ApprovedHook> {
    user_file
        .filter(|f| f.exists())
        .and_then(|file| super::file::read(file).ok())
        .and_then(|parsed| parsed.approved_hooks)
        .unwrap_or_default()
}

/// Whether the user trusts `launch_dir`, for commands that need no model (`minicode skills`):
/// read from the user's file alone, and any problem reading it means untrusted.
pub(crate) fn workspace_trust(env: &dyn Fn(&str) -> Option<String>, launch_dir: &Path) -> Trust {
    lookup_lenient(user_config_path(env).as_deref(), launch_dir)
}

pub(super) fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What `minicode trust` or `untrust` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrustChange {
    Added,
    AlreadyTrusted,
    /// Trusted before, by path alone or with settings that have changed since: recorded again
    /// as the workspace is now.
    Renewed,
    Removed,
    WasNotTrusted,
}

/// The change, the canonical workspace path and the user file that holds the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrustOutcome {
    pub(crate) change: TrustChange,
    pub(crate) workspace: PathBuf,
    pub(crate) file: PathBuf,
}

/// Why the trust list could not be changed. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TrustError {
    #[error("cannot tell where your user config lives: set HOME (or an absolute XDG_CONFIG_HOME)")]
    NoUserConfig,
    #[error("cannot trust {}: {source}", .path.display())]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot record {}: the path is not valid UTF-8", .path.display())]
    NotUtf8 { path: PathBuf },
    #[error("cannot read {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The text is not quoted: a line of the file may hold a key.
    #[error(
        "config file {}, line {line}, column {column}: syntax error; fix the file before \
         changing the trust list",
        .path.display()
    )]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("config file {}: `trusted_workspaces` must be an array of strings", .path.display())]
    Shape { path: PathBuf },
    /// The workspace's config cannot be read, so what trust would cover is unknown.
    #[error("cannot trust the workspace: {0}")]
    Settings(Box<ConfigError>),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `minicode trust [PATH]`: adds the canonical `path` (which must be a folder) to the user's
/// list, creating the config folder (0700) and file (0600) when missing.
pub(crate) fn trust_workspace(
    env: &dyn Fn(&str) -> Option<String>,
    path: &Path,
) -> Result<TrustOutcome, TrustError> {
    let workspace = path
        .canonicalize()
        .map_err(|source| TrustError::Workspace {
            path: path.to_path_buf(),
            source,
        })?;
    if !workspace.is_dir() {
        return Err(TrustError::Workspace {
            path: path.to_path_buf(),
            source: std::io::Error::other("it is not a folder"),
        });
    }
    let record = trust_record::current(&workspace)
        .map_err(|e| TrustError::Settings(Box::new(e)))?
        .record();
    edit_list(env, workspace, Some(record))
}

/// `minicode untrust [PATH]`: removes `path` (canonical when it still exists, else as given)
/// from the user's list. A missing file or entry is not an error.
pub(crate) fn untrust_workspace(
    env: &dyn Fn(&str) -> Option<String>,
    path: &Path,
) -> Result<TrustOutcome, TrustError> {
    edit_list(env, canonical(path), None)
}

/// The path of one list entry: a string, or a table's `path`.
fn entry_path(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s.value()),
        Value::InlineTable(t) => t.get("path").and_then(Value::as_str),
        _ => None,
    }
}

/// The entry `minicode trust` writes: `{ path = "…", settings = { "<item>" = "<sha256>" } }`.
fn recorded_entry(path: &str, record: &Record) -> Value {
    let mut settings = InlineTable::new();
    for (item, digest) in record {
        settings.insert(item, Value::from(digest.as_str()));
    }
    let mut entry = InlineTable::new();
    entry.insert("path", Value::from(path));
    entry.insert("settings", Value::InlineTable(settings));
    Value::InlineTable(entry)
}

/// Whether `value` already records exactly `record`.
fn records(value: &Value, record: &Record) -> bool {
    let Some(settings) = value
        .as_inline_table()
        .and_then(|t| t.get("settings"))
        .and_then(Value::as_inline_table)
    else {
        return false;
    };
    settings.len() == record.len()
        && record
            .iter()
            .all(|(k, v)| settings.get(k).and_then(Value::as_str) == Some(v.as_str()))
}

/// Adds (`record` given) or removes the workspace's entry.
fn edit_list(
    env: &dyn Fn(&str) -> Option<String>,
    workspace: PathBuf,
    record: Option<Record>,
) -> Result<TrustOutcome, TrustError> {
    let add = record.is_some();
    let mut user = UserFile::open(env)?;
    let entry = workspace
        .to_str()
        .ok_or_else(|| TrustError::NotUtf8 {
            path: workspace.clone(),
        })?
        .to_string();
    let file = user.path.clone();
    let doc = &mut user.doc;
    let outcome = |change| TrustOutcome {
        change,
        workspace: workspace.clone(),
        file: file.clone(),
    };
    let shape = || TrustError::Shape { path: file.clone() };
    let array = match doc.get_mut("trusted_workspaces") {
        Some(item) => item.as_array_mut().ok_or_else(shape)?,
        None if !add => return Ok(outcome(TrustChange::WasNotTrusted)),
        None => {
            doc.insert(
                "trusted_workspaces",
                Item::Value(Value::Array(Array::new())),
            );
            if let Some(mut key) = doc.key_mut("trusted_workspaces") {
                key.leaf_decor_mut().set_prefix(
                    "# Workspaces whose .minicode/config.toml may choose the server, provider and \
                     key.\n# Changed by `minicode trust` and `minicode untrust`; exact canonical \
                     paths.\n",
                );
            }
            doc.get_mut("trusted_workspaces")
                .and_then(Item::as_array_mut)
                .ok_or_else(shape)?
        }
    };
    if array.iter().any(|v| entry_path(v).is_none()) {
        return Err(shape());
    }
    let is_entry = |v: &Value| entry_path(v) == Some(entry.as_str());
    let listed: Vec<&Value> = array.iter().filter(|v| is_entry(v)).collect();
    let change = match (record, listed.as_slice()) {
        (Some(record), [one]) if records(one, &record) => {
            return Ok(outcome(TrustChange::AlreadyTrusted));
        }
        (None, []) => return Ok(outcome(TrustChange::WasNotTrusted)),
        (Some(record), found) => {
            // Any older entries for the path (by path alone, or with other digests) are
            // replaced by one with what is there now.
            let change = if found.is_empty() {
                TrustChange::Added
            } else {
                TrustChange::Renewed
            };
            array.retain(|v| !is_entry(v));
            array.push(recorded_entry(&entry, &record));
            change
        }
        (None, _) => {
            array.retain(|v| !is_entry(v));
            TrustChange::Removed
        }
    };
    // One entry per line: entries with their digests are long.
    for value in array.iter_mut() {
        value.decor_mut().set_prefix("\n    ");
        value.decor_mut().set_suffix("");
    }
    array.set_trailing_comma(!array.is_empty());
    array.set_trailing(if array.is_empty() { "" } else { "\n" });
    user.save()?;
    Ok(outcome(change))
}

pub(super) fn read_document(path: &Path) -> Result<DocumentMut, TrustError> {
    use std::io::Read;
    let unreadable = |source| TrustError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let (mut file, _) = crate::fsutil::open_regular(path).map_err(|e| {
        unreadable(match e {
            crate::fsutil::OpenError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        })
    })?;
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(unreadable)?;
    text.parse::<DocumentMut>().map_err(|e| {
        let (line, column) = super::file::line_column(&text, e.span().map_or(0, |s| s.start));
        TrustError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
        }
    })
}
