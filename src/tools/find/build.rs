//! Keeps the `find` index current, shared by every call of one tool instance. A query loads
//! the stored index once, then brings it up to date from file metadata: vanished files are
//! dropped, changed and new ones re-read, and the statistics move with each file (never
//! recounted). Reading that does not fit a short inline budget (time or file count) goes on in a
//! background thread;
//! queries meanwhile answer from what is indexed so far and say so.
//!
//! Saving replaces `.minicode/index/find.idx` atomically (temp file + rename), so a concurrent
//! minicode process in the same workspace reads the old or the new index, never a mix; the
//! codec's checksum catches anything else, and an unreadable index is rebuilt. Loading opens
//! the file as a repository-supplied one: no link followed, no blocking open, size-bounded.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::chunk::Piece;
use super::codec;
use super::index::{self, Stamp, Stored};
use super::vocab::Vocab;
use crate::fsutil;

/// The index folder under `.minicode/` and its file.
const DIR: &str = "index";
const FILE: &str = "find.idx";
/// The first version's file, removed when a new index is saved.
const OLD_FILE: &str = "find.json";
/// The largest stored index read: the index is under a quarter of the text it covers, so this
/// is ~2 GB of indexed source, far beyond what the tool is for; a larger file is not ours.
const MAX_INDEX_BYTES: u64 = 512 * 1024 * 1024;
/// How long, and how many changed files, a query reads itself before handing the rest to the
/// background.
const INLINE_BUDGET: Duration = Duration::from_millis(500);
const INLINE_FILES: usize = 256;
/// How often the background build saves its progress, so a short-lived process still leaves
/// an index the next one continues from.
const SAVE_EVERY: Duration = Duration::from_secs(5);
/// An index of more chunks than this is saved in the background after a change of at most
/// [`BACKGROUND_SAVE_FILES`] files, so re-indexing one edit costs the walk and the read, not the
/// rewrite of the whole file.
const BACKGROUND_SAVE_CHUNKS: u64 = 20_000;
const BACKGROUND_SAVE_FILES: usize = 8;
/// How long a deferred save waits for the edits to stop.
const SAVE_QUIET: Duration = Duration::from_secs(2);
/// Files the background thread reads between two takes of the lock.
const BATCH: usize = 256;

/// The index of one tool instance.
#[derive(Default)]
pub(crate) struct Index {
    shared: Arc<RwLock<State>>,
}

#[derive(Default)]
struct State {
    workspace: Option<PathBuf>,
    stored: Stored,
    loaded: bool,
    /// A background build under way: files read so far and in all.
    building: Option<(usize, usize)>,
    /// The stored index was rejected at load; reported by the next query.
    rebuilt: bool,
    /// Why the last save failed, reported by the next query.
    unsaved: Option<String>,
    /// Changes a deferred save must cover, the last one's time, and whether a saver runs.
    changes: u64,
    last_change: Option<Instant>,
    saver: bool,
}

/// What bringing the index up to date did, for the result's closing notes.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// A background build: files read so far and in all.
    pub(crate) building: Option<(usize, usize)>,
    pub(crate) reread: usize,
    pub(crate) dropped: usize,
    pub(crate) too_big: usize,
    pub(crate) withheld: usize,
    pub(crate) rebuilt: bool,
    pub(crate) unsaved: Option<String>,
    pub(crate) skipped_notes: Vec<String>,
}

fn index_path(workspace: &Path) -> Result<PathBuf, String> {
    fsutil::private_dir(workspace, DIR)
        .map(|d| d.join(FILE))
        .map_err(|e| format!("the index folder is unusable: {e}"))
}

/// The stored index of `workspace`, empty when there is none, and whether one was rejected.
/// A cloned repository can plant the file: it is opened without following a link and without
/// blocking, and anything but a regular file under [`MAX_INDEX_BYTES`] (a link to `/dev/zero`,
/// a FIFO, a link out of the workspace) is rejected, so the next save replaces it.
fn load(workspace: &Path) -> (Stored, bool) {
    let Ok(Some(dir)) = fsutil::existing_private_dir(workspace, DIR) else {
        return (Stored::default(), false);
    };
    match read_stored(&dir) {
        Ok(None) => (Stored::default(), false),
        Ok(Some(bytes)) => match codec::decode(&bytes) {
            Ok(stored) => (stored, false),
            Err(_) => (Stored::default(), true),
        },
        Err(e) => {
            tracing::warn!(error = %e, "the stored find index is not a plain file; rebuilding it");
            (Stored::default(), true)
        }
    }
}

