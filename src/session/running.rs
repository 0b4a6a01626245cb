//! The process groups of a session's calls in flight, kept beside it in
//! `.minicode/running/<session id>.json` (`{"<call id>": {"pgid": …, "tag": …}}`, the tag
//! naming the call's supervisor): written when a `bash`
//! command's group starts, the entry removed when it is gone. A file left behind means
//! minicode died while those groups ran; the session's next opening takes it (reads and
//! removes it) so the agent can kill a group that is somehow still alive before it calls the
//! call interrupted. Read confined to the workspace, written through `fsutil::private_dir`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil;

/// A recorded group: its id and its supervisor's tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Group {
    pub(crate) pgid: i32,
    pub(crate) tag: String,
}

/// The folder under `.minicode/`.
const RUNNING: &str = "running";
/// The most of a record that is read: a handful of entries is a few hundred bytes.
const LIMIT: u64 = 64 * 1024;

fn file(dir: &Path, session: &str) -> PathBuf {
    dir.join(format!("{session}.json"))
}

/// Records (`Some`) or forgets (`None`) the group of call `call` of session `session`.
pub(crate) fn record(
    workspace: &Path,
    session: &str,
    call: &str,
    group: Option<&Group>,
) -> std::io::Result<()> {
    let dir = fsutil::private_dir(workspace, RUNNING)?;
    let path = file(&dir, session);
    let mut groups = read(workspace, &path);
    match group {
        Some(group) => {
            groups.insert(call.to_string(), group.clone());
        }
        None => {
            groups.remove(call);
        }
    }
    if groups.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let text = serde_json::to_vec(&groups).map_err(std::io::Error::other)?;
    replace(&path, &text)
}

/// Replaces the record through a rename, without `fsync`: the record matters only while a
/// process may outlive minicode, and none outlives the machine, so durability across a power
/// loss buys nothing, while a crash of minicode itself leaves the page cache (and the file)
/// intact. Skipping the two syncs keeps a `bash` call's start cheap.
fn replace(path: &Path, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    // A leftover of an earlier process with the same id (the folder is private).
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .and_then(|mut file| file.write_all(text));
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// The groups a previous run of session `session` left recorded, by call id; the record is
/// removed. Empty when there is none (or it cannot be read).
pub(crate) fn take(workspace: &Path, session: &str) -> BTreeMap<String, Group> {
    let Ok(Some(dir)) = fsutil::existing_private_dir(workspace, RUNNING) else {
        return BTreeMap::new();
    };
    let path = file(&dir, session);
    let groups = read(workspace, &path);
    let _ = std::fs::remove_file(&path);
    groups
}

fn read(workspace: &Path, path: &Path) -> BTreeMap<String, Group> {
    let Ok((handle, _)) = fsutil::open_confined(workspace, path) else {
        return BTreeMap::new();
    };
    let mut text = String::new();
    if handle.take(LIMIT).read_to_string(&mut text).is_err() {
        return BTreeMap::new();
    }
    serde_json::from_str(&text).unwrap_or_default()
}
