//! Sessions: the conversation history of one workspace saved as a versioned JSON snapshot at
//! `<workspace>/.minicode/sessions/<id>.json`, written atomically, plus an append-only journal
//! `<id>.journal` the saves in between add to (so a save costs what it adds), locked against a
//! second process, and validated (and repaired where the truth is known) on load. A file in an older
//! format keeps a one-time backup beside it. It stores what the agent hands it and must not
//! know about providers' transports, tools' effects or terminals; the system prompt is never
//! stored.

mod images;
mod journal;
mod listing;
mod load;
pub(crate) mod running;
mod save;
mod snapshot;
mod stored;
mod tracked;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::chat::{Message, ToolStatus};
use crate::fsutil;

use load::load;
pub(crate) use load::{Saved, saved};
pub use save::ENV_FAIL_SAVES;
pub use snapshot::{INTERRUPTED_RESULT, Parent};

/// The snapshot format written by this build. Older files load through one migration path.
pub const SNAPSHOT_VERSION: u32 = 3;

/// What the session keeps about a tool result beyond the text the model reads, so a resumed
/// session shows each call as it ended. Stored in the file, never sent to the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultInfo {
    /// How the call ended; `None` when it was not recorded (a result pushed as a plain
    /// message).
    pub status: Option<ToolStatus>,
    /// The one-line description of the call shown when it ran; `None` for calls that never
    /// began (skipped after an interrupt, lost in a crash) and for migrated files.
    pub summary: Option<String>,
    /// For `bash`: the sandbox profile the call ran under and whether the sandbox stopped it
    /// (`mode: off` after the user approved running it outside); `None` for other tools.
    pub sandbox: Option<crate::sandbox::Report>,
}

/// Running totals over the whole session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    pub turns: u64,
    pub(crate) model_calls: u64,
    pub(crate) tool_calls: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub total_tokens: u64,
}

/// A compaction result: the model sees `summary` in place of `messages[..first_kept_index]`.
/// The full history stays in the file, so nothing is lost by compacting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub summary: String,
    pub first_kept_index: usize,
}

/// One line of `minicode sessions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: String,
    /// Last save (the file's modification time when the file cannot be read).
    pub updated: SystemTime,
    /// First line of the first user message; empty when there is none.
    pub first_prompt: String,
    pub(crate) path: PathBuf,
    /// Why the file cannot be opened, when it cannot; such sessions are listed, not hidden.
    pub problem: Option<String>,
    /// For a sub-agent's session, the session that started it.
    pub parent: Option<String>,
    /// For a fork, the session it was copied from.
    pub forked_from: Option<String>,
    /// Background processes that were running when the session last ended.
    pub(crate) background: Vec<crate::chat::Background>,
    /// The history holds no user message (a run killed before its prompt was saved, or a file
    /// planted so): there is no conversation to continue. False when the file cannot be read.
    pub(crate) empty: bool,
    /// Git tracks the file: a repository committed it, so it came with a clone (see
    /// `session/tracked.rs`).
    pub(crate) tracked: bool,
    /// The user's prompts in it (notices minicode wrote are not counted); 0 when unreadable.
    pub(crate) turns: u32,
}

/// How far in the future a session's last update may lie before `--continue` distrusts it: a
/// little clock skew (a file from another machine, a clock set back) is normal.
pub(crate) const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

