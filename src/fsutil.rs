//! File-system helpers shared by tools, sessions and memory: atomic replacement of a file (and
//! the sweep of what a killed write left), resolving a model-supplied path so it can never leave
//! the workspace, opening a file that a repository supplies without ever blocking on it, and the
//! checked way into `.minicode/`, with the `.gitignore` that keeps its private data out of git.
//!
//! Everything a repository can plant (a symlink, a FIFO, a device node) is refused here, so
//! callers need not think about it. It must not decide policy (what may be read or written,
//! what needs approval): that belongs to the tools and the agent.

mod atomic;
pub(crate) mod beneath;
pub mod gitignore;
mod walk_rules;

use std::io;
use std::path::{Component, Path, PathBuf};

pub use atomic::{JOURNAL_DIR, TEMP_PREFIX, is_temp_name};
pub(crate) use atomic::{
    sweep_temp_files, write_atomic, write_atomic_journaled, write_atomic_parts,
};
pub(crate) use walk_rules::{ignore_files_safe, with_ignore_rules};

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
pub(crate) const SNIFF_BYTES: usize = 8192;

/// True when `bytes` look binary: within the first [`SNIFF_BYTES`], a NUL byte, or mostly
/// not text (more than one byte in ten a control character other than the whitespace and
/// escape text uses). Bytes that are merely not UTF-8 (a Latin-1 file) are text.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        return true;
    }
    let control = head
        .iter()
        .filter(|&&b| {
            (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b | 0x08)) || b == 0x7f
        })
        .count();
    control * 10 > head.len()
}

/// What a file tool found at a resolved path.
#[derive(Debug)]
pub(crate) enum Existing {
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
pub(crate) enum LoadError {
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
pub(crate) fn load_existing(path: &Path, max_bytes: u64) -> Result<Existing, LoadError> {
    use std::io::Read;
    let (file, meta) = match open_regular(path) {
        Ok(opened) => opened,
        Err(OpenError::Missing) => return Ok(Existing::Missing),
        Err(OpenError::Directory) => return Err(LoadError::Directory),
        Err(OpenError::NotRegular | OpenError::Outside) => return Err(LoadError::NotRegular),
        Err(OpenError::Io(e)) => return Err(LoadError::Io(e)),
    };
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
pub(crate) fn refuse_read_only(
    meta: &std::fs::Metadata,
    display: &str,
    verb: &str,
) -> Result<(), String> {
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
pub(crate) fn display_path(workspace: &Path, path: &Path) -> String {
    path.strip_prefix(workspace)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Why [`open_regular`] or [`open_confined`] gave no file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// Nothing there (a dangling symbolic link counts as nothing).
    #[error("it does not exist")]
    Missing,
    /// Its real path, after every symbolic link, is not inside the workspace.
    #[error("it resolves to a place outside the workspace")]
    Outside,
    #[error("it is a directory")]
    Directory,
    /// A FIFO, socket or device: reading one could block forever or never end.
    #[error("it is not a regular file")]
    NotRegular,
    #[error("{0}")]
    Io(#[source] io::Error),
}

/// Opens `path` for reading and checks, on the open descriptor, that it is a regular file.
///
/// The open itself never blocks: `O_NONBLOCK` makes a FIFO without a writer open at once (and
/// is then refused by the type check), `O_NOCTTY` keeps a terminal device from becoming our
/// controlling terminal. Checking after the open (not before) leaves no window in which the
/// file can be swapped for a FIFO. On a regular file `O_NONBLOCK` changes nothing.
pub(crate) fn open_regular(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), OpenError> {
    open_checked(path, 0)
}

/// Opens `path` read-only without blocking (plus `extra` flags) and checks on the descriptor
/// that it is a regular file.
fn open_checked(
    path: &Path,
    extra: libc::c_int,
) -> Result<(std::fs::File, std::fs::Metadata), OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | extra)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => OpenError::Missing,
            _ => OpenError::Io(e),
        })?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if meta.is_dir() {
        return Err(OpenError::Directory);
    }
    if !meta.is_file() {
        return Err(OpenError::NotRegular);
    }
    Ok((file, meta))
}

/// Opens a file a directory walk found (the `list` and `search` tools) without following a
/// symbolic link in its last component and without blocking, and checks on the descriptor
/// that it is a regular file. The walk itself never descends through a link, so the file is
/// where the walk saw it: inside the workspace. Cheaper than [`open_confined`] (no
/// `realpath` per file), which matters when a search opens 100,000 files.
pub(crate) fn open_walked(path: &Path) -> Result<std::fs::File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => OpenError::Missing,
            _ => OpenError::Io(e),
        })?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if meta.is_dir() {
        return Err(OpenError::Directory);
    }
    if !meta.is_file() {
        return Err(OpenError::NotRegular);
    }
    Ok(file)
}

