//! The `find` index: every indexed file's metadata and chunks, kept in
//! `.minicode/index/find.json` (0700 folder, 0600 file). Brought up to date before each query
//! from file metadata only: unchanged files are kept, changed ones re-read, vanished ones
//! dropped. The walk is `search`'s (ignore files, no links, never `.git` or `.minicode`); files
//! over [`MAX_FILE_BYTES`], binary files and files a `read(…)` rule denies are never indexed.
//!
//! Reading is bounded by a time budget: a first query on a large tree indexes what it can,
//! saves it, and answers from that, saying how much is left. The file is replaced atomically,
//! so a concurrent process reads the old or the new index, never a mix; an unreadable or
//! foreign-version file is rebuilt, never trusted.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::symbols::Kind;
use crate::fsutil;
use crate::tools::walk;

/// Bumped whenever chunking or the stored form changes: an index of another version is
/// rebuilt.
const VERSION: u32 = 1;
/// Files larger than this are left out: generated code, data and bundles rank badly and cost
/// the most to read.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The index folder under `.minicode/`.
const DIR: &str = "index";
const FILE: &str = "find.json";

/// One chunk's place, name and terms by field.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Chunk {
    /// First and last line, 1-based.
    pub start: u32,
    pub end: u32,
    pub symbol: String,
    pub kind: Kind,
    pub parent: Option<String>,
    pub symbol_terms: BTreeMap<String, u32>,
    pub doc_terms: BTreeMap<String, u32>,
    pub text_terms: BTreeMap<String, u32>,
}

/// What says a file changed: its size, modification and change times, and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: meta.len(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
            inode: meta.ino(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileEntry {
    pub stamp: Stamp,
    pub chunks: Vec<Chunk>,
}

/// The whole index, by path relative to the workspace.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Stored {
    pub version: u32,
    pub files: BTreeMap<String, FileEntry>,
}

/// What a refresh did, for the result's closing notes.
#[derive(Debug, Default)]
pub(crate) struct Refresh {
    /// Files still to read when the time budget ran out.
    pub pending: usize,
    pub reread: usize,
    pub dropped: usize,
    pub too_big: usize,
    pub withheld: usize,
    /// The stored index was unreadable or of another version and was started over.
    pub rebuilt: bool,
    /// Why the index could not be saved (the answer still uses it).
    pub unsaved: Option<String>,
    pub skipped_notes: Vec<String>,
    /// Anything was re-read or dropped: statistics over the index must be recounted.
    pub changed: bool,
}

fn index_path(workspace: &Path) -> Result<PathBuf, String> {
    fsutil::private_dir(workspace, DIR)
        .map(|d| d.join(FILE))
        .map_err(|e| format!("the index folder is unusable: {e}"))
}

/// The stored index, or an empty one (and `true`) when it is missing, unreadable, corrupt or
/// of another version.
fn load(path: &Path) -> (Stored, bool) {
    let Ok(bytes) = std::fs::read(path) else {
        return (Stored::default(), false);
    };
    match serde_json::from_slice::<Stored>(&bytes) {
        Ok(s) if s.version == VERSION => (s, false),
        _ => (Stored::default(), true),
    }
}

/// Loads the index (or takes `previous`, this process's copy from its last call), brings it up
/// to date within `budget` and saves it when it changed.
pub(crate) fn refresh(
    workspace: &Path,
    rules: Option<&crate::permissions::Rules>,
    budget: Duration,
    cancel: &CancellationToken,
    previous: Option<Stored>,
) -> Result<(Stored, Refresh), String> {
    let began = Instant::now();
    let mut report = Refresh::default();
    let path = index_path(workspace);
    let (mut stored, rebuilt) = match (previous, &path) {
        (Some(s), _) => (s, false),
        (None, Ok(p)) => load(p),
        (None, Err(_)) => (Stored::default(), false),
    };
    report.rebuilt = rebuilt;
    stored.version = VERSION;
    let found = walk_files(workspace, rules, &mut report)?;
    let before = stored.files.len();
    stored.files.retain(|p, _| found.contains_key(p));
    report.dropped = before - stored.files.len();
    let mut changed = report.dropped > 0 || rebuilt;
    for (rel, (abs, stamp)) in &found {
        if stored.files.get(rel).is_some_and(|f| f.stamp == *stamp) {
            continue;
        }
        if cancel.is_cancelled() {
            return Err("interrupted by the user".to_string());
        }
        if began.elapsed() > budget {
            report.pending += 1;
            continue;
        }
        changed = true;
        // A binary or unreadable file is kept with no chunks, so it is not read again until
        // it changes.
        let chunks = read_chunks(abs, rel).unwrap_or_default();
        report.reread += 1;
        stored.files.insert(
            rel.clone(),
            FileEntry {
                stamp: *stamp,
                chunks,
            },
        );
    }
    report.changed = changed;
    if changed {
        let saved = path.and_then(|p| {
            let json = serde_json::to_vec(&stored).map_err(|e| e.to_string())?;
            fsutil::write_atomic(&p, &json, Some(0o600)).map_err(|e| e.to_string())
        });
        report.unsaved = saved.err();
    }
    Ok((stored, report))
}

/// Every regular file the walk yields that may be indexed, by relative path.
fn walk_files(
    workspace: &Path,
    rules: Option<&crate::permissions::Rules>,
    report: &mut Refresh,
) -> Result<BTreeMap<String, (PathBuf, Stamp)>, String> {
    let start = walk::start(workspace, None)?;
    let walk = walk::build(workspace, &start, None)?;
    let mut found = BTreeMap::new();
    for entry in walk.builder.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let abs = entry.path();
        if crate::tools::withheld(rules, workspace, abs) {
            report.withheld += 1;
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(abs) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        if meta.len() > MAX_FILE_BYTES {
            report.too_big += 1;
            continue;
        }
        found.insert(
            walk::shown(workspace, abs),
            (abs.to_path_buf(), Stamp::of(&meta)),
        );
    }
    report.skipped_notes = crate::sync::lock(&walk.skipped).notes();
    Ok(found)
}

/// The chunks of one file, or `None` when it cannot be opened, grew past the limit, or is
/// binary. Opened without following a link, as `search` opens files.
fn read_chunks(abs: &Path, rel: &str) -> Option<Vec<super::index::Chunk>> {
    let file = fsutil::open_walked(abs).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES || fsutil::looks_binary(&bytes) {
        return None;
    }
    Some(super::chunk::chunks(rel, &String::from_utf8_lossy(&bytes)))
}