/// The bytes of `dir/find.idx` (`dir` is the checked index folder), `None` when it is absent.
fn read_stored(dir: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let root = fsutil::beneath::Root::open(dir)?;
    let Some((file, meta)) = root.open_read(Path::new(FILE))? else {
        return Ok(None);
    };
    if meta.len() > MAX_INDEX_BYTES {
        return Err(std::io::Error::other(format!(
            "it is {} bytes, over the {MAX_INDEX_BYTES} a find index may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // Bounded even if the file grows while it is read.
    file.take(MAX_INDEX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INDEX_BYTES {
        return Err(std::io::Error::other(
            "it grew past the size a find index may have",
        ));
    }
    Ok(Some(bytes))
}

/// Writes the index (encoded under the read lock, so queries go on meanwhile; written outside
/// it); why not, on failure.
fn save(shared: &RwLock<State>, workspace: &Path) -> Option<String> {
    let bytes = codec::encode(&crate::sync::read(shared).stored);
    let saved = index_path(workspace).and_then(|p| {
        fsutil::write_atomic(&p, &bytes, Some(0o600)).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(p.with_file_name(OLD_FILE));
        Ok(())
    });
    saved.err()
}

impl Index {
    /// Runs `f` on the index as it is now.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&Stored) -> R) -> R {
        f(&crate::sync::read(&self.shared).stored)
    }

    /// Brings the index of `workspace` up to date as far as a query should wait for.
    pub(crate) fn refresh(
        &self,
        workspace: &Path,
        rules: Option<&crate::permissions::Rules>,
        cancel: &CancellationToken,
    ) -> Result<Report, String> {
        let mut report = Report::default();
        {
            let mut state = crate::sync::write(&self.shared);
            if state.workspace.as_deref() != Some(workspace) {
                *state = State {
                    workspace: Some(workspace.to_path_buf()),
                    ..State::default()
                };
            }
            if !state.loaded {
                let (stored, rejected) = load(workspace);
                state.stored = stored;
                state.rebuilt = rejected;
                state.loaded = true;
            }
            report.rebuilt = std::mem::take(&mut state.rebuilt);
            report.unsaved = state.unsaved.take();
            if state.building.is_some() {
                report.building = state.building;
                return Ok(report);
            }
        }
        let found = index::walk_files(workspace, rules)?;
        report.too_big = found.too_big;
        report.withheld = found.withheld;
        report.skipped_notes = found.skipped_notes;
        let todo = {
            let mut state = crate::sync::write(&self.shared);
            let gone: Vec<String> = state
                .stored
                .files
                .keys()
                .filter(|p| !found.files.contains_key(*p))
                .cloned()
                .collect();
            for path in &gone {
                state.stored.remove(path);
            }
            report.dropped = gone.len();
            let stored = &state.stored;
            found
                .files
                .into_iter()
                .filter(|(rel, (_, stamp))| stored.files.get(rel).is_none_or(|f| f.stamp != *stamp))
                .map(|(rel, (abs, stamp))| (rel, abs, stamp))
                .collect::<Vec<_>>()
        };
        let began = Instant::now();
        let mut rest = todo.into_iter();
        for (rel, abs, stamp) in rest.by_ref() {
            if cancel.is_cancelled() {
                return Err("interrupted by the user".to_string());
            }
            read_into(&self.shared, &rel, &abs, stamp);
            report.reread += 1;
            if began.elapsed() > INLINE_BUDGET || report.reread >= INLINE_FILES {
                break;
            }
        }
        let rest: Vec<(String, PathBuf, Stamp)> = rest.collect();
        if !rest.is_empty() {
            let total = report.reread + rest.len();
            crate::sync::write(&self.shared).building = Some((report.reread, total));
            report.building = Some((report.reread, total));
            let shared = Arc::clone(&self.shared);
            let workspace = workspace.to_path_buf();
            std::thread::Builder::new()
                .name("find-index".to_string())
                .spawn(move || background(&shared, &workspace, rest))
                .map_err(|e| format!("cannot start the index build: {e}"))?;
        } else if report.reread + report.dropped > 0 || report.rebuilt {
            let large =
                crate::sync::write(&self.shared).stored.chunk_count() > BACKGROUND_SAVE_CHUNKS;
            if large && report.reread + report.dropped <= BACKGROUND_SAVE_FILES {
                // A small change to a large index: the query need not wait for the rewrite,
                // which waits for a quiet moment; a failure is reported by the next query.
                save_later(&self.shared, workspace);
            } else {
                report.unsaved = save(&self.shared, workspace);
            }
        }
        Ok(report)
    }
}

/// Saves the index in a background thread once no change has come for [`SAVE_QUIET`], so a
/// run of edits is written once and a query that follows an edit closely does not wait for
/// the rewrite (which holds the read lock a change needs). One saver at a time; changes made
/// while it writes make it write again.
fn save_later(shared: &Arc<RwLock<State>>, workspace: &Path) {
    {
        let mut state = crate::sync::write(shared);
        state.changes += 1;
        state.last_change = Some(Instant::now());
        if state.saver {
            return;
        }
        state.saver = true;
    }
    let mine = Arc::clone(shared);
    let workspace = workspace.to_path_buf();
    let started = std::thread::Builder::new()
        .name("find-save".to_string())
        .spawn(move || {
            loop {
                let (last, changes) = {
                    let state = crate::sync::read(&mine);
                    (state.last_change, state.changes)
                };
                let quiet = last.map_or(Duration::ZERO, |t| t.elapsed());
                if quiet < SAVE_QUIET {
                    std::thread::sleep(SAVE_QUIET - quiet);
                    continue;
                }
                let unsaved = save(&mine, &workspace);
                let mut state = crate::sync::write(&mine);
                state.unsaved = unsaved;
                if state.changes == changes {
                    state.saver = false;
                    return;
                }
            }
        });
    if started.is_err() {
        crate::sync::write(shared).saver = false;
    }
}

/// Reads one file and puts its chunks in the index (a binary or unreadable file is kept with no
/// chunks, so it is not read again until it changes).
fn read_into(shared: &RwLock<State>, rel: &str, abs: &Path, stamp: Stamp) {
    let mut vocab = Vocab::default();
    let pieces = index::read_pieces(abs, rel, &mut vocab).unwrap_or_default();
    crate::sync::write(shared)
        .stored
        .insert_pieces(rel, stamp, pieces, &vocab, &mut Vec::new());
}

/// The background build: reads `files` into the index in batches, saving now and then and at
/// the end. The next batch is read while one goes into the index, so the readers keep the
/// cores busy while the lock is held. It runs to the end even when the tool that started it
/// is dropped, so what it read is saved for the next session; it dies with the process.
fn background(shared: &RwLock<State>, workspace: &Path, files: Vec<(String, PathBuf, Stamp)>) {
    let mut saved = Instant::now();
    std::thread::scope(|scope| {
        let mut batches = files.chunks(BATCH);
        let mut reading = batches
            .next()
            .map(|b| (b.len(), scope.spawn(move || read_parallel(b))));
        while let Some((len, handle)) = reading.take() {
            let read = handle.join().unwrap_or_default();
            reading = batches
                .next()
                .map(|b| (b.len(), scope.spawn(move || read_parallel(b))));
            insert_batch(shared, read, len);
            if saved.elapsed() > SAVE_EVERY {
                save(shared, workspace);
                saved = Instant::now();
            }
        }
    });
    let unsaved = save(shared, workspace);
    let mut state = crate::sync::write(shared);
    state.building = None;
    state.unsaved = unsaved;
}

/// Puts one batch of `len` files, as the readers cut them, into the index.
fn insert_batch(shared: &RwLock<State>, read: Vec<Part<'_>>, len: usize) {
    let mut state = crate::sync::write(shared);
    let mut vocabs = Vec::with_capacity(read.len());
    for (vocab, files) in read {
        let mut map = Vec::new();
        for (rel, stamp, pieces) in files {
            state
                .stored
                .insert_pieces(rel, stamp, pieces, &vocab, &mut map);
        }
        vocabs.push(vocab);
    }
    if let Some((done, _)) = &mut state.building {
        *done += len;
    }
    drop(state);
    // Freed after the lock is let go.
    drop(vocabs);
}

/// What one reader cut: its vocabulary, and its files' chunks in that vocabulary's ids.
type Part<'f> = (Vocab, Vec<(&'f String, Stamp, Vec<Piece>)>);

/// Reads and chunks `files` on every core (the lock is not held), in their order: one part
/// per reader, each with its own vocabulary.
fn read_parallel(files: &[(String, PathBuf, Stamp)]) -> Vec<Part<'_>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let part = files.len().div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(part)
            .map(|part| {
                scope.spawn(move || {
                    let mut vocab = Vocab::default();
                    let read = part
                        .iter()
                        .map(|(rel, abs, stamp)| {
                            let pieces =
                                index::read_pieces(abs, rel, &mut vocab).unwrap_or_default();
                            (rel, *stamp, pieces)
                        })
                        .collect::<Vec<_>>();
                    (vocab, read)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}
