//! The store's upkeep and the rewind as seen from a journal: keeping `.minicode/checkpoints/`
//! under `max_bytes` (everything on disk counted: blobs by their blocks, journals, leftovers
//! of interrupted writes), collecting blobs nothing names (after pruning, after a failed
//! record), the listing, and the rewind recorded as a call of its own.

use std::collections::HashSet;
use std::io::{self, BufRead};
use std::path::Path;

use super::blobs::on_disk;
use super::journal::{Journal, Line, sessions_dir};
use super::rewind::{self, Outcome, TurnChanges};
use super::{How, Position};

impl Journal {
    /// Everything the store takes on disk, as `du` counts it: every file and folder under
    /// `.minicode/checkpoints/` by its blocks (blobs, packs, journals, the shared cache), after
    /// the leftovers of interrupted writes are collected.
    fn measure(&self) -> io::Result<u64> {
        self.blobs.collect_leftovers()?;
        super::packs::all(&self.workspace)?;
        super::shared::files(&self.workspace)?;
        let root = self
            .workspace
            .join(crate::fsutil::DATA_DIR)
            .join(super::SUBDIR);
        disk_usage(&root)
    }

    /// Keeps the store under `max_bytes`: while over it, the oldest turn's checkpoints are
    /// dropped (a `pruned` line) and the blobs no journal of the workspace names any more are
    /// deleted. The current tree's blobs always stay.
    pub(crate) fn enforce_cap(&mut self, max_bytes: u64) -> io::Result<()> {
        let total = match self.store_bytes {
            Some(total) => total,
            None => {
                let total = self.measure()?;
                self.store_bytes = Some(total);
                total
            }
        };
        if total <= max_bytes / 10 * 9 {
            return Ok(());
        }
        // Near or over the cap: the estimate (blobs stored, lines appended) is replaced by
        // what the store takes on disk (blocks, the shared cache, duplicates).
        self.store_bytes = Some(self.measure()?);
        while self.store_bytes.unwrap_or(0) > max_bytes {
            // The oldest call in the journal's order, and every call of its turn.
            let Some(oldest) = self
                .calls
                .iter()
                .filter(|c| !c.pending)
                .min_by_key(|c| c.seq)
            else {
                break;
            };
            let through = oldest.turn;
            let seq = self
                .calls
                .iter()
                .filter(|c| c.turn == through && !c.pending)
                .map(|c| c.seq)
                .max();
            let line = Line::Pruned { through, seq };
            self.append(&line)?;
            self.apply(line);
            self.collect_garbage()?;
        }
        Ok(())
    }

    /// The blob names the in-memory journal still needs.
    fn live(&self) -> HashSet<String> {
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
        live
    }

    /// Adds the blob names the other journals of the workspace hold (or, with `own`, this
    /// session's journal file too).
    fn named_elsewhere(&self, own: bool, live: &mut HashSet<String>) -> io::Result<()> {
        let Some(dir) = sessions_dir(&self.workspace, false)? else {
            return Ok(());
        };
        let mut journals =
            super::attribution::journals(&self.workspace, &dir, &self.path, &self.guard)?;
        if own && self.path.is_file() {
            journals.push(self.path.clone());
        }
        for path in journals {
            named_hashes(&path, live)?;
        }
        Ok(())
    }

    /// Deletes every blob no journal of the workspace names (nor the shared cache: its
    /// snapshot and delta), and every snapshot neither a journal nor the cache names; measures
    /// the store again.
    pub(crate) fn collect_garbage(&mut self) -> io::Result<()> {
        let mut live = self.live();
        self.named_elsewhere(false, &mut live)?;
        let (snapshots, others) = self.snapshots()?;
        // Another journal's tree starts from its snapshots; this one's is `live` already (what
        // its snapshots held that the session changed since is not needed any more).
        for hash in &others {
            if let Ok(tree) = super::shared::load_base(&self.workspace, hash) {
                live.extend(tree.into_values().map(|s| s.hash));
            }
        }
        if let Some(cache) = super::shared::load(&self.workspace) {
            live.extend(cache.tree.into_values().map(|s| s.hash));
        }
        for (hash, _) in self.blobs.all()? {
            if !live.contains(&hash) {
                self.blobs.remove(&hash)?;
            }
        }
        super::packs::collect(&mut self.blobs, &live)?;
        super::shared::collect(&self.workspace, &snapshots)?;
        self.store_bytes = Some(self.measure()?);
        Ok(())
    }

