//! The metadata scan: walks the workspace as the tools do (ignore rules applied as git would,
//! hidden files included, `.git` and `.minicode` never entered, links never followed), takes
//! one `lstat` per file, and reads only the files whose metadata differs from the recorded
//! tree. It stores what it reads in the blob store and returns what changed; it never writes
//! anything else.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

use super::blobs::Blobs;
use super::{Change, FileState, Stat, Tree};
use crate::sync::lock;

/// Folders never recorded, at any depth: git's database and minicode's own data.
const NEVER: [&str; 2] = [".git", crate::fsutil::DATA_DIR];
/// Ignore files the walker reads; a folder where one is not a regular file is not entered
/// (a FIFO would hang the walk).
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// What a scan found against the recorded tree.
#[derive(Default)]
pub(crate) struct Found {
    /// Paths whose state differs, with the recorded state and the new one.
    pub changes: BTreeMap<String, Change>,
    /// Files over the size limit, not recorded.
    pub skipped: Vec<String>,
    /// Bytes the blob store grew by.
    pub grown: u64,
}

/// Every regular file the walk yields, relative to `workspace`, with its metadata.
fn walk(workspace: &Path) -> Vec<(String, std::fs::Metadata)> {
    let mut builder = WalkBuilder::new(workspace);
    builder
        .hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let name = entry.file_name();
            if NEVER.iter().any(|n| name == *n) {
                return false;
            }
            !entry.file_type().is_some_and(|t| t.is_dir()) || ignore_files_usable(entry.path())
        });
    let found: Mutex<Vec<(String, std::fs::Metadata)>> = Mutex::new(Vec::new());
    builder.build_parallel().run(|| {
        let found = &found;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Ok(rel) = entry.path().strip_prefix(workspace) else {
                return WalkState::Continue;
            };
            let Some(rel) = rel.to_str().map(str::to_string) else {
                return WalkState::Continue;
            };
            if let Ok(meta) = entry.path().symlink_metadata() {
                lock(found).push((rel, meta));
            }
            WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn ignore_files_usable(dir: &Path) -> bool {
    IGNORE_FILES
        .iter()
        .all(|name| std::fs::symlink_metadata(dir.join(name)).map_or(true, |m| m.is_file()))
}

/// Scans the workspace against `tree`: unchanged files (same metadata) are not read; changed
/// and new ones are read, hashed and stored; recorded files no longer there are absent.
pub(crate) fn scan(
    workspace: &Path,
    tree: &Tree,
    blobs: &mut Blobs,
    max_file_bytes: u64,
) -> io::Result<Found> {
    let mut found = Found::default();
    let mut seen = std::collections::HashSet::with_capacity(tree.len());
    for (rel, meta) in walk(workspace) {
        let known = tree.get(&rel);
        if known.is_some_and(|state| state.matches(&meta)) {
            seen.insert(rel);
            continue;
        }
        if meta.len() > max_file_bytes {
            found.skipped.push(rel);
            continue;
        }
        let Some(state) = read_state(&workspace.join(&rel), blobs, &mut found.grown)? else {
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
    for (rel, state) in tree {
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
    found.skipped.sort();
    Ok(found)
}

/// Reads one file and stores its content; `None` when it vanished meanwhile.
pub(crate) fn read_state(
    path: &Path,
    blobs: &mut Blobs,
    grown: &mut u64,
) -> io::Result<Option<FileState>> {
    let Ok(mut file) = crate::fsutil::open_walked(path) else {
        return Ok(None);
    };
    let meta = file.metadata()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    io::Read::read_to_end(&mut file, &mut bytes)?;
    let hash = Blobs::hash(&bytes);
    *grown += blobs.put(&hash, &bytes)?;
    Ok(Some(Stat::of(&meta).with_hash(hash)))
}
