//! Whose change is it: what a call's record may claim as the agent's. A record is everything
//! that changed between the scans before and after a call, so on its own it would also file
//! under the call another session's writes and, after a crash, what the user wrote before the
//! next load. This module holds the evidence that narrows that down; it never writes the
//! workspace.
//!
//! - Another session's claims: a change whose resulting state (content, times, inode) another
//!   session of the workspace recorded as its own call's is that session's, never this one's.
//!   A journal not owned by this user, or whose session does not exist, is not evidence.
//! - Another session's open call overlapping this one: what it will claim is not known yet, so
//!   whatever this call's record holds that it does not claim is uncertain.
//! - What a confined command named: the calls of a sandboxed `bash` command that can change a
//!   path trap to its supervisor, which notes the path (`sandbox::notifier`); a change in the
//!   call's window under no noted path (nor a noted folder above it: a rename or a removal of
//!   a folder) was made by someone else, the user most likely, so it is uncertain.
//! - The heartbeat: while a call runs, the journal's modification time is moved to "now" every
//!   [`BEAT`]; after a crash, that time is the last moment the process was known alive, and a
//!   change made after it (its status-change time newer) cannot be sure to be the call's.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Deserialize;

use super::{FileState, Guard};

/// How often a running call's heartbeat touches its journal.
const BEAT: Duration = Duration::from_millis(200);

/// Now, in nanoseconds since the epoch (the clock file times use).
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Whether this user owns `meta`'s file: a store or journal made by someone else is not used.
pub(crate) fn owned(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == nix::unistd::geteuid().as_raw()
}

/// What the other sessions of the workspace say about a window of time.
#[derive(Default)]
pub(crate) struct Others {
    /// Per path, the states other sessions' calls recorded as their results, with the id of
    /// the call (a fork's journal starts as a copy of its parent's: a call both hold is
    /// not another session's).
    pub claimed: BTreeMap<String, Vec<(String, FileState)>>,
    /// Whether another session has a call still open (begun, not ended) whose window reaches
    /// into the one asked about.
    pub open_call: bool,
}

impl Others {
    /// Whether `state` at `path` is another session's recorded result (of a call that is not
    /// one of `own`, the ids of this session's calls).
    pub(crate) fn claims(
        &self,
        path: &str,
        state: Option<&FileState>,
        own: &HashSet<String>,
    ) -> bool {
        let Some(state) = state else {
            return false;
        };
        self.claimed.get(path).is_some_and(|states| {
            states
                .iter()
                .any(|(call, s)| s == state && !own.contains(call))
        })
    }
}

/// The workspace-relative paths a confined command's calls named (see `checkpoints::Noted`).
pub(crate) struct Covered(HashSet<String>);

impl Covered {
    /// `paths` are absolute; those outside the workspace (as given or as its canonical form
    /// names it), and the workspace itself, say nothing about its files.
    pub(crate) fn new(workspace: &Path, paths: &[PathBuf]) -> Covered {
        let canonical = std::fs::canonicalize(workspace).ok();
        let roots: Vec<&Path> = std::iter::once(workspace)
            .chain(canonical.as_deref())
            .collect();
        let rels = paths
            .iter()
            .filter_map(|path| roots.iter().find_map(|root| path.strip_prefix(root).ok()))
            .filter_map(Path::to_str)
            .filter(|rel| !rel.is_empty())
            .map(str::to_string)
            .collect();
        Covered(rels)
    }

    /// Whether the change at `rel` (a folder's ends with `/`) is under a named path: the path
    /// itself or a folder above it.
    pub(crate) fn covers(&self, rel: &str) -> bool {
        let rel = rel.trim_end_matches('/');
        self.0.contains(rel)
            || rel
                .match_indices('/')
                .any(|(i, _)| self.0.contains(&rel[..i]))
    }
}

/// Whether `change` is one a rewind would undo (not only new times on the same content).
pub(crate) fn reverts(change: &super::Change) -> bool {
    match (&change.before, &change.after) {
        (Some(before), Some(after)) => !before.same_file(after),
        (None, None) => false,
        _ => true,
    }
}

/// The lines of another journal this reads (the rest of its format is `journal`'s).
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Seen {
    Begin {
        seq: u64,
        call: String,
        #[serde(default)]
        at: Option<i64>,
    },
    End {
        seq: u64,
        changes: BTreeMap<String, super::Change>,
    },
    #[serde(other)]
    Other,
}

