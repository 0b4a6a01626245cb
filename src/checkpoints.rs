//! Checkpoints: the workspace state each mutating tool call found and left, so a later rewind
//! can put the code back as it was before a user turn. A leaf like `session`: it keeps data
//! under `.minicode/checkpoints/` and knows no tool, provider, protocol or frontend.
//!
//! The design, chosen so a call costs what it changed and not the tree:
//! - contents are stored once by SHA-256 (`blobs`), 0600 files in 0700 folders;
//! - each session keeps one journal (`journal`): a base line holding, for every tracked file,
//!   its stat metadata and blob (the stat cache), then one line per event;
//! - before a call the tree is scanned by metadata only (`scan`): a file whose size, times,
//!   inode and mode match the cache is not read; a file the user changed since is read and
//!   recorded as drift, so the content the call will overwrite is already in the store;
//! - after the call a second metadata scan finds what it changed, reads only those files and
//!   appends one `end` line naming each path's state before and after.
//!
//! The first checkpoint of a session reads every tracked file once (the base); later ones
//! read only changed files. A call that was running when the process died has a `begin` line
//! without its `end`: the next load scans the tree against the state recorded before it and
//! completes the record, so it is undoable like any other.

mod blobs;
mod journal;
mod rewind;
mod scan;
mod watch;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use rewind::{FileChange, Outcome, TurnChanges};

/// The `hash` of a folder's record (never a blob's name: those are 64 hex digits). A folder's
/// path in the tree ends with `/`.
pub(crate) const DIR_HASH: &str = "dir";

/// The tool name a rewind's own record carries in the journal.
pub(crate) const REWIND_TOOL: &str = "rewind";

/// How to rewind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct How {
    /// Plan only: no file is written and nothing is recorded.
    pub dry_run: bool,
    /// Overwrite conflicts too (their current content is recorded first, so the rewind can
    /// be undone); a file that could not be recorded (too large, not a regular file) stays.
    pub force: bool,
    /// The turn the rewind's own record belongs to: the one after the session's last.
    pub as_turn: u32,
}

/// `.minicode/<SUBDIR>`: everything checkpoints keep.
pub(crate) const SUBDIR: &str = "checkpoints";

/// `[checkpoints]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `enabled`: record checkpoints around mutating calls.
    pub enabled: bool,
    /// `max_file_bytes`: larger files are not recorded (and named as skipped).
    pub max_file_bytes: u64,
    /// `max_bytes`: the store's size above which the oldest turns' checkpoints are pruned.
    pub max_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_bytes: crate::defaults::CHECKPOINT_MAX_FILE_BYTES,
            max_bytes: crate::defaults::CHECKPOINT_MAX_BYTES,
        }
    }
}

/// One recorded file: its content's blob and the metadata that recognises it unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileState {
    /// SHA-256 of the content, lowercase hex: the blob's name.
    #[serde(rename = "h")]
    pub hash: String,
    /// Permission bits (`st_mode & 0o7777`).
    #[serde(rename = "m")]
    pub mode: u32,
    #[serde(rename = "s")]
    pub size: u64,
    /// Modification and status-change times in nanoseconds, and the inode: with the size and
    /// mode, what must all match for a file to count as unchanged without being read.
    #[serde(rename = "t")]
    pub mtime: i64,
    #[serde(rename = "c")]
    pub ctime: i64,
    #[serde(rename = "i")]
    pub ino: u64,
}

impl FileState {
    /// A folder's record: its mode (folders are recorded so a rewind removes the ones the
    /// calls created and makes again the ones they removed; their times change with every
    /// entry, so only the mode and the inode recognise one unchanged).
    pub(crate) fn is_dir(&self) -> bool {
        self.hash == DIR_HASH
    }

    /// Whether `meta` describes the file this state was recorded from, unchanged.
    pub(crate) fn matches(&self, meta: &std::fs::Metadata) -> bool {
        let stat = Stat::of(meta);
        if self.is_dir() {
            return meta.is_dir() && self.mode == stat.mode && self.ino == stat.ino;
        }
        self.size == stat.size
            && self.mtime == stat.mtime
            && self.ctime == stat.ctime
            && self.ino == stat.ino
            && self.mode == stat.mode
    }

