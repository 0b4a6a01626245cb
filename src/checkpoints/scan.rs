//! The metadata scan: walks the workspace as the tools do (ignore rules applied as git would,
//! hidden files included, `.git` and `.minicode` never entered, links never followed), takes
//! one `lstat` per file, and reads only the files whose metadata differs from the recorded
//! tree. A scan covers the whole tree or only the folders the watcher named. It stores what it
//! reads in the blob store and returns what changed; it never writes anything else.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ignore::{WalkBuilder, WalkState};

use super::blobs::Blobs;
use super::watch::{Dirty, Watcher};
use super::{Change, FileState, Guard, Stat, Tree};
use crate::sync::lock;

/// Folders never recorded, at any depth: git's database and minicode's own data.
pub(crate) const NEVER: [&str; 2] = [".git", crate::fsutil::DATA_DIR];

/// What a scan found against the recorded tree.
#[derive(Default)]
pub(crate) struct Found {
    /// Paths whose state differs, with the recorded state and the new one.
    pub changes: BTreeMap<String, Change>,
    /// Bytes the blob store grew by.
    pub grown: u64,
}

/// The part of the tree a scan covers: everything, or the folders the watcher named.
#[derive(Default)]
pub(crate) struct Scope {
    /// `None`: everything.
    dirty: Option<Dirty>,
    /// Every ancestor of a named folder: entered to reach it, its files not listed.
    ancestors: HashSet<String>,
}

impl Scope {
    pub(crate) fn everything() -> Scope {
        Scope::default()
    }

    pub(crate) fn dirty(dirty: Dirty) -> Scope {
        if dirty.everything {
            return Scope::everything();
        }
        let mut ancestors = HashSet::new();
        for dir in dirty.flat.iter().chain(&dirty.deep) {
            let mut rest = dir.as_str();
            while let Some((up, _)) = rest.rsplit_once('/') {
                ancestors.insert(up.to_string());
                rest = up;
            }
            ancestors.insert(String::new());
        }
        Scope {
            dirty: Some(dirty),
            ancestors,
        }
    }

