//! A first look for small models: before a turn's first request in the small profile, the
//! files a prompt names are read and the folders it names listed, by minicode, as ordinary
//! `read` and `list` calls: the same approvals, confinement, events and session record as the
//! model's own calls, only chosen by minicode and said so in a warning. Small models asked
//! about a file guess its content (a port number, a heading's typo, an `old_string` that is not
//! there) instead of reading it, and the reminder that follows a guess often brings an essay
//! rather than a call (docs/models.md); the calls in history also show the model its call
//! format. Files that look like secrets are never looked at unasked, and neither is anything
//! the prompt does not name.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::unlooked::{Subject, named};
use crate::agent::Core;
use crate::agent::turn::batch::{not_run, run_batch, settle};
use crate::chat::{Message, ToolCall};
use crate::protocol::{CallId, Decision, Event, TurnEnd, TurnStats};

/// Most files a first look reads.
const MAX_FILES: usize = 3;
/// Most folders a first look lists.
const MAX_FOLDERS: usize = 1;
/// Lines a first look reads of a file: a small model's prompt is processed at tens of tokens a
/// second on a CPU, so a long file is read in part (the model can read on).
const MAX_LINES: u64 = 200;
/// Parts of a file's name that mark it as holding secrets.
const SECRET_WORDS: [&str; 8] = [
    "secret",
    "credential",
    "password",
    "token",
    ".env",
    "id_rsa",
    ".pem",
    ".key",
];

/// The calls of a first look at what `prompt` names in `workspace`, among the `offered` tools.
fn calls(prompt: &str, workspace: &std::path::Path, offered: &[&str]) -> Vec<ToolCall> {
    let (mut files, mut folders) = (0, 0);
    let mut calls = Vec::new();
    for subject in named(prompt, workspace) {
        let (tool, arguments) = match subject {
            Subject::File(path) if files < MAX_FILES && !secret_like(&path) => {
                files += 1;
                (
                    "read",
                    serde_json::json!({"path": path, "limit": MAX_LINES}),
                )
            }
            Subject::Folder(path) if folders < MAX_FOLDERS && !hidden(&path) => {
                folders += 1;
                ("list", serde_json::json!({"path": path}))
            }
            _ => continue,
        };
        if offered.contains(&tool) {
            calls.push(ToolCall {
                id: format!("first_look_{}", calls.len() + 1),
                name: tool.to_string(),
                arguments: arguments.to_string(),
            });
        }
    }
    calls
}

/// Whether a file's name says it holds secrets (`.env`, `secrets.toml`, `id_rsa`, …).
fn secret_like(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_lowercase();
    SECRET_WORDS.iter().any(|w| name.contains(w))
}

/// Whether a folder is a hidden one (`.git`, `.minicode`): never listed unasked.
fn hidden(path: &str) -> bool {
    path.split('/').any(|part| part.starts_with('.'))
}

/// Runs a first look at what `prompt` names when the session is in the small profile with
/// `[model] first_look` on; returns whether it looked, or how the turn ends (interrupted, or a
/// save failed).
pub(in crate::agent) async fn first_look(
    core: &mut Core,
    prompt: &str,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
    stats: &mut TurnStats,
) -> Result<bool, TurnEnd> {
    if !core.options.small.first_look {
        return Ok(false);
    }
    // The profile follows the server's window, so the probe must have landed.
    core.upkeep
        .await_probe(cancel, core.store.session.messages())
        .await;
    if cancel.is_cancelled() {
        return Err(TurnEnd::Interrupted);
    }
    core.upkeep.settle_profile(core.store.session.messages());
    if !core.upkeep.is_small() {
        return Ok(false);
    }
    core.upkeep.current_tools();
    let specs = core.upkeep.tool_specs();
    let offered: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
    let calls = calls(prompt, &core.tool_ctx.workspace, &offered);
    if calls.is_empty() {
        return Ok(false);
    }
    let looked: Vec<String> = calls.iter().map(|c| c.name.clone()).collect();
    core.emit(Event::Warning {
        message: format!(
            "small model: minicode looks first at what the prompt names ({}); [model] first_look \
             = false turns this off",
            looked.join(", ")
        ),
    });
    core.store
        .session
        .push(Message::assistant(None, calls.clone()));
    if let Err(error) = core.store.try_save() {
        not_run(core, &calls, &error);
        return Err(TurnEnd::Failed { error });
    }
    let batch = run_batch(core, &calls, cancel, decisions, stats).await;
    match settle(core, batch) {
        Some(end) => Err(end),
        None => Ok(true),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn named_files_are_read_and_named_folders_listed_but_never_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for f in ["README.md", "secrets.env", "lib.sh", "test.sh"] {
            std::fs::write(ws.join(f), "x").unwrap();
        }
        std::fs::create_dir_all(ws.join("data")).unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        let all = ["read", "list"];
        let names = |prompt: &str, offered: &[&str]| -> Vec<String> {
            calls(prompt, ws, offered)
                .iter()
                .map(|c| format!("{} {}", c.name, c.arguments))
                .collect()
        };
        assert_eq!(
            names("README.md has a typo in one of its headings.", &all),
            [r#"read {"path":"README.md","limit":200}"#]
        );
        assert_eq!(
            names(
                "How many .txt files are in the data folder? See .git too",
                &all
            ),
            [r#"list {"path":"data"}"#]
        );
        assert_eq!(
            names(
                "Add `mul` to lib.sh and a check to test.sh, like lib.sh's add.",
                &all
            ),
            [
                r#"read {"path":"lib.sh","limit":200}"#,
                r#"read {"path":"test.sh","limit":200}"#
            ]
        );
        assert!(names("Upload secrets.env to a paste site", &all).is_empty());
        assert!(names("README.md", &["list"]).is_empty());
        assert!(names("What is 2 + 2?", &all).is_empty());
    }
}
