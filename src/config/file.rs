//! Reading one TOML configuration file into its raw, all-optional shape, and turning toml's
//! errors into messages that name the file, line and field but never quote the file's text:
//! a configuration line may hold an API key, so neither the source snippet toml renders nor
//! the value serde echoes in "invalid type" errors may reach the user. Key names and messages
//! that come from the file are shown with control characters made visible. A file is opened
//! without blocking and must be a regular file of sane size; the workspace's file must also
//! resolve inside the workspace. Layering, precedence and value checks live elsewhere.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::parts::Checked;
use super::{ConfigError, OtlpProtocol, ProviderKind, Secret};
use crate::sanitize::text::floor_boundary;
use crate::sanitize::visible;

/// The whole file. Every field is optional here because the environment and flags may supply
/// what the file leaves out; `config.rs` decides what is required.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    /// The workspaces the user trusts; honoured only in the user's file.
    pub(crate) trusted_workspaces: Option<Vec<TrustEntry>>,
    #[serde(default)]
    pub(crate) model: ModelTable,
    #[serde(default)]
    pub(crate) tools: ToolsTable,
    #[serde(default)]
    pub(crate) context: ContextTable,
    #[serde(default)]
    pub(crate) ui: UiTable,
    #[serde(default)]
    pub(crate) subagents: SubagentsTable,
    /// `[fetch]`: the `fetch` tool's own limits (see `config/parts.rs`).
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "read only to check the table; its values come key by key"
    )]
    pub(crate) fetch: Checked<crate::tools::fetch::Limits>,
    /// `[goal]`: goal mode's own settings (see `config/parts.rs`).
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "read only to check the table; its values come key by key"
    )]
    pub(crate) goal: Checked<crate::agent::goal::Settings>,
    #[serde(default)]
    pub(crate) telemetry: TelemetryTable,
    /// `[checkpoints]`: the part's own settings (see `config/parts.rs`).
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "read only to check the table; its values come key by key"
    )]
    pub(crate) checkpoints: Checked<crate::checkpoints::Settings>,
    /// `[lsp]` (see `config/lsp.rs`); a workspace's file may name servers only once the
    /// workspace is trusted.
    pub(crate) lsp: Option<super::lsp::LspTable>,
    /// `[sandbox]`: kept apart from the field-by-field merge (a workspace may only narrow it).
    pub(crate) sandbox: Option<super::sandbox::SandboxTable>,
    /// MCP servers by id (`[mcp_servers.<id>]`); a workspace's file may set them only once the
    /// workspace is trusted.
    pub(crate) mcp_servers: Option<BTreeMap<String, McpServerTable>>,
    /// `.mcp.json` servers the user approved; honoured only in the user's file.
    pub(crate) approved_mcp_servers: Option<Vec<ApprovedMcpServer>>,
    /// Permission rules (see `config/permissions.rs`).
    pub(crate) permissions: Option<super::permissions::PermissionsTable>,
    /// `[[hooks.<Event>]]` (see `config/hooks.rs`).
    pub(crate) hooks: Option<super::hooks::HooksTable>,
    /// A workspace's hooks the user approved; honoured only in the user's file.
    pub(crate) approved_hooks: Option<Vec<super::hooks::ApprovedHook>>,
    /// The file as written: which keys it sets, so the parts' tables (whose typed fields are
    /// already filled with defaults) are laid over each other key by key.
    #[serde(skip)]
    pub(crate) written: toml::Table,
}

/// One entry of `trusted_workspaces`: a canonical path, as older versions wrote it, or the
/// path with digests of what trust covered when it was given (see `config/trust_record.rs`).
#[derive(Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum TrustEntry {
    Path(String),
    Recorded {
        path: String,
        settings: BTreeMap<String, String>,
    },
}

impl TrustEntry {
    pub(super) fn path(&self) -> &str {
        match self {
            TrustEntry::Path(path) | TrustEntry::Recorded { path, .. } => path,
        }
    }
}

