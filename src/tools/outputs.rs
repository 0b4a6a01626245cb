//! The full outputs `bash` saves under `.minicode/outputs/` when a command says more than the
//! model is shown: each file is redacted like the result, capped per call (a note marks the
//! cut), and the folder is pruned, oldest first, beyond a total size and an age.
//!
//! Only files this module names (`<32 hex digits>.log`) are ever deleted, and never through a
//! link that leads out of the workspace: a repository cannot make pruning remove anything
//! else.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::secrets::{Redactor, Secrets};
use crate::{defaults, fsutil};

/// The limits of `.minicode/outputs/` (`[tools]` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes saved for one call; the rest is counted, not written.
    pub max_file_bytes: u64,
    /// Bytes all saved outputs may take; the oldest go first.
    pub max_total_bytes: u64,
    /// Age beyond which a saved output is removed.
    pub max_age: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: defaults::OUTPUTS_MAX_FILE_BYTES,
            max_total_bytes: defaults::OUTPUTS_MAX_BYTES,
            max_age: Duration::from_secs(defaults::OUTPUTS_MAX_AGE_DAYS * 24 * 60 * 60),
        }
    }
}

/// One call's saved output, being written: redacted as it streams, cut at the cap.
pub(crate) struct Saved<'a> {
    path: PathBuf,
    file: std::fs::File,
    /// Taken when the stream ends.
    redactor: Option<Redactor<'a>>,
    /// Bytes the command wrote, all of them.
    seen: u64,
    /// Bytes written to the file.
    written: u64,
    max: u64,
    capped: bool,
    error: Option<String>,
    buf: Vec<u8>,
}

impl<'a> Saved<'a> {
    /// Creates a new file (mode 0600) in `<workspace>/.minicode/outputs`, never through a
    /// link that leads out of the workspace (`fsutil::private_dir`).
    pub(crate) fn create(workspace: &Path, secrets: &'a Secrets, max: u64) -> Result<Self, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = fsutil::private_dir(workspace, "outputs")
            .map_err(|e| format!("could not create .minicode/outputs: {e}"))?;
        let path = dir.join(format!("{}.log", uuid::Uuid::new_v4().simple()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("could not create {}: {e}", path.display()))?;
        Ok(Self {
            path,
            file,
            redactor: Some(secrets.stream()),
            seen: 0,
            written: 0,
            max,
            capped: false,
            error: None,
            buf: Vec::new(),
        })
    }

    /// The file being written.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The next bytes of output. Past the cap they are only counted: a command that prints
    /// forever (`yes`) costs no more disk than the cap.
    pub(crate) fn write(&mut self, data: &[u8]) {
        self.seen += data.len() as u64;
        if self.capped || self.error.is_some() {
            return;
        }
        self.buf.clear();
        if let Some(redactor) = &mut self.redactor {
            redactor.push(data, &mut self.buf);
        }
        self.put();
    }

    /// Writes `buf` up to the cap.
    fn put(&mut self) {
        let room = self.max.saturating_sub(self.written);
        let take = usize::try_from(room)
            .unwrap_or(usize::MAX)
            .min(self.buf.len());
        if take < self.buf.len() {
            self.capped = true;
        }
        if let Err(e) = self.file.write_all(&self.buf[..take]) {
            self.error = Some(format!("writing the log failed: {e}"));
        }
        self.written += take as u64;
    }

    /// Ends the file (the held-back tail of the redactor, a note when cut, fsync) and says
    /// where it is and whether it is whole.
    pub(crate) fn finish(mut self, workspace: &Path) -> (PathBuf, String) {
        if !self.capped
            && self.error.is_none()
            && let Some(redactor) = self.redactor.take()
        {
            self.buf.clear();
            redactor.finish(&mut self.buf);
            self.put();
        }
        let shown = fsutil::display_path(workspace, &self.path);
        let note = if let Some(e) = &self.error {
            format!("saving the full output failed: {e}")
        } else if self.capped {
            let note = format!(
                "\n[... saved output cut at {} bytes; the command wrote {} bytes in all ...]\n",
                self.written, self.seen
            );
            match self
                .file
                .write_all(note.as_bytes())
                .and(self.file.sync_all())
            {
                Ok(()) => format!("the first {} bytes saved to {shown}", self.written),
                Err(e) => format!("saving the full output failed: {e}"),
            }
        } else {
            match self.file.sync_all() {
                Ok(()) => format!("full output saved to {shown}"),
                Err(e) => format!("saving the full output failed: {e}"),
            }
        };
        (self.path, note)
    }
}

/// Removes saved outputs of `workspace` older than the age limit, then the oldest beyond the
/// total size. `keep` (the file just saved) is never removed. Cheap: one directory listing.
/// A `.minicode` or `outputs` folder that links out of the workspace is left alone. Errors are
/// ignored: pruning is housekeeping, and the next call tries again.
pub(crate) fn prune(workspace: &Path, limits: &Limits, keep: Option<&Path>) {
    let Ok(Some(dir)) = fsutil::existing_private_dir(workspace, "outputs") else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut files: Vec<(PathBuf, SystemTime, u64)> = entries
        .filter_map(Result::ok)
        .filter(|e| is_ours(&e.file_name().to_string_lossy()))
        .filter_map(|e| {
            // `DirEntry::metadata` does not follow a symbolic link.
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((e.path(), meta.modified().ok()?, meta.len()))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    let now = SystemTime::now();
    let mut total = 0u64;
    for (path, modified, len) in files {
        if keep == Some(path.as_path()) {
            total = total.saturating_add(len);
            continue;
        }
        let too_old = now
            .duration_since(modified)
            .is_ok_and(|age| age > limits.max_age);
        if too_old || total.saturating_add(len) > limits.max_total_bytes {
            let _ = std::fs::remove_file(&path);
        } else {
            total += len;
        }
    }
}

/// `<32 lowercase hex digits>.log`, the names [`Saved::create`] gives.
fn is_ours(name: &str) -> bool {
    name.strip_suffix(".log").is_some_and(|stem| {
        stem.len() == 32 && stem.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}
