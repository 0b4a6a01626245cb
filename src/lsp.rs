//! The compiler's word after an edit (issue 36, item 4): after `write` or `edit` of a file in
//! a language with a language server, the server is asked for that file's diagnostics and the
//! new errors are handed back to be appended to the tool's result.
//!
//! This module owns the settings (`[lsp]`), which server serves which file ([`language`]),
//! the session's servers ([`Servers`]: one per language, started lazily through the same
//! sandboxed supervisor as `bash`, shut down with the session) and what of their answer the
//! model reads ([`report`]). It never fails a tool call: a missing, slow or crashing server
//! costs one note. It knows nothing of the agent, the protocol or a frontend.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

#[cfg(feature = "lsp")]
mod client;
// Without the `lsp` feature nothing asks a server, so the choice and the report go unused.
#[cfg_attr(not(feature = "lsp"), allow(dead_code))]
pub(crate) mod language;
#[cfg_attr(not(feature = "lsp"), allow(dead_code))]
pub(crate) mod report;
mod servers;

pub use servers::Servers;

/// `[lsp]` in the configuration, handed to the session's [`Servers`] whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `enabled`: ask language servers at all.
    pub enabled: bool,
    /// `timeout_ms`: how long one edit waits for the server's diagnostics once it runs.
    pub timeout: Duration,
    /// `start_timeout_ms`: how long the first edit of a language waits, start-up included.
    pub start_timeout: Duration,
    /// `max_errors`: the most diagnostics appended to one result.
    pub max_errors: usize,
    /// `warnings`: report warnings too, not only errors.
    pub warnings: bool,
    /// `[lsp.servers.<language>]`: the server to run for a language instead of the detected
    /// one (`python`, `rust`, `typescript`, `go`, `c`).
    pub servers: BTreeMap<String, ServerCommand>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            timeout: Duration::from_millis(crate::defaults::LSP_TIMEOUT_MS),
            start_timeout: Duration::from_millis(crate::defaults::LSP_START_TIMEOUT_MS),
            max_errors: crate::defaults::LSP_MAX_ERRORS,
            warnings: false,
            servers: BTreeMap::new(),
        }
    }
}

/// A language server's command line, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerCommand {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
}
