//! What the sessions of one workspace share, so that a later session does not read and hash the
//! whole tree again: the stat cache (every tracked path's size, times, inode, mode and blob).
//! It is kept as an immutable, content-addressed snapshot, `.minicode/checkpoints/bases/<sha256>`
//! (the tree in the byte format of `snapshot`), and the pointer file `.minicode/checkpoints/workspace.json`
//! naming the newest snapshot plus the paths that changed since (the delta).
//!
//! A journal's base line names a snapshot instead of holding the file list. A session's first
//! record starts from the pointer's tree and reads only the files whose metadata differs.
//! Nothing here is trusted unchecked: a file not owned by this user, a link, a snapshot whose
//! bytes do not hash to its name, a hash that is not a blob name or a path that leaves the
//! workspace make the whole cache ignored (the session then reads the tree, as before, and
//! publishes a new one). The pointer is replaced by rename, so two sessions writing it at once
//! leave one of the two, whole: the last writer wins, and the loser's changes are only read
//! again by the next session (the cache says what a file held when it had that metadata; it
//! never says a file is unchanged that is not).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::blobs::{Blobs, on_disk};
use super::journal::{Journal, Line};
use super::{FileState, Tree};

/// The pointer file's version.
const VERSION: u32 = 1;

/// The pointer file, in `.minicode/checkpoints/`.
pub(crate) const POINTER: &str = "workspace.json";

/// The snapshots' folder, in `.minicode/checkpoints/`.
const BASES: &str = "bases";

/// A snapshot or pointer larger than this is not read (a tree of a million files is ~60 MB).
const READ_LIMIT: u64 = 256 << 20;

/// The pointer file: the newest snapshot and what changed since it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Pointer {
    pub version: u32,
    pub base: String,
    pub delta: BTreeMap<String, Option<FileState>>,
}

/// The shared cache as a session starts from it.
pub(crate) struct Cache {
    /// The snapshot's name.
    pub base: String,
    /// The snapshot with the delta applied: the tree as last recorded by any session.
    pub tree: Tree,
    /// The paths the delta names.
    pub delta: BTreeSet<String>,
}

fn root(workspace: &Path) -> PathBuf {
    workspace.join(crate::fsutil::DATA_DIR).join(super::SUBDIR)
}

