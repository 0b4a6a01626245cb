//! One session's checkpoint journal, `.minicode/checkpoints/sessions/<id>.jsonl` (0600): a
//! `base` line with the recorded tree (the stat cache: every tracked file's metadata and
//! blob), then one JSON line per event, appended and never rewritten. Replaying the lines
//! gives the tree as last recorded and the calls with what each changed. A call's `begin`
//! without its `end` (the process died during the call) is completed on load from a scan
//! against the tree recorded before it.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, BufRead, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::blobs::Blobs;
use super::watch::Watcher;
use super::{Change, FileState, Position, Settings, Tree, scan};

/// The size of a tree (files and folders recorded) from which the watcher is worth its
/// set-up and its teardown.
const WATCH_FROM: usize = 1_000;

/// The threads a whole walk of a tree of [`WATCH_FROM`] entries or more takes.
const PARALLEL_WALK: usize = 2;

/// The journal format's version (in the base line; 1: the base holds the file list).
pub(crate) const VERSION: u32 = 2;

/// One line of the journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Line {
    /// The tree when the session's first checkpoint was taken: the shared snapshot `ref`
    /// names (see `shared`) with `files` over it, or (version 1, no `ref`) `files` alone.
    Base {
        version: u32,
        #[serde(default)]
        files: Tree,
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        shared: Option<String>,
    },
    /// Changes seen between calls (the user's edits, a rewind): the tree moves on, no call
    /// owns them.
    Drift {
        files: BTreeMap<String, Option<FileState>>,
    },
    /// A call starts; the tree as replayed so far is the state before it.
    Begin {
        seq: u64,
        turn: u32,
        call: String,
        tool: String,
        /// When it started (ns since the epoch).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// What the call `seq` changed. `recovered`: completed on a later load after a crash.
    /// `uncertain`: paths among `changes` the call may not have made (see `attribution`).
    /// `skipped`: only in journals written before unstored files were tracked.
    End {
        seq: u64,
        changes: BTreeMap<String, Change>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        uncertain: Vec<String>,
        /// For a confined command with a record of what it named (`checkpoints::Noted`):
        /// how many of its calls trapped to say so (read-only commands: 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        notified: Option<u64>,
    },
    /// A call that ran unrecorded (recording failed): a rewind cannot undo it.
    Unrecorded {
        turn: u32,
        call: String,
        tool: String,
    },
    /// The code was rewound to before `turn`: the calls recorded so far from that turn on are
    /// listed as undone. `record`: the call that recorded the rewind itself (it and later
    /// calls are not). Rewinds read every call, undone or not: in order they chain.
    Rewound {
        turn: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<u64>,
    },
    /// The checkpoints of turns up to `through` were pruned to keep the store under its cap:
    /// the calls up to `seq` (older journals: every call of a turn up to `through`).
    Pruned {
        through: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
    },
}

/// A recorded call.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub turn: u32,
    pub seq: u64,
    /// The tool that made it (`rewind` for a rewind's own record).
    pub tool: String,
    pub changes: BTreeMap<String, Change>,
    pub skipped: Vec<String>,
    /// Undone by a rewind.
    pub undone: bool,
    /// Its `end` is not written yet.
    pub pending: bool,
    /// Completed on a later load (the process died during it).
    pub recovered: bool,
    /// Paths of `changes` the call may not have made: kept by a rewind unless forced.
    pub uncertain: Vec<String>,
    /// It ran unrecorded (recording failed): nothing of it can be undone.
    pub unrecorded: bool,
    /// When it started (ns since the epoch; 0 in older journals).
    pub began: i64,
    /// The call's id (as the model named it; a rewind's is `rewind-to-N`).
    pub id: String,
}

impl Call {
    fn new(turn: u32, seq: u64, tool: &str, id: &str) -> Call {
        Call {
            id: id.to_string(),
            turn,
            seq,
            tool: tool.to_string(),
            changes: BTreeMap::new(),
            skipped: Vec::new(),
            undone: false,
            pending: true,
            recovered: false,
            uncertain: Vec::new(),
            unrecorded: false,
            began: 0,
        }
    }
}

