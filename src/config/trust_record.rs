//! What a workspace's trust covers: the settings only a trusted workspace may use, each as a
//! SHA-256 of its value, recorded with the trust entry so that a later change (a `git pull`
//! that adds `[mcp_servers]` or a new `base_url`) is asked about again instead of taking
//! effect silently. The items are the workspace config's trust-only fields, each of its
//! `[mcp_servers]` and `[lsp.servers]`, its `[permissions] allow` rules, and its `.mcp.json`
//! as a whole.
//!
//! It reads the workspace's files (confined, like every read of them) and compares; it never
//! records a value, only digests, and shows a new value only for fields that hold no secret.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use sha2::Digest;

use super::{ConfigError, MCP_JSON};
use crate::sanitize::visible;

/// The workspace config's fields only a trusted workspace may set: together they choose
/// where the conversation and the key go, which model the user pays for, where telemetry
/// goes, and how much disk saved outputs may take. `mcp_servers` counts too (a program the
/// repository would have minicode run), item by item.
pub(super) const TRUST_ONLY: [&str; 12] = [
    "model.provider",
    "model.base_url",
    "model.api_key",
    "model.api_key_env",
    "model.name",
    "tools.outputs_max_file_bytes",
    "tools.outputs_max_bytes",
    "telemetry.otlp_endpoint",
    "telemetry.headers",
    "telemetry.protocol",
    "telemetry.service_name",
    "telemetry.include_content",
];

/// Fields whose new value a change may show: none of them can hold a secret.
const SHOWN: [&str; 9] = [
    "model.provider",
    "model.base_url",
    "model.api_key_env",
    "model.name",
    "tools.outputs_max_file_bytes",
    "tools.outputs_max_bytes",
    "telemetry.otlp_endpoint",
    "telemetry.protocol",
    "telemetry.service_name",
];

/// The largest `.mcp.json` digested whole (the MCP reader refuses bigger ones anyway).
const MAX_MCP_JSON_BYTES: u64 = 1024 * 1024;

/// What trust covers now: item → (digest, the value when it may be shown).
pub(super) struct Current {
    items: BTreeMap<String, (String, Option<String>)>,
}

/// Recorded digests: item → SHA-256 (hex).
pub(super) type Record = BTreeMap<String, String>;

impl Current {
    /// The digests alone, as `minicode trust` records them.
    pub(super) fn record(&self) -> Record {
        self.items
            .iter()
            .map(|(k, (digest, _))| (k.clone(), digest.clone()))
            .collect()
    }

    /// What differs from `recorded`, one line per item, e.g.
    /// ``config `model.base_url` changed (now "http://…")``.
    pub(super) fn changes(&self, recorded: &Record) -> Vec<String> {
        let mut lines = Vec::new();
        for (item, (digest, shown)) in &self.items {
            let now = shown
                .as_deref()
                .map(|v| format!(" (now {})", visible(v)))
                .unwrap_or_default();
            match recorded.get(item) {
                None => lines.push(format!("{} added{now}", describe(item))),
                Some(old) if old != digest => {
                    lines.push(format!("{} changed{now}", describe(item)));
                }
                Some(_) => {}
            }
        }
        for item in recorded.keys().filter(|k| !self.items.contains_key(*k)) {
            lines.push(format!("{} removed", describe(item)));
        }
        lines
    }
}

fn describe(item: &str) -> String {
    if item == MCP_JSON {
        MCP_JSON.to_string()
    } else {
        format!("config `{}`", visible(item))
    }
}

fn digest(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads what trust covers in `workspace` now. A config file that cannot be read or parsed is
/// an error (the same one loading it would give); a `.mcp.json` that cannot be read counts as
/// one value ("unreadable"), since the MCP reader reports it on its own.
pub(super) fn current(workspace: &Path) -> Result<Current, ConfigError> {
    let mut items = BTreeMap::new();
    if let Some(path) = super::workspace_file::locate(workspace).file {
        let text = super::file::read_text(&path, Some(workspace))?;
        let table: toml::Table = match text.parse() {
            Ok(table) => table,
            Err(_) => {
                super::file::parse(&path, &text)?;
                toml::Table::new()
            }
        };
        for field in TRUST_ONLY {
            let (section, key) = field.split_once('.').unwrap_or(("", field));
            if let Some(value) = table.get(section).and_then(|t| t.get(key)) {
                let shown = SHOWN.contains(&field).then(|| match value {
                    toml::Value::String(s) => format!("{s:?}"),
                    other => other.to_string(),
                });
                items.insert(field.to_string(), (value_digest(value), shown));
            }
        }
        // Allow rules let the repository's own commands run without a question: one added
        // after trust is asked about like a new server. (Rules hold no secret.)
        if let Some(allow) = table.get("permissions").and_then(|t| t.get("allow")) {
            let shown = Some(allow.to_string());
            items.insert(
                "permissions.allow".to_string(),
                (value_digest(allow), shown),
            );
        }
        if let Some(toml::Value::Table(servers)) = table.get("mcp_servers") {
            for (id, server) in servers {
                items.insert(format!("mcp_servers.{id}"), (value_digest(server), None));
            }
        }
        // A language server is a program too (`[lsp.servers.<language>]`).
        let lsp_servers = table.get("lsp").and_then(|t| t.get("servers"));
        if let Some(toml::Value::Table(servers)) = lsp_servers {
            for (language, server) in servers {
                let key = format!("lsp.servers.{language}");
                items.insert(key, (value_digest(server), None));
            }
        }
    }
    let mcp = workspace.join(MCP_JSON);
    if std::fs::symlink_metadata(&mcp).is_ok() {
        let bytes = crate::fsutil::open_confined(workspace, &mcp)
            .ok()
            .and_then(|(file, _)| {
                let mut bytes = Vec::new();
                file.take(MAX_MCP_JSON_BYTES)
                    .read_to_end(&mut bytes)
                    .ok()
                    .map(|_| bytes)
            })
            .unwrap_or_else(|| b"unreadable".to_vec());
        items.insert(MCP_JSON.to_string(), (digest(&bytes), None));
    }
    Ok(Current { items })
}

/// A digest of one TOML value that does not depend on the file's layout (tables are sorted).
fn value_digest(value: &toml::Value) -> String {
    digest(serde_json::to_string(value).unwrap_or_default().as_bytes())
}
