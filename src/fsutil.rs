//! File-system helpers shared by tools and sessions: atomic replacement of a file (and the
//! sweep of what a killed write left), resolving a model-supplied path so it can never leave
//! the workspace, and the private folders under `.minicode/` with the `.gitignore` that keeps
//! them out of git.

mod atomic;
pub mod gitignore;

use std::io;
use std::path::{Component, Path, PathBuf};

pub use atomic::{
    JOURNAL_DIR, Swept, TEMP_PREFIX, is_temp_name, sweep_temp_files, write_atomic,
    write_atomic_journaled,
};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path contains a NUL byte")]
    Nul,
    #[error("path {0:?} is outside the workspace")]
    Outside(String),
    #[error("cannot resolve {path:?}: {reason}")]
    Io { path: String, reason: String },
}

/// Resolves `raw` (relative to `workspace`, or absolute) to a canonical path inside the
/// canonical `workspace`, following symlinks. The file itself need not exist (for `write`):
/// then its deepest existing ancestor is resolved and the rest appended, and `..` in that
/// rest is refused. Containment is compared by path components, so `/w/p-evil` is not inside
/// `/w/p`.
pub fn resolve_in_workspace(workspace: &Path, raw: &str) -> Result<PathBuf, PathError> {
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    if raw.contains('\0') {
        return Err(PathError::Nul);
    }
    let joined = workspace.join(raw);
    let outside = || PathError::Outside(raw.to_string());
    // Walk up until an existing ancestor is found; canonicalize it; re-append the rest.
    let mut existing = joined.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let canonical = loop {
        match existing.canonicalize() {
            Ok(c) => break c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A dangling symlink must not be written through: refuse it.
                if std::fs::symlink_metadata(existing).is_ok() {
                    return Err(PathError::Io {
                        path: raw.to_string(),
                        reason: "it is a broken symbolic link".to_string(),
                    });
                }
                match (existing.parent(), existing.file_name()) {
                    (Some(parent), Some(name)) => {
                        rest.push(name);
                        existing = parent;
                    }
                    _ => return Err(outside()),
                }
            }
            Err(e) => {
                return Err(PathError::Io {
                    path: raw.to_string(),
                    reason: e.to_string(),
                });
            }
        }
    };
    let mut full = canonical;
    for part in rest.iter().rev() {
        match Path::new(part).components().next() {
            Some(Component::Normal(_)) => full.push(part),
            _ => return Err(outside()),
        }
    }
    if full.starts_with(workspace) {
        return Ok(full);
    }
    // `workspace` should already be canonical; if a caller passed one reached through a
    // symlink, compare against its canonical form rather than refusing every path.
    match workspace.canonicalize() {
        Ok(ws) if ws != workspace && full.starts_with(&ws) => Ok(full),
        _ => Err(outside()),
    }
}

/// How many leading bytes are checked for a NUL byte when deciding a file is binary.
pub const SNIFF_BYTES: usize = 8192;

/// True when `bytes` look binary: a NUL byte within the first [`SNIFF_BYTES`].
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0)
}

/// What a file tool found at a resolved path.
#[derive(Debug)]
pub enum Existing {
    /// Nothing there yet.
    Missing,
    /// A regular file and its whole content.
    File {
        bytes: Vec<u8>,
        meta: std::fs::Metadata,
    },
}

/// Why [`load_existing`] could not give a file's content.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("it is a directory")]
    Directory,
    #[error("it is not a regular file")]
    NotRegular,
    #[error("it is too large ({len} bytes; the limit is {max})")]
    TooLarge { len: u64, max: u64 },
    #[error("cannot read it")]
    Io(#[source] io::Error),
}

/// Loads the regular file at `path` whole, refusing directories, devices and files over
/// `max_bytes` (so a tool never pulls a huge file into memory). A missing file is not an error.
pub fn load_existing(path: &Path, max_bytes: u64) -> Result<Existing, LoadError> {
    use std::io::Read;
    // Look before opening: opening a FIFO for reading would block until a writer appears.
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(LoadError::Directory),
        Ok(meta) if !meta.is_file() => return Err(LoadError::NotRegular),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(e) => return Err(LoadError::Io(e)),
    }
    let file = std::fs::File::open(path).map_err(LoadError::Io)?;
    let meta = file.metadata().map_err(LoadError::Io)?;
    if !meta.is_file() {
        return Err(LoadError::NotRegular);
    }
    if meta.len() > max_bytes {
        return Err(LoadError::TooLarge {
            len: meta.len(),
            max: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // `take` bounds memory even if the file grows while we read it.
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(LoadError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(LoadError::TooLarge {
            len: bytes.len() as u64,
            max: max_bytes,
        });
    }
    Ok(Existing::File { bytes, meta })
}

/// Refuses to replace a file its owner made read-only (no owner write bit): the tools would
/// otherwise replace it anyway, since the rename needs only the folder to be writable. The
/// error is a message for the model; `verb` is the tool's name (`write`, `edit`).
pub fn refuse_read_only(meta: &std::fs::Metadata, display: &str, verb: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o200 != 0 {
        return Ok(());
    }
    Err(format!(
        "cannot {verb} {display}: it is read-only (mode {mode:04o}); it was left unchanged. \
         If it really must change, ask the user to make it writable first"
    ))
}

/// Shows `path` relative to the workspace when it is inside it.
pub fn display_path(workspace: &Path, path: &Path) -> String {
    path.strip_prefix(workspace)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Creates `dir` (and parents) with mode 0700 for folders we own, such as `.minicode/sessions`.
/// When `dir` is a folder of a `.minicode` data folder, the data folder's `.gitignore` is
/// brought up to date too (see [`gitignore`]), so every writer of private data gets it.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    match dir.parent() {
        Some(data_dir) if data_dir.file_name() == Some(std::ffi::OsStr::new(".minicode")) => {
            gitignore::ensure(data_dir)
        }
        _ => Ok(()),
    }
}
