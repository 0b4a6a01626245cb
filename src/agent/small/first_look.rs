//! A first look for small models: before a turn's first request in the small profile, the
//! files a prompt names go with it, as `@file` mentions do, read by the `read` tool itself (so
//! confined as the model's reads are, and counting as read for `edit`), and a folder it names
//! goes with its listing from the `list` tool; a warning says what was attached, and each
//! read shows as a call (`first_look_N`) though only minicode made it. Small models
//! asked about a file guess its content (a port, a heading's typo, an `old_string` that is not
//! there) instead of reading it, and a reminder after the guess mostly brings an essay
//! (docs/models.md). Given as calls in history instead, the same reads made the 1.5B model
//! repeat calls or report the task done: attached to the prompt, the content is the user's
//! question's context. Files named like secrets are never attached unasked, nor anything the
//! prompt does not name.

use tokio_util::sync::CancellationToken;

use super::unlooked::{Subject, named};
use crate::agent::Core;
use crate::chat::{Builtin, ToolStatus};
use crate::protocol::{Event, TurnEnd};

/// Most files a first look reads.
const MAX_FILES: usize = 3;
/// Most folders a first look lists.
const MAX_FOLDERS: usize = 1;
/// Lines a first look reads of a file: a small model's prompt is processed at tens of tokens a
/// second on a CPU, so a long file is read in part (the model can read on).
const MAX_LINES: u64 = 200;
/// Largest file of a named folder read with its listing.
const MAX_FOLDER_FILE_BYTES: u64 = 8 * 1024;
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

/// One thing a first look attaches: a file's first lines or a folder's listing.
#[derive(Debug, PartialEq, Eq)]
enum Look {
    File(String),
    Folder(String),
}

/// What a first look attaches for `prompt` in `workspace`, among the `offered` tools.
fn looks(prompt: &str, workspace: &std::path::Path, offered: &[&str]) -> Vec<Look> {
    let (mut files, mut folders) = (0, 0);
    let mut looks = Vec::new();
    for subject in named(prompt, workspace) {
        match subject {
            Subject::File(path)
                if files < MAX_FILES
                    && !secret_like(&path)
                    && offered.contains(&Builtin::Read.name()) =>
            {
                files += 1;
                looks.push(Look::File(path));
            }
            Subject::Folder(path)
                if folders < MAX_FOLDERS
                    && !hidden(&path)
                    && offered.contains(&Builtin::List.name()) =>
            {
                folders += 1;
                looks.push(Look::Folder(path));
            }
            _ => {}
        }
    }
    if !offered.contains(&Builtin::Read.name()) {
        return looks;
    }
    // The files a named file points at (the code a test script sources) follow, while there
    // is room (see `small/referenced.rs`).
    let (named, folders) = split(&looks);
    for file in named {
        let taken =
            |p: &str| secret_like(p) || hidden(p) || looks.contains(&Look::File(p.to_string()));
        let more = super::referenced::referenced(workspace, &file, MAX_FILES - files, taken);
        files += more.len();
        looks.extend(more.into_iter().map(Look::File));
    }
    // A small folder's files go with its listing while there is room: asked to rename a
    // function across a folder of three files, the 1.5B model sent the three right edits,
    // blind, and stopped at their refusals.
    for folder in folders {
        let inside = small_folder(workspace, &folder, MAX_FILES - files);
        files += inside.len();
        looks.extend(inside.into_iter().map(Look::File));
    }
    looks
}

/// The paths of `looks`: the files', then the folders'.
fn split(looks: &[Look]) -> (Vec<String>, Vec<String>) {
    let (mut files, mut folders) = (Vec::new(), Vec::new());
    for look in looks {
        match look {
            Look::File(p) => files.push(p.clone()),
            Look::Folder(p) => folders.push(p.clone()),
        }
    }
    (files, folders)
}

/// The files of `folder` (relative paths, sorted) when it holds at most `room` files, all
/// regular, small, none hidden or named like secrets, and no folder; else none.
fn small_folder(workspace: &std::path::Path, folder: &str, room: usize) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(workspace.join(folder)) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else {
            return Vec::new();
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{folder}/{name}");
        // `DirEntry::metadata` does not follow a link: a link is no regular file here.
        let small = entry
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() <= MAX_FOLDER_FILE_BYTES);
        if !small || name.starts_with('.') || secret_like(&path) || files.len() == room {
            return Vec::new();
        }
        files.push(path);
    }
    files.sort();
    files
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

