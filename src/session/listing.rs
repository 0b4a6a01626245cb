//! Listing a workspace's sessions without locking them (listing must work while one runs):
//! one summary per file, which session `--continue` picks and which it passes over (a
//! sub-agent's, an empty one, one dated in the future, one git tracks), and the session a
//! prefix of an id names. Reads only; never writes or migrates a file.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::chat::Role;
use crate::fsutil;

use super::load::{apply_journal, read_confined};
use super::snapshot::{self, LoadError, Problem};
use super::{CLOCK_SKEW, MIN_PREFIX, SESSIONS, Session, SessionError, SessionInfo};
use super::{canonical, io_error, is_valid_id, sessions_dir, tracked};

impl Session {
    /// The full id of this workspace's session that `given` names: a full id as it is, or a
    /// prefix of one, at least [`MIN_PREFIX`] characters long, that only one session's id starts
    /// with (any listed session counts, so a prefix never silently picks one of two).
    pub(crate) fn resolve_id(workspace: &Path, given: &str) -> Result<String, SessionError> {
        if is_valid_id(given) {
            return Ok(given.to_string());
        }
        let could_be_prefix = given.len() < 36
            && given
                .bytes()
                .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !could_be_prefix || given.is_empty() {
            return Err(SessionError::InvalidId(given.to_string()));
        }
        if given.len() < MIN_PREFIX {
            return Err(SessionError::PrefixTooShort(given.to_string()));
        }
        // Names are enough: no file is read and git is not asked.
        let workspace = canonical(workspace)?;
        let mut candidates: Vec<String> = file_ids(&workspace)?
            .into_iter()
            .map(|(id, _)| id)
            .filter(|id| id.starts_with(given))
            .collect();
        match candidates.len() {
            0 => Err(SessionError::NotFound {
                id: Some(given.to_string()),
            }),
            1 => Ok(candidates.remove(0)),
            _ => {
                candidates.sort();
                Err(SessionError::Ambiguous {
                    prefix: given.to_string(),
                    candidates,
                })
            }
        }
    }

    /// Opens this workspace's most recently updated session. When that one is unreadable the
    /// error says so rather than silently resuming an older conversation. Sub-agents' sessions
    /// are passed over (the user's conversation is the one to continue), and so is every
    /// session [`SessionInfo::passed_over`] names a reason for.
    pub fn open_latest(workspace: &Path) -> Result<Session, SessionError> {
        let now = SystemTime::now();
        let newest = Self::list(workspace)?
            .into_iter()
            .find(|info| info.parent.is_none() && info.passed_over(now).is_none());
        match newest {
            Some(info) => Self::open(workspace, &info.id),
            None => Err(SessionError::NotFound { id: None }),
        }
    }

    /// This workspace's sessions, newest first. Files that cannot be loaded are listed with
    /// their problem; listing itself fails only when the folder cannot be read.
    pub fn list(workspace: &Path) -> Result<Vec<SessionInfo>, SessionError> {
        let workspace = canonical(workspace)?;
        let mut infos = Vec::new();
        let mut tracked = None;
        for (id, path) in file_ids(&workspace)? {
            let mut info = info(&path, &id, &workspace);
            // git is asked once, and only when there is a session to ask about.
            info.tracked = tracked
                .get_or_insert_with(|| tracked::ids(&workspace))
                .contains(&id);
            infos.push(info);
        }
        infos.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
        Ok(infos)
    }
}

/// The id and path of every session file in the canonical `workspace`'s sessions folder,
/// from the names alone (lock files, temp files and anything not ours are left out).
fn file_ids(workspace: &Path) -> Result<Vec<(String, PathBuf)>, SessionError> {
    let dir = match fsutil::existing_private_dir(workspace, SESSIONS) {
        Ok(Some(dir)) => dir,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(io_error(&sessions_dir(workspace))(e)),
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(&dir)(e)),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let path = entry.map_err(io_error(&dir))?.path();
        let id = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
            .filter(|id| is_valid_id(id))
            .map(str::to_string);
        if let Some(id) = id {
            ids.push((id, path));
        }
    }
    Ok(ids)
}

impl SessionInfo {
    /// Why `--continue` ([`Session::open_latest`]) passes this session over, if it does; `now`
    /// is the current time. `minicode sessions` shows the same reasons.
    pub(crate) fn passed_over(&self, now: SystemTime) -> Option<&'static str> {
        if self.tracked {
            Some("tracked by git")
        } else if self.updated > now + CLOCK_SKEW {
            Some("future date")
        } else if self.empty {
            Some("no messages")
        } else {
            None
        }
    }
}

/// Summarises one file for `list` without locking it (listing must work while a session runs).
fn info(path: &Path, id: &str, workspace: &Path) -> SessionInfo {
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let broken = |problem: String| SessionInfo {
        id: id.to_string(),
        updated: mtime,
        first_prompt: String::new(),
        path: path.to_path_buf(),
        problem: Some(problem),
        parent: None,
        forked_from: None,
        background: Vec::new(),
        empty: false,
        tracked: false,
        turns: 0,
    };
    let bytes = match read_confined(workspace, path) {
        Ok(bytes) => bytes,
        Err(e) => return broken(format!("cannot read: {e}")),
    };
    let mut snapshot = match snapshot::parse(&bytes) {
        Ok(parsed) => parsed.snapshot,
        Err(LoadError::TooNew(v)) => {
            return broken(format!("format version {v} is newer than this minicode"));
        }
        Err(LoadError::Corrupt(reason)) => return broken(format!("corrupt: {reason}")),
    };
    if let Err(e) = apply_journal(workspace, path, &mut snapshot) {
        return broken(e.to_string());
    }
    match snapshot::validate(&snapshot, id, workspace) {
        Ok(_) => {}
        Err(Problem::Corrupt(reason)) => return broken(format!("corrupt: {reason}")),
        Err(Problem::WrongWorkspace(found)) => {
            return broken(format!("belongs to workspace {}", found.display()));
        }
    }
    // A notice (plan mode, a model switch) can come before the first prompt, and a fork made
    // by a rewind may hold nothing else: it is minicode speaking, never a title.
    let first_user = snapshot
        .messages
        .messages
        .iter()
        .find(|m| m.role == Role::User && !m.is_notice());
    let turns = snapshot
        .messages
        .messages
        .iter()
        .filter(|m| m.role == Role::User && !m.is_notice())
        .count();
    let first_prompt = first_user
        .map(|m| m.text().lines().next().unwrap_or("").to_string())
        .unwrap_or_default();
    SessionInfo {
        id: id.to_string(),
        updated: snapshot::parse_time(&snapshot.updated).unwrap_or(mtime),
        first_prompt,
        path: path.to_path_buf(),
        problem: None,
        parent: snapshot.parent.map(|p| p.session_id),
        forked_from: snapshot.forked_from,
        background: snapshot.background,
        empty: first_user.is_none(),
        tracked: false,
        turns: u32::try_from(turns).unwrap_or(u32::MAX),
    }
}