/// Whether canonical `path` is `workspace` or below it (see [`resolve_in_workspace`] for the
/// rule): for callers that resolved a path themselves, e.g. the target of a link a walk met.
pub(crate) fn is_inside(workspace: &Path, path: &Path) -> bool {
    inside(workspace, path)
}

/// Opens a file that the repository supplies and the agent reads without asking anyone
/// (`MiniCode.md`, memory files, the workspace configuration, anything later): its real path,
/// after every symbolic link, must lie inside the canonical `workspace`, and it must be a
/// regular file, opened without blocking (see [`open_regular`]). A symbolic link that stays
/// inside the workspace is followed.
pub(crate) fn open_confined(
    workspace: &Path,
    path: &Path,
) -> Result<(std::fs::File, std::fs::Metadata), OpenError> {
    let real = match path.canonicalize() {
        Ok(real) => real,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(OpenError::Missing),
        Err(e) => return Err(OpenError::Io(e)),
    };
    if !inside(workspace, &real) {
        return Err(OpenError::Outside);
    }
    // `O_NOFOLLOW` on the resolved path: a symbolic link put in its place after the check
    // fails the open instead of being followed out of the workspace.
    open_checked(&real, libc::O_NOFOLLOW)
}

/// Whether canonical `path` is `workspace` or below it, comparing components (so `/w/p-evil`
/// is not inside `/w/p`). A `workspace` reached through a symbolic link is compared in its
/// canonical form as well.
fn inside(workspace: &Path, path: &Path) -> bool {
    path.starts_with(workspace)
        || workspace
            .canonicalize()
            .is_ok_and(|ws| ws != workspace && path.starts_with(&ws))
}

/// The folder `.minicode/` holds minicode's own data for a workspace.
pub(crate) const DATA_DIR: &str = ".minicode";

/// Makes sure `<workspace>/.minicode/<sub>` (e.g. `sessions`, `logs`, `outputs`) is a real
/// folder inside the workspace and returns its canonical path: the only way minicode creates,
/// chmods or writes anything under `.minicode/`.
///
/// Missing folders are created with mode 0700 and the last one is set to 0700. An existing
/// `.minicode` or `.minicode/<sub>` that is a symbolic link leading outside the workspace (or
/// anything that is not a folder) is refused, and nothing is created, chmod-ed or written
/// through it: a cloned repository could otherwise point `.minicode/sessions` at a folder of
/// the user's and have minicode change its mode or fill it. A link that stays inside the
/// workspace is followed. `sub` may be empty for `.minicode` itself.
///
/// Every call also brings `.minicode/.gitignore` up to date (see [`gitignore`]), so whatever
/// writes private data here, now or in a later version, has it kept out of git.
pub(crate) fn private_dir(workspace: &Path, sub: &str) -> io::Result<PathBuf> {
    let dir = checked_dir(workspace, sub, true)?
        .ok_or_else(|| io::Error::other("the data folder could not be created"))?;
    if let Some(data_dir) = checked_dir(workspace, "", false)? {
        gitignore::ensure(&data_dir)?;
    }
    Ok(dir)
}

/// Like [`private_dir`] but creates and changes nothing: `None` when the folder does not
/// exist yet, an error when it exists but leads outside the workspace or is not a folder.
/// For readers (listing or opening sessions) that must not follow a planted link either.
pub(crate) fn existing_private_dir(workspace: &Path, sub: &str) -> io::Result<Option<PathBuf>> {
    checked_dir(workspace, sub, false)
}

fn checked_dir(workspace: &Path, sub: &str, create: bool) -> io::Result<Option<PathBuf>> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let mut current = workspace.to_path_buf();
    let mut shown = PathBuf::new();
    let parts = std::iter::once(DATA_DIR).chain(sub.split('/').filter(|p| !p.is_empty()));
    for part in parts {
        if matches!(part, "." | "..") {
            return Err(io::Error::other(format!("invalid data folder {sub:?}")));
        }
        current.push(part);
        shown.push(part);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let real = current.canonicalize().map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "{} is a symbolic link minicode cannot follow: {e}",
                            shown.display()
                        ),
                    )
                })?;
                if !inside(workspace, &real) || !real.is_dir() {
                    return Err(refused(&shown, &real));
                }
                current = real;
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "{} is not a folder; minicode keeps its data there",
                    shown.display()
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                match std::fs::DirBuilder::new().mode(0o700).create(&current) {
                    Ok(()) => {}
                    // Created meanwhile by another minicode: check it like any existing one.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        let meta = std::fs::symlink_metadata(&current)?;
                        if !meta.is_dir() {
                            return Err(io::Error::other(format!(
                                "{} changed while minicode created it",
                                shown.display()
                            )));
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    if create {
        std::fs::set_permissions(&current, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(Some(current))
}

fn refused(shown: &Path, real: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} is a symbolic link to {:?}, which is not a folder inside the workspace; minicode \
             refuses to keep its data there (remove the link)",
            shown.display(),
            real
        ),
    )
}
