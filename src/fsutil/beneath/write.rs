//! Atomic replacement of a file beneath a [`Root`]: the same steps as `fsutil::write_atomic`
//! (a locked temp file recorded under `.minicode/inflight/`, `fsync`, rename, `fsync` of the
//! folder), but the temp file is created and renamed through the parent folder's descriptor,
//! reached without following a link, so the bytes land inside the root or nowhere.

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::UnlinkatFlags;

use super::{BeneathError, Root, io_error};
use crate::fsutil::TEMP_PREFIX;
use crate::fsutil::atomic::{ATTEMPTS, Record, try_lock};

impl Root {
    /// Replaces the file at `rel` with `data`, permission bits exactly `mode & 0o777`. What
    /// is at `rel` now (a file, a link) is replaced as a name, never written through. The
    /// temp file is recorded for the start-up sweep when the root is a workspace.
    pub(crate) fn write_atomic(
        &self,
        rel: &Path,
        data: &[u8],
        mode: u32,
    ) -> Result<(), BeneathError> {
        let (parent, name, shown) = self.parent_of(rel)?;
        let folder = shown.parent().unwrap_or(self.path());
        let mode = mode & 0o777;
        for _ in 0..ATTEMPTS {
            let id = uuid::Uuid::new_v4().simple().to_string();
            let tmp = format!("{TEMP_PREFIX}{id}");
            // Without a record the write still happens; only a sweep after a kill would miss it.
            let _record = Record::create(self.path(), folder, &id)
                .inspect_err(|e| tracing::warn!(error = %e, "cannot record a temp file"))
                .ok();
            let Some(file) = create_locked(&parent, OsStr::new(&tmp), mode, &shown)? else {
                continue;
            };
            let result = fill_and_rename(file, &parent, OsStr::new(&tmp), &name, data, mode);
            if let Err(e) = result {
                let _ = nix::unistd::unlinkat(&parent, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                return Err(BeneathError::Io {
                    path: shown,
                    source: e,
                });
            }
            return sync(&parent).map_err(|source| BeneathError::Io {
                path: shown,
                source,
            });
        }
        Err(BeneathError::Kind {
            path: shown,
            what: "could not create a temp file (another process kept removing it)",
        })
    }
}

/// Creates the temp file `tmp` in `parent` and locks it; `None` when a sweep took the name
/// before the lock.
fn create_locked(
    parent: &OwnedFd,
    tmp: &OsStr,
    mode: u32,
    shown: &Path,
) -> Result<Option<std::fs::File>, BeneathError> {
    use std::os::unix::fs::MetadataExt;
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(parent, tmp, flags, Mode::from_bits_truncate(mode))
        .map_err(|e| io_error(shown, e))?;
    let file = std::fs::File::from(fd);
    let io = |source| BeneathError::Io {
        path: shown.to_path_buf(),
        source,
    };
    if !try_lock(&file).map_err(io)? {
        return Ok(None);
    }
    let ours = file.metadata().map_err(io)?;
    match nix::sys::stat::fstatat(parent, tmp, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(now) if now.st_dev == ours.dev() && now.st_ino == ours.ino() => Ok(Some(file)),
        Ok(_) | Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(io_error(shown, e)),
    }
}

fn fill_and_rename(
    mut file: std::fs::File,
    parent: &OwnedFd,
    tmp: &OsStr,
    name: &OsStr,
    data: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.write_all(data)?;
    // The umask may have narrowed the mode; set it exactly.
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.sync_all()?;
    // The lock is held (the file stays open) until the name is gone.
    nix::fcntl::renameat(parent, tmp, parent, name).map_err(std::io::Error::from)
}

/// Makes the rename durable; file systems that cannot sync a folder are let off.
fn sync(parent: &OwnedFd) -> std::io::Result<()> {
    match nix::unistd::fsync(parent) {
        Err(Errno::EINVAL | Errno::ENOTSUP | Errno::EBADF) => Ok(()),
        other => other.map_err(std::io::Error::from),
    }
}