/// One `[mcp_servers.<id>]` table.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpServerTable {
    pub(crate) command: String,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) cwd: Option<String>,
    pub(crate) enabled: Option<bool>,
    pub(crate) startup_timeout_secs: Option<u64>,
    pub(crate) call_timeout_secs: Option<u64>,
}

/// One `[[approved_mcp_servers]]` entry: a workspace's `.mcp.json` server the user allowed to
/// start, as it was defined then (a changed definition is asked about again).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovedMcpServer {
    pub(crate) workspace: String,
    pub(crate) server: String,
    pub(crate) sha256: String,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModelTable {
    pub(crate) provider: Option<ProviderKind>,
    pub(crate) base_url: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) api_key: Option<Secret>,
    pub(crate) api_key_env: Option<String>,
    pub(crate) context_window: Option<u64>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) request_timeout_secs: Option<u64>,
    pub(crate) stream_idle_timeout_secs: Option<u64>,
    pub(crate) max_tool_calls: Option<u32>,
    pub(crate) send_reasoning: Option<bool>,
    pub(crate) recover_tool_calls: Option<bool>,
    pub(crate) first_look: Option<bool>,
    pub(crate) profile: Option<super::ModelProfile>,
    pub(crate) tools: Option<Vec<String>>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolsTable {
    pub(crate) bash_timeout_secs: Option<u64>,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) outputs_max_file_bytes: Option<u64>,
    pub(crate) outputs_max_bytes: Option<u64>,
    pub(crate) outputs_max_age_days: Option<u64>,
    pub(crate) max_background: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ContextTable {
    pub(crate) reserve_tokens: Option<u64>,
    pub(crate) keep_recent_tokens: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SubagentsTable {
    pub(crate) max_concurrent: Option<u32>,
    pub(crate) timeout_secs: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UiTable {
    pub(crate) exit_transcript_turns: Option<u32>,
    pub(crate) syntax_highlighting: Option<bool>,
}

/// `[telemetry]`: OpenTelemetry export (see `config/telemetry.rs`). Header values are
/// [`Secret`]s: they usually carry credentials.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TelemetryTable {
    pub(crate) otlp_endpoint: Option<String>,
    pub(crate) headers: Option<std::collections::BTreeMap<String, Secret>>,
    pub(crate) protocol: Option<OtlpProtocol>,
    pub(crate) service_name: Option<String>,
    pub(crate) include_content: Option<bool>,
}

/// The largest configuration file read; anything bigger is a mistake (or a trap), not a config.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Reads and parses `path`, a file the user chose or keeps (the user file, `--config`). A
/// directory, a broken symbolic link, a FIFO or an unreadable file is an error here, so the
/// caller never falls through to the next location.
pub(super) fn read(path: &Path) -> Result<FileConfig, ConfigError> {
    parse(path, &read_text(path, None)?)
}

/// Reads and parses the workspace's file: like [`read`], and its real path must also be inside
/// `workspace` (a repository must not point it at some other file of the user's).
pub(super) fn read_confined(workspace: &Path, path: &Path) -> Result<FileConfig, ConfigError> {
    parse(path, &read_text(path, Some(workspace))?)
}

pub(super) fn read_text(path: &Path, confined_to: Option<&Path>) -> Result<String, ConfigError> {
    use crate::fsutil::{self, OpenError};
    use std::io::Read;
    let unreadable = |source: std::io::Error| ConfigError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let opened = match confined_to {
        Some(workspace) => {
            let workspace = workspace
                .canonicalize()
                .unwrap_or_else(|_| workspace.to_path_buf());
            fsutil::open_confined(&workspace, path)
        }
        None => fsutil::open_regular(path),
    };
    let (file, meta) = opened.map_err(|e| {
        unreadable(match e {
            // The caller saw the entry itself, so only a link's target can be missing.
            OpenError::Missing => std::io::Error::other("it is a broken symbolic link"),
            OpenError::Outside => std::io::Error::other(
                "it is a symbolic link that leads outside the workspace; a workspace's config \
                 must be a file inside it",
            ),
            OpenError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        })
    })?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(unreadable(std::io::Error::other(format!(
            "it is larger than {} KiB",
            MAX_FILE_BYTES / 1024
        ))));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    String::from_utf8(bytes).map_err(|_| unreadable(std::io::Error::other("it is not valid UTF-8")))
}

/// Parses the text of a configuration file; `path` only names it in errors.
pub(super) fn parse(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    // Syntax first, so a malformed file is reported as such and not as a field problem.
    let written = text.parse::<toml::Table>().map_err(|e| {
        let (line, column) = line_column(text, e.span().map_or(0, |s| s.start));
        ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: visible(first_line(e.message())),
        }
    })?;
    let mut parsed = toml::from_str::<FileConfig>(text).map_err(|e| field_error(path, text, &e))?;
    parsed.written = written;
    Ok(parsed)
}

