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

mod attribution;
mod blobs;
mod journal;
mod packs;
mod rewind;
mod scan;
mod shared;
mod snapshot;
mod store;
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

/// A rewind's own record is numbered `REWINDS_FROM + k` for the session's `k`th rewind: apart
/// from the user turns (which count user messages), so a rewind never shares its number with
/// the next user turn or with another rewind, and `rewind --to` that number undoes it alone.
pub const REWINDS_FROM: u32 = 1_000_000;

/// Whether `turn` numbers a rewind's own record rather than a user turn.
pub fn is_rewind_turn(turn: u32) -> bool {
    turn > REWINDS_FROM
}

/// The `hash` of a file that is tracked but not stored: too large (`max_file_bytes`).
pub(crate) const TOO_LARGE: &str = "too-large";

/// The `hash` of a file that is tracked but not stored: it holds a configured secret.
pub(crate) const HOLDS_SECRET: &str = "secret";

/// How to rewind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct How {
    /// Plan only: no file is written and nothing is recorded.
    pub dry_run: bool,
    /// Overwrite conflicts too (their current content is recorded first, so the rewind can
    /// be undone); a file that could not be recorded (too large, not a regular file) stays.
    pub force: bool,
}

/// What the store must never hold and a rewind must never write, as the caller knows them:
/// the checkpoint store knows no tool and no session file, so both are handed in.
#[derive(Clone, Default)]
pub struct Guard {
    /// Why a workspace path (absolute, inside the workspace) is protected, or `None`: the
    /// `write` tool's list. A rewind leaves such a path alone, whatever a journal says.
    pub protected: Option<fn(&Path, &Path) -> Option<&'static str>>,
    /// Whether a session of this id exists in the workspace: a journal whose session does
    /// not (planted, or left by a deleted session) is never read for another session.
    pub session_exists: Option<fn(&Path, &str) -> bool>,
    /// Secret values (the API key, ...): a file whose bytes hold one is not stored.
    pub secrets: Vec<String>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("protected", &self.protected.is_some())
            .field("session_exists", &self.session_exists.is_some())
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl PartialEq for Guard {
    fn eq(&self, other: &Self) -> bool {
        self.protected.is_some() == other.protected.is_some()
            && self.session_exists.is_some() == other.session_exists.is_some()
            && self.secrets == other.secrets
    }
}

impl Eq for Guard {}

impl Guard {
    /// Whether `bytes` hold one of the secrets (values under 8 bytes are not secrets: they
    /// would match ordinary text).
    pub(crate) fn holds_secret(&self, bytes: &[u8]) -> bool {
        self.secrets.iter().filter(|s| s.len() >= 8).any(|secret| {
            let secret = secret.as_bytes();
            let last = bytes.len().saturating_sub(secret.len());
            (0..=last).any(|i| {
                bytes.len() >= secret.len()
                    && bytes[i] == secret[0]
                    && bytes[i..].starts_with(secret)
            })
        })
    }

    pub(crate) fn protected(&self, workspace: &Path, path: &Path) -> Option<&'static str> {
        self.protected.and_then(|f| f(workspace, path))
    }
}

/// `.minicode/<SUBDIR>`: everything checkpoints keep.
pub(crate) const SUBDIR: &str = "checkpoints";

/// `[checkpoints]` in the configuration: the table deserialises straight into this struct
/// (unknown keys refused, a missing key takes its value from [`Default`], the only place the
/// defaults are written), and the store is handed it whole.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// `enabled`: record checkpoints around mutating calls.
    pub enabled: bool,
    /// `max_file_bytes`: larger files are not recorded (and named as skipped).
    pub max_file_bytes: u64,
    /// `max_bytes`: the store's size above which the oldest turns' checkpoints are pruned.
    pub max_bytes: u64,
    /// Protected paths, known sessions and secrets: not configuration (no key sets it), the
    /// CLI fills it from what it knows.
    #[serde(skip)]
    pub guard: Guard,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_bytes: crate::defaults::CHECKPOINT_MAX_FILE_BYTES,
            max_bytes: crate::defaults::CHECKPOINT_MAX_BYTES,
            guard: Guard::default(),
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

    /// Whether the file is tracked without its content (too large, or it holds a secret): a
    /// rewind cannot bring it back, and a listing names it apart.
    pub(crate) fn unstored(&self) -> bool {
        self.hash == TOO_LARGE || self.hash == HOLDS_SECRET
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

/// What a confined command's calls named as they changed paths (the sandbox's attribution
/// record, see `docs/security.md`): with it, a change in the call's window that none of them
/// named is someone else's, so a rewind keeps it unless forced. Without it (an unconfined
/// command, another tool), everything the window holds is the call's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Noted {
    /// Absolute paths.
    pub paths: Vec<PathBuf>,
    /// How many calls trapped (at least the number of paths when the count was not told).
    pub notified: u64,
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
    /// The running call's heartbeat (see `attribution`).
    heartbeat: Option<attribution::Heartbeat>,
    /// The running call, when its `before` failed: it runs unrecorded, and says so after.
    unrecorded: Option<Position>,
    /// How long the session's first record (the base) took, and how many entries it holds,
    /// once, when it took long enough to be worth saying.
    slow_base: Option<(usize, std::time::Duration)>,
}

