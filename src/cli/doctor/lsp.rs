//! `doctor`'s language-server section: for each language, the server a session would start
//! for diagnostics after `write`/`edit` (the configured one, else the first well-known one on
//! `PATH`), or "none found" with how to get one. It only looks programs up, as a session
//! chooses them (`lsp::language`): no server is started. It never changes the exit status.

use std::ffi::OsStr;
use std::path::Path;

use super::{Check, Status};
use crate::lsp::Settings;
use crate::lsp::language::{Language, choose, find_program};

/// The rows of the section: one per language, or one saying why none is asked.
pub(super) fn checks(
    settings: &Settings,
    workspace: &Path,
    path_var: Option<&OsStr>,
) -> Vec<Check> {
    if !cfg!(feature = "lsp") {
        let detail = "not built in (this binary lacks the `lsp` feature)".to_string();
        return vec![row("lsp", Status::Skip, detail, None)];
    }
    if !settings.enabled {
        let detail = "off ([lsp] enabled = false): no server is asked".to_string();
        return vec![row("lsp", Status::Skip, detail, None)];
    }
    Language::ALL
        .iter()
        .map(|&language| check(language, settings, workspace, path_var))
        .collect()
}

fn row(name: &'static str, status: Status, detail: String, fix: Option<String>) -> Check {
    Check {
        name,
        status,
        detail,
        fix,
    }
}

/// What a session would start for `language`.
fn check(
    language: Language,
    settings: &Settings,
    workspace: &Path,
    path_var: Option<&OsStr>,
) -> Check {
    let key = language.key();
    if let Some(configured) = settings.servers.get(key) {
        return match find_program(&configured.command, workspace, path_var) {
            Some(found) => row(
                key,
                Status::Ok,
                format!(
                    "configured: {}",
                    command_line(&found.display().to_string(), &configured.args)
                ),
                None,
            ),
            None => row(
                key,
                Status::Warn,
                format!(
                    "configured `{}` is not found (nothing is asked for these files)",
                    configured.command
                ),
                Some(format!(
                    "install it, or correct [lsp.servers.{key}] command ({})",
                    language.install_hint()
                )),
            ),
        };
    }
    if let Some(choice) = choose(language, None, workspace, path_var) {
        let line = command_line(&choice.command.command, &choice.command.args);
        return row(key, Status::Ok, format!("found on PATH: {line}"), None);
    }
    if language == Language::Rust
        && let Some(found) = find_program("rust-analyzer", workspace, path_var)
    {
        let detail = format!(
            "{} is on PATH, asked only in a Cargo workspace (no Cargo.toml here)",
            found.display()
        );
        return row(key, Status::Skip, detail, None);
    }
    row(
        key,
        Status::Skip,
        "none found".to_string(),
        Some(language.install_hint().to_string()),
    )
}

fn command_line(program: &str, args: &[String]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}