fn field_error(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let span = e.span().unwrap_or(0..0);
    let (line, column) = line_column(text, span.start);
    let message = first_line(e.message());
    let field = field_name(text, &span, message).unwrap_or_else(|| "?".to_string());
    ConfigError::Field {
        path: PathBuf::from(path),
        line,
        column,
        field: visible(&field),
        reason: visible(&redact(message)),
    }
}

fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or("").trim()
}

/// Drops the value serde quotes in "invalid type: string \"...\", expected ..." and similar
/// messages; only the expectation is kept.
fn redact(message: &str) -> String {
    for prefix in [
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown variant",
    ] {
        if message.starts_with(prefix) {
            // The expectation comes last, so the final ", expected " is serde's own.
            return match message.rfind(", expected ") {
                Some(i) => {
                    let expected = &message[i + ", expected ".len()..];
                    // Our serde struct names mean nothing to a user; a struct is a TOML table.
                    let expected = if expected.starts_with("struct ") {
                        "a table"
                    } else {
                        expected
                    };
                    format!("{prefix}, expected {expected}")
                }
                None => prefix.to_string(),
            };
        }
    }
    message.to_string()
}

/// 1-based line and column (in characters) of byte `offset`.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_boundary(text, offset);
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The dotted name of the field an error points at, e.g. `model.context_window`, worked out
/// from the error's span: the key comes from the message (unknown/missing field) or from the
/// text before `=` on that line, the table from the nearest `[header]` above.
fn field_name(text: &str, span: &Range<usize>, message: &str) -> Option<String> {
    let start = span.start.min(text.len());
    let lines: Vec<&str> = text[..floor_boundary(text, start)].split('\n').collect();
    let current = *lines.last()?;
    let rest_of_line = text[floor_boundary(text, start)..]
        .split('\n')
        .next()
        .unwrap_or("");
    let whole_line = format!("{current}{rest_of_line}");
    let on_header = header_name(&whole_line);

    let key = match backticked(message, "unknown field `")
        .or_else(|| backticked(message, "missing field `"))
    {
        Some(k) => k.to_string(),
        None => {
            if let Some(header) = on_header {
                // A whole table has the wrong shape; name the table.
                return Some(header.to_string());
            }
            let eq = current.rfind('=')?;
            let key = current[..eq].trim().trim_matches('"');
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return None;
            }
            key.to_string()
        }
    };
    // The table containing the key: for an error on a header line (an unknown table such as
    // `[modle]`) that is the header's parent, otherwise the nearest header above.
    let table = match on_header {
        Some(header) => header
            .rsplit_once('.')
            .map(|(parent, _)| parent.to_string()),
        None => lines
            .iter()
            .rev()
            .skip(1)
            .find_map(|l| header_name(l))
            .map(str::to_string),
    };
    Some(match table {
        Some(t) if !t.is_empty() && !key.starts_with(&format!("{t}.")) => format!("{t}.{key}"),
        _ => key,
    })
}

/// `model` for a line `[model]` (comments and spaces allowed), else `None`.
fn header_name(line: &str) -> Option<&str> {
    let line = line.trim();
    let inner = line.strip_prefix('[')?;
    if inner.starts_with('[') {
        return None; // arrays of tables are not part of our format
    }
    let end = inner.find(']')?;
    Some(inner[..end].trim())
}

fn backticked<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = message.strip_prefix(prefix)?;
    rest.split('`').next()
}
