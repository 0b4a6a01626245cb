//! Reading a session file: confined to the workspace, parsed through the one migrate path,
//! validated, a one-time backup kept when the format was older, and a call left open at the
//! end answered as interrupted (in memory only). The snapshot's journal, when there is one, is
//! applied after it. Neither file is ever modified here.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::chat::{Message, ToolStatus};
use crate::fsutil;

use super::snapshot::{self, LoadError, Parsed, Problem, Snapshot};
use super::{Checkpoint, INTERRUPTED_RESULT, Parent, ResultInfo, SessionError, Totals, io_error};
use super::{journal, stored};

pub(super) struct Loaded {
    pub(super) created: SystemTime,
    pub(super) messages: Vec<Message>,
    pub(super) results: Vec<(usize, ResultInfo)>,
    pub(super) totals: Totals,
    pub(super) checkpoint: Option<Checkpoint>,
    pub(super) parent: Option<Parent>,
    pub(super) forked_from: Option<String>,
    pub(super) background: Vec<crate::chat::Background>,
    pub(super) repaired: Vec<String>,
}

/// Reads and validates a snapshot; a call left open at the end gets an "interrupted" result
/// in memory only. The file itself is never modified here; a file in an older format that
/// loads is first copied beside it (see [`keep_backup`]).
pub(super) fn load(path: &Path, id: &str, workspace: &Path) -> Result<Loaded, SessionError> {
    let bytes = read_confined(workspace, path).map_err(io_error(path))?;
    let corrupt = |reason: String| SessionError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let Parsed {
        mut snapshot,
        migrated_from,
    } = snapshot::parse(&bytes).map_err(|e| match e {
        LoadError::TooNew(version) => SessionError::TooNew {
            path: path.to_path_buf(),
            version,
        },
        LoadError::Corrupt(reason) => corrupt(reason),
    })?;
    apply_journal(workspace, path, &mut snapshot)?;
    let open = snapshot::validate(&snapshot, id, workspace).map_err(|p| match p {
        Problem::Corrupt(reason) => corrupt(reason),
        Problem::WrongWorkspace(found) => SessionError::WrongWorkspace {
            id: id.to_string(),
            expected: workspace.to_path_buf(),
            found,
        },
    })?;
    if let Some(version) = migrated_from {
        keep_backup(path, version, &bytes)?;
    }
    // Validation checked the time parses; fall back to now only as a defensive default.
    let created = snapshot::parse_time(&snapshot.created).unwrap_or_else(SystemTime::now);
    let stored::History {
        mut messages,
        mut results,
    } = snapshot.messages;
    super::images::fill(workspace, path, &mut messages);
    for call_id in &open {
        results.push((
            messages.len(),
            ResultInfo {
                status: Some(ToolStatus::Interrupted),
                summary: None,
                sandbox: None,
            },
        ));
        messages.push(Message::tool_result(call_id.clone(), INTERRUPTED_RESULT));
    }
    Ok(Loaded {
        created,
        messages,
        results,
        totals: snapshot.totals,
        checkpoint: snapshot.checkpoint,
        parent: snapshot.parent,
        forked_from: snapshot.forked_from,
        background: snapshot.background,
        repaired: open,
    })
}

/// Applies the journal beside the snapshot at `path`, if there is one (see `journal::replay`).
/// A torn last line is only logged; a bad line before it makes the session corrupt, with both
/// files left as they are.
pub(super) fn apply_journal(
    workspace: &Path,
    path: &Path,
    snapshot: &mut Snapshot,
) -> Result<(), SessionError> {
    let journal = journal::path_of(path);
    let bytes = match read_confined(workspace, &journal) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(&journal)(e)),
    };
    match journal::replay(snapshot, &bytes) {
        Ok(None) => Ok(()),
        Ok(Some(warning)) => {
            tracing::warn!(path = %journal.display(), "{warning}");
            Ok(())
        }
        Err(reason) => Err(SessionError::Corrupt {
            path: journal,
            reason,
        }),
    }
}

