//! `doctor`'s findings as a table (text) or one JSON object (`--output-format json`), on
//! stdout. Server text reaches it in details and fixes, so every line passes the sanitiser;
//! JSON on a terminal has its control characters escaped, like the one-shot JSON.

use std::io::{IsTerminal, Write};

use serde::Serialize;

use super::{Check, Findings, Status};
use crate::print::OutputFormat;
use crate::sanitize::{self, sanitize};

#[derive(Serialize)]
struct Json<'a> {
    usable: bool,
    /// No model is configured: how to set one up (no server was checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    setup: Option<&'a str>,
    server: &'a str,
    model: &'a str,
    context_window: Option<Window>,
    latency_ms: Option<u64>,
    tokens_per_second: Option<f64>,
    checks: &'a [Check],
    sandbox: &'a [Check],
    /// Per language, the server diagnostics after an edit would start (looked up only).
    language_servers: &'a [Check],
    config_files: &'a [super::files::ConfigFile],
    /// Per-model counters of earlier runs: edit tiers, failed edits, stream fallbacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    edits: Option<&'a crate::provider::tally::Tally>,
}

#[derive(Serialize)]
struct Window {
    tokens: u64,
    source: &'static str,
}

/// Prints the findings in `format` (`stream-json` prints the JSON object too).
pub(super) fn print(f: &Findings, format: OutputFormat) {
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Text => {
            let _ = out.write_all(table(f).as_bytes());
        }
        OutputFormat::Json | OutputFormat::StreamJson => {
            let json = Json {
                usable: f.usable(),
                setup: f.setup.as_deref(),
                server: &f.server,
                model: &f.model,
                context_window: f.window.map(|(tokens, source)| Window { tokens, source }),
                latency_ms: f.first_token.map(|d| d.as_millis() as u64),
                tokens_per_second: f.tokens_per_second.map(|t| (t * 10.0).round() / 10.0),
                checks: &f.checks,
                sandbox: &f.sandbox,
                language_servers: &f.lsp,
                config_files: &f.config_files,
                edits: f.tally.as_ref(),
            };
            if let Ok(line) = serde_json::to_string(&json) {
                let line = if std::io::stdout().is_terminal() {
                    sanitize::json_escaped(&line)
                } else {
                    line
                };
                let _ = writeln!(out, "{line}");
            }
        }
    }
    let _ = out.flush();
}

fn mark(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Warn => "warn",
        Status::Fail => "FAIL",
        Status::Skip => "skip",
    }
}

/// The table: one row per check, a `fix:` line under each row that has one, a verdict.
fn table(f: &Findings) -> String {
    let width = f
        .checks
        .iter()
        .chain(&f.sandbox)
        .chain(&f.lsp)
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0);
    let mut text = match f.setup {
        Some(_) => "minicode doctor: no model is configured\n".to_string(),
        None => format!("minicode doctor: {} · model {}\n\n", f.server, f.model),
    };
    rows(&mut text, &f.checks, width);
    if !f.config_files.is_empty() {
        text.push_str("\nconfig files looked at:\n");
        for file in &f.config_files {
            let why = file
                .why
                .as_deref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default();
            text.push_str(&format!(
                "  {:<7}  {:<9}  {}{why}\n",
                file.state, file.role, file.path
            ));
        }
    }
    if !f.sandbox.is_empty() {
        text.push_str("\nsandbox (bash commands):\n");
        rows(&mut text, &f.sandbox, width);
    }
    if !f.lsp.is_empty() {
        text.push_str(
            "\nlanguage servers (diagnostics after write/edit; looked up, not started):\n",
        );
        rows(&mut text, &f.lsp, width);
    }
    text.push('\n');
    text.push_str(match (&f.setup, f.usable()) {
        (Some(_), _) => "not usable: no model is configured (how to set one up: below)\n",
        (None, true) => "usable: this server can run the agent\n",
        (None, false) => "not usable: fix the FAIL rows above\n",
    });
    sanitize(&text)
}

fn rows(text: &mut String, checks: &[Check], width: usize) {
    for c in checks {
        text.push_str(&format!(
            "  {:<4}  {:<width$}  {}\n",
            mark(c.status),
            c.name,
            c.detail
        ));
        if let Some(fix) = &c.fix {
            text.push_str(&format!("  {:<4}  {:<width$}  fix: {fix}\n", "", ""));
        }
    }
}
