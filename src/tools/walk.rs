//! The directory walk `list` and `search` share: ripgrep's `ignore` crate set up with our rules,
//! so both tools see the same files. Ignore files apply as git applies them (`.gitignore`,
//! `.ignore`, `.git/info/exclude`, the user's global excludes, and those of parent folders),
//! also in a folder that is not a git repository; hidden files are included; `.git` and
//! `.minicode` are never entered; symbolic links are reported, never followed.
//!
//! It owns the confinement of a walk: the start is resolved inside the workspace, a link is
//! never descended, and a folder whose ignore file is not a regular file inside the workspace
//! (a FIFO would hang the walk, a link could point anywhere) is skipped and reported instead
//! of read. It must not open the files it finds: that is the tools' job.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::overrides::OverrideBuilder;
use ignore::{DirEntry, WalkBuilder};

use crate::fsutil;
use crate::sync::lock;

/// Folders never listed or searched, at any depth: git's database and minicode's own data.
pub(crate) const NEVER_WALKED: [&str; 2] = [".git", fsutil::DATA_DIR];

/// Ignore files the walker reads in every folder it enters (relative to that folder).
const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".git/info/exclude"];

/// How many skipped folders a result names; the rest are counted.
const NAMED_SKIPS: usize = 5;

/// A walk's start, resolved and checked.
pub(crate) struct Start {
    /// Canonical, inside the workspace.
    pub(crate) root: PathBuf,
    /// As shown to the model: relative to the workspace (`.` for the workspace itself).
    pub(crate) display: String,
    pub(crate) is_dir: bool,
    /// Said before the result when the start is not the one asked for (see
    /// [`start_or_workspace`]).
    pub(crate) note: Option<String>,
}

/// Resolves the `path` argument of `list` or `search` (default: the workspace root).
pub(crate) fn start(workspace: &Path, path: Option<&str>) -> Result<Start, String> {
    let raw = path.filter(|p| !p.trim().is_empty()).unwrap_or(".");
    let root = fsutil::resolve_in_workspace(workspace, raw).map_err(|e| e.to_string())?;
    let display = match fsutil::display_path(workspace, &root) {
        d if d.is_empty() => ".".to_string(),
        d => d,
    };
    if let Ok(rel) = root.strip_prefix(workspace)
        && rel
            .components()
            .any(|c| NEVER_WALKED.iter().any(|n| c.as_os_str() == *n))
    {
        return Err(format!(
            "{display} is inside .git or .minicode, which are never listed or searched \
             (read a file there with the read tool)"
        ));
    }
    let meta = std::fs::metadata(&root).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{display} does not exist"),
        _ => format!("cannot open {display}: {e}"),
    })?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(format!("{display} is not a regular file or a folder"));
    }
    Ok(Start {
        root,
        display,
        is_dir: meta.is_dir(),
        note: None,
    })
}

/// Like [`start`] for the tools that look for something (`search`, `find`): a `path` that does
/// not exist, or `/` (which small models write for the project's root), scopes the whole
/// workspace instead, with a note saying so. The model asked for a pattern; a wrong guess of
/// where it is should cost a note, not the call (Qwen2.5-Coder 1.5B passed `MiniCode.md` or
/// `src/main.rs` as the path of a search for a function in every run, and stopped at the
/// refusal). A path outside the workspace or inside `.git` is still refused.
pub(crate) fn start_or_workspace(workspace: &Path, path: Option<&str>) -> Result<Start, String> {
    let raw = path.map(str::trim).filter(|p| !p.is_empty());
    let note = match raw {
        Some("/") => Some("\"/\" is read as the workspace's root".to_string()),
        Some(raw) => fsutil::resolve_in_workspace(workspace, raw)
            .ok()
            .filter(|resolved| {
                std::fs::symlink_metadata(resolved)
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
            })
            .map(|_| format!("{raw} does not exist; looked in the whole workspace instead")),
        None => None,
    };
    match note {
        Some(note) => Ok(Start {
            note: Some(note),
            ..start(workspace, None)?
        }),
        None => start(workspace, path),
    }
}

/// `text` after the start's note, if it has one.
pub(crate) fn noted(start: &Start, text: String) -> String {
    match &start.note {
        Some(note) => format!("[{note}]\n{text}"),
        None => text,
    }
}

/// Folders left out because of a bad ignore file, for the closing notes.
#[derive(Default)]
pub(crate) struct Skipped {
    count: usize,
    named: Vec<String>,
}

impl Skipped {
    fn add(&mut self, what: String) {
        self.count += 1;
        if self.named.len() < NAMED_SKIPS {
            self.named.push(what);
        }
    }

    /// Lines for the end of a result, one per named folder and one for the rest.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .named
            .iter()
            .map(|w| format!("[skipped {w}]"))
            .collect();
        if self.count > self.named.len() {
            notes.push(format!(
                "[skipped {} more folders with unusable ignore files]",
                self.count - self.named.len()
            ));
        }
        notes
    }
}