/// Reads a session file only if it is a regular file whose real path is inside the workspace:
/// a session file planted as a link to somewhere else, or a FIFO, is never read.
pub(super) fn read_confined(workspace: &Path, path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let (mut file, meta) = fsutil::open_confined(workspace, path).map_err(|e| match e {
        fsutil::OpenError::Io(e) => e,
        fsutil::OpenError::Missing => std::io::Error::from(std::io::ErrorKind::NotFound),
        other => std::io::Error::other(other.to_string()),
    })?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Before a file in an older format is ever overwritten in the current one, its bytes are
/// kept once beside it as `<id>.json.v<version>.bak` (mode 0600), so a user can go back to an
/// older minicode. An existing backup is never replaced: it is the original. The caller holds
/// the session's lock, so no other process writes the same backup meanwhile. When the backup
/// cannot be written the session is not opened: the promise is that a migrated file keeps one.
fn keep_backup(path: &Path, version: u32, bytes: &[u8]) -> Result<(), SessionError> {
    let mut name = path.as_os_str().to_os_string();
    name.push(format!(".v{version}.bak"));
    let backup = PathBuf::from(name);
    match std::fs::symlink_metadata(&backup) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fsutil::write_atomic(&backup, bytes, Some(0o600)).map_err(io_error(&backup))
        }
        Err(e) => Err(io_error(&backup)(e)),
    }
}

/// A session file as saved (snapshot and journal), parsed and migrated by the session's own
/// types, for `minicode export` and `minicode eval`: read without the session's lock and never
/// modified; not checked against a workspace, so a file copied elsewhere (an eval run keeps
/// `<id>.json` and `<id>.journal`) reads too.
#[derive(Debug, Clone)]
pub(crate) struct Saved {
    pub(crate) id: String,
    pub(crate) workspace: PathBuf,
    /// RFC 3339 times, as stored.
    pub(crate) created: String,
    pub(crate) updated: String,
    pub(crate) messages: Vec<crate::chat::Message>,
    /// By message index, ascending: what is known about tool results.
    pub(crate) results: Vec<(usize, super::ResultInfo)>,
    pub(crate) totals: super::Totals,
    pub(crate) checkpoint: Option<super::Checkpoint>,
    pub(crate) parent: Option<super::Parent>,
    pub(crate) forked_from: Option<String>,
}

impl Saved {
    /// What is known about the tool result at message `index`.
    pub(crate) fn result(&self, index: usize) -> Option<&super::ResultInfo> {
        self.results
            .binary_search_by_key(&index, |(at, _)| *at)
            .ok()
            .map(|i| &self.results[i].1)
    }
}

/// Reads the session file at `path` with its journal. Only regular files are read: a link is
/// refused.
pub(crate) fn saved(path: &Path) -> Result<Saved, SessionError> {
    let read = |p: &Path| -> std::io::Result<Option<Vec<u8>>> {
        match std::fs::symlink_metadata(p) {
            Ok(meta) if meta.file_type().is_file() => std::fs::read(p).map(Some),
            Ok(_) => Err(std::io::Error::other("not a regular file")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    };
    let corrupt = |reason: String| SessionError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = read(path)
        .map_err(io_error(path))?
        .ok_or_else(|| io_error(path)(std::io::ErrorKind::NotFound.into()))?;
    let Parsed { mut snapshot, .. } = snapshot::parse(&bytes).map_err(|e| match e {
        LoadError::TooNew(version) => SessionError::TooNew {
            path: path.to_path_buf(),
            version,
        },
        LoadError::Corrupt(reason) => corrupt(reason),
    })?;
    let journal = journal::path_of(path);
    if let Some(lines) = read(&journal).map_err(io_error(&journal))? {
        journal::replay(&mut snapshot, &lines).map_err(corrupt)?;
    }
    let stored::History { messages, results } = snapshot.messages;
    Ok(Saved {
        id: snapshot.id,
        workspace: snapshot.workspace,
        created: snapshot.created,
        updated: snapshot.updated,
        messages,
        results,
        totals: snapshot.totals,
        checkpoint: snapshot.checkpoint,
        parent: snapshot.parent,
        forked_from: snapshot.forked_from,
    })
}
