//! Removals beneath a [`Root`]: one name (a link is removed as a link), an empty folder, or a
//! whole tree walked through folder descriptors, so that a folder swapped for a link while the
//! tree is removed has the link removed, never what it points to.

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::UnlinkatFlags;

use super::{BeneathError, Found, MAX_DEPTH, Root, io_error};

impl Root {
    /// Removes the file or link at `rel` (not a folder); false when nothing was there.
    pub(crate) fn remove_file(&self, rel: &Path) -> Result<bool, BeneathError> {
        let (parent, name, shown) = match self.parent_of(rel) {
            Ok(found) => found,
            Err(BeneathError::Io { source, .. }) if super::missing(&source) => return Ok(false),
            Err(e) => return Err(e),
        };
        match nix::unistd::unlinkat(&parent, name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(io_error(&shown, e)),
        }
    }

    /// Removes the empty folder at `rel`; false when nothing was there. A folder that is not
    /// empty is an error (`ENOTEMPTY`), a link is refused.
    pub(crate) fn remove_dir(&self, rel: &Path) -> Result<bool, BeneathError> {
        let (parent, name, shown) = match self.parent_of(rel) {
            Ok(found) => found,
            Err(BeneathError::Io { source, .. }) if super::missing(&source) => return Ok(false),
            Err(e) => return Err(e),
        };
        match nix::unistd::unlinkat(&parent, name.as_os_str(), UnlinkatFlags::RemoveDir) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(Errno::ENOTDIR) if is_link(&parent, &name) => {
                Err(BeneathError::Link { path: shown })
            }
            Err(e) => Err(io_error(&shown, e)),
        }
    }

    /// Removes whatever is at `rel`: a folder with everything in it, anything else as one
    /// name (a link itself, never its target). False when nothing was there.
    pub(crate) fn remove_all(&self, rel: &Path) -> Result<bool, BeneathError> {
        let (parent, name, shown) = match self.parent_of(rel) {
            Ok(found) => found,
            Err(BeneathError::Io { source, .. }) if super::missing(&source) => return Ok(false),
            Err(e) => return Err(e),
        };
        remove_entry(&parent, &name, &shown, 0)
    }
}

fn is_link(parent: &OwnedFd, name: &OsStr) -> bool {
    nix::sys::stat::fstatat(parent, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|st| Found(st).is_symlink())
}

/// Removes `name` in `parent`, a folder recursively; `shown` names it in errors.
pub(super) fn remove_entry(
    parent: &OwnedFd,
    name: &OsStr,
    shown: &Path,
    depth: usize,
) -> Result<bool, BeneathError> {
    let stat = match nix::sys::stat::fstatat(parent, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => Found(st),
        Err(Errno::ENOENT) => return Ok(false),
        Err(e) => return Err(io_error(shown, e)),
    };
    if stat.is_dir() {
        if depth >= MAX_DEPTH {
            return Err(BeneathError::Kind {
                path: shown.to_path_buf(),
                what: "folders nested too deep to remove",
            });
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match nix::fcntl::openat(parent, name, flags, Mode::empty()) {
            Ok(dir) => empty(dir, shown, depth)?,
            // Swapped for a link or a file since the stat: removed as a name below.
            Err(Errno::ELOOP | Errno::ENOTDIR) => {}
            Err(Errno::ENOENT) => return Ok(false),
            Err(e) => return Err(io_error(shown, e)),
        }
    }
    let flag = if stat.is_dir() && !is_link(parent, name) {
        UnlinkatFlags::RemoveDir
    } else {
        UnlinkatFlags::NoRemoveDir
    };
    match nix::unistd::unlinkat(parent, name, flag) {
        Ok(()) => Ok(true),
        Err(Errno::ENOENT) => Ok(false),
        Err(e) => Err(io_error(shown, e)),
    }
}

/// Removes everything in the open folder `dir`.
fn empty(dir: OwnedFd, shown: &Path, depth: usize) -> Result<(), BeneathError> {
    let handle = dir.try_clone().map_err(|source| BeneathError::Io {
        path: shown.to_path_buf(),
        source,
    })?;
    let mut listing = nix::dir::Dir::from_fd(handle).map_err(|e| io_error(shown, e))?;
    let mut names: Vec<CString> = Vec::new();
    for entry in listing.iter() {
        let entry = entry.map_err(|e| io_error(shown, e))?;
        let name = entry.file_name();
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            names.push(name.to_owned());
        }
    }
    drop(listing);
    for name in names {
        let name = OsStr::from_bytes(name.to_bytes());
        remove_entry(&dir, name, &shown.join(name), depth + 1)?;
    }
    Ok(())
}
