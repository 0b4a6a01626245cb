//! The image store of a workspace's sessions: each attached image once, in
//! `.minicode/sessions/images/<sha256>.<ext>` (mode 0600), named by its hash so two turns,
//! two sessions or a fork that show the same picture share one file. Messages keep only the
//! reference (`chat::Image`); saving writes the files a new message needs, loading fills the
//! bytes back in. A file that went missing or does not match its hash leaves the image
//! without bytes (it is then sent as a note), it never fails the session.

use std::path::{Path, PathBuf};

use crate::chat::{Image, Message};
use crate::fsutil;

/// The store's folder inside the sessions folder.
const IMAGES: &str = "images";

/// The folder of the store beside the session file `session_path`.
fn folder(session_path: &Path) -> Option<PathBuf> {
    Some(session_path.parent()?.join(IMAGES))
}

/// Writes the stored file of each image of `messages` not stored yet.
pub(super) fn store(session_path: &Path, messages: &[Message]) -> std::io::Result<()> {
    let Some(dir) = folder(session_path) else {
        return Ok(());
    };
    for image in messages.iter().flat_map(|m| &m.images) {
        if !image.has_data() {
            continue;
        }
        let path = dir.join(image.file_name());
        if std::fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        create_private(&dir)?;
        fsutil::write_atomic(&path, &image.data, Some(0o600))?;
    }
    Ok(())
}

fn create_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Fills in the bytes of every image of `messages` from the store, read only from inside
/// `workspace` and only when they still match their hash.
pub(super) fn fill(workspace: &Path, session_path: &Path, messages: &mut [Message]) {
    let Some(dir) = folder(session_path) else {
        return;
    };
    for image in messages.iter_mut().flat_map(|m| m.images.iter_mut()) {
        if image.has_data() {
            continue;
        }
        let path = dir.join(image.file_name());
        match super::load::read_confined(workspace, &path) {
            Ok(bytes) => match Image::new(bytes) {
                Ok(read) if read == *image => image.data = read.data,
                _ => tracing::warn!(path = %path.display(), "stored image does not match its hash"),
            },
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "stored image unreadable"),
        }
    }
}
