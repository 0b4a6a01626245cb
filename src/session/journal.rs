//! The append-only journal beside a snapshot (`<id>.journal`): what each save added since the
//! snapshot was last rewritten, one JSON object per line, so a save writes what is new instead
//! of the whole history. Owns the line format, appending (fsync'd, mode 0600, no link
//! followed) and replaying lines onto a parsed snapshot; when to rewrite the snapshot instead
//! is `session.rs`'s rule (see `docs/session-format.md`).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::snapshot::Snapshot;
use super::stored::History;
use super::{Checkpoint, Totals};

/// `<id>.journal` beside `<id>.json`.
pub(super) fn path_of(snapshot: &Path) -> PathBuf {
    snapshot.with_extension("journal")
}

/// What the files on disk hold, as far as this process wrote them: the base of an append.
#[derive(Debug)]
pub(super) struct Disk {
    /// Messages stored in the snapshot and the journal together.
    pub(crate) messages: usize,
    /// How many bytes of the serialized history (`stored::Appended`) those messages are.
    pub(crate) bytes: usize,
    pub(crate) snapshot_len: u64,
    pub(crate) journal_len: u64,
    /// The snapshot's `updated` field: every line names the snapshot it extends.
    pub(crate) base: String,
    /// Whether the snapshot itself holds a user message (the listing reads the first one).
    pub(crate) has_user: bool,
}

/// The fields of a line before `messages`, borrowed, for writing.
#[derive(Serialize)]
pub(super) struct LineHead<'a> {
    /// The `updated` field of the snapshot this line extends; lines naming another snapshot
    /// are left over from before it was rewritten and are skipped.
    pub(crate) base: &'a str,
    /// The index of the line's first message in the whole history.
    pub(crate) at: usize,
    pub(crate) updated: String,
    pub(crate) totals: &'a Totals,
    pub(crate) checkpoint: Option<&'a Checkpoint>,
}

/// One line as read; same fields, same order, as [`LineHead`] plus `messages`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    base: String,
    at: usize,
    updated: String,
    totals: Totals,
    checkpoint: Option<Checkpoint>,
    messages: History,
}

/// Appends one complete line (the concatenation of `parts`, ending in a newline) and flushes
/// it to disk. A new journal also has its folder flushed, so the file itself survives a crash.
/// Returns the journal's length afterwards.
pub(super) fn append(path: &Path, parts: &[&[u8]]) -> io::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        // A journal planted as a link is not followed; a FIFO neither blocks nor is written.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("the journal is not a regular file"));
    }
    let mut buffered = io::BufWriter::with_capacity(64 * 1024, &mut file);
    for part in parts {
        buffered.write_all(part)?;
    }
    buffered.flush()?;
    drop(buffered);
    file.sync_data()?;
    if meta.len() == 0
        && let Some(dir) = path.parent()
    {
        sync_dir(dir)?;
    }
    Ok(file.metadata()?.len())
}

/// Removes the journal; one that is already gone is fine.
pub(super) fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTSUP)) => Ok(()),
        other => other,
    }
}

/// Applies the journal's lines to `snapshot`, in order. Lines naming another snapshot (left
/// over from a crash between rewriting the snapshot and removing the journal) are skipped, and
/// messages a line repeats are skipped by index, so replaying is idempotent. The last line may
/// be torn (a crash mid-append: no newline, or not valid JSON): it is ignored and returned as
/// a warning. Any other bad line is an error: the caller reports the session as corrupt and
/// leaves both files untouched, so nothing is lost.
pub(super) fn replay(snapshot: &mut Snapshot, bytes: &[u8]) -> Result<Option<String>, String> {
    let base = snapshot.updated.clone();
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    // After the last newline: empty when the journal ends cleanly, else a torn append.
    let rest = lines.pop().unwrap_or_default();
    let mut warning =
        (!rest.is_empty()).then(|| "the journal's last line is incomplete; it was ignored".into());
    let count = lines.len();
    for (number, text) in lines.into_iter().enumerate() {
        let line: Line = match serde_json::from_slice(text) {
            Ok(line) => line,
            Err(_) if number + 1 == count && warning.is_none() => {
                warning = Some("the journal's last line is not valid JSON; it was ignored".into());
                break;
            }
            Err(e) => return Err(format!("journal line {}: {e}", number + 1)),
        };
        if line.base != base {
            continue;
        }
        let messages = &mut snapshot.messages;
        let have = messages.messages.len();
        if line.at > have {
            return Err(format!(
                "journal line {} starts at message {}, but the history before it has {have}",
                number + 1,
                line.at
            ));
        }
        let skip = have - line.at;
        let History {
            messages: added,
            results,
        } = line.messages;
        messages.messages.extend(added.into_iter().skip(skip));
        messages.results.extend(
            results
                .into_iter()
                .filter(|(index, _)| *index >= skip)
                .map(|(index, info)| (index + line.at, info)),
        );
        snapshot.updated = line.updated;
        snapshot.totals = line.totals;
        snapshot.checkpoint = line.checkpoint;
    }
    Ok(warning)
}
