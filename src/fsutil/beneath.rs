//! Working on a path beneath a root folder (the workspace) without following a symbolic link
//! in any of its components: what minicode itself writes or removes where a command could have
//! put a link (the sandbox guard after a call, a rewind, a checkpoint restore). A path string
//! is resolved by the kernel again at every use, so a folder swapped for a link between a check
//! and the removal would lead the removal out of the workspace; here every step starts from a
//! descriptor and a link is an error that names the path, never a detour.
//!
//! Where the kernel has `openat2` (Linux 5.6) one call resolves the parent folder with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`; elsewhere the folders are
//! opened one by one with `O_NOFOLLOW | O_DIRECTORY`. The last component is then handled by the
//! `*at` calls that do not follow it either. This module decides how, never what: callers
//! choose which paths to touch.

mod remove;
mod write;

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

/// Why a path beneath the root could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BeneathError {
    /// A component of the path is a symbolic link: refused, not followed.
    #[error("{path}: a symbolic link was found on the way; minicode does not follow it here")]
    Link { path: PathBuf },
    /// The path is absolute outside the root, or climbs out of it with `..`.
    #[error("{path}: not a plain path below {root}")]
    NotBeneath { path: PathBuf, root: PathBuf },
    /// Something other than what the operation needs (a FIFO where a file is read, a file
    /// where a folder must be).
    #[error("{path}: {what}")]
    Kind { path: PathBuf, what: &'static str },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl BeneathError {
    /// Whether the refusal is a symbolic link on the way.
    pub(crate) fn is_link(&self) -> bool {
        matches!(self, BeneathError::Link { .. })
    }
}

impl From<BeneathError> for io::Error {
    fn from(e: BeneathError) -> io::Error {
        let kind = match &e {
            BeneathError::Link { .. } | BeneathError::NotBeneath { .. } => {
                io::ErrorKind::PermissionDenied
            }
            BeneathError::Kind { .. } => io::ErrorKind::InvalidInput,
            BeneathError::Io { source, .. } => source.kind(),
        };
        io::Error::new(kind, e)
    }
}

/// What [`Root::lstat`] found at a path.
#[derive(Debug)]
pub(crate) struct Found(FileStat);

impl Found {
    pub(crate) fn is_dir(&self) -> bool {
        self.kind() == SFlag::S_IFDIR
    }
    pub(crate) fn is_symlink(&self) -> bool {
        self.kind() == SFlag::S_IFLNK
    }
    fn kind(&self) -> SFlag {
        SFlag::from_bits_truncate(self.0.st_mode & SFlag::S_IFMT.bits())
    }
}

/// The flag to open a folder only to walk through it or name it to an `*at` call.
#[cfg(target_os = "linux")]
const SEARCH: OFlag = OFlag::O_PATH;
#[cfg(not(target_os = "linux"))]
const SEARCH: OFlag = OFlag::O_RDONLY;

/// Deepest path (in components) handled; deeper is refused rather than risking the stack.
const MAX_DEPTH: usize = 512;

/// An open root folder: every path handed to it is resolved beneath it, link-free.
pub(crate) struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

