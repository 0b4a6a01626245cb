//! What the daemon keeps on disk per session, under `<workspace>/.minicode/events/<session>/`:
//! the event log (the exact lines subscribers received, in rotating JSONL segments named by
//! their first sequence) and the journal of tool calls in flight. It owns reading them back
//! after a restart (the last sequence, the run left open, the calls that had started) and
//! must not interpret events beyond that.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::wire::Line;
use crate::protocol::{Journal, RunMarker};
use crate::sync::lock;

/// A segment is closed once it holds this many bytes (see [`segment_bytes`]).
const SEGMENT_BYTES: u64 = 8 * 1024 * 1024;
/// Segments kept per session (the oldest are deleted): 128 MiB of events at most.
pub(crate) const KEEP_SEGMENTS: usize = 16;
/// Tests only: segments close at this many bytes instead of [`SEGMENT_BYTES`] (and memory
/// keeps as few recent lines), so a test can rotate the log past a subscriber without
/// writing 128 MiB of events.
pub(crate) const ENV_SEGMENT_BYTES: &str = "MINICODE_TEST_EVENT_SEGMENT_BYTES";
const JOURNAL: &str = "calls.jsonl";
/// The highest sequence known to be announced, kept beside the log (see [`EventLog::open`]).
const HIGH_WATER: &str = "high_water";
/// A stored high-water mark above this is not the daemon's (numbering would overflow).
const MAX_HIGH_WATER: u64 = u64::MAX / 4;

/// The size at which a segment closes: [`SEGMENT_BYTES`], or less when [`ENV_SEGMENT_BYTES`]
/// was set when the daemon started (read once).
pub(crate) fn segment_bytes() -> u64 {
    static BYTES: OnceLock<u64> = OnceLock::new();
    *BYTES.get_or_init(|| {
        std::env::var(ENV_SEGMENT_BYTES)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|n| (1..SEGMENT_BYTES).contains(n))
            .unwrap_or(SEGMENT_BYTES)
    })
}

/// The folder of a session's event log and journal (created 0700, confined to the workspace).
pub(crate) fn session_dir(workspace: &Path, session_id: &str) -> io::Result<PathBuf> {
    let plain = !session_id.is_empty()
        && session_id.len() <= 64
        && session_id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !plain {
        return Err(io::Error::other(format!(
            "invalid session id {session_id:?}"
        )));
    }
    crate::fsutil::private_dir(workspace, &format!("events/{session_id}"))
}

/// The most the daemon reads of one stored file: a segment closes at [`SEGMENT_BYTES`], but
/// one batch may carry it past that; anything far larger was not written by the daemon.
const MAX_STORED_BYTES: u64 = 8 * SEGMENT_BYTES;

/// Opens (creating it 0600) a file of the session's folder to write. The folder is inside the
/// repository, so anything may have been planted there: a link is not followed, the open
/// never blocks (a FIFO), and only a regular file is kept.
fn open_private(path: &Path, append: bool) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .append(append)
        .write(true)
        .read(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| stored_error(path, e.to_string()))?;
    if !file.metadata()?.is_file() {
        return Err(stored_error(path, "it is not a regular file".into()));
    }
    Ok(file)
}

/// Opens a stored file of the session's folder `dir` to read, with the confined opener: it
/// must be a regular file whose real path is inside `dir`, opened without blocking, and not
/// larger than [`MAX_STORED_BYTES`] (a link to `/dev/zero` or a FIFO is refused, never read).
fn open_stored(dir: &Path, path: &Path) -> io::Result<impl Read> {
    let (file, meta) =
        crate::fsutil::open_confined(dir, path).map_err(|e| stored_error(path, e.to_string()))?;
    if meta.len() > MAX_STORED_BYTES {
        return Err(stored_error(
            path,
            format!("it is larger than {MAX_STORED_BYTES} bytes"),
        ));
    }
    Ok(file.take(MAX_STORED_BYTES))
}

fn stored_error(path: &Path, why: String) -> io::Error {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    io::Error::other(format!("the stored file {name} cannot be used: {why}"))
}

/// One session's event log, appended by one writer (the session's state, under its lock).
pub(crate) struct EventLog {
    dir: PathBuf,
    /// First sequence and path of each segment, oldest first; the last one is written.
    segments: Vec<(u64, PathBuf)>,
    file: File,
    size: u64,
    /// The high-water mark's file: rewritten, synced, at every synced append and at close.
    high_water: File,
}

/// An append that failed. Whatever part of it reached the file was cut off again when
/// `rolled_back`: the log ends where it did before, so its sequences may be used again.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub(crate) struct AppendError {
    #[source]
    pub(crate) source: io::Error,
    pub(crate) rolled_back: bool,
}

