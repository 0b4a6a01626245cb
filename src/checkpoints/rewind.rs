//! Rewinding the code: what each turn changed (the listing), and the restore to the state
//! before a turn. A file whose content or mode is not what the agent's last recorded call left
//! there (the user edited it, another program did) is a conflict: left alone and named.
//! Paths come from the session's own journal and are still checked to stay in the workspace;
//! every write, removal and new folder goes through `fsutil::beneath`, so a folder a command
//! swapped for a link is refused (named as a conflict), never followed out of the workspace.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::journal::{Call, Journal};
use super::{FileState, Stat};
use crate::fsutil::beneath::{BeneathError, Root};

/// What happened to one path over a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    Created,
    Modified,
    Deleted,
    ModeChanged,
}

/// One user turn that changed files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnChanges {
    /// 1 for the session's first user message.
    pub turn: u32,
    pub files: Vec<(String, FileChange)>,
    /// Files over the size limit the turn's calls left unrecorded.
    pub skipped: Vec<String>,
    /// Already undone by a rewind.
    pub undone: bool,
    /// The turn holds a rewind's own record (undoing it undoes the rewind).
    pub rewind: bool,
    /// The tools of the turn's recorded calls, in order (`bash` may have done more than the
    /// files show).
    pub tools: Vec<String>,
}

/// What a rewind did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Paths brought back to their state before the turn (removed when they did not exist).
    pub restored: Vec<String>,
    /// Paths changed since the agent's last call touched them: left as they are, unless
    /// forced.
    pub conflicts: Vec<String>,
    /// Conflicts a forced rewind overwrote (their content before is in the rewind's record).
    pub overwritten: Vec<String>,
    /// Files the turns' calls changed that were too large to record.
    pub skipped: Vec<String>,
    /// Set when the turn's checkpoints were pruned: nothing was restored.
    pub pruned: bool,
}

/// A turn's paths with their spans, its skipped files, whether it was undone, and whether
/// it holds a rewind.
type TurnSpans = (BTreeMap<String, Span>, Vec<String>, bool, bool, Vec<String>);

/// The turns with their changes, newest first. Touched-but-equal files are left out.
pub(crate) fn list(calls: &[Call]) -> Vec<TurnChanges> {
    let mut turns: BTreeMap<u32, TurnSpans> = BTreeMap::new();
    for call in calls.iter().filter(|c| !c.pending) {
        let entry = turns.entry(call.turn).or_default();
        entry.2 |= call.undone;
        entry.3 |= call.tool == super::REWIND_TOOL;
        entry.1.extend(call.skipped.iter().cloned());
        entry.4.push(call.tool.clone());
        merge(&mut entry.0, call);
    }
    turns
        .into_iter()
        .rev()
        .filter_map(|(turn, (spans, mut skipped, undone, rewind, tools))| {
            // Folders are restored with their files but not listed.
            let files: Vec<_> = spans
                .into_iter()
                .filter(|(path, _)| !path.ends_with('/'))
                .filter_map(|(path, span)| span.kind().map(|k| (path, k)))
                .collect();
            skipped.sort();
            skipped.dedup();
            (!files.is_empty() || !skipped.is_empty()).then_some(TurnChanges {
                turn,
                files,
                skipped,
                undone,
                rewind,
                tools,
            })
        })
        .collect()
}

/// A path's state before the first and after the last of a run of calls.
struct Span {
    first: Option<FileState>,
    last: Option<FileState>,
}

impl Span {
    fn kind(&self) -> Option<FileChange> {
        match (&self.first, &self.last) {
            (None, Some(_)) => Some(FileChange::Created),
            (Some(_), None) => Some(FileChange::Deleted),
            (Some(a), Some(b)) if a.hash != b.hash => Some(FileChange::Modified),
            (Some(a), Some(b)) if a.mode != b.mode => Some(FileChange::ModeChanged),
            _ => None,
        }
    }
}

fn merge(spans: &mut BTreeMap<String, Span>, call: &Call) {
    for (path, change) in &call.changes {
        spans
            .entry(path.clone())
            .and_modify(|s| s.last = change.after.clone())
            .or_insert_with(|| Span {
                first: change.before.clone(),
                last: change.after.clone(),
            });
    }
}

