//! Atomic replacement of a file, and the sweep that removes the temp files a killed process
//! left behind. It decides how bytes reach the disk, never what is written or where.
//!
//! A write goes to `<folder>/.minicode-tmp-<32 hex digits>` (46 bytes, so the name fits
//! NAME_MAX whatever the target is called), is `fsync`ed, renamed over the target, and the
//! folder is `fsync`ed so the rename itself survives a power cut. While the temp file exists
//! its writer holds an exclusive `flock` on it: the kernel drops that lock when the process
//! dies, however it dies, so a sweep can tell an abandoned temp file from one another minicode
//! process is still writing, and never removes the latter.
//!
//! The sweep must know where to look without walking the workspace. Folders minicode owns
//! (`.minicode/`, the sessions folder) are listed. A write anywhere else (the `write` and `edit`
//! tools) is first recorded in `.minicode/inflight/<hex>`, a tiny file naming the temp file's
//! folder, and that record is removed after the rename.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Every temp file we create starts with this; the rest is exactly 32 lowercase hex digits.
pub const TEMP_PREFIX: &str = ".minicode-tmp-";
/// `.minicode/inflight/`: one record per temp file being written outside our own folders.
pub const JOURNAL_DIR: &str = "inflight";
/// A record names a folder inside the workspace; anything longer is not ours.
const MAX_RECORD_BYTES: u64 = 16 * 1024;
/// A record without its temp file is kept this long: its writer may be about to create it.
const RECORD_GRACE: std::time::Duration = std::time::Duration::from_secs(60);
/// A sweeper may take a temp file's name between its creation and its lock; then the writer
/// starts over with a fresh name, a few times at most.
pub(super) const ATTEMPTS: usize = 3;

/// Whether `name` is one of our temp files: the prefix and exactly 32 lowercase hex digits.
pub fn is_temp_name(name: &OsStr) -> bool {
    name.as_bytes()
        .strip_prefix(TEMP_PREFIX.as_bytes())
        .is_some_and(is_temp_id)
}

fn is_temp_id(id: &[u8]) -> bool {
    id.len() == 32 && id.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Replaces `path` with `data` atomically: a temp file in the same folder, `fsync`, rename,
/// `fsync` of the folder. `mode` sets the permission bits of the new file; when `None`, an
/// existing file's bits are kept, and a new file gets 0666 less the umask, like any file the
/// user creates. Setuid, setgid and sticky bits are
/// never carried over: a rewritten file is new content nobody reviewed as privileged. The temp
/// file is removed on failure, so a failure leaves the old content, and a crash leaves the old
/// or the new content, never a mix.
///
/// Use this for files in folders the start-up sweep lists (`.minicode/`, the sessions folder);
/// elsewhere use [`write_atomic_journaled`], so a killed write can still be found.
pub(crate) fn write_atomic(path: &Path, data: &[u8], mode: Option<u32>) -> io::Result<()> {
    write(path, &[data], mode, None)
}

/// [`write_atomic`] of the concatenation of `parts`, without joining them in memory first (a
/// large file assembled from cached pieces, e.g. a session snapshot).
pub(crate) fn write_atomic_parts(
    path: &Path,
    parts: &[&[u8]],
    mode: Option<u32>,
) -> io::Result<()> {
    write(path, parts, mode, None)
}

/// [`write_atomic`] for a file anywhere in the canonical `workspace`: the temp file is also
/// recorded under `.minicode/inflight/` until it is renamed, so [`sweep_temp_files`] finds it
/// if the process is killed meanwhile.
pub(crate) fn write_atomic_journaled(
    path: &Path,
    data: &[u8],
    mode: Option<u32>,
    workspace: &Path,
) -> io::Result<()> {
    write(path, &[data], mode, Some(workspace))
}

fn write(
    path: &Path,
    parts: &[&[u8]],
    mode: Option<u32>,
    workspace: Option<&Path>,
) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if path.file_name().is_none() {
        return Err(io::Error::other("path has no file name"));
    }
    let exact_mode = mode
        .or_else(|| {
            std::fs::metadata(path)
                .ok()
                .map(|meta| meta.permissions().mode())
        })
        .map(|m| m & 0o777);
    for _ in 0..ATTEMPTS {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let tmp = dir.join(format!("{TEMP_PREFIX}{id}"));
        // Without a record the write still happens; only a sweep after a kill would miss it.
        let _record = workspace.and_then(|workspace| {
            Record::create(workspace, dir, &id)
                .inspect_err(|e| tracing::warn!(error = %e, "cannot record a temp file"))
                .ok()
        });
        let file = match create_locked(&tmp, exact_mode.unwrap_or(0o666)) {
            Ok(Some(file)) => file,
            // A sweeper took the name before we locked it: start over with a new one.
            Ok(None) => continue,
            Err(e) => return Err(e),
        };
        let result = fill_and_rename(file, &tmp, path, parts, exact_mode);
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        return sync_dir(dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the new content is in place, but flushing its folder to disk failed: {e}"),
            )
        });
    }
    Err(io::Error::other(
        "could not create a temp file (another process kept removing it)",
    ))
}

