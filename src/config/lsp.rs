//! `[lsp]`: the language servers asked for diagnostics after an edit. Each file's table is
//! laid over the ones below it key by key (a server per language replaces the lower one's);
//! a workspace's file may name servers only once the workspace is trusted (a server is a
//! program the repository would have minicode run). Checked once into `lsp::Settings`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use crate::lsp::{ServerCommand, Settings};

/// The languages `[lsp.servers.<language>]` may name.
const LANGUAGES: &[&str] = &["python", "rust", "typescript", "go", "c"];
/// The longest wait a setting may ask for: a turn must not hang on a server for minutes.
const MAX_TIMEOUT_MS: u64 = 120_000;

/// `[lsp]` as one file writes it.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LspTable {
    pub(crate) enabled: Option<bool>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) start_timeout_ms: Option<u64>,
    pub(crate) max_errors: Option<usize>,
    pub(crate) warnings: Option<bool>,
    pub(crate) servers: Option<BTreeMap<String, ServerCommand>>,
}

/// The tables merged so far, with the last file that set anything (named in errors).
#[derive(Default)]
pub(super) struct Merged {
    table: LspTable,
    origin: Option<PathBuf>,
}

impl Merged {
    /// Lays `over`, read from `path`, above what is there.
    pub(super) fn add(&mut self, over: LspTable, path: PathBuf) {
        let t = &mut self.table;
        t.enabled = over.enabled.or(t.enabled);
        t.timeout_ms = over.timeout_ms.or(t.timeout_ms);
        t.start_timeout_ms = over.start_timeout_ms.or(t.start_timeout_ms);
        t.max_errors = over.max_errors.or(t.max_errors);
        t.warnings = over.warnings.or(t.warnings);
        if let Some(servers) = over.servers {
            t.servers.get_or_insert_default().extend(servers);
        }
        self.origin = Some(path);
    }

    /// The checked settings.
    pub(super) fn resolve(self) -> Result<Settings, ConfigError> {
        let origin = self.origin.map_or_else(
            || "the built-in default".to_string(),
            |p| p.display().to_string(),
        );
        let invalid = |field: &'static str, reason: String| ConfigError::Invalid {
            origin: origin.clone(),
            field,
            reason,
        };
        let t = self.table;
        let defaults = Settings::default();
        let ms = |value: Option<u64>, default: Duration, field| match value {
            Some(v) if v == 0 || v > MAX_TIMEOUT_MS => Err(invalid(
                field,
                format!("must be between 1 and {MAX_TIMEOUT_MS}"),
            )),
            Some(v) => Ok(Duration::from_millis(v)),
            None => Ok(default),
        };
        let timeout = ms(t.timeout_ms, defaults.timeout, "lsp.timeout_ms")?;
        let start_timeout = ms(
            t.start_timeout_ms,
            defaults.start_timeout,
            "lsp.start_timeout_ms",
        )?;
        let servers = t.servers.unwrap_or_default();
        for (language, server) in &servers {
            if !LANGUAGES.contains(&language.as_str()) {
                return Err(invalid(
                    "lsp.servers",
                    format!("names no known language (one of: {})", LANGUAGES.join(", ")),
                ));
            }
            if server.command.trim().is_empty() {
                return Err(invalid("lsp.servers", "a command is empty".into()));
            }
        }
        Ok(Settings {
            enabled: t.enabled.unwrap_or(defaults.enabled),
            timeout,
            start_timeout,
            max_errors: t.max_errors.unwrap_or(defaults.max_errors),
            warnings: t.warnings.unwrap_or(defaults.warnings),
            servers,
        })
    }
}