/// What a log read back says about the run a crash may have left open.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct OpenRun {
    pub(crate) run_id: String,
    pub(crate) cancelled: bool,
}

/// The fields of a stored line the daemon reads back; `E` is what it needs of the event.
#[derive(Deserialize)]
struct Stored<E> {
    params: StoredParams<E>,
}

#[derive(Deserialize)]
struct StoredParams<E> {
    sequence: u64,
    #[serde(default = "Option::default")]
    event: Option<E>,
}

/// A logged event read back at start: the daemon's own run markers, typed; the core's events
/// (whose `type` is none of theirs) passed over.
#[derive(Deserialize)]
#[serde(untagged)]
enum Logged {
    Marker(RunMarker),
    Core(IgnoredAny),
}

fn sequence_of(line: &str) -> Option<u64> {
    serde_json::from_str::<Stored<IgnoredAny>>(line)
        .ok()
        .map(|s| s.params.sequence)
}

impl EventLog {
    /// Opens (or starts) the log in `dir`. Returns it, the last sequence written (0 when
    /// empty) and the run it leaves open, if any. A last line a crash cut short is removed.
    pub(crate) fn open(dir: &Path) -> io::Result<(EventLog, u64, Option<OpenRun>)> {
        let mut segments: Vec<(u64, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let first = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".jsonl"))
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(first) = first {
                segments.push((first, path));
            }
        }
        segments.sort();
        let mut last = 0;
        let mut open_run: Option<OpenRun> = None;
        for (_, path) in &segments {
            let mut text = String::new();
            open_stored(dir, path)?.read_to_string(&mut text)?;
            let complete = text.rfind('\n').map_or(0, |i| i + 1);
            if complete < text.len() {
                // The daemon died mid-write: the cut line was never announced.
                let file = open_private(path, false)?;
                file.set_len(complete as u64)?;
                text.truncate(complete);
            }
            for line in text.lines() {
                let Ok(stored) = serde_json::from_str::<Stored<Logged>>(line) else {
                    continue;
                };
                last = stored.params.sequence;
                // Only the daemon's own run markers matter here.
                match stored.params.event {
                    Some(Logged::Marker(
                        RunMarker::RunStarted { run_id, .. } | RunMarker::RunResumed { run_id },
                    )) => {
                        open_run = Some(OpenRun {
                            run_id,
                            cancelled: false,
                        });
                    }
                    Some(Logged::Marker(RunMarker::CancelRequested { .. })) => {
                        if let Some(run) = open_run.as_mut() {
                            run.cancelled = true;
                        }
                    }
                    Some(Logged::Marker(RunMarker::RunEnded { .. })) => open_run = None,
                    Some(Logged::Core(_)) | None => {}
                }
            }
        }
        // Sequences never go back: a log that lost its tail (a crash of the machine, a file
        // removed) continues above the last mark written beside it.
        let high_water_path = dir.join(HIGH_WATER);
        if std::fs::symlink_metadata(&high_water_path).is_ok() {
            let mut text = String::new();
            open_stored(dir, &high_water_path)?.read_to_string(&mut text)?;
            if let Ok(mark) = text.trim().parse::<u64>()
                && mark <= MAX_HIGH_WATER
            {
                last = last.max(mark);
            }
        }
        let high_water = open_private(&high_water_path, false)?;
        let (path, size) = match segments.last() {
            Some((_, path)) => (path.clone(), std::fs::symlink_metadata(path)?.len()),
            None => {
                let path = dir.join(segment_name(last + 1));
                segments.push((last + 1, path.clone()));
                (path, 0)
            }
        };
        let file = open_private(&path, true)?;
        let log = EventLog {
            dir: dir.to_path_buf(),
            segments,
            file,
            size,
            high_water,
        };
        Ok((log, last, open_run))
    }

    /// Appends lines (each ending in a newline) with sequences `first..=last`; with `sync`
    /// they, and the high-water mark `last`, are on disk, not only in the page cache, before
    /// this returns. On failure (a full disk) the part written is cut off again.
    pub(crate) fn append(
        &mut self,
        bytes: &[u8],
        (first, last): (u64, u64),
        sync: bool,
    ) -> Result<(), AppendError> {
        if self.size >= segment_bytes() {
            self.rotate(first).map_err(|source| AppendError {
                source,
                rolled_back: true,
            })?;
        }
        let before = self.size;
        let written = self.file.write_all(bytes).and_then(|()| {
            if sync {
                self.file.sync_data()?;
            }
            Ok(())
        });
        if let Err(source) = written {
            let rolled_back = self.file.set_len(before).is_ok();
            return Err(AppendError {
                source,
                rolled_back,
            });
        }
        self.size += bytes.len() as u64;
        if sync {
            // The lines are stored already: a mark that cannot be written only weakens the
            // guarantee after a crash of the machine, so it is logged, not fatal.
            if let Err(e) = self.mark(last) {
                tracing::warn!(error = %e, "could not write the event log's high-water mark");
            }
        }
        Ok(())
    }

    /// Writes the high-water mark `last`, synced.
    pub(crate) fn mark(&mut self, last: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.high_water
            .write_all_at(format!("{last:020}\n").as_bytes(), 0)?;
        self.high_water.sync_data()
    }

    fn rotate(&mut self, first: u64) -> io::Result<()> {
        let path = self.dir.join(segment_name(first));
        self.file = open_private(&path, true)?;
        self.size = 0;
        self.segments.push((first, path));
        while self.segments.len() > KEEP_SEGMENTS {
            let (_, old) = self.segments.remove(0);
            let _ = std::fs::remove_file(old);
        }
        Ok(())
    }

    /// The oldest sequence still on disk.
    pub(crate) fn first_sequence(&self) -> u64 {
        self.segments.first().map_or(1, |(first, _)| *first)
    }

    /// The segments' paths, oldest first, for a reader that works without the lock.
    pub(crate) fn segments(&self) -> Vec<(u64, PathBuf)> {
        self.segments.clone()
    }
}

