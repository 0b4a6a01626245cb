//! The content-addressed blob store shared by every session of a workspace:
//! `.minicode/checkpoints/blobs/<2 hex>/<62 hex>`, each blob the exact bytes of a file whose
//! SHA-256 is its name. Folders are 0700 and files 0600. It stores and reads bytes; which
//! blobs are still needed is the journal's business.

use std::collections::HashSet;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The blob folder of one workspace, and the fan-out folders already made.
pub(crate) struct Blobs {
    workspace: PathBuf,
    root: PathBuf,
    made: HashSet<String>,
}

impl Blobs {
    pub(crate) fn open(workspace: &Path) -> io::Result<Blobs> {
        let root = crate::fsutil::private_dir(workspace, &format!("{}/blobs", super::SUBDIR))?;
        Ok(Blobs {
            workspace: workspace.to_path_buf(),
            root,
            made: HashSet::new(),
        })
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
        let path = self.path(hash);
        if path.exists() {
            return Ok(0);
        }
        let fan = &hash[..2.min(hash.len())];
        if !self.made.contains(fan) {
            let sub = format!("{}/blobs/{fan}", super::SUBDIR);
            crate::fsutil::private_dir(&self.workspace, &sub)?;
            self.made.insert(fan.to_string());
        }
        let temp = path.with_extension(format!("tmp{}", std::process::id()));
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
        Ok(bytes.len() as u64)
    }

    /// A blob's bytes, checked against its name (a damaged blob is an error, never restored).
    pub(crate) fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        let bytes = std::fs::read(self.path(hash))?;
        if Self::hash(&bytes) != hash {
            return Err(io::Error::other(format!(
                "checkpoint blob {hash} is damaged"
            )));
        }
        Ok(bytes)
    }

    /// Every blob with its size.
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
                out.push((format!("{prefix}{name}"), blob.metadata()?.len()));
            }
        }
        Ok(out)
    }

    pub(crate) fn remove(&self, hash: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(hash)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}