fn fill_and_rename(
    mut file: File,
    tmp: &Path,
    path: &Path,
    parts: &[&[u8]],
    exact_mode: Option<u32>,
) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for part in parts {
        file.write_all(part)?;
    }
    // The umask may have narrowed a mode that must be kept; set it exactly.
    if let Some(mode) = exact_mode {
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    file.sync_all()?;
    // The lock is held (the file stays open) until the name is gone.
    std::fs::rename(tmp, path)
}

/// Creates `tmp` (it must not exist) and locks it. `None` when a sweep removed it between the
/// two steps: the lock could not be taken, or the name no longer leads to our file.
fn create_locked(tmp: &Path, mode: u32) -> io::Result<Option<File>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(tmp)?;
    if !try_lock(&file)? {
        return Ok(None);
    }
    let ours = file.metadata()?;
    match std::fs::symlink_metadata(tmp) {
        Ok(now) if now.dev() == ours.dev() && now.ino() == ours.ino() => Ok(Some(file)),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// An exclusive, non-blocking lock (`flock` on Unix): false when another open file holds it.
pub(super) fn try_lock(file: &File) -> io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Makes a rename in `dir` durable. On Linux a failure is reported, except from file systems
/// that cannot sync a folder at all. Elsewhere it is a best effort: on macOS std's `sync_all`
/// is `F_FULLFSYNC`, whose behaviour on a folder is untested here, and a write whose content is
/// already in place must not fail on it.
#[cfg(target_os = "linux")]
fn sync_dir(dir: &Path) -> io::Result<()> {
    let result = File::open(dir).and_then(|d| d.sync_all());
    match result {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTSUP)) => Ok(()),
        other => other,
    }
}

