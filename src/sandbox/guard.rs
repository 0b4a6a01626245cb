//! Protected names a confined call must not create. A read-only bind mount needs an existing
//! target and Landlock cannot refuse one name inside a folder it lets a command write, so
//! minicode (outside the sandbox) does this around each call: before it, `.minicode` is made to
//! exist (it is then mounted read-only like any other) and the protected paths that are
//! missing are noted; after it, any of them that now exists was made by the call (or by
//! something it started) and is removed, and the call is reported as blocked.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::Policy;

/// The protected paths missing when a call started.
#[derive(Debug, Default)]
pub(crate) struct Guard {
    missing: Vec<PathBuf>,
}

impl Guard {
    /// Prepares a call under `policy`: creates `.minicode` in the workspace (the first
    /// writable root), the temporary folder and the cache folder, then notes the missing protected paths.
    pub(crate) fn before(policy: &Policy) -> std::io::Result<Guard> {
        if !policy.is_confined() {
            return Ok(Guard::default());
        }
        if let Some(workspace) = policy.writable.first() {
            // The one way minicode makes its data folder (0700, kept out of git, never
            // through a link out of the workspace).
            crate::fsutil::private_dir(workspace, "")?;
        }
        super::tmpdir::ensure(&policy.tmpdir)?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(super::cache::root(policy))?;
        let missing = policy
            .read_only
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .cloned()
            .collect();
        Ok(Guard { missing })
    }

    /// Removes every protected path the call created; returns them.
    pub(crate) fn after(self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for path in self.missing {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            // A link is removed as a link, never followed.
            let gone = if meta.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            if let Err(e) = gone {
                tracing::warn!(path = %path.display(), error = %e, "could not remove a protected path a confined command created");
            }
            removed.push(path);
        }
        removed
    }
}

/// The path shown for a removed one: relative to the workspace when inside it.
pub(crate) fn shown(policy: &Policy, path: &Path) -> String {
    policy
        .writable
        .first()
        .and_then(|w| path.strip_prefix(w).ok())
        .unwrap_or(path)
        .display()
        .to_string()
}
