//! Covering one hidden path inside the call's mount namespace: a folder gets an empty,
//! read-only `tmpfs` over it, a file gets `/dev/null` bound over it (it reads empty), a missing
//! path is skipped. A writable root or the temporary folder that lies inside a hidden folder
//! (the session's `TMPDIR` lives in minicode's runtime folder) is bound back at its own place
//! inside the empty one: what the user chose to work in stays visible, its neighbours do not.
//! A hidden path that is itself such a folder is left visible; one inside a writable root is
//! hidden all the same (a workspace that is HOME still hides `~/.ssh`).

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::namespace::{mount, mount_fs};

/// Covers `path` unless it is missing or one of `keep` is itself; re-binds each of `keep`
/// below it.
pub(super) fn cover(path: &Path, keep: &[&Path]) -> std::io::Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return mount(Some(Path::new("/dev/null")), path, libc::MS_BIND);
    }
    if keep.contains(&path) {
        return Ok(());
    }
    // Opened before the cover goes on: afterwards their paths lead into the empty folder.
    let inside: Vec<(PathBuf, std::fs::File)> = keep
        .iter()
        .filter(|k| k.starts_with(path) && k.is_dir())
        .map(|k| {
            let file = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
                .open(k)?;
            Ok((k.to_path_buf(), file))
        })
        .collect::<std::io::Result<_>>()?;
    let locked = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    mount_fs("tmpfs", path, locked, "mode=0755,size=64k")?;
    for (kept, file) in &inside {
        std::fs::create_dir_all(kept)?;
        let source = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        mount(Some(&source), kept, libc::MS_BIND | libc::MS_REC)?;
    }
    mount(
        None,
        path,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | locked,
    )
}