/// Restores every path the live calls of turns `turn` and later changed to its state before
/// them. A conflict is left alone, or with `how.force` overwritten when its current content
/// is in the store. `how.dry_run` only plans.
pub(crate) fn restore(journal: &mut Journal, turn: u32, how: &super::How) -> io::Result<Outcome> {
    let mut outcome = Outcome::default();
    // Every call from the turn on, undone ones and rewinds' own records included: in journal
    // order they chain, so a path's first `before` is its state before the turn and its last
    // `after` what the agent (or a rewind) last left there.
    let mut spans = BTreeMap::new();
    for call in journal.calls.iter().filter(|c| c.turn >= turn) {
        merge(&mut spans, call);
        outcome.skipped.extend(call.skipped.iter().cloned());
    }
    outcome.skipped.sort();
    outcome.skipped.dedup();
    // What comes back is made parents first; what goes away is removed children first.
    let (back, away): (Vec<_>, Vec<_>) = spans.into_iter().partition(|(_, s)| s.first.is_some());
    let root = Root::open(&journal.workspace)?;
    for (rel, span) in back.into_iter().chain(away.into_iter().rev()) {
        let Some(path) = confined(&journal.workspace, &rel) else {
            outcome.conflicts.push(rel);
            continue;
        };
        // A folder on the way swapped for a link: nothing is read or changed through it.
        if let Err(e) = root.lstat(Path::new(&rel)) {
            refuse(e, &rel, &mut outcome)?;
            continue;
        }
        let conflict = !is_as_left(journal, &root, &rel, &path, span.last.as_ref())?;
        if conflict {
            outcome.conflicts.push(rel.clone());
            if !how.force || !recorded_now(journal, &rel, &path)? {
                continue;
            }
            outcome.overwritten.push(rel.clone());
        }
        let same = match (&span.first, &span.last) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same_file(b),
            _ => false,
        };
        if same && !conflict {
            continue;
        }
        if !how.dry_run {
            match put_back(journal, &root, &rel, span.first.as_ref()) {
                Ok(true) => {}
                // A folder the calls made that holds something else now stays.
                Ok(false) => {
                    outcome.conflicts.push(rel);
                    continue;
                }
                Err(e) => {
                    refuse(e, &rel, &mut outcome)?;
                    continue;
                }
            }
        }
        if !rel.ends_with('/') {
            outcome.restored.push(rel);
        }
    }
    outcome.conflicts.sort();
    outcome.restored.sort();
    Ok(outcome)
}

/// A link on the way to `rel` makes it a conflict (left alone, named); any other error ends
/// the rewind.
fn refuse(e: BeneathError, rel: &str, outcome: &mut Outcome) -> io::Result<()> {
    if !e.is_link() {
        return Err(e.into());
    }
    tracing::warn!(path = rel, error = %e, "rewind left a path reached through a symbolic link");
    outcome.conflicts.push(rel.to_string());
    Ok(())
}

/// Whether what is at `path` now can be brought back later: nothing, or a regular file the
/// tree (just brought up to date) holds in the store.
fn recorded_now(journal: &Journal, rel: &str, path: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok((meta.is_file() || meta.is_dir())
            && journal.tree.get(rel).is_some_and(|s| s.matches(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(e),
    }
}

/// `rel` joined to the workspace, when it is a plain relative path.
fn confined(workspace: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| workspace.join(rel))
}

/// Whether the file at `path` (`rel` below `root`) is what the last call left (`None`:
/// absent). A file whose metadata still matches the recorded tree is not read; one that is
/// read is opened without following a link or blocking on a FIFO.
fn is_as_left(
    journal: &Journal,
    root: &Root,
    rel: &str,
    path: &Path,
    left: Option<&FileState>,
) -> io::Result<bool> {
    use std::io::Read;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(left.is_none()),
        Err(e) => return Err(e),
    };
    let Some(left) = left else {
        return Ok(false);
    };
    if left.is_dir() {
        return Ok(meta.is_dir() && Stat::of(&meta).mode == left.mode);
    }
    if !meta.is_file() {
        return Ok(false);
    }
    if let Some(known) = journal.tree.get(rel)
        && known.matches(&meta)
    {
        return Ok(known.same_file(left));
    }
    let Some((file, meta)) = root.open_read(Path::new(rel))? else {
        return Ok(false);
    };
    let mut bytes = Vec::new();
    file.take(meta.len().saturating_add(1))
        .read_to_end(&mut bytes)?;
    let hash = super::blobs::Blobs::hash(&bytes);
    Ok(hash == left.hash && Stat::of(&meta).mode == left.mode)
}

/// Writes `state`'s content and mode at `rel` (a folder: makes it), or removes what is there
/// when `state` is `None`. Returns false for a folder that is not empty, left in place.
fn put_back(
    journal: &Journal,
    root: &Root,
    rel: &str,
    state: Option<&FileState>,
) -> Result<bool, BeneathError> {
    let path = Path::new(rel);
    let Some(state) = state else {
        return match root.lstat(path)? {
            None => Ok(true),
            Some(found) if !found.is_dir() => root.remove_file(path).map(|_| true),
            Some(_) => match root.remove_dir(path) {
                Ok(_) => Ok(true),
                Err(e) if e.is_link() => Err(e),
                Err(_) => Ok(false),
            },
        };
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        root.create_dir_all(parent, 0o777)?;
    }
    let mode = state.mode & 0o7777;
    if state.is_dir() {
        // Made open first, so the mode can be set on it whatever bits it gets.
        root.create_dir(path, 0o777)?;
        root.set_mode(path, mode)?;
        return Ok(true);
    }
    let bytes = journal
        .blobs
        .get(&state.hash)
        .map_err(|source| BeneathError::Io {
            path: journal.workspace.join(rel),
            source,
        })?;
    root.write_atomic(path, &bytes, mode & 0o777)?;
    Ok(true)
}