fn segment_name(first: u64) -> String {
    format!("{first:020}.jsonl")
}

/// The stored lines with a sequence in `(after, upto]`, in order, read from `segments`.
pub(crate) fn read_range(
    segments: &[(u64, PathBuf)],
    after: u64,
    upto: u64,
) -> io::Result<Vec<(u64, Line)>> {
    let mut lines = Vec::new();
    for (index, (first, path)) in segments.iter().enumerate() {
        let next_first = segments.get(index + 1).map(|(f, _)| *f);
        if next_first.is_some_and(|next| next <= after + 1) || *first > upto {
            continue;
        }
        let dir = path.parent().unwrap_or(Path::new("/"));
        let reader = BufReader::new(open_stored(dir, path)?);
        for line in reader.lines() {
            let line = line?;
            let Some(sequence) = sequence_of(&line) else {
                continue;
            };
            if sequence <= after {
                continue;
            }
            if sequence > upto {
                return Ok(lines);
            }
            let mut line = line;
            line.push('\n');
            lines.push((sequence, Line::from(line)));
        }
    }
    Ok(lines)
}

/// The journal of tool calls in flight: `{"started":id}` before a call's effect (on disk
/// before it starts), `{"finished":id}` once its result is saved. Bound to its file once the
/// session's id is known; emptied when a run ends.
#[derive(Default)]
pub(crate) struct CallJournal {
    file: OnceLock<Mutex<File>>,
}

impl CallJournal {
    /// Opens the journal in the session's folder and returns the calls it says had started
    /// and not finished (a previous daemon's, after a crash).
    pub(crate) fn bind(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut file = open_private(&dir.join(JOURNAL), true)?;
        let mut text = String::new();
        file.seek(SeekFrom::Start(0))?;
        (&mut file)
            .take(MAX_STORED_BYTES)
            .read_to_string(&mut text)?;
        let mut started: Vec<String> = Vec::new();
        for line in text.lines() {
            #[derive(Deserialize)]
            struct Entry {
                started: Option<String>,
                finished: Option<String>,
            }
            let Ok(entry) = serde_json::from_str::<Entry>(line) else {
                continue;
            };
            if let Some(id) = entry.started {
                started.push(id);
            }
            if let Some(id) = entry.finished {
                started.retain(|s| *s != id);
            }
        }
        let _ = self.file.set(Mutex::new(file));
        Ok(started)
    }

    fn write(&self, value: serde_json::Value, sync: bool) -> io::Result<()> {
        let file = self
            .file
            .get()
            .ok_or_else(|| io::Error::other("the call journal is not open"))?;
        let mut file = lock(file);
        let mut line = value.to_string();
        line.push('\n');
        file.write_all(line.as_bytes())?;
        if sync {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Forgets every entry (a run ended: nothing is in flight).
    pub(super) fn clear(&self) {
        if let Some(file) = self.file.get() {
            let _ = lock(file).set_len(0);
        }
    }
}

impl Journal for CallJournal {
    fn starting(&self, call: &str) -> io::Result<()> {
        self.write(serde_json::json!({ "started": call }), true)
    }

    fn finished(&self, call: &str) {
        if let Err(e) = self.write(serde_json::json!({ "finished": call }), false) {
            tracing::warn!(error = %e, "could not journal a finished call");
        }
    }
}
