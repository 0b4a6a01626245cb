//! Workspace trust: the user's list of trusted workspaces (`trusted_workspaces` in the user's
//! own config file, never in a repository), the [`Trust`] every repository-supplied capability
//! must consult, and the edits behind `minicode trust` and `minicode untrust`.
//!
//! The rule: a workspace is trusted when its canonical path is listed exactly (no prefix
//! matching: trusting `/home/u` does not trust `/home/u/cloned-repo`). Until then its
//! `config/config.toml` may not choose the server, the provider or the key, and later
//! extensions a workspace supplies that can run code or reach the network (MCP servers,
//! skills, hooks) must not start. The edits keep the rest of the user's file as it was,
//! comments included (hence `toml_edit`). This module must not decide what an untrusted
//! workspace may do beyond answering the question; callers apply it.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Value};

use super::ConfigError;

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
pub fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let xdg = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let dir = xdg.or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(dir.join("minicode").join("config.toml"))
}

/// Looks `launch_dir` up in the list read from the user's file `file`.
pub(super) fn lookup(
    list: Option<&[String]>,
    file: &Path,
    launch_dir: &Path,
) -> Result<Trust, ConfigError> {
    let Some(list) = list else {
        return Ok(Trust::Untrusted);
    };
    if list.iter().any(|entry| !Path::new(entry).is_absolute()) {
        return Err(ConfigError::Invalid {
            origin: format!("config file {}", file.display()),
            field: "trusted_workspaces",
            reason: "every entry must be an absolute, canonical path (as `minicode trust` \
                     writes it)"
                .to_string(),
        });
    }
    let workspace = canonical(launch_dir);
    let listed = list.iter().any(|entry| Path::new(entry) == workspace);
    Ok(if listed {
        Trust::Trusted
    } else {
        Trust::Untrusted
    })
}

/// [`lookup`] when the user's file is not otherwise used (`--config`): any problem reading it
/// means untrusted, never an error.
pub(super) fn lookup_lenient(user_file: Option<&Path>, launch_dir: &Path) -> Trust {
    let Some(file) = user_file.filter(|f| f.exists()) else {
        return Trust::Untrusted;
    };
    super::file::read(file)
        .ok()
        .and_then(|parsed| lookup(parsed.trusted_workspaces.as_deref(), file, launch_dir).ok())
        .unwrap_or(Trust::Untrusted)
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

/// Whether the user trusts `launch_dir`, for commands that need no model (`minicode skills`):
/// read from the user's file alone, and any problem reading it means untrusted.
pub fn workspace_trust(env: &dyn Fn(&str) -> Option<String>, launch_dir: &Path) -> Trust {
    lookup_lenient(user_config_path(env).as_deref(), launch_dir)
}

pub(super) fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What `minicode trust` or `untrust` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustChange {
    Added,
    AlreadyTrusted,
    Removed,
    WasNotTrusted,
}

/// The change, the canonical workspace path and the user file that holds the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustOutcome {
    pub change: TrustChange,
    pub workspace: PathBuf,
    pub file: PathBuf,
}

/// Why the trust list could not be changed. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
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
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `minicode trust [PATH]`: adds the canonical `path` (which must be a folder) to the user's
/// list, creating the config folder (0700) and file (0600) when missing.
pub fn trust_workspace(
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
    edit_list(env, workspace, true)
}

/// `minicode untrust [PATH]`: removes `path` (canonical when it still exists, else as given)
/// from the user's list. A missing file or entry is not an error.
pub fn untrust_workspace(
    env: &dyn Fn(&str) -> Option<String>,
    path: &Path,
) -> Result<TrustOutcome, TrustError> {
    edit_list(env, canonical(path), false)
}

fn edit_list(
    env: &dyn Fn(&str) -> Option<String>,
    workspace: PathBuf,
    add: bool,
) -> Result<TrustOutcome, TrustError> {
    let file = user_config_path(env).ok_or(TrustError::NoUserConfig)?;
    let entry = workspace
        .to_str()
        .ok_or_else(|| TrustError::NotUtf8 {
            path: workspace.clone(),
        })?
        .to_string();
    // A user file that is a link (a dotfiles checkout) is edited where it points.
    let target = file.canonicalize().ok();
    let mut doc = match &target {
        Some(real) => read_document(real)?,
        None => DocumentMut::new(),
    };
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
                    "# Workspaces whose config/config.toml may choose the server, provider and \
                     key.\n# Changed by `minicode trust` and `minicode untrust`; exact canonical \
                     paths.\n",
                );
            }
            doc.get_mut("trusted_workspaces")
                .and_then(Item::as_array_mut)
                .ok_or_else(shape)?
        }
    };
    if array.iter().any(|v| v.as_str().is_none()) {
        return Err(shape());
    }
    let listed = array.iter().any(|v| v.as_str() == Some(entry.as_str()));
    let change = match (add, listed) {
        (true, true) => return Ok(outcome(TrustChange::AlreadyTrusted)),
        (false, false) => return Ok(outcome(TrustChange::WasNotTrusted)),
        (true, false) => {
            array.push(entry.as_str());
            TrustChange::Added
        }
        (false, true) => {
            array.retain(|v| v.as_str() != Some(entry.as_str()));
            TrustChange::Removed
        }
    };
    let write_error = |source| TrustError::Write {
        path: file.clone(),
        source,
    };
    let (path, mode) = match target {
        Some(real) => (real, None),
        None => {
            if let Some(dir) = file.parent() {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(write_error)?;
            }
            (file.clone(), Some(0o600))
        }
    };
    crate::fsutil::write_atomic(&path, doc.to_string().as_bytes(), mode).map_err(write_error)?;
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
