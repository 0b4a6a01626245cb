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
use super::rewind::{self, Outcome, TurnChanges};
use super::watch::Watcher;
use super::{Change, FileState, Position, Settings, Tree, scan};

/// The size of a tree (files and folders recorded) from which the watcher is worth its
/// set-up and its teardown.
const WATCH_FROM: usize = 1_000;

/// The journal format's version (in the base line).
const VERSION: u32 = 1;

/// One line of the journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    /// The tree when the session's first checkpoint was taken.
    Base { version: u32, files: Tree },
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
    },
    /// What the call `seq` changed. `recovered`: completed on a later load after a crash.
    End {
        seq: u64,
        changes: BTreeMap<String, Change>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
    },
    /// The code was rewound to before `turn`: the calls recorded so far from that turn on are
    /// listed as undone. `record`: the call that recorded the rewind itself (it and later
    /// calls are not). Rewinds read every call, undone or not: in order they chain.
    Rewound {
        turn: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<u64>,
    },
    /// The checkpoints of turns up to `through` were pruned to keep the store under its cap.
    Pruned { through: u32 },
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
}

/// A loaded journal: the tree as last recorded and the calls.
pub(crate) struct Journal {
    pub workspace: PathBuf,
    path: PathBuf,
    pub blobs: Blobs,
    pub tree: Tree,
    pub calls: Vec<Call>,
    max_file_bytes: u64,
    next_seq: u64,
    /// Turns up to this one can no longer be undone (0: none pruned).
    pub pruned_through: u32,
    /// Whether the base line is written.
    based: bool,
    /// The blob store's size, once measured.
    store_bytes: Option<u64>,
    /// Watches every folder once a whole-tree walk has run with it; `None` before, and for
    /// good where it cannot (then every record walks the tree).
    watcher: Option<Arc<Watcher>>,
    /// Whether the watcher was found unusable; it is not tried again.
    unwatchable: bool,
}