/// Why a session could not be created, opened or saved.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "invalid session id {0:?}: expected a lowercase uuid such as 0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90"
    )]
    InvalidId(String),
    #[error("{}", not_found_message(.id))]
    NotFound { id: Option<String> },
    #[error(
        "session id prefix {0:?} is too short: give at least {MIN_PREFIX} characters of the id"
    )]
    PrefixTooShort(String),
    #[error(
        "session id prefix {prefix:?} matches {} sessions: {}; give more of the id",
        .candidates.len(),
        .candidates.join(", ")
    )]
    Ambiguous {
        prefix: String,
        candidates: Vec<String>,
    },
    #[error("session {id} is in use by another minicode process")]
    Locked { id: String },
    #[error("session file {} is corrupt: {reason} (the file was left untouched)", .path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "session file {} has format version {version}, but this minicode understands up to {SNAPSHOT_VERSION}; use a newer minicode",
        .path.display()
    )]
    TooNew { path: PathBuf, version: u32 },
    #[error(
        "session {id} belongs to workspace {}, not {}",
        crate::sanitize::visible(&.found.display().to_string()),
        .expected.display()
    )]
    WrongWorkspace {
        id: String,
        expected: PathBuf,
        found: PathBuf,
    },
    /// The in-memory history cannot be stored as it is (a bug in the caller).
    #[error("refusing to save session {id}: {reason}")]
    Invalid { id: String, reason: String },
    #[error("session storage {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn not_found_message(id: &Option<String>) -> String {
    match id {
        Some(id) => format!("no session {id} in this workspace"),
        None => "no saved session in this workspace".to_string(),
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An open session. It holds an exclusive lock on `<id>.lock` for its whole lifetime, so no
/// second process can interleave writes; dropping it releases the lock.
pub struct Session {
    id: String,
    path: PathBuf,
    workspace: PathBuf,
    created: SystemTime,
    messages: Vec<Message>,
    /// By message index, ascending: what is known about tool results (see [`ResultInfo`]).
    results: Vec<(usize, ResultInfo)>,
    totals: Totals,
    checkpoint: Option<Checkpoint>,
    parent: Option<Parent>,
    forked_from: Option<String>,
    /// The background processes running when the session last ended (see
    /// [`Session::set_background`]).
    background: Vec<crate::chat::Background>,
    repaired: Vec<String>,
    /// The messages as stored, serialized once each: a save adds only the new ones.
    serialized: stored::Appended,
    /// How many leading messages the agent has already validated (see [`Session::settled`]).
    settled: usize,
    /// What this process last wrote to the snapshot and its journal; `None` until the first
    /// save, and after anything that makes an append impossible: that save rewrites the
    /// snapshot.
    disk: Option<journal::Disk>,
    /// Something changed since the session was opened or last saved (see
    /// [`Session::has_unsaved_changes`]).
    changed: bool,
    /// Created by this process and never written: no file exists yet, and none is written
    /// until the history holds a message, so a kill right after creation leaves no empty
    /// session behind (the lock file alone reserves the id).
    unwritten: bool,
    _lock: File,
}

impl std::fmt::Debug for Session {
    /// Shows where the session lives, never message contents.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("path", &self.path)
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}

/// `<workspace>/.minicode/sessions`, as a path; nothing is checked or created. Reading and
/// writing go through `fsutil::private_dir`, which refuses a folder that leads outside the
/// workspace.
pub fn sessions_dir(workspace: &Path) -> PathBuf {
    workspace.join(fsutil::DATA_DIR).join(SESSIONS)
}

/// The sessions folder's name under `.minicode/`.
pub(crate) const SESSIONS: &str = "sessions";

/// The shortest prefix of an id [`Session::resolve_id`] accepts: the screen shows eight.
pub(crate) const MIN_PREFIX: usize = 6;

/// Whether `id` is a lowercase, hyphenated uuid (and therefore a plain file name).
pub fn is_valid_id(id: &str) -> bool {
    id.len() == 36
        && id.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

impl Session {
    /// Starts a new session with a fresh id and writes its file at once (tests and tools that
    /// need a file on disk; sessions for a user go through [`Session::begin`]).
    pub fn create(workspace: &Path) -> Result<Session, SessionError> {
        Self::create_with(workspace, None, true)
    }

    /// Starts a new session for a user: a fresh id, reserved by its lock file, whose file is
    /// first written by the save that holds the prompt (the turn saves it before asking the
    /// model anything). A kill before that leaves no empty session file behind.
    pub(crate) fn begin(workspace: &Path) -> Result<Session, SessionError> {
        Self::create_with(workspace, None, false)
    }

    /// Starts a sub-agent's session: like [`Session::create`], recording who started it.
    pub(crate) fn create_child(workspace: &Path, parent: Parent) -> Result<Session, SessionError> {
        parent.check().map_err(|reason| SessionError::Invalid {
            id: parent.session_id.clone(),
            reason,
        })?;
        Self::create_with(workspace, Some(parent), true)
    }

    /// A new session; `write_now`: its (empty) file is written at once, else with its first
    /// message (see `unwritten`).
    fn create_with(
        workspace: &Path,
        parent: Option<Parent>,
        write_now: bool,
    ) -> Result<Session, SessionError> {
        let workspace = canonical(workspace)?;
        let dir = fsutil::private_dir(&workspace, SESSIONS)
            .map_err(io_error(&sessions_dir(&workspace)))?;
        let id = uuid::Uuid::new_v4().hyphenated().to_string();
        let lock = lock(&dir, &id)?;
        let mut session = Session {
            path: dir.join(format!("{id}.json")),
            id,
            workspace,
            created: SystemTime::now(),
            messages: Vec::new(),
            results: Vec::new(),
            totals: Totals::default(),
            checkpoint: None,
            parent,
            forked_from: None,
            background: Vec::new(),
            repaired: Vec::new(),
            serialized: stored::Appended::default(),
            settled: 0,
            disk: None,
            changed: true,
            unwritten: !write_now,
            _lock: lock,
        };
        if write_now && let Err(e) = session.save() {
            // Whatever part of the file was written is not a session anyone can use.
            session.remove_files();
            return Err(e);
        }
        Ok(session)
    }

    /// Opens an existing session of this workspace by id (never a path).
    pub fn open(workspace: &Path, id: &str) -> Result<Session, SessionError> {
        if !is_valid_id(id) {
            return Err(SessionError::InvalidId(id.to_string()));
        }
        let workspace = canonical(workspace)?;
        let not_found = || SessionError::NotFound {
            id: Some(id.to_string()),
        };
        let dir = fsutil::existing_private_dir(&workspace, SESSIONS)
            .map_err(io_error(&sessions_dir(&workspace)))?
            .ok_or_else(not_found)?;
        let path = dir.join(format!("{id}.json"));
        if !path.is_file() {
            return Err(SessionError::NotFound {
                id: Some(id.to_string()),
            });
        }
        // Every later save writes here: the folder's mode and `.minicode/.gitignore` are
        // brought up to date first, also for a folder an older minicode created.
        fsutil::private_dir(&workspace, SESSIONS).map_err(io_error(&dir))?;
        // Lock before reading, so the history cannot change between reading and owning it.
        let lock = lock(&dir, id)?;
        let loaded = load(&path, id, &workspace)?;
        Ok(Session {
            id: id.to_string(),
            path,
            workspace,
            created: loaded.created,
            messages: loaded.messages,
            results: loaded.results,
            totals: loaded.totals,
            checkpoint: loaded.checkpoint,
            parent: loaded.parent,
            forked_from: loaded.forked_from,
            background: loaded.background,
            repaired: loaded.repaired,
            serialized: stored::Appended::default(),
            settled: 0,
            disk: None,
            changed: false,
            unwritten: false,
            _lock: lock,
        })
    }

    /// Copies this session into a new one of the same workspace (new id, new file, saved at
    /// once): history, tool outcomes and compaction checkpoint, recording where it came from.
    /// This session and its file are left as they are. Totals start at zero: the copy has
    /// spent nothing yet.
    pub fn fork(&self) -> Result<Session, SessionError> {
        let mut copy = Self::create_with(&self.workspace, None, true)?;
        copy.messages = self.messages.clone();
        copy.results = self.results.clone();
        copy.checkpoint = self.checkpoint.clone();
        copy.forked_from = Some(self.id.clone());
        // `forked_from` is a snapshot field, never journaled: the copy's snapshot is rewritten.
        copy.disk = None;
        if let Err(e) = copy.save() {
            // The copy's file still holds the empty history it was created with.
            copy.remove_files();
            return Err(e);
        }
        Ok(copy)
    }

    /// Like [`fork`](Self::fork), keeping only the first `keep` messages (a rewind of the
    /// conversation to before a user message): their tool outcomes come along, and the
    /// compaction checkpoint only when it covers none of what was cut.
    pub fn fork_before(&self, keep: usize) -> Result<Session, SessionError> {
        let keep = keep.min(self.messages.len());
        let mut copy = Self::create_with(&self.workspace, None, true)?;
        copy.messages = self.messages[..keep].to_vec();
        copy.results = self
            .results
            .iter()
            .filter(|(index, _)| *index < keep)
            .cloned()
            .collect();
        copy.checkpoint = self
            .checkpoint
            .clone()
            .filter(|c| c.first_kept_index <= keep);
        copy.forked_from = Some(self.id.clone());
        copy.disk = None;
        if let Err(e) = copy.save() {
            copy.remove_files();
            return Err(e);
        }
        Ok(copy)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The canonical workspace path.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The full history, without the system prompt.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Appends to the history; nothing is written until [`Session::save`]. A tool result
    /// pushed this way has no [`ResultInfo`]; the agent uses [`Session::push_result`].
    pub fn push(&mut self, message: Message) {
        self.changed = true;
        self.messages.push(message);
    }

    /// Appends the result of tool call `call_id` with how it ended and the call's summary.
    pub fn push_result(
        &mut self,
        call_id: impl Into<String>,
        output: impl Into<String>,
        status: ToolStatus,
        summary: Option<String>,
    ) {
        self.changed = true;
        self.results.push((
            self.messages.len(),
            ResultInfo {
                status: Some(status),
                summary,
                sandbox: None,
            },
        ));
        self.messages.push(Message::tool_result(call_id, output));
    }

    /// Records the sandbox profile of the result pushed last by [`Session::push_result`].
    pub(crate) fn note_sandbox(&mut self, report: crate::sandbox::Report) {
        if let Some((at, info)) = self.results.last_mut()
            && *at + 1 == self.messages.len()
        {
            info.sandbox = Some(report);
        }
    }

    /// What is known about the tool result at message `index`, if anything.
    pub fn result_info(&self, index: usize) -> Option<&ResultInfo> {
        self.results
            .binary_search_by_key(&index, |(at, _)| *at)
            .ok()
            .map(|at| &self.results[at].1)
    }

    /// How each answered tool call ended, by call id, in order (calls whose status is not
    /// known are left out).
    pub(crate) fn statuses(&self) -> Vec<(&str, ToolStatus)> {
        self.results
            .iter()
            .filter_map(|(at, info)| {
                let id = self.messages.get(*at)?.tool_call_id.as_deref()?;
                Some((id, info.status?))
            })
            .collect()
    }

    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    pub fn totals_mut(&mut self) -> &mut Totals {
        self.changed = true;
        &mut self.totals
    }

    /// Whether anything was pushed, counted or checkpointed since the session was opened or
    /// last saved. Opening leaves the file as it is (even the in-memory answers to calls left
    /// open are not written), so a caller that changed nothing can skip the save and leave the
    /// file, and its `updated` time that orders `--continue`, untouched.
    pub(crate) fn has_unsaved_changes(&self) -> bool {
        self.changed
    }

    /// The session this one was forked from, if it is a fork.
    pub fn forked_from(&self) -> Option<&str> {
        self.forked_from.as_deref()
    }

    /// How many leading messages a caller has validated and may skip next time
    /// (`agent::validate::history_prefix_from`). The session keeps it because only the session
    /// knows when its history stops being append-only; a new or reopened session starts at 0.
    pub(crate) fn settled(&self) -> usize {
        self.settled
    }

    /// Records what [`Session::settled`] returns until the history shrinks.
    pub(crate) fn set_settled(&mut self, settled: usize) {
        self.settled = settled.min(self.messages.len());
    }

    /// Who started this session, when a sub-agent runs in it.
    pub fn parent(&self) -> Option<&Parent> {
        self.parent.as_ref()
    }

    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        self.checkpoint.as_ref()
    }

    /// Replaces the compaction checkpoint; it is checked against the history on save.
    pub fn set_checkpoint(&mut self, checkpoint: Option<Checkpoint>) {
        self.changed = true;
        self.checkpoint = checkpoint;
    }

    /// Call ids that had no result at the end of the loaded history and were given an
    /// "interrupted, outcome unknown" result instead of being run again.
    pub fn repaired_calls(&self) -> &[String] {
        &self.repaired
    }

    /// Takes back the "interrupted" results the load gave to calls left open, leaving those
    /// calls open again, and returns their ids in call order. For a host that knows more
    /// about them (which had started, see `protocol::Recovery`) and answers them itself.
    /// Records the background processes running as the session ends (none clears the
    /// record). A snapshot field: the next save rewrites the snapshot when it changed.
    pub(crate) fn set_background(&mut self, running: Vec<crate::chat::Background>) {
        if running != self.background {
            self.background = running;
            self.changed = true;
            self.disk = None;
        }
    }

    /// The background processes that were running when the session last ended.
    pub(crate) fn background(&self) -> &[crate::chat::Background] {
        &self.background
    }

    pub fn reopen_repaired(&mut self) -> Vec<String> {
        let open = std::mem::take(&mut self.repaired);
        self.changed = true;
        let keep = self.messages.len().saturating_sub(open.len());
        self.messages.truncate(keep);
        // The only place the history shrinks: what was serialized or checked of it is void.
        self.serialized = stored::Appended::default();
        self.settled = 0;
        // The journal only appends: the next save rewrites the snapshot.
        self.disk = None;
        while self.results.last().is_some_and(|(at, _)| *at >= keep) {
            self.results.pop();
        }
        open
    }

    /// Removes the files of a session that never received a message (the user opened and left),
    /// so `--continue` and `sessions` are not cluttered with empty ones. Keeps any other session.
    pub(crate) fn discard_if_empty(self) -> Result<bool, SessionError> {
        if !self.messages.is_empty() {
            return Ok(false);
        }
        match std::fs::remove_file(&self.path) {
            // Never written (see `unwritten`).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.unwritten => {}
            other => other.map_err(io_error(&self.path))?,
        }
        let journal = journal::path_of(&self.path);
        journal::remove(&journal).map_err(io_error(&journal))?;
        // The json is gone first, so a racing `open` fails with NotFound, never on a stale lock.
        let _ = std::fs::remove_file(self.path.with_extension("lock"));
        Ok(true)
    }

    /// Best effort after a failed first save of a session this process created: nothing of it
    /// is worth keeping, and an empty file left behind would only clutter `sessions`.
    fn remove_files(&self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = journal::remove(&journal::path_of(&self.path));
        let _ = std::fs::remove_file(self.path.with_extension("lock"));
    }
}

fn canonical(workspace: &Path) -> Result<PathBuf, SessionError> {
    workspace.canonicalize().map_err(io_error(workspace))
}

/// Takes an exclusive, non-blocking lock on `<dir>/<id>.lock` (std's `File::try_lock`, an
/// `flock` on Unix). The lock file is never deleted: removing it could let two processes lock
/// two different files of the same name.
fn lock(dir: &Path, id: &str) -> Result<File, SessionError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(format!("{id}.lock"));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        // A lock file planted as a symbolic link is not followed.
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(io_error(&path))?;
    // A lock just released can still be held for a moment by a child forked elsewhere in
    // this process (a `bash` call, an MCP server, git): the child holds a copy of the
    // descriptor until its `exec` closes it. Looking again for a short while tells that
    // apart from another minicode using the session, which holds it for as long as it runs.
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SessionError::Locked { id: id.to_string() });
            }
            Err(std::fs::TryLockError::Error(err)) => return Err(io_error(&path)(err)),
        }
    }
}

/// How long opening a session waits for a lock held by someone else before calling it locked.
const LOCK_PATIENCE: Duration = Duration::from_millis(250);
