//! The content-addressed blob store shared by every session of a workspace:
//! `.minicode/checkpoints/blobs/<2 hex>/<62 hex>`, each blob the exact bytes of a file whose
//! SHA-256 is its name. Folders are 0700 and files 0600. It stores and reads bytes; which
//! blobs are still needed is the journal's business.
//!
//! A blob is only ever trusted after its bytes hash to its name: one already there when the
//! same content is stored again is checked and replaced when it does not match (a planted or
//! damaged blob never blocks the undo of that content), and one read back is checked too.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::packs::{self, Location};

/// The blob folder of one workspace, and the fan-out folders already made.
pub(crate) struct Blobs {
    workspace: PathBuf,
    root: PathBuf,
    made: HashSet<String>,
    /// Blobs this process created since the last [`Blobs::take_fresh`]: what a record that
    /// then failed leaves behind, with no journal naming it.
    fresh: Vec<String>,
    /// The packs written since then.
    fresh_packs: Vec<PathBuf>,
    /// Small blobs held back to be written together as one pack (see `packs`), while a scan
    /// runs.
    batch: Option<Vec<(String, Vec<u8>)>>,
    /// The names in `batch`: a base of 100,000 files looked each new blob up in the batch
    /// itself, which made the first record quadratic (234 s instead of seconds).
    batched: HashSet<String>,
    /// Where the packed blobs are, read on first need.
    index: std::sync::Mutex<Option<HashMap<String, Location>>>,
}

/// The bytes a file takes on disk (its blocks), not its length: a 10-byte blob costs a block.
pub(crate) fn on_disk(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.blocks().saturating_mul(512).max(meta.len())
}

impl Blobs {
    pub(crate) fn open(workspace: &Path) -> io::Result<Blobs> {
        let root = crate::fsutil::private_dir(workspace, &format!("{}/blobs", super::SUBDIR))?;
        Ok(Blobs {
            workspace: workspace.to_path_buf(),
            root,
            made: HashSet::new(),
            fresh: Vec::new(),
            fresh_packs: Vec::new(),
            batch: None,
            batched: HashSet::new(),
            index: std::sync::Mutex::new(None),
        })
    }

    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// From now until [`Blobs::flush`], small blobs are held back to be packed together.
    pub(crate) fn batch(&mut self) {
        self.batch.get_or_insert_with(Vec::new);
    }

