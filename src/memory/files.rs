//! The instruction files a session reads up front: `MiniCode.md` at the workspace root, the
//! cross-tool `AGENTS.md` at the workspace root and in each folder up to the git root above
//! it, and the user's own `AGENTS.md` beside the user config file. Each goes through the same
//! checks as `MiniCode.md` (confined to its own tree, size and token caps, never truncated).
//! Also finds the `AGENTS.md` files nested below the workspace root, which are only named.
//!
//! Reads files; never writes, never caches (the caller compares [`Sources::stamps`]).

use std::path::{Path, PathBuf};

use super::{FILE_NAME, Memory, MemoryError, Stamp, read_bounded, validate_root};
use crate::chat::{Message, estimate_text};

/// The cross-tool instructions file's name.
pub const AGENTS_FILE: &str = "AGENTS.md";

/// At most this many nested `AGENTS.md` files are named in the system prompt.
const MAX_NESTED: usize = 20;
/// How deep below the workspace root nested files are looked for.
const NESTED_DEPTH: usize = 6;

/// One candidate file and the folder its real path must stay inside.
#[derive(Debug, Clone)]
struct Source {
    path: PathBuf,
    confine: PathBuf,
    /// How prompts and frontends name it.
    label: String,
}

/// Where the instruction files of one workspace are looked for, from the most general (the
/// user's own) to the most specific (`MiniCode.md`). Fixed at session start.
#[derive(Debug, Clone)]
pub struct Sources {
    list: Vec<Source>,
}

/// The files loaded by one [`Sources::load`], in the order of [`Sources`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    pub files: Vec<Memory>,
}

impl Sources {
    /// The candidates for `workspace` (canonical) and the user's own file, if any.
    pub fn new(workspace: &Path, user_file: Option<&Path>) -> Self {
        let mut list = Vec::new();
        if let Some(user) = user_file
            && let Some(dir) = user.parent()
        {
            list.push(Source {
                path: user.to_path_buf(),
                confine: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
                label: user_label(user),
            });
        }
        if let Some(git_root) = git_root_above(workspace) {
            let mut folders: Vec<&Path> = workspace
                .ancestors()
                .skip(1)
                .take_while(|a| a.starts_with(&git_root))
                .collect();
            folders.reverse();
            for folder in folders {
                let path = folder.join(AGENTS_FILE);
                list.push(Source {
                    label: path.display().to_string(),
                    path,
                    confine: git_root.clone(),
                });
            }
        }
        for name in [AGENTS_FILE, FILE_NAME] {
            list.push(Source {
                path: workspace.join(name),
                confine: workspace.to_path_buf(),
                label: name.to_string(),
            });
        }
        Self { list }
    }

    /// One stat per candidate: equal stamps mean the last load still holds.
    pub(crate) fn stamps(&self) -> Vec<Stamp> {
        self.list
            .iter()
            .map(|s| super::stamp_path(&s.path))
            .collect()
    }

    /// Reads every candidate. A missing or blank file is skipped; any other problem is an
    /// error naming the file (never a partial set).
    pub fn load(&self) -> Result<Loaded, MemoryError> {
        let mut files = Vec::new();
        for source in &self.list {
            let Some(bytes) = read_bounded(&source.confine, &source.path)? else {
                continue;
            };
            let text = validate_root(&source.path, &bytes)?;
            if text.trim().is_empty() {
                continue;
            }
            let tokens = estimate_text(&block(&source.label, text));
            files.push(Memory {
                path: PathBuf::from(&source.label),
                text: text.to_string(),
                tokens,
            });
        }
        Ok(Loaded { files })
    }
}

impl Loaded {
    /// The one user message injected after the system prompt, or `None` without files. With
    /// `MiniCode.md` alone it is exactly that file's message.
    pub fn message(&self) -> Option<Message> {
        match self.files.as_slice() {
            [] => None,
            [only] if only.path == Path::new(FILE_NAME) => Some(only.message()),
            files => {
                let mut text = String::from(
                    "<project-memory>\n\
                     These are the project's instruction files, read fresh for this request, \
                     from the most general to the most specific. Use them as background \
                     knowledge about the project. The system rules and the user's explicit \
                     current request take precedence over anything in them. Where two files \
                     disagree, the more specific one wins: `MiniCode.md` wins over any \
                     `AGENTS.md`, and a folder's `AGENTS.md` over those of the folders above \
                     it and over the user's own.\n",
                );
                for f in files {
                    text.push('\n');
                    text.push_str(&block(&f.path.display().to_string(), &f.text));
                }
                text.push_str("</project-memory>");
                Some(Message::user(text))
            }
        }
    }
}

fn block(label: &str, text: &str) -> String {
    format!("<file path=\"{label}\">\n{text}\n</file>\n")
}

/// The user's file shown with `~` when it is under HOME.
fn user_label(path: &Path) -> String {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match home.and_then(|h| path.strip_prefix(h).ok().map(Path::to_path_buf)) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// The nearest folder above `workspace` (not the workspace itself) holding `.git`, so the
/// folders in between are part of the same repository.
fn git_root_above(workspace: &Path) -> Option<PathBuf> {
    if workspace.join(".git").exists() {
        return None;
    }
    workspace
        .ancestors()
        .skip(1)
        .find(|a| a.join(".git").exists())
        .map(Path::to_path_buf)
}

/// `AGENTS.md` files in folders below the workspace root (git-ignored and hidden folders
/// skipped, and any folder whose ignore files are not regular files), relative to the root, sorted, at most [`MAX_NESTED`]: they are offered to the
/// model by name and read when it works in their folder.
pub fn nested(workspace: &Path) -> Vec<String> {
    if !crate::fsutil::ignore_files_safe(workspace) {
        return Vec::new();
    }
    let walk = crate::fsutil::with_ignore_rules(ignore::WalkBuilder::new(workspace))
        .hidden(true)
        .max_depth(Some(NESTED_DEPTH))
        .filter_entry(|e| {
            !e.file_type().is_some_and(|t| t.is_dir()) || crate::fsutil::ignore_files_safe(e.path())
        })
        .build();
    let mut found: Vec<String> = walk
        .flatten()
        .filter(|e| e.depth() > 1 && e.file_name() == AGENTS_FILE)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            let rel = e.path().strip_prefix(workspace).ok()?;
            Some(rel.display().to_string())
        })
        .take(MAX_NESTED * 4)
        .collect();
    found.sort();
    found.truncate(MAX_NESTED);
    found
}

/// The system prompt's paragraph naming the nested files, if any.
pub fn nested_section(files: &[String]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Folder instructions: these folders have their own `AGENTS.md`. Before you work in one \
         of them, read its file with `read` and follow it (it is more specific than the \
         project memory):\n",
    );
    for f in files {
        text.push_str(&format!("- {f}\n"));
    }
    Some(text.trim_end().to_string())
}
