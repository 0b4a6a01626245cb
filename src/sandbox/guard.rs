//! Protected names a confined call must not create. A read-only bind mount needs an existing
//! target and Landlock cannot refuse one name inside a folder it lets a command write, so
//! minicode (outside the sandbox) does this around each call: before it, `.minicode` is made to
//! exist (it is then mounted read-only like any other) and the protected paths that are
//! missing are noted; after it, any of them that now exists was made by the call (or by
//! something it started) and is removed, and the call is reported as blocked. The removal
//! goes through `fsutil::beneath`: a command that turned a folder on the way into a link gets
//! its link removed, and minicode never deletes what the link points to.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::Policy;
use crate::fsutil::beneath::Root;

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

    /// Removes every protected path the call created; returns what was removed. The removal
    /// never follows a link: a protected path that now exists through a link the call made
    /// (`config` or `.agents` made a link to any folder) has the link removed, never what it
    /// points to; a path in none of the writable roots is left alone.
    pub(crate) fn after(self, policy: &Policy) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for path in self.missing {
            // Following links here only tells whether the path exists again; nothing is
            // done through this answer.
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            match remove_beneath(policy, &path) {
                Ok(Some(gone)) => removed.push(gone),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove a protected path a confined command created");
                    removed.push(path);
                }
            }
        }
        removed
    }
}

/// Removes `path` (absolute, in a writable root of `policy`) without following any link: the
/// path itself when no link is on the way, else the first link on the way. Returns what was
/// removed.
fn remove_beneath(policy: &Policy, path: &Path) -> std::io::Result<Option<PathBuf>> {
    let Some(root) = policy.writable.iter().find(|w| path.starts_with(w)) else {
        return Ok(None);
    };
    let root = Root::open(root)?;
    match root.remove_all(path) {
        Ok(true) => Ok(Some(path.to_path_buf())),
        Ok(false) => Ok(None),
        Err(e) if e.is_link() => {
            let Some(link) = root.first_link(path)? else {
                return Err(e.into());
            };
            root.remove_file(&link)?;
            tracing::warn!(link = %link.display(), "removed a link a confined command made to reach a protected path");
            Ok(Some(root.path().join(link)))
        }
        Err(e) => Err(e.into()),
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
