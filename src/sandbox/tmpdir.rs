//! The private temporary folder of a session: exported as `TMPDIR` to confined commands and
//! the one place outside the writable roots they may write. It lives under
//! `$XDG_RUNTIME_DIR/minicode/tmp` (or `<system temp>/minicode-<uid>/tmp`), in a folder of its
//! own per session, every level mode 0700, created on demand and refused when a level is not
//! ours (another user could otherwise read or swap what a command puts there).

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the temporary folder of session `session` is (not created: see [`ensure`]).
pub(crate) fn for_session(session: &str) -> PathBuf {
    let name: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    base().join(name)
}

/// The folder the sessions' temporary folders live in.
pub(crate) fn base() -> PathBuf {
    // A runtime folder that is not ours (a process started as another user with the
    // caller's environment) cannot hold ours: the system temp folder then does.
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && runtime.is_absolute()
        && std::fs::metadata(&runtime)
            .is_ok_and(|m| m.is_dir() && m.uid() == nix::unistd::getuid().as_raw())
    {
        return runtime.join("minicode").join("tmp");
    }
    std::env::temp_dir()
        .join(format!("minicode-{}", nix::unistd::getuid().as_raw()))
        .join("tmp")
}

/// Creates `dir` (and missing parents, 0700) when missing. It, and each level of minicode's
/// own folder above it, must be a real folder owned by us and closed to others: a level that
/// is not ours is refused, one open to others is closed.
pub(crate) fn ensure(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let ours = base();
    let top = ours.parent().unwrap_or(&ours);
    private(dir)?;
    for level in dir.ancestors().skip(1).take_while(|p| p.starts_with(top)) {
        private(level)?;
    }
    Ok(())
}

fn private(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    let ours = meta.uid() == nix::unistd::getuid().as_raw();
    if !meta.is_dir() || !ours {
        return Err(io::Error::other(format!(
            "{} is not a folder of this user",
            dir.display()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Removes the folder and what commands left in it (at the end of a session). Only a
/// session's own folder below minicode's is ever removed: an unconfined policy has none.
pub(crate) fn remove(dir: &Path) {
    if dir.parent() == Some(base().as_path()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}