/// What identifies a call across journals: its id and its start (a fork's copy of a line
/// keeps both; two sessions' calls given the same id by a model do not share the start).
pub(crate) fn call_key(call: &str, at: i64) -> String {
    format!("{call}@{at}")
}

/// Reads every other usable journal in `dir` written to since `since` (ns): their calls'
/// claims and whether one of them is still open. `own` is this session's journal.
pub(crate) fn others(
    workspace: &Path,
    dir: &Path,
    own: &Path,
    since: i64,
    guard: &Guard,
) -> io::Result<Others> {
    let mut out = Others::default();
    for path in journals(workspace, dir, own, guard)? {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if super::Stat::of(&meta).mtime < since {
            continue;
        }
        read_claims(&path, since, &mut out)?;
    }
    Ok(out)
}

fn read_claims(path: &Path, since: i64, out: &mut Others) -> io::Result<()> {
    let file = std::fs::File::open(path)?;
    let mut open: BTreeMap<u64, String> = BTreeMap::new();
    for line in io::BufReader::new(file).lines() {
        let line = line?;
        // The base line is the largest and says nothing about calls.
        if line.starts_with("{\"kind\":\"base\"") {
            continue;
        }
        match serde_json::from_str::<Seen>(&line) {
            Ok(Seen::Begin { seq, call, at }) => {
                open.insert(seq, call_key(&call, at.unwrap_or(0)));
            }
            Ok(Seen::End { seq, changes }) => {
                let call = open.remove(&seq).unwrap_or_default();
                for (rel, change) in changes {
                    if let Some(after) = change.after {
                        out.claimed
                            .entry(rel)
                            .or_default()
                            .push((call.clone(), after));
                    }
                }
            }
            _ => {}
        }
    }
    // The journal was written to after `since`, so an open call's heartbeat or begin is
    // recent: its window reaches into the one asked about.
    out.open_call |= !open.is_empty() && since > 0;
    Ok(())
}

/// The journals of other sessions that may be read: regular files this user owns, whose
/// session exists (when the caller can tell).
pub(crate) fn journals(
    workspace: &Path,
    dir: &Path,
    own: &Path,
    guard: &Guard,
) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path == own {
            continue;
        }
        let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let usable = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && owned(&m))
            && guard
                .session_exists
                .is_none_or(|known| known(workspace, id));
        if usable {
            out.push(path);
        }
    }
    Ok(out)
}

/// Whether a change the crashed call's record would hold surely happened before the crash:
/// its resulting file changed status no later than `alive` (the last heartbeat); a removal
/// when its folder did not change after it.
pub(crate) fn before_crash(
    workspace: &Path,
    rel: &str,
    after: Option<&FileState>,
    alive: i64,
) -> bool {
    match after {
        Some(state) => state.ctime <= alive,
        None => {
            let parent = Path::new(rel.trim_end_matches('/'))
                .parent()
                .map_or_else(|| workspace.to_path_buf(), |p| workspace.join(p));
            std::fs::symlink_metadata(parent)
                .is_ok_and(|meta| super::Stat::of(&meta).ctime <= alive)
        }
    }
}

/// The heartbeat of a running call: moves the journal's modification time to now every
/// [`BEAT`] until dropped, and once more then (a call that ended, or a recorder dropped, was
/// alive up to that moment).
pub(crate) struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
}

impl Heartbeat {
    pub(crate) fn start(path: &Path) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, beat_path) = (stop.clone(), path.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("checkpoint-heartbeat".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::park_timeout(BEAT);
                    if !flag.load(Ordering::Relaxed) {
                        touch(&beat_path);
                    }
                }
            })
            .ok();
        Heartbeat {
            stop,
            thread,
            path: path.to_path_buf(),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
        touch(&self.path);
    }
}

/// Sets `path`'s modification time to now (never through a link).
fn touch(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::Covered;
    use std::path::{Path, PathBuf};

    #[test]
    fn a_named_path_covers_itself_and_what_lies_below_it_only() {
        let covered = Covered::new(
            Path::new("/w"),
            &[
                PathBuf::from("/w/src/a.rs"),
                PathBuf::from("/w/moved"),
                PathBuf::from("/w"),
                PathBuf::from("/elsewhere/b"),
            ],
        );
        assert!(covered.covers("src/a.rs"));
        assert!(covered.covers("moved/"));
        assert!(covered.covers("moved/deep/x"));
        assert!(!covered.covers("src/b.rs"));
        assert!(!covered.covers("src/"));
        assert!(!covered.covers("movedx"));
        assert!(!covered.covers("b"));
    }
}