    /// The snapshots still needed (this session's, the shared cache's and every journal's),
    /// and those the other journals name.
    fn snapshots(&self) -> io::Result<(HashSet<String>, HashSet<String>)> {
        let mut keep: HashSet<String> = self.shared.iter().cloned().collect();
        let mut others = HashSet::new();
        if let Some(pointer) = super::shared::pointer(&self.workspace) {
            keep.insert(pointer.base);
        }
        if let Some(dir) = sessions_dir(&self.workspace, false)? {
            for entry in std::fs::read_dir(dir)? {
                let path = entry?.path();
                if path.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let refs = super::shared::journal_refs(&path).unwrap_or_default();
                if path != self.path {
                    others.extend(refs.iter().cloned());
                }
                keep.extend(refs);
            }
        }
        Ok((keep, others))
    }

    /// After a record failed: removes the blobs it created that no journal on disk names
    /// (the in-memory state is about to be dropped and read again).
    pub(crate) fn discard_fresh(&mut self) -> io::Result<()> {
        self.blobs.drop_batch();
        let (fresh, fresh_packs) = self.blobs.take_fresh();
        if fresh.is_empty() {
            return Ok(());
        }
        let mut live = HashSet::new();
        self.named_elsewhere(true, &mut live)?;
        for hash in fresh.iter().filter(|h| !live.contains(*h)) {
            self.blobs.remove(hash)?;
        }
        // A pack of the failed record is removed unless a journal names one of its blobs.
        for pack in fresh_packs {
            let entries = super::packs::entries(&pack).unwrap_or_default();
            if !entries.iter().any(|(hash, _, _)| live.contains(hash)) {
                let _ = std::fs::remove_file(&pack);
            }
        }
        self.blobs.forget_index();
        Ok(())
    }

    /// The turns that changed files (or ran unrecorded), newest first.
    pub(crate) fn list(&self) -> Vec<TurnChanges> {
        rewind::list(&self.calls)
    }

    /// Restores the code to before `turn` (see `rewind::restore`). The tree is brought up to
    /// date first, so every file's current content is in the store; then the rewind is
    /// recorded as a call of its own, numbered apart from the user turns (the next rewind
    /// number), so it can be undone alone, and the `rewound` line marks what it undid.
    pub(crate) fn rewind(&mut self, turn: u32, how: &How) -> io::Result<Outcome> {
        if !self.based {
            return Ok(self.nothing_recorded(turn));
        }
        let cut = self.cut(turn);
        let pruned = if super::is_rewind_turn(turn) {
            cut.is_none() && turn <= self.rewinds
        } else {
            turn <= self.pruned_through
        };
        if pruned {
            return Ok(Outcome {
                pruned: true,
                ..Outcome::default()
            });
        }
        let Some(from) = cut else {
            return Ok(self.nothing_recorded(turn));
        };
        self.catch_up()?;
        let record = if how.dry_run {
            None
        } else {
            let number = self.rewinds + 1;
            let position = Position {
                turn: number,
                call: format!("rewind-to-{turn}"),
                tool: super::REWIND_TOOL.to_string(),
            };
            let seq = self.begin(&position)?;
            self.rewinds = number;
            Some((seq, number))
        };
        let mut outcome = rewind::restore(self, from, how)?;
        if let Some((seq, number)) = record {
            self.end(seq, false, None)?;
            outcome.record = Some(number);
            // With conflicts left, the turn is not marked undone (the listing's word): some
            // of it still stands.
            if outcome.conflicts.len() + outcome.uncertain.len() > outcome.overwritten.len() {
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

    /// The outcome of a rewind to a turn with no recorded call from it on: nothing restored,
    /// the calls that ran unrecorded named.
    fn nothing_recorded(&self, turn: u32) -> Outcome {
        Outcome {
            nothing_recorded: true,
            unrecorded: self
                .calls
                .iter()
                .filter(|c| c.unrecorded && c.turn >= turn && !super::is_rewind_turn(c.turn))
                .map(|c| c.tool.clone())
                .collect(),
            ..Outcome::default()
        }
    }
}

/// The bytes `path` and, for a folder, everything under it take on disk (links not followed).
fn disk_usage(path: &Path) -> io::Result<u64> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut total = on_disk(&meta);
    if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for entry in entries.flatten() {
            total += disk_usage(&entry.path())?;
        }
    }
    Ok(total)
}

/// Adds every blob name (`"h"` field) a journal holds.
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
