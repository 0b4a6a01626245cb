//! Saving a session: an append to the journal when that is enough, an atomic rewrite of the
//! snapshot when it is not (the rules are on [`Session::save`]). Decides and writes; the line
//! format and the replay are `journal.rs`'s, the snapshot's shapes `snapshot.rs`'s.

use std::time::SystemTime;

use crate::chat::Role;
use crate::fsutil;

use super::snapshot::{self, SnapshotHead, SnapshotTail};
use super::{SNAPSHOT_VERSION, Session, SessionError, io_error, journal};

/// Set (to anything) to make every session save fail as on a full disk ("No space left on
/// device"): for tests that cannot mount a small filesystem to fill. Read once per process.
pub const ENV_FAIL_SAVES: &str = "MINICODE_TEST_FAIL_SAVES";

fn fail_saves() -> bool {
    static FAIL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FAIL.get_or_init(|| std::env::var_os(ENV_FAIL_SAVES).is_some())
}

impl Session {
    /// Stores what changed since the last save. Usually that is one line appended to the
    /// journal (`<id>.journal`, fsync'd): the messages added since, the totals and the
    /// checkpoint. The snapshot (`<id>.json`) is rewritten atomically instead (temp file, fsync,
    /// rename; mode 0600), and the journal removed after it, on the first save of this process,
    /// after the history shrank, when the snapshot has no user message but the history now has
    /// one (listing reads the first prompt from the snapshot), and once the journal has grown
    /// larger than the snapshot: each byte is rewritten a bounded number of times, so a save
    /// costs what it adds, not the whole history. Refuses a history holding a system message
    /// or a checkpoint that does not fit it. A session started with [`Session::begin`] is not
    /// written while its history is empty: its first file already holds the prompt.
    pub fn save(&mut self) -> Result<(), SessionError> {
        if self.unwritten && self.messages.is_empty() {
            return Ok(());
        }
        if fail_saves() {
            let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
            return Err(io_error(&self.path)(full));
        }
        let invalid = |reason: String| SessionError::Invalid {
            id: self.id.clone(),
            reason,
        };
        // What the files already hold was checked when it was written (the history only
        // grows while `disk` is kept), so only the messages added since are looked at.
        let stored = self
            .disk
            .as_ref()
            .map_or(0, |disk| disk.messages)
            .min(self.messages.len());
        if let Some(at) = self.messages[stored..]
            .iter()
            .position(|m| m.role == Role::System)
        {
            let index = stored + at;
            return Err(invalid(format!("message {index} is a system message")));
        }
        if let Some(checkpoint) = &self.checkpoint {
            snapshot::check_checkpoint(checkpoint, &self.messages).map_err(invalid)?;
        }
        // An image a new message shows is on disk before the message that names it.
        super::images::store(&self.path, &self.messages[stored..]).map_err(io_error(&self.path))?;
        let rewrite = match &self.disk {
            None => true,
            Some(disk) => {
                disk.messages > self.messages.len()
                    || disk.journal_len > disk.snapshot_len
                    || (!disk.has_user
                        && self.messages[disk.messages..]
                            .iter()
                            .any(|m| m.role == Role::User))
            }
        };
        // Whatever fails below leaves the files in a state only a rewrite may build on.
        let disk = self.disk.take();
        let disk = if rewrite {
            self.rewrite()?
        } else {
            match disk {
                Some(disk) => self.append(disk)?,
                None => self.rewrite()?,
            }
        };
        self.disk = Some(disk);
        self.changed = false;
        self.unwritten = false;
        Ok(())
    }

    /// Rewrites the snapshot atomically, then removes the journal (its lines are all in the new
    /// snapshot; one left by a crash in between names the old snapshot and is skipped on load).
    fn rewrite(&mut self) -> Result<journal::Disk, SessionError> {
        let cannot = |e: serde_json::Error| SessionError::Invalid {
            id: self.id.clone(),
            reason: format!("cannot serialize: {e}"),
        };
        // Written as head, cached messages and tail, spliced into one JSON object: serializing
        // the whole history on every rewrite would grow with it.
        let updated = snapshot::format_time(SystemTime::now());
        let head = SnapshotHead {
            version: SNAPSHOT_VERSION,
            id: &self.id,
            workspace: &self.workspace,
            created: snapshot::format_time(self.created),
            updated: updated.clone(),
        };
        let tail = SnapshotTail {
            totals: &self.totals,
            checkpoint: self.checkpoint.as_ref(),
            parent: self.parent.as_ref(),
            forked_from: self.forked_from.as_deref(),
            background: &self.background,
        };
        let head = serde_json::to_vec(&head).map_err(cannot)?;
        let tail = serde_json::to_vec(&tail).map_err(cannot)?;
        let messages = self.serialized.extend(&self.messages, &self.results);
        let messages = messages.map_err(cannot)?;
        // Both are objects with at least one field: `{…}` without its closing and opening brace.
        let parts: [&[u8]; 5] = [
            &head[..head.len() - 1],
            b",\"messages\":[",
            messages,
            b"],",
            &tail[1..],
        ];
        fsutil::write_atomic_parts(&self.path, &parts, Some(0o600))
            .map_err(io_error(&self.path))?;
        let journal = journal::path_of(&self.path);
        journal::remove(&journal).map_err(io_error(&journal))?;
        Ok(journal::Disk {
            messages: self.messages.len(),
            bytes: messages.len(),
            snapshot_len: parts.iter().map(|p| p.len() as u64).sum(),
            journal_len: 0,
            base: updated,
            has_user: self.messages.iter().any(|m| m.role == Role::User),
        })
    }

    /// Appends one journal line holding what was added since `disk`.
    fn append(&mut self, disk: journal::Disk) -> Result<journal::Disk, SessionError> {
        let cannot = |e: serde_json::Error| SessionError::Invalid {
            id: self.id.clone(),
            reason: format!("cannot serialize: {e}"),
        };
        let head = journal::LineHead {
            base: &disk.base,
            at: disk.messages,
            updated: snapshot::format_time(SystemTime::now()),
            totals: &self.totals,
            checkpoint: self.checkpoint.as_ref(),
        };
        let head = serde_json::to_vec(&head).map_err(cannot)?;
        let messages = self.serialized.extend(&self.messages, &self.results);
        let messages = messages.map_err(cannot)?;
        // The cache only grows while the history does; the new elements follow a comma.
        let added = messages.get(disk.bytes..).unwrap_or_default();
        let added = added.strip_prefix(b",").unwrap_or(added);
        // Compact JSON escapes every newline inside strings: the line holds none.
        let parts: [&[u8]; 4] = [&head[..head.len() - 1], b",\"messages\":[", added, b"]}\n"];
        let journal = journal::path_of(&self.path);
        let journal_len = journal::append(&journal, &parts).map_err(io_error(&journal))?;
        Ok(journal::Disk {
            messages: self.messages.len(),
            bytes: messages.len(),
            journal_len,
            ..disk
        })
    }
}