/// The journals' folder.
fn sessions_dir(workspace: &Path, create: bool) -> io::Result<Option<PathBuf>> {
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
            next_seq: 1,
            pruned_through: 0,
            based: false,
            store_bytes: None,
            watcher: None,
            unwatchable: false,
        };
        match std::fs::File::open(&journal.path) {
            Ok(file) => journal.replay(io::BufReader::new(file))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        if let Some(seq) = journal.calls.iter().find(|c| c.pending).map(|c| c.seq) {
            journal.end(seq, true)?;
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

    fn apply(&mut self, line: Line) {
        match line {
            Line::Base { files, .. } => {
                self.tree = files;
                self.based = true;
            }
            Line::Drift { files } => {
                for (path, state) in files {
                    set(&mut self.tree, path, state);
                }
            }
            Line::Begin {
                seq, turn, tool, ..
            } => {
                self.next_seq = self.next_seq.max(seq + 1);
                self.calls.push(Call {
                    turn,
                    seq,
                    tool,
                    changes: BTreeMap::new(),
                    skipped: Vec::new(),
                    undone: false,
                    pending: true,
                });
            }
            Line::End {
                seq,
                changes,
                skipped,
                ..
            } => {
                for (path, change) in &changes {
                    set(&mut self.tree, path.clone(), change.after.clone());
                }
                if let Some(call) = self.calls.iter_mut().find(|c| c.seq == seq) {
                    call.changes = changes;
                    call.skipped = skipped;
                    call.pending = false;
                }
            }
            Line::Rewound { turn, record } => self.mark_undone(turn, record),
            Line::Pruned { through } => {
                self.calls.retain(|c| c.turn > through);
                self.pruned_through = self.pruned_through.max(through);
            }
        }
    }

    pub(crate) fn mark_undone(&mut self, turn: u32, record: Option<u64>) {
        let before = record.unwrap_or(u64::MAX);
        for call in self
            .calls
            .iter_mut()
            .filter(|c| c.turn >= turn && c.seq < before)
        {
            call.undone = true;
        }
    }

    fn append(&mut self, line: &Line) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&self.path)?;
        file.write_all(text.as_bytes())
    }

    /// Brings the recorded tree up to date with the workspace: the first time, the base (every
    /// tracked file read once); then the drift since the last record (only changed files read).
    pub(crate) fn catch_up(&mut self) -> io::Result<()> {
        let found = self.scan()?;
        self.grew(found.grown);
        let files: BTreeMap<String, Option<FileState>> = found
            .changes
            .into_iter()
            .map(|(path, change)| (path, change.after))
            .collect();
        for (path, state) in &files {
            set(&mut self.tree, path.clone(), state.clone());
        }
        if !self.based {
            self.based = true;
            let base = Line::Base {
                version: VERSION,
                files: self.tree.clone(),
            };
            let mut text = serde_json::to_string(&base).map_err(io::Error::other)?;
            text.push('\n');
            return crate::fsutil::write_atomic(&self.path, text.as_bytes(), Some(0o600));
        }
        if files.is_empty() {
            return Ok(());
        }
        self.append(&Line::Drift { files })
    }

    /// Records that a call starts; returns its sequence number.
    pub(crate) fn begin(&mut self, position: &Position) -> io::Result<u64> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.append(&Line::Begin {
            seq,
            turn: position.turn,
            call: position.call.clone(),
            tool: position.tool.clone(),
        })?;
        self.calls.push(Call {
            turn: position.turn,
            seq,
            tool: position.tool.clone(),
            changes: BTreeMap::new(),
            skipped: Vec::new(),
            undone: false,
            pending: true,
        });
        Ok(seq)
    }

    /// Records what call `seq` changed (a scan against the tree recorded before it). Returns
    /// the paths skipped for size.
    pub(crate) fn end(&mut self, seq: u64, recovered: bool) -> io::Result<Vec<String>> {
        let found = self.scan()?;
        self.grew(found.grown);
        for (path, change) in &found.changes {
            set(&mut self.tree, path.clone(), change.after.clone());
        }
        self.append(&Line::End {
            seq,
            changes: found.changes.clone(),
            skipped: found.skipped.clone(),
            recovered,
        })?;
        if let Some(call) = self.calls.iter_mut().find(|c| c.seq == seq) {
            call.changes = found.changes;
            call.skipped = found.skipped.clone();
            call.pending = false;
        }
        Ok(found.skipped)
    }

    /// What changed since the tree was last recorded: in the folders the watcher names once
    /// it watches the whole tree, else (the first time, after an overflow, without inotify)
    /// by walking everything, which also sets the watches up. A tree of fewer than
    /// [`WATCH_FROM`] entries is walked every time instead: the walk costs a millisecond or
    /// two, while closing an inotify instance waits for the kernel (about 20 ms at exit).
    fn scan(&mut self) -> io::Result<scan::Found> {
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
            &self.tree,
            &mut self.blobs,
            self.max_file_bytes,
        )?;
        if self.watcher.as_ref().is_some_and(|w| !w.healthy()) {
            self.watcher = None;
            self.unwatchable = true;
        }
        Ok(found)
    }

    fn grew(&mut self, by: u64) {
        if let Some(total) = self.store_bytes.as_mut() {
            *total += by;
        }
    }

    /// Keeps the blob store under `max_bytes`: while over it, the oldest turn's checkpoints
    /// are dropped (a `pruned` line) and the blobs no journal of the workspace names any
    /// more are deleted. The current tree's blobs always stay.
    pub(crate) fn enforce_cap(&mut self, max_bytes: u64) -> io::Result<()> {
        let total = match self.store_bytes {
            Some(total) => total,
            None => {
                let total = self.blobs.all()?.iter().map(|(_, size)| size).sum();
                self.store_bytes = Some(total);
                total
            }
        };
        if total <= max_bytes {
            return Ok(());
        }
        while self.store_bytes.unwrap_or(0) > max_bytes {
            let Some(oldest) = self
                .calls
                .iter()
                .filter(|c| !c.pending)
                .map(|c| c.turn)
                .min()
            else {
                break;
            };
            self.append(&Line::Pruned { through: oldest })?;
            self.apply(Line::Pruned { through: oldest });
            self.collect_garbage()?;
        }
        Ok(())
    }

    /// Deletes every blob no journal of the workspace names; measures the store again.
    fn collect_garbage(&mut self) -> io::Result<()> {
        let mut live: HashSet<String> = HashSet::new();
        live.extend(self.tree.values().map(|s| s.hash.clone()));
        for call in &self.calls {
            for change in call.changes.values() {
                live.extend(
                    change
                        .before
                        .iter()
                        .chain(&change.after)
                        .map(|s| s.hash.clone()),
                );
            }
        }
        if let Some(dir) = sessions_dir(&self.workspace, false)? {
            for entry in std::fs::read_dir(dir)? {
                let path = entry?.path();
                if path != self.path {
                    named_hashes(&path, &mut live)?;
                }
            }
        }
        let mut total = 0;
        for (hash, size) in self.blobs.all()? {
            if live.contains(&hash) {
                total += size;
            } else {
                self.blobs.remove(&hash)?;
            }
        }
        self.store_bytes = Some(total);
        Ok(())
    }

    /// The turns that changed files, newest first.
    pub(crate) fn list(&self) -> Vec<TurnChanges> {
        rewind::list(&self.calls)
    }

    /// Restores the code to before `turn` (see `rewind::restore`). The tree is brought up to
    /// date first, so every file's current content is in the store; then the rewind is
    /// recorded as a call of its own (turn `how.as_turn`), so it can be undone like any other,
    /// and the `rewound` line marks what it undid.
    pub(crate) fn rewind(&mut self, turn: u32, how: &super::How) -> io::Result<Outcome> {
        if !self.based {
            return Ok(Outcome::default());
        }
        if turn <= self.pruned_through {
            return Ok(Outcome {
                pruned: true,
                ..Outcome::default()
            });
        }
        self.catch_up()?;
        let record = if how.dry_run {
            None
        } else {
            let position = Position {
                turn: how.as_turn,
                call: format!("rewind-to-{turn}"),
                tool: super::REWIND_TOOL.to_string(),
            };
            Some(self.begin(&position)?)
        };
        let outcome = rewind::restore(self, turn, how)?;
        if let Some(seq) = record {
            self.end(seq, false)?;
            // With conflicts left, the turn is not marked undone (the listing's word): some
            // of it still stands.
            if outcome.conflicts.len() > outcome.overwritten.len() {
                return Ok(outcome);
            }
            self.append(&Line::Rewound {
                turn,
                record: Some(seq),
            })?;
            self.mark_undone(turn, Some(seq));
        }
        Ok(outcome)
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

/// Adds every blob name (`"h"` field) another session's journal holds.
fn named_hashes(path: &Path, live: &mut HashSet<String>) -> io::Result<()> {
    fn walk(value: &serde_json::Value, live: &mut HashSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    match value {
                        serde_json::Value::String(s) if key == "h" => {
                            live.insert(s.clone());
                        }
                        other => walk(other, live),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, live)),
            _ => {}
        }
    }
    let file = std::fs::File::open(path)?;
    for line in io::BufReader::new(file).lines() {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&line?) {
            walk(&value, live);
        }
    }
    Ok(())
}