/// A loaded journal: the tree as last recorded and the calls.
pub(crate) struct Journal {
    pub workspace: PathBuf,
    pub(crate) path: PathBuf,
    pub blobs: Blobs,
    pub tree: Tree,
    pub calls: Vec<Call>,
    max_file_bytes: u64,
    pub guard: super::Guard,
    pub(crate) next_seq: u64,
    /// Turns up to this one can no longer be undone (0: none pruned).
    pub pruned_through: u32,
    /// The highest rewind number given so far (see `REWINDS_FROM`).
    pub(crate) rewinds: u32,
    /// The last moment the process that wrote the journal was known alive (its modification
    /// time when loaded): a crashed call's changes after it are uncertain.
    alive: i64,
    /// Whether the base line is written.
    pub(crate) based: bool,
    /// The blob store's size, once measured.
    pub(crate) store_bytes: Option<u64>,
    /// Watches every folder once a whole-tree walk has run with it; `None` before, and for
    /// good where it cannot (then every record walks the tree).
    watcher: Option<Arc<Watcher>>,
    /// Whether the watcher was found unusable; it is not tried again.
    unwatchable: bool,
    /// The shared snapshot this session's tree is published against, and the paths changed
    /// since it (see `shared`).
    pub(crate) shared: Option<String>,
    pub(crate) touched: std::collections::BTreeSet<String>,
    /// Whether the tree moved since it was last published.
    pub(crate) unpublished: bool,
    /// The only paths the running call can change (it names them: `write`, `edit`), so the
    /// scans around it look at them alone; `None`: the whole tree.
    pub(crate) scope: Option<Vec<String>>,
}

/// The journals' folder.
pub(crate) fn sessions_dir(workspace: &Path, create: bool) -> io::Result<Option<PathBuf>> {
    let sub = format!("{}/sessions", super::SUBDIR);
    if create {
        crate::fsutil::private_dir(workspace, &sub).map(Some)
    } else {
        crate::fsutil::existing_private_dir(workspace, &sub)
    }
}

fn file_name(session: &str) -> io::Result<String> {
    let usable = !session.is_empty()
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !usable {
        return Err(io::Error::other(format!("invalid session id {session:?}")));
    }
    Ok(format!("{session}.jsonl"))
}

impl Journal {
    pub(crate) fn exists(workspace: &Path, session: &str) -> bool {
        let Ok(name) = file_name(session) else {
            return false;
        };
        matches!(sessions_dir(workspace, false), Ok(Some(dir)) if dir.join(name).is_file())
    }

    /// See `checkpoints::share`. A call of a later turn is left out with its `end`; the lines
    /// that only move the tree along (drift) stay, and the fork's first record walks the tree
    /// anyway.
    pub(crate) fn share(
        workspace: &Path,
        parent: &str,
        child: &str,
        before: Option<u32>,
    ) -> io::Result<()> {
        let Some(dir) = sessions_dir(workspace, false)? else {
            return Ok(());
        };
        let text = match std::fs::read_to_string(dir.join(file_name(parent)?)) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let limit = before.unwrap_or(u32::MAX);
        let mut dropped = HashSet::new();
        let mut kept = String::with_capacity(text.len());
        for line in text.lines() {
            let keep = match serde_json::from_str::<Line>(line) {
                Ok(Line::Begin { seq, turn, .. }) if turn >= limit => {
                    dropped.insert(seq);
                    false
                }
                Ok(Line::End { seq, .. }) => !dropped.contains(&seq),
                Ok(Line::Rewound { turn, .. }) => turn < limit,
                Ok(_) => true,
                Err(_) => false,
            };
            if keep {
                kept.push_str(line);
                kept.push('\n');
            }
        }
        let path = dir.join(file_name(child)?);
        crate::fsutil::write_atomic(&path, kept.as_bytes(), Some(0o600))
    }