#[cfg(not(target_os = "linux"))]
fn sync_dir(dir: &Path) -> io::Result<()> {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// `.minicode/inflight/<id>`, holding the folder of the temp file `.minicode-tmp-<id>`
/// relative to the workspace. Removed when dropped, i.e. once the write ended either way.
pub(super) struct Record(PathBuf);

impl Record {
    pub(super) fn create(workspace: &Path, folder: &Path, id: &str) -> io::Result<Record> {
        use std::os::unix::fs::OpenOptionsExt;
        let journal = super::private_dir(workspace, JOURNAL_DIR)?;
        let relative = match folder.strip_prefix(workspace) {
            Ok(rel) if rel.as_os_str().is_empty() => Path::new("."),
            Ok(rel) => rel,
            Err(_) => folder,
        };
        let path = journal.join(id);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        // Only a killed process must be covered (a power cut may lose the record and leave a
        // stray temp file), so the record is not fsynced: writes stay one fsync cheaper.
        if let Err(e) = file.write_all(relative.as_os_str().as_bytes()) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(Record(path))
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What a start-up sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Swept {
    /// Abandoned temp files removed.
    pub(crate) removed: Vec<PathBuf>,
    /// Temp files left alone because a live process still holds them.
    pub(crate) in_use: usize,
}

/// Removes the temp files killed processes left in the canonical `workspace`: those in
/// `.minicode/` itself, in each of its folders named in `subs` (e.g. `sessions`), and those
/// recorded under `.minicode/inflight/`. A temp file another process is still writing is left
/// alone (its lock is held). The folders are reached like every other access to `.minicode/`
/// ([`super::existing_private_dir`]): one that links out of the workspace is not swept.
/// Records are trusted only as far as they point: the named folder must resolve inside the
/// workspace, and only a regular file named like ours is removed. Errors are skipped: the
/// sweep is housekeeping and must never stop a start.
pub(crate) fn sweep_temp_files(workspace: &Path, subs: &[&str]) -> Swept {
    let mut swept = Swept::default();
    let existing = |sub: &str| super::existing_private_dir(workspace, sub).ok().flatten();
    for folder in std::iter::once("")
        .chain(subs.iter().copied())
        .filter_map(existing)
    {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            if is_temp_name(&entry.file_name()) {
                sweep_one(&entry.path(), &mut swept);
            }
        }
    }
    if let Some(journal) = existing(JOURNAL_DIR) {
        sweep_journal(workspace, &journal, &mut swept);
    }
    swept
}

fn sweep_journal(workspace: &Path, journal: &Path, swept: &mut Swept) {
    let Ok(entries) = std::fs::read_dir(journal) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_temp_id(name.as_bytes()) {
            continue; // not a record of ours
        }
        let record = entry.path();
        let tmp_name = format!("{TEMP_PREFIX}{}", name.to_string_lossy());
        let outcome = match read_record(&record) {
            Some(folder) => match super::resolve_in_workspace(workspace, &folder) {
                Ok(dir) => sweep_one(&dir.join(tmp_name), swept),
                // The folder is gone or leads outside: nothing of ours can be there.
                Err(_) => Outcome::Absent,
            },
            None => Outcome::Absent,
        };
        let keep = match outcome {
            Outcome::InUse => true,
            Outcome::Removed => false,
            // A live writer may be between writing its record and creating its temp file.
            Outcome::Absent => is_recent(&record),
        };
        if !keep {
            let _ = std::fs::remove_file(&record);
        }
    }
}

/// Whether `path` was modified less than [`RECORD_GRACE`] ago (or has a time in the future).
fn is_recent(path: &Path) -> bool {
    let Ok(modified) = std::fs::symlink_metadata(path).and_then(|m| m.modified()) else {
        return false;
    };
    std::time::SystemTime::now()
        .duration_since(modified)
        .map_or(true, |age| age < RECORD_GRACE)
}

/// The folder a record names, when it is a plain regular file of sane size and UTF-8.
fn read_record(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_RECORD_BYTES {
        return None;
    }
    let mut text = String::new();
    File::open(path)
        .ok()?
        .take(MAX_RECORD_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    (!text.is_empty() && !text.contains('\0')).then_some(text)
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Removed,
    InUse,
    Absent,
}

/// Removes the temp file at `path` when no live process holds its lock.
fn sweep_one(path: &Path, swept: &mut Swept) -> Outcome {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Outcome::Absent;
    };
    if !meta.is_file() {
        return Outcome::Absent; // a symlink or folder under our name is not ours to remove
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return Outcome::Absent;
    };
    match try_lock(&file) {
        Ok(true) => {}
        Ok(false) => {
            swept.in_use += 1;
            return Outcome::InUse;
        }
        Err(_) => return Outcome::Absent,
    }
    // Holding the lock, make sure the name still leads to the file we locked.
    let same = file
        .metadata()
        .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
    if same && std::fs::remove_file(path).is_ok() {
        tracing::info!(path = %path.display(), "removed an abandoned temp file");
        swept.removed.push(path.to_path_buf());
        return Outcome::Removed;
    }
    Outcome::Absent
}
