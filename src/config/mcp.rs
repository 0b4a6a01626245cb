//! MCP server definitions: the checked `[mcp_servers.<id>]` tables of the config files, a
//! trusted workspace's `.mcp.json` (read confined to the workspace, never in an untrusted
//! one), and the user's approvals of `.mcp.json` servers, recorded in the user's config next
//! to `trusted_workspaces` and keyed by workspace, server id and a SHA-256 of the definition,
//! so a changed definition is asked about again. It decides nothing about starting a server
//! (the CLI asks and `tools::mcp` runs them) and never writes anywhere but the user's file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml_edit::{ArrayOfTables, Item, Table};

use super::file::McpServerTable;
use super::user_file::UserFile;
use super::{ConfigError, TrustError};

/// The workspace file with MCP servers in the format other agents use.
pub(crate) const MCP_JSON: &str = ".mcp.json";
/// The largest `.mcp.json` read.
const MAX_MCP_JSON_BYTES: u64 = 1024 * 1024;

/// One MCP server definition, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub id: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// As written; relative paths are taken from the workspace.
    pub cwd: Option<String>,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
    /// The file that defines it.
    pub origin: PathBuf,
}

impl McpServer {
    /// A SHA-256 (hex) of what the server runs: command, arguments, environment and folder.
    /// An approval holds it, so any change to these asks again.
    pub fn definition_hash(&self) -> String {
        use sha2::Digest;
        let canonical = serde_json::json!({
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "cwd": self.cwd,
        });
        let digest = sha2::Sha256::digest(canonical.to_string().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A recorded approval of a `.mcp.json` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpApproval {
    pub(crate) workspace: String,
    pub(crate) server: String,
    pub(crate) sha256: String,
}

/// Whether `server` of `workspace` (canonical) was approved as it is defined now.
pub(crate) fn is_approved(approvals: &[McpApproval], workspace: &Path, server: &McpServer) -> bool {
    let hash = server.definition_hash();
    approvals
        .iter()
        .any(|a| Path::new(&a.workspace) == workspace && a.server == server.id && a.sha256 == hash)
}

/// Checks the servers of the merged config files.
pub(super) fn from_tables(
    tables: std::collections::BTreeMap<String, (McpServerTable, PathBuf)>,
) -> Result<Vec<McpServer>, ConfigError> {
    let mut servers = Vec::new();
    for (id, (table, origin)) in tables {
        let invalid = |field: &'static str, reason: &str| ConfigError::Invalid {
            origin: format!("config file {}", origin.display()),
            field,
            reason: format!("server `{}`: {reason}", crate::sanitize::visible(&id)),
        };
        if id.trim().is_empty() {
            return Err(invalid("mcp_servers", "the id must not be empty"));
        }
        if table.command.trim().is_empty() {
            return Err(invalid("mcp_servers.command", "must not be empty"));
        }
        let max = crate::defaults::bounds::TIMEOUT_SECS;
        let secs = |value: Option<u64>, default: u64, field: &'static str| match value {
            Some(v) if v == 0 || v > max => {
                Err(invalid(field, &format!("must be between 1 and {max}")))
            }
            Some(v) => Ok(Duration::from_secs(v)),
            None => Ok(Duration::from_secs(default)),
        };
        servers.push(McpServer {
            startup_timeout: secs(
                table.startup_timeout_secs,
                crate::defaults::MCP_STARTUP_TIMEOUT.as_secs(),
                "mcp_servers.startup_timeout_secs",
            )?,
            call_timeout: secs(
                table.call_timeout_secs,
                crate::defaults::MCP_CALL_TIMEOUT.as_secs(),
                "mcp_servers.call_timeout_secs",
            )?,
            id,
            command: table.command,
            args: table.args,
            env: table.env,
            cwd: table.cwd,
            enabled: table.enabled.unwrap_or(true),
            origin,
        });
    }
    Ok(servers)
}

/// What `.mcp.json` holds: `{"mcpServers": {"<id>": {"command", "args", "env"}}}`. Fields
/// other tools add are ignored.
#[derive(Deserialize)]
struct McpJson {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, JsonServer>,
}

#[derive(Deserialize)]
struct JsonServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    url: Option<String>,
}