    /// Writes the blobs held back: one pack when there are enough, else a file each. Must run
    /// before a journal line names them.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        let Some(batch) = self.batch.take() else {
            return Ok(());
        };
        self.batched = HashSet::new();
        if batch.len() < packs::PACK_FROM {
            for (hash, bytes) in &batch {
                self.put_loose(hash, bytes)?;
            }
            return Ok(());
        }
        let (pack, _) = packs::write(&self.workspace, &batch)?;
        self.fresh.extend(batch.into_iter().map(|(hash, _)| hash));
        self.fresh_packs.push(pack);
        self.forget_index();
        Ok(())
    }

    /// Drops a failed scan's held-back blobs.
    pub(crate) fn drop_batch(&mut self) {
        self.batch = None;
        self.batched = HashSet::new();
    }

    /// The packs' index is read again at the next need (a pack was written or removed).
    pub(crate) fn forget_index(&self) {
        *crate::sync::lock(&self.index) = None;
    }

    pub(crate) fn hash(bytes: &[u8]) -> String {
        super::hex(&Sha256::digest(bytes))
    }

    fn path(&self, hash: &str) -> PathBuf {
        let (fan, rest) = hash.split_at(2.min(hash.len()));
        self.root.join(fan).join(rest)
    }

    /// Stores `bytes` under `hash` unless a blob of that name exists. Returns the bytes the
    /// store grew by. The blob appears whole or not at all (written aside, then renamed); it
    /// is not `fsync`ed: a checkpoint must survive the process dying, and pays for nothing
    /// more on every call.
    pub(crate) fn put(&mut self, hash: &str, bytes: &[u8]) -> io::Result<u64> {
        if self.batch.is_none() || bytes.len() >= packs::PACK_BELOW {
            return self.put_loose(hash, bytes);
        }
        if self.batched.contains(hash) {
            return Ok(0);
        }
        // Already a file of its own: checked (and replaced when it is not what its name says)
        // there, not packed again.
        if std::fs::symlink_metadata(self.path(hash)).is_ok() {
            return self.put_loose(hash, bytes);
        }
        if let Some(batch) = self.batch.as_mut() {
            batch.push((hash.to_string(), bytes.to_vec()));
            self.batched.insert(hash.to_string());
        }
        Ok(bytes.len() as u64 + 4)
    }

    /// [`Blobs::put`] as a file of its own.
    pub(crate) fn put_loose(&mut self, hash: &str, bytes: &[u8]) -> io::Result<u64> {
        let path = self.path(hash);
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if meta.is_file()
                && meta.len() == bytes.len() as u64
                && std::fs::read(&path).is_ok_and(|old| Self::hash(&old) == hash)
            {
                return Ok(0);
            }
            // Not the content its name says (planted, damaged, a link): replaced below.
            if meta.is_dir() {
                std::fs::remove_dir_all(&path)?;
            }
        }
        let fan = &hash[..2.min(hash.len())];
        if !self.made.contains(fan) {
            let sub = format!("{}/blobs/{fan}", super::SUBDIR);
            crate::fsutil::private_dir(&self.workspace, &sub)?;
            self.made.insert(fan.to_string());
        }
        let temp = temp_path(&path);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut f| f.write_all(bytes))
            .and_then(|()| std::fs::rename(&temp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        self.fresh.push(hash.to_string());
        Ok(bytes.len() as u64)
    }

    /// The blobs and packs created since the last call (see `fresh`).
    pub(crate) fn take_fresh(&mut self) -> (Vec<String>, Vec<PathBuf>) {
        (
            std::mem::take(&mut self.fresh),
            std::mem::take(&mut self.fresh_packs),
        )
    }

    /// Removes the `.tmp<pid>` files of writers that are gone (a process killed or out of
    /// space while writing a blob). Returns the bytes they took.
    pub(crate) fn collect_leftovers(&self) -> io::Result<u64> {
        let mut freed = 0;
        for fan in std::fs::read_dir(&self.root)? {
            let fan = fan?;
            if !fan.file_type()?.is_dir() {
                continue;
            }
            for entry in std::fs::read_dir(fan.path())? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if !leftover(&name) {
                    continue;
                }
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                if std::fs::remove_file(entry.path()).is_ok() {
                    freed += on_disk(&meta);
                }
            }
        }
        Ok(freed)
    }

    /// A blob's bytes, checked against its name (a damaged blob is an error, never restored,
    /// and removed so the next record of that content stores it again).
    pub(crate) fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        let path = self.path(hash);
        let meta = match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return self.get_packed(hash, e),
            other => other?,
        };
        if !meta.is_file() {
            return Err(io::Error::other(format!(
                "checkpoint blob {hash} is not a file"
            )));
        }
        let bytes = std::fs::read(&path)?;
        if Self::hash(&bytes) != hash {
            let _ = std::fs::remove_file(&path);
            return Err(io::Error::other(format!(
                "checkpoint blob {hash} is damaged"
            )));
        }
        Ok(bytes)
    }

    /// A packed blob's bytes (the index read again once if the pack moved: another session's
    /// garbage collection may have rewritten it).
    fn get_packed(&self, hash: &str, missing: io::Error) -> io::Result<Vec<u8>> {
        for _ in 0..2 {
            let at = {
                let mut index = crate::sync::lock(&self.index);
                if index.is_none() {
                    *index = Some(packs::index(&self.workspace)?);
                }
                index.as_ref().and_then(|i| i.get(hash)).cloned()
            };
            let Some(at) = at else {
                return Err(missing);
            };
            match packs::read(hash, &at) {
                Ok(bytes) => return Ok(bytes),
                Err(e) if e.kind() == io::ErrorKind::NotFound => self.forget_index(),
                Err(e) => return Err(e),
            }
        }
        Err(missing)
    }

    /// Every blob stored as a file of its own, with the bytes it takes on disk.
    pub(crate) fn all(&self) -> io::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for fan in std::fs::read_dir(&self.root)? {
            let fan = fan?;
            if !fan.file_type()?.is_dir() {
                continue;
            }
            let prefix = fan.file_name().to_string_lossy().into_owned();
            for blob in std::fs::read_dir(fan.path())? {
                let blob = blob?;
                let name = blob.file_name().to_string_lossy().into_owned();
                if name.contains('.') {
                    continue;
                }
                // Gone meanwhile: another session's garbage collection.
                if let Ok(meta) = blob.metadata() {
                    out.push((format!("{prefix}{name}"), on_disk(&meta)));
                }
            }
        }
        Ok(out)
    }

    /// Removes a blob stored as a file of its own (its fan-out folder stays: another session
    /// may be writing into it).
    pub(crate) fn remove(&self, hash: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(hash)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Where to write `path` aside before renaming it into place: `<name>.tmp<pid>-<n>`, unique
/// to this process and this write (two sessions in one process may store the same content).
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}-{n}", std::process::id()));
    path.with_file_name(name)
}

/// Whether `name` is a file written aside by a process that is gone.
pub(crate) fn leftover(name: &str) -> bool {
    let Some((_, tail)) = name.split_once(".tmp") else {
        return false;
    };
    let pid = tail.split('-').next().and_then(|p| p.parse::<i32>().ok());
    !pid.is_some_and(alive)
}

/// Whether process `pid` still runs (a blob it is writing is not a leftover).
pub(crate) fn alive(pid: i32) -> bool {
    pid > 0 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}