    /// Same content and mode (what a rewind compares; the times do not matter).
    pub(crate) fn same_file(&self, other: &FileState) -> bool {
        self.hash == other.hash && self.mode == other.mode
    }
}

/// The metadata a [`FileState`] keeps, taken from one `lstat`.
pub(crate) struct Stat {
    pub size: u64,
    pub mtime: i64,
    pub ctime: i64,
    pub ino: u64,
    pub mode: u32,
}

impl Stat {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        Stat {
            size: meta.len(),
            mtime: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            ctime: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode() & 0o7777,
        }
    }

    pub(crate) fn with_hash(self, hash: String) -> FileState {
        FileState {
            hash,
            mode: self.mode,
            size: self.size,
            mtime: self.mtime,
            ctime: self.ctime,
            ino: self.ino,
        }
    }
}

/// The tracked files (workspace-relative paths, `/`-separated) and their states.
pub(crate) type Tree = BTreeMap<String, FileState>;

/// What one path went through during a call: `None` is "absent".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Change {
    pub before: Option<FileState>,
    pub after: Option<FileState>,
}

/// Where a call sits in its session: the user turn (1 for the first user message) and the
/// call's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub turn: u32,
    pub call: String,
    pub tool: String,
}

/// The checkpoints of one session in one workspace: its journal, loaded on first use and
/// kept in memory, and the shared blob store.
pub struct Recorder {
    workspace: PathBuf,
    session: String,
    settings: Settings,
    state: Option<journal::Journal>,
    /// The `begin` written for the running call, if any.
    open: Option<u64>,
}

impl Recorder {
    /// Nothing is read or written until the first call.
    pub fn new(workspace: &Path, session: &str, settings: Settings) -> Recorder {
        Recorder {
            workspace: workspace.to_path_buf(),
            session: session.to_string(),
            settings,
            state: None,
            open: None,
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    pub fn session(&self) -> &str {
        &self.session
    }

    /// The session's journal, loaded (and a crashed call's record completed) on first use.
    fn journal(&mut self) -> io::Result<&mut journal::Journal> {
        if self.state.is_none() {
            let loaded = journal::Journal::open(&self.workspace, &self.session, &self.settings)?;
            self.state = Some(loaded);
        }
        self.state
            .as_mut()
            .ok_or_else(|| io::Error::other("the checkpoint journal is not loaded"))
    }

    /// Before a mutating call: brings the recorded tree up to date (reading only the files
    /// changed since) and records that the call starts.
    pub fn before(&mut self, position: &Position) -> io::Result<()> {
        if !self.settings.enabled {
            return Ok(());
        }
        let journal = self.journal()?;
        journal.catch_up()?;
        let seq = journal.begin(position)?;
        self.open = Some(seq);
        Ok(())
    }

    /// After the call: records what it changed. Returns the paths skipped for size.
    pub fn after(&mut self) -> io::Result<Vec<String>> {
        let Some(seq) = self.open.take() else {
            return Ok(Vec::new());
        };
        let max_bytes = self.settings.max_bytes;
        let journal = self.journal()?;
        let skipped = journal.end(seq, false)?;
        journal.enforce_cap(max_bytes)?;
        Ok(skipped)
    }

    /// The session's turns that changed files, newest first.
    pub fn list(&mut self) -> io::Result<Vec<TurnChanges>> {
        if !journal::Journal::exists(&self.workspace, &self.session) {
            return Ok(Vec::new());
        }
        Ok(self.journal()?.list())
    }

    /// Restores the code to its state before user turn `turn` (see `rewind`).
    pub fn rewind(&mut self, turn: u32, how: &How) -> io::Result<Outcome> {
        if !journal::Journal::exists(&self.workspace, &self.session) {
            return Ok(Outcome::default());
        }
        self.journal()?.rewind(turn, how)
    }
}

/// Starts `child`'s journal as a copy of `parent`'s (the blobs are shared by the workspace):
/// every line, or with `before` only the calls of turns before it. Nothing when the parent
/// has no journal.
pub(crate) fn share(
    workspace: &Path,
    parent: &str,
    child: &str,
    before: Option<u32>,
) -> io::Result<()> {
    journal::Journal::share(workspace, parent, child, before)
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}