/// A first record slower than this is said (the user waits for it, every session).
const SLOW_BASE: std::time::Duration = std::time::Duration::from_millis(800);

impl Recorder {
    /// Nothing is read or written until the first call.
    pub fn new(workspace: &Path, session: &str, settings: Settings) -> Recorder {
        Recorder {
            workspace: workspace.to_path_buf(),
            session: session.to_string(),
            settings,
            state: None,
            open: None,
            heartbeat: None,
            unrecorded: None,
            slow_base: None,
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

    /// Once, after a slow first record: how many files and folders it read and how long it
    /// took (the caller says so; the store never prints).
    pub fn take_slow_base(&mut self) -> Option<(usize, std::time::Duration)> {
        self.slow_base.take()
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
    /// changed since) and records that the call starts. On an error the call runs
    /// unrecorded: what the attempt stored is collected, and `after` notes the call as such.
    pub fn before(&mut self, position: &Position) -> io::Result<()> {
        self.before_scoped(position, None)
    }

    /// [`Recorder::before`] for a call that can change only `paths` (workspace-relative; a
    /// `write` or an `edit` names its file): the records around it look at those paths and
    /// the folders above them, not the tree. The session's base is then taken lazily: from
    /// the workspace's shared cache as it is, or empty, and the first whole-tree record (a
    /// command's) reads what it lacks.
    pub fn before_scoped(
        &mut self,
        position: &Position,
        paths: Option<&[String]>,
    ) -> io::Result<()> {
        if !self.settings.enabled {
            return Ok(());
        }
        let start = std::time::Instant::now();
        let mut basing = false;
        let began = self.journal().and_then(|journal| {
            basing = !journal.based;
            journal.scope = paths.map(<[String]>::to_vec);
            journal.catch_up()?;
            journal.begin(position)
        });
        if basing && start.elapsed() >= SLOW_BASE {
            let entries = self.state.as_ref().map_or(0, |j| j.tree.len());
            self.slow_base = Some((entries, start.elapsed()));
        }
        match began {
            Ok(seq) => {
                self.open = Some(seq);
                // A call that names its paths (`write`, `edit`) is over in a moment: a beat
                // would come after it, and the thread costs more than the call's record.
                let path = self.state.as_ref().map(|j| j.path.clone());
                self.heartbeat = path
                    .filter(|_| paths.is_none())
                    .map(|p| attribution::Heartbeat::start(&p));
                Ok(())
            }
            Err(e) => {
                self.unrecorded = Some(position.clone());
                self.failed();
                Err(e)
            }
        }
    }

    /// After the call: records what it changed (or, when its `before` failed, that it ran
    /// unrecorded). Returns the paths not stored (too large, holding a secret).
    pub fn after(&mut self) -> io::Result<Vec<String>> {
        self.after_noted(None)
    }

    /// [`Recorder::after`] for a call that says what it named (see [`Noted`]).
    pub fn after_noted(&mut self, noted: Option<&Noted>) -> io::Result<Vec<String>> {
        self.heartbeat = None;
        if let Some(position) = self.unrecorded.take() {
            // Best effort: the disk may still be full; the warning was given already.
            let _ = self.journal().and_then(|j| j.unrecorded(&position));
            return Ok(Vec::new());
        }
        let Some(seq) = self.open.take() else {
            return Ok(Vec::new());
        };
        let max_bytes = self.settings.max_bytes;
        let ended = self.journal().and_then(|journal| {
            let ended = journal.end(seq, false, noted);
            journal.scope = None;
            let skipped = ended?;
            journal.enforce_cap(max_bytes)?;
            journal.publish();
            Ok(skipped)
        });
        if ended.is_err() {
            self.failed();
        }
        ended
    }

    /// A record failed: the blobs it stored that nothing names are removed, and the journal
    /// is read again from disk at the next call (the in-memory tree may hold states whose
    /// line was never written).
    fn failed(&mut self) {
        if let Some(mut journal) = self.state.take() {
            let _ = journal.discard_fresh();
        }
        self.open = None;
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
            return Ok(Outcome {
                nothing_recorded: true,
                ..Outcome::default()
            });
        }
        let journal = self.journal()?;
        let outcome = journal.rewind(turn, how)?;
        journal.publish();
        Ok(outcome)
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

#[cfg(test)]
mod tests {
    use super::Guard;

    #[test]
    fn a_secret_is_found_anywhere_in_the_bytes_and_short_values_are_ignored() {
        let guard = Guard {
            secrets: vec!["sk-0123456789".into(), "short".into()],
            ..Guard::default()
        };
        assert!(guard.holds_secret(b"api_key = \"sk-0123456789\"\n"));
        assert!(guard.holds_secret(b"sk-0123456789"));
        assert!(!guard.holds_secret(b"sk-012345678"));
        assert!(!guard.holds_secret(b"a short file"));
        assert!(!guard.holds_secret(b""));
        assert!(!format!("{guard:?}").contains("sk-"));
    }
}
