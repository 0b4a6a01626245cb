//! The record of what a confined command may have changed: the paths its calls named when
//! they trapped to the supervisor (`sandbox::notifier`), as the supervisor writes them to a
//! memory file minicode handed it, and as minicode reads them back after the call. Both ends
//! of the format live here; nothing here touches the workspace.
//!
//! The format is a sequence of NUL-terminated entries, each led by one tag byte: `v1` first
//! (the supervisor listens: without it the call has no record), `p<absolute path>` for each
//! path the first time it is noted (written before the trapped call may go on, so a
//! supervisor killed mid-call leaves a list complete up to that point), `u` when the list
//! cannot be complete (a path that could not be resolved, too many paths), and `n<count>` at
//! the end (how many calls trapped).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The most distinct paths noted for one call; past it the record is incomplete (a command
/// that writes more than this many paths gets today's attribution: all of the window's).
pub(crate) const MAX_PATHS: usize = 200_000;

/// The descriptor the supervisor finds the memory file on (next to `CONTROL_FD`).
pub(crate) const LOG_FD: i32 = 4;

/// What a confined call's record says it may have changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Absolute paths as the command's processes named them (resolved against their folder
    /// and, for a link, also its target).
    pub paths: Vec<PathBuf>,
    /// How many calls trapped, when the supervisor lived to say so.
    pub notified: Option<u64>,
}

/// The entries the supervisor writes.
pub(crate) fn header() -> &'static [u8] {
    b"v1\0"
}

pub(crate) fn path_entry(path: &std::path::Path) -> Vec<u8> {
    let bytes = path.as_os_str().as_bytes();
    let mut entry = Vec::with_capacity(bytes.len() + 2);
    entry.push(b'p');
    entry.extend_from_slice(bytes);
    entry.push(0);
    entry
}

pub(crate) fn incomplete_entry() -> &'static [u8] {
    b"u\0"
}

pub(crate) fn count_entry(count: u64) -> Vec<u8> {
    format!("n{count}\0").into_bytes()
}

/// The record in `bytes`, or `None` when there is none (no header: the call was not
/// listened to) or it cannot be complete. A last entry without its NUL (cut off) is dropped.
pub(crate) fn parse(bytes: &[u8]) -> Option<Written> {
    // Everything up to the last NUL: an entry cut off after it is dropped.
    let complete = &bytes[..bytes.iter().rposition(|b| *b == 0)?];
    let mut entries = complete.split(|b| *b == 0);
    if entries.next()? != b"v1" {
        return None;
    }
    let mut written = Written::default();
    for entry in entries {
        if entry.is_empty() {
            continue;
        }
        match entry[0] {
            b'p' => written
                .paths
                .push(PathBuf::from(OsStr::from_bytes(&entry[1..]))),
            b'u' => return None,
            b'n' => {
                written.notified = std::str::from_utf8(&entry[1..])
                    .ok()
                    .and_then(|n| n.parse().ok());
            }
            _ => return None,
        }
    }
    Some(written)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_its_paths_and_count() {
        let mut bytes = header().to_vec();
        bytes.extend(path_entry(std::path::Path::new("/w/a b")));
        bytes.extend(path_entry(std::path::Path::new("/w/c\nd")));
        bytes.extend(count_entry(7));
        let written = parse(&bytes).unwrap();
        assert_eq!(
            written.paths,
            vec![PathBuf::from("/w/a b"), PathBuf::from("/w/c\nd")]
        );
        assert_eq!(written.notified, Some(7));
    }

    #[test]
    fn no_header_or_an_incomplete_mark_is_no_record_and_a_cut_entry_is_dropped() {
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"p/w/a\0"), None);
        let mut bytes = header().to_vec();
        bytes.extend(incomplete_entry());
        assert_eq!(parse(&bytes), None);
        let mut bytes = header().to_vec();
        bytes.extend(path_entry(std::path::Path::new("/w/a")));
        bytes.extend(b"p/w/cut");
        let written = parse(&bytes).unwrap();
        assert_eq!(written.paths, vec![PathBuf::from("/w/a")]);
        assert_eq!(written.notified, None);
    }
}