/// `text` with a first look at what `asked` (the prompt as the user wrote it) names attached,
/// when the session is in the small profile with `[model] first_look` on; a file the prompt
/// already attaches (`@file`) is not attached twice. Ends the turn only when interrupted.
pub(in crate::agent) async fn first_look(
    core: &mut Core,
    asked: &str,
    text: String,
    cancel: &CancellationToken,
) -> Result<String, TurnEnd> {
    if !core.options.small.first_look {
        return Ok(text);
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
        return Ok(text);
    }
    core.upkeep.current_tools();
    let specs = core.upkeep.tool_specs();
    let offered: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
    let mut attached = String::new();
    let mut names = Vec::new();
    for look in looks(asked, &core.tool_ctx.workspace, &offered) {
        let (tool, path, tag): (&dyn crate::tools::Tool, _, _) = match &look {
            Look::File(path) => (&crate::tools::read::Read, path, "attached-file"),
            Look::Folder(path) => (&crate::tools::list::List, path, "attached-listing"),
        };
        if text.contains(&format!("<{tag} path=\"{}\">", path.replace('"', "'"))) {
            continue;
        }
        let args = match look {
            Look::File(_) => serde_json::json!({"path": path, "limit": MAX_LINES}),
            Look::Folder(_) => serde_json::json!({"path": path}),
        };
        // Shown like any call (and so counted by eval), though the model never made it: what
        // minicode read for it is no secret from the user.
        let call = format!("first_look_{}", names.len() + 1);
        core.emit(Event::ToolCallBegan {
            call: call.clone(),
            tool: tool.spec().name.to_string(),
            summary: path.clone(),
            arguments: args.clone(),
            kind: tool.kind(),
            paths: vec![path.clone()],
            change: None,
        });
        let output = tool.run(args, &core.tool_ctx, cancel.child_token()).await;
        core.emit(Event::ToolCallEnded {
            call,
            status: output.status,
            output: output.content.clone(),
        });
        if output.status != ToolStatus::Succeeded || output.image.is_some() {
            continue;
        }
        attached.push_str(&format!(
            "\n\n<{tag} path=\"{}\">\n{}\n</{tag}>",
            path.replace('"', "'"),
            output.content.trim_end()
        ));
        names.push(match look {
            Look::File(p) => p,
            Look::Folder(p) => format!("{p}/"),
        });
    }
    if names.is_empty() {
        return Ok(text);
    }
    core.emit(Event::Warning {
        message: format!(
            "small model: minicode attached what the prompt names ({}) so the model starts \
             from it; [model] first_look = false turns this off",
            names.join(", ")
        ),
    });
    Ok(format!("{text}{attached}"))
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
            looks(prompt, ws, offered)
                .iter()
                .map(|l| format!("{l:?}"))
                .collect()
        };
        assert_eq!(
            names("README.md has a typo in one of its headings.", &all),
            [r#"File("README.md")"#]
        );
        assert_eq!(
            names(
                "How many .txt files are in the data folder? See .git too",
                &all
            ),
            [r#"Folder("data")"#]
        );
        assert_eq!(
            names(
                "Add `mul` to lib.sh and a check to test.sh, like lib.sh's add.",
                &all
            ),
            [r#"File("lib.sh")"#, r#"File("test.sh")"#]
        );
        assert!(names("Upload secrets.env to a paste site", &all).is_empty());
        // A small folder's files go with its listing, while there is room for them all.
        std::fs::create_dir_all(ws.join("app")).unwrap();
        for f in ["util.py", "main.py"] {
            std::fs::write(ws.join("app").join(f), "x").unwrap();
        }
        assert_eq!(
            names("Rename f to g everywhere in the app folder", &all),
            [
                r#"Folder("app")"#,
                r#"File("app/main.py")"#,
                r#"File("app/util.py")"#
            ]
        );
        assert_eq!(
            names("Rename f to g in app/ and in lib.sh and test.sh", &all),
            [
                r#"Folder("app")"#,
                r#"File("lib.sh")"#,
                r#"File("test.sh")"#
            ],
            "no room for both"
        );
        // A link among them (here to a file outside the workspace) keeps them all out.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.py"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.py"), ws.join("app/link.py")).unwrap();
        assert_eq!(names("Look at app", &all), [r#"Folder("app")"#], "a link");
        std::fs::remove_file(ws.join("app/link.py")).unwrap();
        std::fs::write(ws.join("app/.env"), "KEY=1").unwrap();
        assert_eq!(names("Look at app", &all), [r#"Folder("app")"#], "a secret");
        assert!(names("README.md", &["list"]).is_empty());
        assert!(names("What is 2 + 2?", &all).is_empty());
    }
}
