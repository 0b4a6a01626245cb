//! Rewinding the code: what each turn changed (the listing), and the restore to the state
//! before a turn. A file whose content or mode is not what the agent's last recorded call left
//! there (the user edited it, another program did) is a conflict: left alone and named.
//! Paths come from the session's own journal and are still checked to stay in the workspace;
//! every write, removal and new folder goes through `fsutil::beneath`, so a folder a command
//! swapped for a link is refused (named as a conflict), never followed out of the workspace.
//! A protected path (the `write` tool's list: `.git/`, hooks, minicode's own data...) is
//! never written, whatever the journal says. A change the record cannot surely attribute to
//! the agent (see `attribution`) is kept unless forced, like a conflict.

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
    /// Files the turn changed that hold a configured secret: not stored, cannot be undone.
    pub withheld: Vec<String>,
    /// Files the turn's record holds that the agent may not have changed (another session
    /// or program was writing meanwhile, or they changed after a crash): a rewind keeps them
    /// unless forced.
    pub uncertain: Vec<String>,
    /// The tools of the turn's calls that ran unrecorded (recording failed).
    pub unrecorded: Vec<String>,
    /// A rewind whose process died before it finished: run it again.
    pub interrupted: bool,
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
    /// Files the turns changed that hold a configured secret: not stored, not restored.
    pub withheld: Vec<String>,
    /// Protected paths a journal names: never written by a rewind.
    pub protected: Vec<String>,
    /// Changes the agent may not have made: kept unless forced (then also in `overwritten`).
    pub uncertain: Vec<String>,
    /// No call was recorded from the turn on: nothing to restore.
    pub nothing_recorded: bool,
    /// The tools of the calls from the turn on that ran unrecorded.
    pub unrecorded: Vec<String>,
    /// The number of the rewind's own record (`rewind --to` it undoes this rewind).
    pub record: Option<u32>,
}

/// The turns with their changes, newest first. Touched-but-equal files are left out.
pub(crate) fn list(calls: &[Call]) -> Vec<TurnChanges> {
    let mut turns: BTreeMap<u32, (BTreeMap<String, Span>, TurnChanges)> = BTreeMap::new();
    for call in calls.iter().filter(|c| !c.pending) {
        let (spans, t) = turns.entry(call.turn).or_insert_with(|| {
            (
                BTreeMap::new(),
                TurnChanges {
                    turn: call.turn,
                    files: Vec::new(),
                    skipped: Vec::new(),
                    undone: false,
                    rewind: false,
                    tools: Vec::new(),
                    withheld: Vec::new(),
                    uncertain: Vec::new(),
                    unrecorded: Vec::new(),
                    interrupted: false,
                },
            )
        });
        if call.unrecorded {
            t.unrecorded.push(call.tool.clone());
            continue;
        }
        t.undone |= call.undone;
        t.rewind |= call.tool == super::REWIND_TOOL;
        t.interrupted |= call.tool == super::REWIND_TOOL && call.recovered;
        t.skipped.extend(call.skipped.iter().cloned());
        t.uncertain.extend(call.uncertain.iter().cloned());
        t.tools.push(call.tool.clone());
        merge(spans, call);
    }
    turns
        .into_values()
        .rev()
        .filter_map(|(spans, mut t)| {
            for (path, span) in spans.into_iter().filter(|(p, _)| !p.ends_with('/')) {
                match span.unstored() {
                    Some(super::HOLDS_SECRET) => t.withheld.push(path),
                    Some(_) => t.skipped.push(path),
                    None => t.files.extend(span.kind().map(|k| (path, k))),
                }
            }
            for list in [&mut t.skipped, &mut t.uncertain, &mut t.withheld] {
                list.sort();
                list.dedup();
            }
            t.uncertain.retain(|p| t.files.iter().any(|(f, _)| f == p));
            let shown = !t.files.is_empty()
                || !t.skipped.is_empty()
                || !t.withheld.is_empty()
                || !t.unrecorded.is_empty()
                || t.interrupted;
            shown.then_some(t)
        })
        .collect()
}