/// The servers of the workspace's `.mcp.json` (none when there is no file), and notes about
/// entries that were skipped. Call it only for a trusted workspace. The file is opened
/// confined to the workspace (no link out, no FIFO); an unreadable or malformed file is an
/// error for the user, naming the file but quoting none of it.
pub(crate) fn workspace_servers(workspace: &Path) -> Result<(Vec<McpServer>, Vec<String>), String> {
    use std::io::Read;
    let path = workspace.join(MCP_JSON);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok((Vec::new(), Vec::new()));
    }
    let shown = MCP_JSON;
    let (file, meta) = crate::fsutil::open_confined(workspace, &path)
        .map_err(|e| format!("{shown} was not read: {e}"))?;
    if meta.len() > MAX_MCP_JSON_BYTES {
        return Err(format!("{shown} was not read: it is larger than 1 MiB"));
    }
    let mut text = String::new();
    file.take(MAX_MCP_JSON_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("{shown} was not read: {e}"))?;
    let parsed: McpJson = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{shown} was not read: it is not valid (line {}, column {}: {})",
            e.line(),
            e.column(),
            match e.classify() {
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof =>
                    "not JSON",
                _ => "unexpected shape",
            }
        )
    })?;
    let mut servers = Vec::new();
    let mut notes = Vec::new();
    for (id, entry) in parsed.mcp_servers {
        let name = crate::sanitize::visible(&id);
        let remote = entry.url.is_some() || entry.kind.as_deref().is_some_and(|k| k != "stdio");
        let command = entry.command.filter(|c| !c.trim().is_empty());
        let command = match command {
            Some(command) if !remote => command,
            _ => {
                notes.push(format!(
                    "MCP server `{name}` in {shown} was skipped: only servers started as a \
                     command (stdio) are supported"
                ));
                continue;
            }
        };
        servers.push(McpServer {
            id,
            command,
            args: entry.args,
            env: entry.env,
            cwd: entry.cwd,
            enabled: true,
            startup_timeout: Duration::from_secs(crate::defaults::MCP_STARTUP_TIMEOUT.as_secs()),
            call_timeout: Duration::from_secs(crate::defaults::MCP_CALL_TIMEOUT.as_secs()),
            origin: path.clone(),
        });
    }
    Ok((servers, notes))
}

/// Records in the user's config that `server` of `workspace` may start as it is defined now
/// (replacing an older approval of the same server), keeping the rest of the file as it was.
pub(crate) fn approve_mcp_server(
    env: &dyn Fn(&str) -> Option<String>,
    workspace: &Path,
    server: &McpServer,
) -> Result<PathBuf, TrustError> {
    let mut user = UserFile::open(env)?;
    let workspace = workspace.to_str().ok_or_else(|| TrustError::NotUtf8 {
        path: workspace.to_path_buf(),
    })?;
    let file = user.path.clone();
    let doc = &mut user.doc;
    let shape = || TrustError::Shape { path: file.clone() };
    if doc.get("approved_mcp_servers").is_none() {
        doc.insert(
            "approved_mcp_servers",
            Item::ArrayOfTables(ArrayOfTables::new()),
        );
    }
    let list = doc
        .get_mut("approved_mcp_servers")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or_else(shape)?;
    list.retain(|t| {
        !(t.get("workspace").and_then(Item::as_str) == Some(workspace)
            && t.get("server").and_then(Item::as_str) == Some(server.id.as_str()))
    });
    let mut entry = Table::new();
    entry.insert("workspace", toml_edit::value(workspace));
    entry.insert("server", toml_edit::value(server.id.as_str()));
    entry.insert("sha256", toml_edit::value(server.definition_hash()));
    list.push(entry);
    user.save()
}
