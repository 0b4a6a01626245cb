//! One edit of the user's own config file: found, read with its comments and layout kept, and
//! written back atomically. Trust (`minicode trust`/`untrust`) and MCP approvals both edit the
//! file through it, so a linked file, a missing folder and the new file's permissions are
//! handled one way. It decides nothing about what goes into the file.

use std::path::PathBuf;

use toml_edit::DocumentMut;

use super::TrustError;
use super::trust::{read_document, user_config_path};

/// The user's config file opened for one edit.
pub(super) struct UserFile {
    /// The path the user knows, which messages name.
    pub(super) path: PathBuf,
    /// Where the file really is (a dotfiles link is edited where it points); `None` while it
    /// does not exist.
    target: Option<PathBuf>,
    /// The file's content (empty for a new file), to be edited in place.
    pub(super) doc: DocumentMut,
}

impl UserFile {
    /// Reads the user's config file, or starts an empty one when there is none yet.
    pub(super) fn open(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, TrustError> {
        let path = user_config_path(env).ok_or(TrustError::NoUserConfig)?;
        let target = path.canonicalize().ok();
        let doc = match &target {
            Some(real) => read_document(real)?,
            None => DocumentMut::new(),
        };
        Ok(Self { path, target, doc })
    }

    /// Writes the edited document back atomically. An existing file keeps its permissions; a
    /// new one is private (0600) in a private folder (0700), since it lists the user's
    /// workspaces and approvals. Returns the path the user knows.
    pub(super) fn save(self) -> Result<PathBuf, TrustError> {
        let write_error = |source| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        let (target, mode) = match &self.target {
            Some(real) => (real, None),
            None => {
                if let Some(dir) = self.path.parent() {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(dir)
                        .map_err(write_error)?;
                }
                (&self.path, Some(0o600))
            }
        };
        crate::fsutil::write_atomic(target, self.doc.to_string().as_bytes(), mode)
            .map_err(write_error)?;
        Ok(self.path)
    }
}
