//! Pack files: many small blobs in one file, `.minicode/checkpoints/packs/<sha256>.pack`, so a
//! base of 10,000 small files costs their bytes and not 10,000 blocks of 4 KiB. A pack is
//! written once (aside, then renamed) and never changed: each entry is its length (4 bytes,
//! little-endian) then its bytes, and an entry's name is the SHA-256 of its bytes, computed
//! when the pack is indexed, so a pack cannot claim content it does not hold. Garbage
//! collection rewrites a pack whose entries are mostly dead and removes one with none alive.
//! A pack not owned by this user is never read.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::blobs::{Blobs, on_disk};

/// Blobs smaller than this are packed when a scan stores several at once.
pub(crate) const PACK_BELOW: usize = 16 << 10;

/// Fewer blobs than this, stored by one scan, are written as files of their own.
pub(crate) const PACK_FROM: usize = 8;

/// Where an entry is.
#[derive(Debug, Clone)]
pub(crate) struct Location {
    pub pack: PathBuf,
    pub offset: u64,
    pub len: usize,
}

pub(crate) fn dir(workspace: &Path) -> PathBuf {
    workspace
        .join(crate::fsutil::DATA_DIR)
        .join(super::SUBDIR)
        .join("packs")
}

/// Writes `blobs` as one pack; returns its path and the bytes it takes on disk.
pub(crate) fn write(workspace: &Path, blobs: &[(String, Vec<u8>)]) -> io::Result<(PathBuf, u64)> {
    let dir = crate::fsutil::private_dir(workspace, &format!("{}/packs", super::SUBDIR))?;
    let mut bytes = Vec::with_capacity(blobs.iter().map(|(_, b)| b.len() + 4).sum());
    for (_, blob) in blobs {
        let len = u32::try_from(blob.len()).map_err(io::Error::other)?;
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(blob);
    }
    let path = dir.join(format!("{}.pack", Blobs::hash(&bytes)));
    let temp = super::blobs::temp_path(&path);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .and_then(|mut f| f.write_all(&bytes))
        .and_then(|()| std::fs::rename(&temp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    let size = std::fs::symlink_metadata(&path).map_or(bytes.len() as u64, |m| on_disk(&m));
    Ok((path, size))
}

/// The packs on disk (owned by this user), each with the bytes it takes. Leftovers of writers
/// that are gone are removed.
pub(crate) fn all(workspace: &Path) -> io::Result<Vec<(PathBuf, u64)>> {
    let entries = match std::fs::read_dir(dir(workspace)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if name.contains(".tmp") {
            if super::blobs::leftover(&name) {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
        } else if name.ends_with(".pack") && meta.is_file() && super::attribution::owned(&meta) {
            out.push((entry.path(), on_disk(&meta)));
            continue;
        }
        // Someone else's file, or a writer's still being written: counted, not read.
        out.push((PathBuf::new(), on_disk(&meta)));
    }
    Ok(out)
}

/// A pack's entries: name, location, and bytes.
pub(crate) fn entries(pack: &Path) -> io::Result<Vec<(String, Location, Vec<u8>)>> {
    let mut bytes = Vec::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(pack)?
        .read_to_end(&mut bytes)?;
    let mut out = Vec::new();
    let mut at = 0usize;
    while at + 4 <= bytes.len() {
        let mut len = [0u8; 4];
        len.copy_from_slice(&bytes[at..at + 4]);
        let len = u32::from_le_bytes(len) as usize;
        let start = at + 4;
        let Some(blob) = bytes.get(start..start + len) else {
            break;
        };
        let location = Location {
            pack: pack.to_path_buf(),
            offset: start as u64,
            len,
        };
        out.push((Blobs::hash(blob), location, blob.to_vec()));
        at = start + len;
    }
    Ok(out)
}

/// Every packed blob's location.
pub(crate) fn index(workspace: &Path) -> io::Result<HashMap<String, Location>> {
    let mut index = HashMap::new();
    for (pack, _) in all(workspace)? {
        if pack.as_os_str().is_empty() {
            continue;
        }
        for (hash, location, _) in entries(&pack).unwrap_or_default() {
            index.insert(hash, location);
        }
    }
    Ok(index)
}

/// One packed blob's bytes, checked against its name.
pub(crate) fn read(hash: &str, at: &Location) -> io::Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&at.pack)?;
    let mut bytes = vec![0; at.len];
    file.read_exact_at(&mut bytes, at.offset)?;
    if Blobs::hash(&bytes) != hash {
        return Err(io::Error::other(format!(
            "checkpoint blob {hash} is damaged"
        )));
    }
    Ok(bytes)
}

/// Garbage collection of the packs: a pack with no entry in `live` is removed; one whose dead
/// entries take more than half of it is written again with the live ones only (as a pack, or
/// as files of their own when few) before it is removed.
pub(crate) fn collect(blobs: &mut Blobs, live: &HashSet<String>) -> io::Result<()> {
    for (pack, _) in all(blobs.workspace())? {
        if pack.as_os_str().is_empty() {
            continue;
        }
        let entries = entries(&pack)?;
        let total: usize = entries.iter().map(|(_, l, _)| l.len + 4).sum();
        let mut seen = HashSet::new();
        let kept: Vec<(String, Vec<u8>)> = entries
            .into_iter()
            .filter(|(hash, _, _)| live.contains(hash) && seen.insert(hash.clone()))
            .map(|(hash, _, bytes)| (hash, bytes))
            .collect();
        let alive: usize = kept.iter().map(|(_, b)| b.len() + 4).sum();
        if alive * 2 > total {
            continue;
        }
        if kept.len() >= PACK_FROM {
            if write(blobs.workspace(), &kept)?.0 == pack {
                continue;
            }
        } else {
            for (hash, bytes) in &kept {
                blobs.put_loose(hash, bytes)?;
            }
        }
        std::fs::remove_file(&pack)?;
    }
    blobs.forget_index();
    Ok(())
}