    /// Loads the session's journal (an empty one if it has none yet) and completes the
    /// record of a call a crash left open.
    pub(crate) fn open(workspace: &Path, session: &str, settings: &Settings) -> io::Result<Self> {
        let dir = sessions_dir(workspace, true)?.unwrap_or_default();
        let mut journal = Journal {
            workspace: workspace.to_path_buf(),
            path: dir.join(file_name(session)?),
            blobs: Blobs::open(workspace)?,
            tree: Tree::new(),
            calls: Vec::new(),
            max_file_bytes: settings.max_file_bytes,
            guard: settings.guard.clone(),
            next_seq: 1,
            pruned_through: 0,
            rewinds: super::REWINDS_FROM,
            alive: 0,
            based: false,
            store_bytes: None,
            watcher: None,
            unwatchable: false,
            shared: None,
            touched: std::collections::BTreeSet::new(),
            unpublished: false,
            scope: None,
        };
        match std::fs::File::open(&journal.path) {
            Ok(file) => {
                let meta = file.metadata()?;
                if !meta.is_file() || !super::attribution::owned(&meta) {
                    return Err(io::Error::other(
                        "the checkpoint journal was not written by this user: not used",
                    ));
                }
                journal.alive = super::Stat::of(&meta).mtime;
                journal.replay(io::BufReader::new(file))?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        if let Some(seq) = journal.calls.iter().find(|c| c.pending).map(|c| c.seq) {
            journal.end(seq, true, None)?;
        }
        Ok(journal)
    }

    fn replay(&mut self, reader: impl BufRead) -> io::Result<()> {
        for line in reader.lines() {
            let line = line?;
            // A torn last line (the process died while appending) is dropped.
            let Ok(line) = serde_json::from_str::<Line>(&line) else {
                continue;
            };
            self.apply(line);
        }
        Ok(())
    }

    pub(crate) fn apply(&mut self, line: Line) {
        match line {
            Line::Base { files, shared, .. } => self.based_on(files, shared),
            Line::Drift { files } => {
                for (path, state) in files {
                    self.set(path, state);
                }
            }
            Line::Begin {
                seq,
                turn,
                tool,
                at,
                call: id,
            } => {
                self.next_seq = self.next_seq.max(seq + 1);
                if super::is_rewind_turn(turn) {
                    self.rewinds = self.rewinds.max(turn);
                }
                let mut call = Call::new(turn, seq, &tool, &id);
                call.began = at.unwrap_or(0);
                self.calls.push(call);
            }
            Line::End {
                seq,
                changes,
                skipped,
                recovered,
                uncertain,
                ..
            } => {
                for (path, change) in &changes {
                    self.set(path.clone(), change.after.clone());
                }
                if let Some(call) = self.calls.iter_mut().find(|c| c.seq == seq) {
                    call.changes = changes;
                    call.skipped = skipped;
                    call.pending = false;
                    call.recovered = recovered;
                    call.uncertain = uncertain;
                }
            }
            Line::Unrecorded { turn, tool, call } => {
                let mut call = Call::new(turn, self.next_seq, &tool, &call);
                self.next_seq += 1;
                call.pending = false;
                call.unrecorded = true;
                self.calls.push(call);
            }
            Line::Rewound { turn, record } => self.mark_undone(turn, record),
            Line::Pruned { through, seq } => {
                match seq {
                    Some(seq) => self.calls.retain(|c| c.seq > seq),
                    None => self.calls.retain(|c| c.turn > through),
                }
                if !super::is_rewind_turn(through) {
                    self.pruned_through = self.pruned_through.max(through);
                }
            }
        }
    }

    pub(crate) fn mark_undone(&mut self, turn: u32, record: Option<u64>) {
        let Some(from) = self.cut(turn) else {
            return;
        };
        let before = record.unwrap_or(u64::MAX);
        for call in self
            .calls
            .iter_mut()
            .filter(|c| c.seq >= from && c.seq < before)
        {
            call.undone = true;
        }
    }

    /// The first call a rewind to before `turn` undoes: a rewind's own record, or the first
    /// call of the user turns from `turn` on. Every call after it in the journal is undone
    /// too (a rewind recorded before `turn` began is not: it is older).
    pub(crate) fn cut(&self, turn: u32) -> Option<u64> {
        if super::is_rewind_turn(turn) {
            return self.calls.iter().find(|c| c.turn == turn).map(|c| c.seq);
        }
        self.calls
            .iter()
            .filter(|c| !super::is_rewind_turn(c.turn) && c.turn >= turn)
            .map(|c| c.seq)
            .min()
    }

    /// Appends one line. A line the disk had no room for is cut off again, so the next line
    /// does not join a torn one.
    pub(crate) fn append(&mut self, line: &Line) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)?;
        let len = file.metadata()?.len();
        let written = file.write_all(text.as_bytes());
        if written.is_err() {
            let _ = file.set_len(len);
        } else {
            self.grew(text.len() as u64);
        }
        written
    }