impl Root {
    /// Opens `path` as the root. The root itself is trusted (the user chose it, links
    /// included); nothing below it is followed.
    pub(crate) fn open(path: &Path) -> Result<Root, BeneathError> {
        let flags = SEARCH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(path, flags, Mode::empty()).map_err(|e| io_error(path, e))?;
        Ok(Root {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The path the root was opened with.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The plain components of `rel` (relative, or absolute below the root): `.` is skipped,
    /// `..` and anything outside the root refused.
    fn parts<'a>(&self, rel: &'a Path) -> Result<Vec<&'a OsStr>, BeneathError> {
        let rel = if rel.is_absolute() {
            rel.strip_prefix(&self.path)
                .map_err(|_| self.not_beneath(rel))?
        } else {
            rel
        };
        let mut parts = Vec::new();
        for component in rel.components() {
            match component {
                Component::Normal(name) => parts.push(name),
                Component::CurDir => {}
                _ => return Err(self.not_beneath(rel)),
            }
        }
        if parts.len() > MAX_DEPTH {
            return Err(self.not_beneath(rel));
        }
        Ok(parts)
    }

    fn not_beneath(&self, rel: &Path) -> BeneathError {
        BeneathError::NotBeneath {
            path: rel.to_path_buf(),
            root: self.path.clone(),
        }
    }

    /// The shown path of `parts`.
    fn shown(&self, parts: &[&OsStr]) -> PathBuf {
        parts.iter().fold(self.path.clone(), |p, part| p.join(part))
    }

    /// Opens the folder `parts` names (the root when empty) with `flags`, refusing any link.
    fn dir(&self, parts: &[&OsStr], flags: OFlag) -> Result<OwnedFd, BeneathError> {
        let flags = flags | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        if parts.is_empty() {
            return nix::fcntl::openat(&self.fd, ".", flags, Mode::empty())
                .map_err(|e| io_error(&self.path, e));
        }
        #[cfg(target_os = "linux")]
        if let Some(opened) = self.dir_openat2(parts, flags) {
            return opened;
        }
        self.dir_walk(parts, flags)
    }

    /// One `openat2` call; `None` when the kernel (or a seccomp filter) lacks it.
    #[cfg(target_os = "linux")]
    fn dir_openat2(&self, parts: &[&OsStr], flags: OFlag) -> Option<Result<OwnedFd, BeneathError>> {
        use nix::fcntl::{OpenHow, ResolveFlag};
        use std::sync::atomic::{AtomicBool, Ordering};
        static MISSING: AtomicBool = AtomicBool::new(false);
        if MISSING.load(Ordering::Relaxed) {
            return None;
        }
        let joined: PathBuf = parts.iter().collect();
        let how = OpenHow::new().flags(flags).resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
        match nix::fcntl::openat2(&self.fd, &joined, how) {
            Ok(fd) => Some(Ok(fd)),
            Err(Errno::ENOSYS | Errno::EPERM) => {
                MISSING.store(true, Ordering::Relaxed);
                None
            }
            Err(Errno::ELOOP) => Some(Err(BeneathError::Link {
                path: self.shown(parts),
            })),
            Err(Errno::EXDEV) => Some(Err(self.not_beneath(&joined))),
            // Say which component is a link when one is in the way of a "not a folder".
            Err(Errno::ENOTDIR) => Some(self.dir_walk(parts, flags)),
            Err(e) => Some(Err(io_error(&self.shown(parts), e))),
        }
    }

    /// Component by component, each folder opened from the one before with `O_NOFOLLOW`.
    fn dir_walk(&self, parts: &[&OsStr], flags: OFlag) -> Result<OwnedFd, BeneathError> {
        let mut current = nix::fcntl::openat(
            &self.fd,
            ".",
            SEARCH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io_error(&self.path, e))?;
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let step = if last {
                flags
            } else {
                SEARCH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
            };
            current = match nix::fcntl::openat(&current, *part, step, Mode::empty()) {
                Ok(fd) => fd,
                Err(e) => return Err(self.step_error(&current, &parts[..=i], e)),
            };
        }
        Ok(current)
    }

    /// The error of opening the last of `parts` as a folder from `parent`: a link is named.
    fn step_error(&self, parent: &OwnedFd, parts: &[&OsStr], e: Errno) -> BeneathError {
        let path = self.shown(parts);
        let name = parts.last().copied().unwrap_or(OsStr::new("."));
        let link = matches!(e, Errno::ELOOP | Errno::ENOTDIR)
            && nix::sys::stat::fstatat(parent, name, AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|st| Found(st).is_symlink());
        if link {
            BeneathError::Link { path }
        } else {
            io_error(&path, e)
        }
    }

    /// The parent folder of `rel` (opened read-only, so it can be listed and synced) and the
    /// last component's name. The root itself has no parent and is refused.
    fn parent_of(&self, rel: &Path) -> Result<(OwnedFd, OsString, PathBuf), BeneathError> {
        let parts = self.parts(rel)?;
        let Some((name, parents)) = parts.split_last() else {
            return Err(self.not_beneath(rel));
        };
        let fd = self.dir(parents, OFlag::O_RDONLY)?;
        Ok((fd, name.to_os_string(), self.shown(&parts)))
    }