    fn under_deep(dirty: &Dirty, rel: &str) -> bool {
        dirty.deep.iter().any(|d| {
            d.is_empty()
                || rel == d
                || rel
                    .strip_prefix(d.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    }

    /// Whether the walk enters the folder `rel`.
    fn enters(&self, rel: &str) -> bool {
        let Some(dirty) = &self.dirty else {
            return true;
        };
        self.ancestors.contains(rel) || dirty.flat.contains(rel) || Self::under_deep(dirty, rel)
    }

    /// Whether the file or folder `rel` is covered: listed by the walk, and judged absent if
    /// not.
    fn covers(&self, rel: &str) -> bool {
        let Some(dirty) = &self.dirty else {
            return true;
        };
        let rel = rel.strip_suffix('/').unwrap_or(rel);
        let parent = rel.rsplit_once('/').map_or("", |(p, _)| p);
        dirty.flat.contains(parent) || Self::under_deep(dirty, rel)
    }
}

fn relative(workspace: &Path, path: &Path) -> Option<String> {
    path.strip_prefix(workspace)
        .ok()?
        .to_str()
        .map(str::to_string)
}

/// Every regular file the walk yields in `scope`, relative to `workspace`, with its
/// metadata. Each folder is watched before it is listed, so nothing created in it later goes
/// unseen. A whole-tree walk of a small tree runs on the calling thread (`threads` 1): the
/// parallel walker starts threads for every walk and idles in 1 ms sleeps while they drain,
/// which cost a small workspace's call more than the walk itself (12 threads and 3.5 ms of
/// sleeps in a five-call one-shot run).
fn walk(
    workspace: &Path,
    scope: &Arc<Scope>,
    watcher: Option<&Arc<Watcher>>,
    threads: usize,
) -> Vec<(String, std::fs::Metadata)> {
    let mut builder = crate::fsutil::with_ignore_rules(WalkBuilder::new(workspace));
    let root = workspace.to_path_buf();
    let (in_filter, watch) = (scope.clone(), watcher.cloned());
    if let Some(watcher) = &watch {
        watcher.add("", workspace);
    }
    builder.parents(false).filter_entry(move |entry| {
        let name = entry.file_name();
        if NEVER.iter().any(|n| name == *n) {
            return false;
        }
        if !entry.file_type().is_some_and(|t| t.is_dir()) {
            return true;
        }
        let Some(rel) = relative(&root, entry.path()) else {
            return false;
        };
        let enter = in_filter.enters(&rel) && crate::fsutil::ignore_files_safe(entry.path());
        if enter && let Some(watcher) = &watch {
            watcher.add(&rel, entry.path());
        }
        enter
    });
    if scope.dirty.is_none() && threads <= 1 {
        return builder
            .build()
            .flatten()
            .filter_map(|entry| kept(workspace, scope, &entry))
            .collect();
    }
    // The sequential walker lists a folder before asking the filter whether to enter it; a
    // scoped scan skips almost every folder, so it takes the parallel walker on one thread,
    // which asks first. A whole walk of a large tree takes it on `threads` threads: there the
    // listing and the `lstat`s are the cost, and they run side by side.
    let threads = if scope.dirty.is_none() { threads } else { 1 };
    let found: Mutex<Vec<(String, std::fs::Metadata)>> = Mutex::new(Vec::new());
    builder.threads(threads).build_parallel().run(|| {
        let found = &found;
        Box::new(move |entry| {
            if let Some(item) = entry.ok().and_then(|e| kept(workspace, scope, &e)) {
                lock(found).push(item);
            }
            WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// A walked entry as the scan records it: a regular file or a folder (with a trailing `/`)
/// inside `scope`, relative to `workspace`, with its metadata.
fn kept(
    workspace: &Path,
    scope: &Scope,
    entry: &ignore::DirEntry,
) -> Option<(String, std::fs::Metadata)> {
    let kind = entry.file_type()?;
    if !kind.is_file() && !kind.is_dir() {
        return None;
    }
    let mut rel = relative(workspace, entry.path())?;
    if rel.is_empty() || !scope.covers(&rel) {
        return None;
    }
    if kind.is_dir() {
        rel.push('/');
    }
    let meta = entry.path().symlink_metadata().ok()?;
    Some((rel, meta))
}

/// What a scan compares against and where it stores what it reads.
pub(crate) struct Against<'a> {
    pub tree: &'a Tree,
    pub blobs: &'a mut Blobs,
    pub max_file_bytes: u64,
    pub guard: &'a Guard,
    /// Threads for a whole-tree walk (1: the calling thread alone).
    pub threads: usize,
}

/// Scans the workspace against `tree`: unchanged files (same metadata) are not read; changed
/// and new ones are read, hashed and stored; recorded files no longer there are absent. A file
/// over the size limit or holding a secret is tracked by its metadata only (a state whose
/// hash says why), so it is named once, under the call that changed it, not under every call.
pub(crate) fn scan(
    workspace: &Path,
    scope: Scope,
    watcher: Option<&Arc<Watcher>>,
    mut against: Against<'_>,
) -> io::Result<Found> {
    let scope = Arc::new(scope);
    if !crate::fsutil::ignore_files_safe(workspace) {
        return Err(io::Error::other(
            "an ignore file at the workspace root (.gitignore, .ignore or .git/info/exclude) is \
             not a regular file, so the workspace is not walked",
        ));
    }
    against.blobs.batch();
    let compared = compare(workspace, &scope, watcher, &mut against);
    let flushed = against.blobs.flush();
    let (mut found, seen) = compared?;
    flushed?;
    for (rel, state) in covered(against.tree, &scope) {
        // A folder in a named folder that the walk did not need to enter is still there.
        if state.is_dir()
            && !seen.contains(rel)
            && scope.dirty.is_some()
            && std::fs::symlink_metadata(workspace.join(rel)).is_ok_and(|meta| state.matches(&meta))
        {
            continue;
        }
        if !seen.contains(rel) && !found.changes.contains_key(rel) {
            found.changes.insert(
                rel.clone(),
                Change {
                    before: Some(state.clone()),
                    after: None,
                },
            );
        }
    }
    Ok(found)
}

/// The walk's half of [`scan`]: every walked entry compared with the tree, what differs read
/// and stored (small blobs held back in the store's batch); with the paths seen.
fn compare(
    workspace: &Path,
    scope: &Arc<Scope>,
    watcher: Option<&Arc<Watcher>>,
    against: &mut Against<'_>,
) -> io::Result<(Found, HashSet<String>)> {
    let mut found = Found::default();
    let mut seen = HashSet::new();
    for (rel, meta) in walk(workspace, scope, watcher, against.threads) {
        let known = against.tree.get(&rel);
        if known.is_some_and(|state| state.matches(&meta)) {
            seen.insert(rel);
            continue;
        }
        if meta.is_dir() {
            let state = Stat::of(&meta).with_hash(super::DIR_HASH.to_string());
            seen.insert(rel.clone());
            let before = known.cloned();
            found.changes.insert(
                rel,
                Change {
                    before,
                    after: Some(state),
                },
            );
            continue;
        }
        let state = if meta.len() > against.max_file_bytes {
            Some(Stat::of(&meta).with_hash(super::TOO_LARGE.to_string()))
        } else {
            let path = workspace.join(&rel);
            read_state(&path, against.blobs, against.guard, &mut found.grown)?
        };
        let Some(state) = state else {
            continue;
        };
        seen.insert(rel.clone());
        // A file touched but left the same is a change too: its new metadata goes into the
        // tree (the listing leaves it out).
        found.changes.insert(
            rel,
            Change {
                before: known.cloned(),
                after: Some(state),
            },
        );
    }
    Ok((found, seen))
}

/// The recorded files `scope` covers: all of them, or those in the named folders (found by
/// range, not by going through the whole tree).
fn covered<'t>(tree: &'t Tree, scope: &Scope) -> Vec<(&'t String, &'t FileState)> {
    let Some(dirty) = &scope.dirty else {
        return tree.iter().collect();
    };
    let mut out = Vec::new();
    for dir in dirty.flat.iter().chain(&dirty.deep) {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        for (rel, state) in tree.range(prefix.clone()..) {
            if !rel.starts_with(&prefix) {
                break;
            }
            if scope.covers(rel) {
                out.push((rel, state));
            }
        }
    }
    out
}

/// Reads one file and stores its content; `None` when it vanished meanwhile. A file holding a
/// secret is not stored (its state says so).
pub(crate) fn read_state(
    path: &Path,
    blobs: &mut Blobs,
    guard: &Guard,
    grown: &mut u64,
) -> io::Result<Option<FileState>> {
    let Ok(mut file) = crate::fsutil::open_walked(path) else {
        return Ok(None);
    };
    let meta = file.metadata()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    io::Read::read_to_end(&mut file, &mut bytes)?;
    if guard.holds_secret(&bytes) {
        return Ok(Some(
            Stat::of(&meta).with_hash(super::HOLDS_SECRET.to_string()),
        ));
    }
    let hash = Blobs::hash(&bytes);
    *grown += blobs.put(&hash, &bytes)?;
    Ok(Some(Stat::of(&meta).with_hash(hash)))
}

/// Scans only `paths` (workspace-relative files a call names, as `write` and `edit` do) and
/// the folders above each, against `tree`: one `lstat` each, a read where the metadata
/// differs. A path under a folder never recorded (`.git`, `.minicode`) is left out.
pub(crate) fn paths(workspace: &Path, paths: &[String], against: Against<'_>) -> io::Result<Found> {
    let mut entries = std::collections::BTreeSet::new();
    for path in paths {
        let parts: Vec<&str> = path.split('/').collect();
        if parts.iter().any(|p| NEVER.contains(p) || p.is_empty()) {
            continue;
        }
        for depth in 1..parts.len() {
            entries.insert(format!("{}/", parts[..depth].join("/")));
        }
        entries.insert(path.clone());
    }
    let mut found = Found::default();
    for rel in entries {
        let known = against.tree.get(&rel);
        let meta = std::fs::symlink_metadata(workspace.join(rel.trim_end_matches('/'))).ok();
        let is_dir = rel.ends_with('/');
        let meta = meta.filter(|m| if is_dir { m.is_dir() } else { m.is_file() });
        let after = match meta {
            Some(meta) if known.is_some_and(|s| s.matches(&meta)) => continue,
            Some(meta) if is_dir => Some(Stat::of(&meta).with_hash(super::DIR_HASH.to_string())),
            Some(meta) if meta.len() > against.max_file_bytes => {
                Some(Stat::of(&meta).with_hash(super::TOO_LARGE.to_string()))
            }
            Some(_) => {
                let path = workspace.join(&rel);
                read_state(&path, against.blobs, against.guard, &mut found.grown)?
            }
            None => None,
        };
        if known.is_none() && after.is_none() {
            continue;
        }
        let before = known.cloned();
        found.changes.insert(rel, Change { before, after });
    }
    Ok(found)
}