/// A path's state before the first and after the last of a run of calls.
struct Span {
    first: Option<FileState>,
    last: Option<FileState>,
    /// Why a state in the run is tracked without its content, if one is.
    unstored: Option<&'static str>,
}

impl Span {
    fn unstored(&self) -> Option<&'static str> {
        self.unstored
    }

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
        let span = spans.entry(path.clone()).or_insert_with(|| Span {
            first: change.before.clone(),
            last: None,
            unstored: None,
        });
        span.last = change.after.clone();
        for state in change.before.iter().chain(&change.after) {
            if state.unstored() {
                span.unstored = Some(if state.hash == super::HOLDS_SECRET {
                    super::HOLDS_SECRET
                } else {
                    super::TOO_LARGE
                });
            }
        }
    }
}

/// Restores every path the calls from `from` on (in journal order) changed to its state
/// before them. A conflict or an uncertain change is left alone, or with `how.force`
/// overwritten when its current content is in the store; a protected path or a file whose
/// content was not stored is never written. `how.dry_run` only plans.
pub(crate) fn restore(journal: &mut Journal, from: u64, how: &super::How) -> io::Result<Outcome> {
    let mut outcome = Outcome::default();
    // Every call from the cut on, undone ones and rewinds' own records included: in journal
    // order they chain, so a path's first `before` is its state before the turn and its last
    // `after` what the agent (or a rewind) last left there.
    let mut spans = BTreeMap::new();
    let mut uncertain = std::collections::BTreeSet::new();
    let mut since = i64::MAX;
    for call in journal.calls.iter().filter(|c| c.seq >= from) {
        merge(&mut spans, call);
        outcome.skipped.extend(call.skipped.iter().cloned());
        outcome
            .unrecorded
            .extend(call.unrecorded.then(|| call.tool.clone()));
        uncertain.extend(call.uncertain.iter().cloned());
        if call.began > 0 && call.tool != super::REWIND_TOOL {
            since = since.min(call.began);
        }
    }
    let others = journal.others(if since == i64::MAX { 0 } else { since })?;
    let own = journal.call_ids();
    // What comes back is made parents first; what goes away is removed children first.
    let (back, away): (Vec<_>, Vec<_>) = spans.into_iter().partition(|(_, s)| s.first.is_some());
    let root = Root::open(&journal.workspace)?;
    for (rel, span) in back.into_iter().chain(away.into_iter().rev()) {
        if let Some(why) = span.unstored() {
            let list = if why == super::HOLDS_SECRET {
                &mut outcome.withheld
            } else {
                &mut outcome.skipped
            };
            list.push(rel);
            continue;
        }
        let Some(path) = confined(&journal.workspace, &rel) else {
            outcome.conflicts.push(rel);
            continue;
        };
        if journal.guard.protected(&journal.workspace, &path).is_some() {
            outcome.protected.push(rel);
            continue;
        }
        // A folder on the way swapped for a link: nothing is read or changed through it.
        if let Err(e) = root.lstat(Path::new(&rel)) {
            refuse(e, &rel, &mut outcome)?;
            continue;
        }
        let conflict = !is_as_left(journal, &root, &rel, &path, span.last.as_ref())?;
        let same = match (&span.first, &span.last) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same_file(b),
            _ => false,
        };
        if same && !conflict {
            continue;
        }
        let doubt = uncertain.contains(&rel) || others.claims(&rel, span.last.as_ref(), &own);
        if conflict || doubt {
            if conflict {
                outcome.conflicts.push(rel.clone());
            } else {
                outcome.uncertain.push(rel.clone());
            }
            if !how.force || !recorded_now(journal, &rel, &path)? {
                continue;
            }
            outcome.overwritten.push(rel.clone());
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
    for list in [
        &mut outcome.conflicts,
        &mut outcome.restored,
        &mut outcome.skipped,
        &mut outcome.withheld,
        &mut outcome.protected,
        &mut outcome.uncertain,
    ] {
        list.sort();
        list.dedup();
    }
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