    /// What is at `rel`, the last component not followed; `None` when it (or a folder above
    /// it) does not exist. A link above it is an error.
    pub(crate) fn lstat(&self, rel: &Path) -> Result<Option<Found>, BeneathError> {
        let (parent, name, shown) = match self.parent_of(rel) {
            Ok(found) => found,
            Err(BeneathError::Io { source, .. }) if missing(&source) => return Ok(None),
            Err(e) => return Err(e),
        };
        match nix::sys::stat::fstatat(&parent, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Found(st))),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(io_error(&shown, e)),
        }
    }

    /// The first component of `rel` that is a symbolic link, as a path below the root.
    pub(crate) fn first_link(&self, rel: &Path) -> Result<Option<PathBuf>, BeneathError> {
        let parts = self.parts(rel)?;
        let mut prefix = PathBuf::new();
        for part in parts {
            prefix.push(part);
            match self.lstat(&prefix)? {
                Some(found) if found.is_symlink() => return Ok(Some(prefix)),
                Some(found) if found.is_dir() => {}
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Opens the regular file at `rel` for reading, without blocking and without following a
    /// link; `None` when it does not exist. A FIFO, device or folder is refused.
    pub(crate) fn open_read(
        &self,
        rel: &Path,
    ) -> Result<Option<(std::fs::File, std::fs::Metadata)>, BeneathError> {
        let (parent, name, shown) = match self.parent_of(rel) {
            Ok(found) => found,
            Err(BeneathError::Io { source, .. }) if missing(&source) => return Ok(None),
            Err(e) => return Err(e),
        };
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let fd = match nix::fcntl::openat(&parent, name.as_os_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(Errno::ELOOP) => return Err(BeneathError::Link { path: shown }),
            Err(e) => return Err(io_error(&shown, e)),
        };
        let file = std::fs::File::from(fd);
        let meta = file.metadata().map_err(|source| BeneathError::Io {
            path: shown.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(BeneathError::Kind {
                path: shown,
                what: "not a regular file",
            });
        }
        Ok(Some((file, meta)))
    }

    /// Makes the folder `rel` and any missing folder above it (`mode`, less the umask); an
    /// existing link on the way is refused.
    pub(crate) fn create_dir_all(&self, rel: &Path, mode: u32) -> Result<(), BeneathError> {
        let parts = self.parts(rel)?;
        let mut current = self.dir(&[], SEARCH)?;
        for (i, part) in parts.iter().enumerate() {
            match nix::sys::stat::mkdirat(&current, *part, Mode::from_bits_truncate(mode)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(io_error(&self.shown(&parts[..=i]), e)),
            }
            let flags = SEARCH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            current = match nix::fcntl::openat(&current, *part, flags, Mode::empty()) {
                Ok(fd) => fd,
                Err(e) => return Err(self.step_error(&current, &parts[..=i], e)),
            };
        }
        Ok(())
    }

    /// Makes the folder `rel` (its parent must exist); an existing folder is fine, anything
    /// else there (a link included) is an error.
    pub(crate) fn create_dir(&self, rel: &Path, mode: u32) -> Result<(), BeneathError> {
        let (parent, name, shown) = self.parent_of(rel)?;
        match nix::sys::stat::mkdirat(&parent, name.as_os_str(), Mode::from_bits_truncate(mode)) {
            Ok(()) => Ok(()),
            Err(Errno::EEXIST) => match self.lstat(rel)? {
                Some(found) if found.is_dir() => Ok(()),
                Some(found) if found.is_symlink() => Err(BeneathError::Link { path: shown }),
                _ => Err(BeneathError::Kind {
                    path: shown,
                    what: "not a folder",
                }),
            },
            Err(e) => Err(io_error(&shown, e)),
        }
    }

    /// Sets the permission bits of the file or folder at `rel`, never of a link's target.
    pub(crate) fn set_mode(&self, rel: &Path, mode: u32) -> Result<(), BeneathError> {
        let (parent, name, shown) = self.parent_of(rel)?;
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let fd = match nix::fcntl::openat(&parent, name.as_os_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ELOOP) => return Err(BeneathError::Link { path: shown }),
            Err(e) => return Err(io_error(&shown, e)),
        };
        nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(mode)).map_err(|e| io_error(&shown, e))
    }
}

fn missing(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR))
}

fn io_error(path: &Path, e: Errno) -> BeneathError {
    BeneathError::Io {
        path: path.to_path_buf(),
        source: io::Error::from(e),
    }
}

#[cfg(test)]
mod tests;