    /// Records that a call ran unrecorded (best effort: the disk may still be full).
    pub(crate) fn unrecorded(&mut self, position: &Position) -> io::Result<()> {
        let line = Line::Unrecorded {
            turn: position.turn,
            call: position.call.clone(),
            tool: position.tool.clone(),
        };
        self.append(&line)?;
        self.apply(line);
        Ok(())
    }

    /// Brings the recorded tree up to date with the workspace: the first time, the base (the
    /// workspace's shared stat cache, then every file whose metadata differs read; without a
    /// usable cache every tracked file read once); then the drift since the last record (only
    /// changed files read).
    pub(crate) fn catch_up(&mut self) -> io::Result<()> {
        if !self.based {
            return self.first_record();
        }
        let found = self.scan()?;
        self.grew(found.grown);
        let files: BTreeMap<String, Option<FileState>> = found
            .changes
            .into_iter()
            .map(|(path, change)| (path, change.after))
            .collect();
        for (path, state) in &files {
            self.set(path.clone(), state.clone());
        }
        if files.is_empty() {
            return Ok(());
        }
        if files.len() > super::shared::REBASE_FROM && self.scope.is_none() {
            // A whole-tree scan that found much (a lazy base's first walk): the tree as a
            // shared snapshot, not a long line in every session's journal.
            return self.rebase();
        }
        self.append(&Line::Drift { files })
    }