/// Reads a whole file of the store: regular, not a link, owned by this user, not too large.
fn read_owned(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || !super::attribution::owned(&meta) || meta.len() > READ_LIMIT {
        return Err(io::Error::other(format!(
            "{} is not a file of this user's checkpoint store",
            path.display()
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(READ_LIMIT).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether `hash` can name a stored state: a blob name (64 lowercase hex digits) or one of the
/// markers. Anything else (`../x`) would lead a blob read outside the store.
pub(crate) fn valid_hash(hash: &str) -> bool {
    (hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        || [super::DIR_HASH, super::TOO_LARGE, super::HOLDS_SECRET].contains(&hash)
}

/// Whether `path` is a workspace-relative path a scan could have recorded.
pub(crate) fn valid_path(path: &str) -> bool {
    let path = path.strip_suffix('/').unwrap_or(path);
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|part| !matches!(part, "" | "." | "..") && !part.contains('\0'))
}

fn valid_state(path: &str, state: Option<&FileState>) -> bool {
    valid_path(path) && state.is_none_or(|s| valid_hash(&s.hash))
}

/// Writes `bytes` to `path` whole or not at all (aside, then renamed), 0600, not synced: like
/// a blob, the cache must survive the process dying and costs nothing more on every call.
fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let temp = super::blobs::temp_path(path);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Stores `tree` as a snapshot (see `snapshot`); returns its name.
pub(crate) fn save_base(workspace: &Path, tree: &Tree) -> io::Result<String> {
    let bytes = super::snapshot::encode(tree);
    let hash = Blobs::hash(&bytes);
    let dir = crate::fsutil::private_dir(workspace, &format!("{}/{BASES}", super::SUBDIR))?;
    let path = dir.join(&hash);
    if read_owned(&path).is_ok_and(|old| Blobs::hash(&old) == hash) {
        return Ok(hash);
    }
    replace(&path, &bytes)?;
    Ok(hash)
}

/// A snapshot's tree, checked: its bytes hash to its name, every entry is valid.
pub(crate) fn load_base(workspace: &Path, hash: &str) -> io::Result<Tree> {
    if !valid_hash(hash) || hash.len() != 64 {
        return Err(io::Error::other("invalid checkpoint snapshot name"));
    }
    let bytes = read_owned(&root(workspace).join(BASES).join(hash))?;
    if Blobs::hash(&bytes) != hash {
        return Err(io::Error::other(format!(
            "checkpoint snapshot {hash} is damaged"
        )));
    }
    let tree = if bytes.starts_with(super::snapshot::MAGIC) {
        super::snapshot::decode(&bytes)?
    } else {
        // Written before the byte format: deflated JSON.
        let mut json = Vec::with_capacity(bytes.len() * 3);
        flate2::read::DeflateDecoder::new(bytes.as_slice())
            .take(READ_LIMIT)
            .read_to_end(&mut json)?;
        serde_json::from_slice(&json).map_err(io::Error::other)?
    };
    if !tree.iter().all(|(p, s)| valid_state(p, Some(s))) {
        return Err(io::Error::other(format!(
            "checkpoint snapshot {hash} names an invalid path or blob"
        )));
    }
    Ok(tree)
}

/// The pointer file, checked (`None`: none, or not usable).
pub(crate) fn pointer(workspace: &Path) -> Option<Pointer> {
    let bytes = read_owned(&root(workspace).join(POINTER)).ok()?;
    let pointer: Pointer = serde_json::from_slice(&bytes).ok()?;
    let usable = pointer.version == VERSION
        && pointer
            .delta
            .iter()
            .all(|(p, s)| valid_state(p, s.as_ref()));
    usable.then_some(pointer)
}

/// The shared cache, or `None` when there is none or any part of it is not to be trusted.
pub(crate) fn load(workspace: &Path) -> Option<Cache> {
    let pointer = pointer(workspace)?;
    let mut tree = match load_base(workspace, &pointer.base) {
        Ok(tree) => tree,
        Err(e) => {
            tracing::info!(error = %e, "checkpoints: the shared stat cache is not used");
            return None;
        }
    };
    let mut delta = BTreeSet::new();
    for (path, state) in pointer.delta {
        match state {
            Some(state) => tree.insert(path.clone(), state),
            None => tree.remove(&path),
        };
        delta.insert(path);
    }
    Some(Cache {
        base: pointer.base,
        tree,
        delta,
    })
}

/// Replaces the pointer file: `base` and, for each path of `delta`, its state in `tree`.
pub(crate) fn publish(
    workspace: &Path,
    base: &str,
    delta: &BTreeSet<String>,
    tree: &Tree,
) -> io::Result<()> {
    let pointer = Pointer {
        version: VERSION,
        base: base.to_string(),
        delta: delta
            .iter()
            .map(|p| (p.clone(), tree.get(p).cloned()))
            .collect(),
    };
    let bytes = serde_json::to_vec(&pointer).map_err(io::Error::other)?;
    replace(&root(workspace).join(POINTER), &bytes)
}

/// The snapshots on disk with the bytes each takes, and the pointer file's (named `""`).
pub(crate) fn files(workspace: &Path) -> io::Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    if let Ok(meta) = std::fs::symlink_metadata(root(workspace).join(POINTER)) {
        out.push((String::new(), on_disk(&meta)));
    }
    let dir = root(workspace).join(BASES);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        // Leftovers of an interrupted write: gone once their writer is.
        if let Some((_, tail)) = name.split_once(".tmp") {
            let pid = tail.split('-').next().and_then(|p| p.parse::<i32>().ok());
            if !pid.is_some_and(super::blobs::alive) && std::fs::remove_file(entry.path()).is_ok() {
                continue;
            }
        }
        out.push((name, on_disk(&meta)));
    }
    Ok(out)
}

/// Removes every snapshot not in `keep` (the pointer's and those journals name).
pub(crate) fn collect(workspace: &Path, keep: &HashSet<String>) -> io::Result<()> {
    for (name, _) in files(workspace)? {
        if name.is_empty() || name.contains('.') || keep.contains(&name) {
            continue;
        }
        match std::fs::remove_file(root(workspace).join(BASES).join(&name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// From how many paths changed since the snapshot a session publishes a new snapshot instead
/// of a longer delta (the pointer is written after every record: it stays under ~100 KB).
pub(crate) const REBASE_FROM: usize = 512;

impl Journal {
    /// Applies a base line: the snapshot it names (when it can no longer be read, the tree
    /// starts from `files` alone and the next scan reads the rest again), then `files`.
    pub(crate) fn based_on(&mut self, files: Tree, shared: Option<String>) {
        self.based = true;
        self.tree = Tree::new();
        self.shared = None;
        if let Some(hash) = shared {
            match load_base(&self.workspace, &hash) {
                Ok(tree) => {
                    self.tree = tree;
                    self.shared = Some(hash);
                }
                Err(e) => tracing::info!(error = %e, "checkpoints: a journal's snapshot is gone"),
            }
        }
        self.touched.clear();
        for (path, state) in files {
            self.set(path, Some(state));
        }
    }

    /// The session's first record: from the workspace's shared cache when there is a usable
    /// one (only files whose metadata differs are read), else from nothing (every tracked file
    /// read, and a snapshot stored). The base line names the snapshot; a drift line holds
    /// what differs from it.
    pub(crate) fn first_record(&mut self) -> io::Result<()> {
        if let Some(cache) = load(&self.workspace) {
            // Only lines of calls that ran unrecorded can precede the base: no tree to keep.
            self.tree = cache.tree;
            self.shared = Some(cache.base);
            self.touched = cache.delta;
        }
        let found = self.scan()?;
        self.grew(found.grown);
        for (path, change) in found.changes {
            self.set(path, change.after);
        }
        if self.shared.is_none() || self.touched.len() > REBASE_FROM {
            return self.rebase();
        }
        self.based = true;
        self.append(&Line::Base {
            version: super::journal::VERSION,
            files: Tree::new(),
            shared: self.shared.clone(),
        })?;
        if !self.touched.is_empty() {
            let files = self
                .touched
                .iter()
                .map(|p| (p.clone(), self.tree.get(p).cloned()))
                .collect();
            self.append(&Line::Drift { files })?;
        }
        self.unpublished = true;
        self.publish();
        Ok(())
    }

    /// Stores the tree as now recorded as a snapshot and appends a base line naming it: the
    /// tree moves to it whole (what it lacks is absent), as after a whole-tree scan.
    pub(crate) fn rebase(&mut self) -> io::Result<()> {
        let hash = save_base(&self.workspace, &self.tree)?;
        self.touched.clear();
        self.shared = Some(hash.clone());
        self.based = true;
        self.append(&Line::Base {
            version: super::journal::VERSION,
            files: Tree::new(),
            shared: Some(hash),
        })?;
        self.unpublished = true;
        self.publish();
        Ok(())
    }

    /// Makes the tree as now recorded the workspace's shared cache (a new snapshot once the
    /// delta grows long). Best effort: a stale or missing cache only costs the next session
    /// reads.
    pub(crate) fn publish(&mut self) {
        if !self.based || !self.unpublished {
            return;
        }
        let published = (|| {
            let long = self.touched.len() > REBASE_FROM;
            let base = match self.shared.clone() {
                Some(base) if !long => base,
                _ => {
                    let base = save_base(&self.workspace, &self.tree)?;
                    self.touched.clear();
                    self.shared = Some(base.clone());
                    base
                }
            };
            publish(&self.workspace, &base, &self.touched, &self.tree)
        })();
        match published {
            Ok(()) => self.unpublished = false,
            Err(e) => tracing::info!(error = %e, "checkpoints: the shared stat cache not written"),
        }
    }
}

/// The snapshots a journal's base lines name.
pub(crate) fn journal_refs(path: &Path) -> io::Result<Vec<String>> {
    use std::io::BufRead;
    let file = std::fs::File::open(path)?;
    let mut out = Vec::new();
    for line in io::BufReader::new(file).lines() {
        let line = line?;
        if !line.starts_with(r#"{"kind":"base""#) {
            continue;
        }
        if let Ok(Line::Base {
            shared: Some(hash), ..
        }) = serde_json::from_str::<Line>(&line)
        {
            out.push(hash);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{valid_hash, valid_path};

    #[test]
    fn only_blob_names_and_workspace_paths_are_accepted() {
        assert!(valid_hash(&"ab".repeat(32)));
        assert!(valid_hash("dir"));
        assert!(!valid_hash("../../etc/passwd"));
        assert!(!valid_hash(&"AB".repeat(32)));
        assert!(valid_path("src/main.rs"));
        assert!(valid_path("src/"));
        assert!(!valid_path("/etc/passwd"));
        assert!(!valid_path("src/../../x"));
        assert!(!valid_path(""));
    }
}