/// A configured walk and the record of what it skipped.
pub(crate) struct Walk {
    pub(crate) builder: WalkBuilder,
    pub(crate) skipped: Arc<Mutex<Skipped>>,
}

/// Builds the walk from `start` with an optional glob (ripgrep's `-g` syntax: `*.rs` matches
/// at any depth, a pattern with `/` is anchored at the start folder, `!` excludes).
pub(crate) fn build(workspace: &Path, start: &Start, glob: Option<&str>) -> Result<Walk, String> {
    // Ignore files of the start and the folders above it (down from the workspace root) are
    // read when the walk is built; check them here, as the filter checks deeper ones.
    let mut ancestor = Some(start.root.as_path());
    while let Some(dir) = ancestor.filter(|d| d.starts_with(workspace)) {
        if let Err(why) = ignore_files_usable(workspace, dir) {
            let shown = match fsutil::display_path(workspace, dir) {
                d if d.is_empty() => ".".to_string(),
                d => d,
            };
            return Err(format!("cannot walk {shown}: {why}"));
        }
        ancestor = dir.parent();
    }
    let mut builder = fsutil::with_ignore_rules(WalkBuilder::new(&start.root));
    builder.parents(true).current_dir(workspace);
    if let Some(glob) = glob.filter(|g| !g.trim().is_empty()) {
        let base = if start.is_dir {
            start.root.as_path()
        } else {
            start.root.parent().unwrap_or(workspace)
        };
        let mut overrides = OverrideBuilder::new(base);
        overrides
            .add(glob)
            .map_err(|e| format!("invalid glob {glob:?}: {e}"))?;
        let overrides = overrides
            .build()
            .map_err(|e| format!("invalid glob {glob:?}: {e}"))?;
        builder.overrides(overrides);
    }
    let skipped = Arc::new(Mutex::new(Skipped::default()));
    let record = skipped.clone();
    let ws = workspace.to_path_buf();
    builder.filter_entry(move |entry| keep(&ws, entry, &record));
    Ok(Walk { builder, skipped })
}

/// Whether the walk may yield (and, for a folder, enter) `entry`.
fn keep(workspace: &Path, entry: &DirEntry, skipped: &Mutex<Skipped>) -> bool {
    let name = entry.file_name();
    if NEVER_WALKED.iter().any(|n| name == *n) {
        return false;
    }
    if entry.depth() > 0
        && entry.file_type().is_some_and(|t| t.is_dir())
        && let Err(why) = ignore_files_usable(workspace, entry.path())
    {
        let shown = fsutil::display_path(workspace, entry.path());
        lock(skipped).add(format!("{shown}: {why}"));
        return false;
    }
    true
}

/// Every ignore file the walker would read in `dir` is absent, a regular file, or a link to a
/// regular file inside the workspace. Three `lstat`s per folder.
fn ignore_files_usable(workspace: &Path, dir: &Path) -> Result<(), String> {
    for name in IGNORE_FILES {
        let path = dir.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_file() {
            continue;
        }
        let usable = meta.file_type().is_symlink()
            && path
                .canonicalize()
                .is_ok_and(|real| fsutil::is_inside(workspace, &real) && real.is_file());
        if !usable {
            return Err(format!(
                "its {name} is not a regular file inside the workspace"
            ));
        }
    }
    Ok(())
}

/// `path` relative to the workspace, as the tools print it.
pub(crate) fn shown(workspace: &Path, path: &Path) -> String {
    fsutil::display_path(workspace, path)
}

/// The workspace paths that complete `prefix` (a path being typed after `@` in a prompt),
/// one folder level at a time as a shell completes: the entries of the folder `prefix` names
/// whose name starts with its last part, folders ending in `/`, sorted, at most `limit`. The
/// walk's rules apply (ignore files, `.git` and `.minicode` left out, the start confined);
/// hidden entries only when the last part starts with a dot.
pub(crate) fn complete(workspace: &Path, prefix: &str, limit: usize) -> Vec<String> {
    let (dir, stem) = match prefix.rfind('/') {
        Some(i) => (&prefix[..=i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    let Ok(start) = start(workspace, Some(if dir.is_empty() { "." } else { dir })) else {
        return Vec::new();
    };
    if !start.is_dir {
        return Vec::new();
    }
    let Ok(walk) = build(workspace, &start, None) else {
        return Vec::new();
    };
    let mut builder = walk.builder;
    builder.max_depth(Some(1));
    let mut found: Vec<String> = builder
        .build()
        .flatten()
        .filter(|entry| entry.depth() == 1)
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            let wanted =
                name.starts_with(stem) && (stem.starts_with('.') || !name.starts_with('.'));
            let slash = if entry.file_type().is_some_and(|t| t.is_dir()) {
                "/"
            } else {
                ""
            };
            wanted.then(|| format!("{dir}{name}{slash}"))
        })
        .collect();
    found.sort();
    found.truncate(limit);
    found
}