    /// Records that a call starts; returns its sequence number.
    pub(crate) fn begin(&mut self, position: &Position) -> io::Result<u64> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let at = super::attribution::now();
        self.append(&Line::Begin {
            seq,
            turn: position.turn,
            call: position.call.clone(),
            tool: position.tool.clone(),
            at: Some(at),
        })?;
        let mut call = Call::new(position.turn, seq, &position.tool, &position.call);
        call.began = at;
        self.calls.push(call);
        Ok(seq)
    }

    /// Records what call `seq` changed (a scan against the tree recorded before it), less
    /// what another session recorded as its own (a drift line); with `noted`, what the call
    /// named, a change it did not name is uncertain. Returns the paths not stored (too large,
    /// holding a secret).
    pub(crate) fn end(
        &mut self,
        seq: u64,
        recovered: bool,
        noted: Option<&super::Noted>,
    ) -> io::Result<Vec<String>> {
        let found = self.scan()?;
        self.grew(found.grown);
        let began = self
            .calls
            .iter()
            .find(|c| c.seq == seq)
            .map_or(0, |c| c.began);
        let others = self.others(began)?;
        let own = self.call_ids();
        let (mut changes, mut foreign) = (BTreeMap::new(), BTreeMap::new());
        for (path, change) in found.changes {
            self.set(path.clone(), change.after.clone());
            if others.claims(&path, change.after.as_ref(), &own) {
                foreign.insert(path, change.after);
            } else {
                changes.insert(path, change);
            }
        }
        let covered = noted.map(|n| super::attribution::Covered::new(&self.workspace, &n.paths));
        let uncertain: Vec<String> = changes
            .iter()
            .filter(|(path, change)| {
                others.open_call
                    || covered
                        .as_ref()
                        .is_some_and(|c| !c.covers(path) && super::attribution::reverts(change))
                    || (recovered
                        && !super::attribution::before_crash(
                            &self.workspace,
                            path,
                            change.after.as_ref(),
                            self.alive,
                        ))
            })
            .map(|(path, _)| path.clone())
            .collect();
        if !foreign.is_empty() {
            self.append(&Line::Drift { files: foreign })?;
        }
        let skipped = unstored(&changes);
        self.append(&Line::End {
            seq,
            changes: changes.clone(),
            skipped: Vec::new(),
            recovered,
            uncertain: uncertain.clone(),
            notified: noted.map(|n| n.notified),
        })?;
        if let Some(call) = self.calls.iter_mut().find(|c| c.seq == seq) {
            call.changes = changes;
            call.pending = false;
            call.recovered = recovered;
            call.uncertain = uncertain;
        }
        Ok(skipped)
    }

    /// The ids of this session's calls.
    pub(crate) fn call_ids(&self) -> HashSet<String> {
        self.calls
            .iter()
            .map(|c| super::attribution::call_key(&c.id, c.began))
            .collect()
    }

    /// What the other sessions' journals say about the time since `since` (nothing to say
    /// about a call with no start time).
    pub(crate) fn others(&self, since: i64) -> io::Result<super::attribution::Others> {
        if since == 0 {
            return Ok(super::attribution::Others::default());
        }
        let Some(dir) = self.path.parent() else {
            return Ok(super::attribution::Others::default());
        };
        super::attribution::others(&self.workspace, dir, &self.path, since, &self.guard)
    }

    /// What changed since the tree was last recorded: only the paths of `scope` when the
    /// running call names the paths it changes; else in the folders the watcher names once
    /// it watches the whole tree, else (the first time, after an overflow, without inotify)
    /// by walking everything, which also sets the watches up. A tree of fewer than
    /// [`WATCH_FROM`] entries is walked every time instead: the walk costs a millisecond or
    /// two, while closing an inotify instance waits for the kernel (about 20 ms at exit).
    pub(crate) fn scan(&mut self) -> io::Result<scan::Found> {
        if let Some(paths) = &self.scope {
            let against = scan::Against {
                tree: &self.tree,
                blobs: &mut self.blobs,
                max_file_bytes: self.max_file_bytes,
                guard: &self.guard,
                threads: 1,
            };
            return scan::paths(&self.workspace, paths, against);
        }
        let scope = match &self.watcher {
            Some(watcher) => {
                let dirty = watcher.drain();
                if dirty.is_empty() {
                    return Ok(scan::Found::default());
                }
                scan::Scope::dirty(dirty)
            }
            None => {
                if !self.unwatchable && self.tree.len() >= WATCH_FROM {
                    self.watcher = Watcher::new().map(Arc::new);
                    self.unwatchable = self.watcher.is_none();
                }
                scan::Scope::everything()
            }
        };
        let found = scan::scan(
            &self.workspace,
            scope,
            self.watcher.as_ref(),
            scan::Against {
                tree: &self.tree,
                blobs: &mut self.blobs,
                max_file_bytes: self.max_file_bytes,
                guard: &self.guard,
                threads: if self.tree.len() >= WATCH_FROM {
                    PARALLEL_WALK
                } else {
                    1
                },
            },
        )?;
        if self.watcher.as_ref().is_some_and(|w| !w.healthy()) {
            self.watcher = None;
            self.unwatchable = true;
        }
        Ok(found)
    }

    /// Sets one path's state in the tree (`None`: absent), noting it for the shared cache.
    pub(crate) fn set(&mut self, path: String, state: Option<FileState>) {
        self.touched.insert(path.clone());
        self.unpublished = true;
        set(&mut self.tree, path, state);
    }

    pub(crate) fn grew(&mut self, by: u64) {
        if let Some(total) = self.store_bytes.as_mut() {
            *total += by;
        }
    }
}

fn set(tree: &mut Tree, path: String, state: Option<FileState>) {
    match state {
        Some(state) => {
            tree.insert(path, state);
        }
        None => {
            tree.remove(&path);
        }
    }
}

/// The paths whose state after a change is tracked without its content.
pub(crate) fn unstored(changes: &BTreeMap<String, Change>) -> Vec<String> {
    changes
        .iter()
        .filter(|(_, c)| c.after.as_ref().is_some_and(FileState::unstored))
        .map(|(path, _)| path.clone())
        .collect()
}
