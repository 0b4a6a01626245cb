//! The `.minicode/.gitignore` minicode maintains, so `git add -A` never commits a conversation,
//! a log or a saved output, while what a team shares (`memory/`, later `skills/`) stays
//! committable. It owns only the lines between its two markers and never touches the rest.
//!
//! Everything in `.minicode/` is ignored unless listed as shareable, so a private folder added
//! later is ignored without a code change. The block goes first in the file: lines a user adds
//! after it take precedence (git applies the last matching pattern), so a user can still share
//! or hide more by hand.

use std::io::{self, Read};
use std::path::Path;

/// The first line of the managed block.
pub const BEGIN: &str = "# >>> minicode (managed: lines up to the end marker are rewritten) >>>";
/// The last line of the managed block.
pub const END: &str = "# <<< minicode <<<";

/// The managed block: ignore everything at the top of `.minicode/`, then list what is shared.
const BLOCK: &str = "\
# >>> minicode (managed: lines up to the end marker are rewritten) >>>
# Private data (sessions, logs, outputs, anything added later) stays out of git; shared
# folders are listed with '!'. Put your own lines after the end marker: they take precedence.
/*
!/.gitignore
!/memory/
!/skills/
# <<< minicode <<<
";

/// A `.gitignore` larger than this is not something we wrote or should rewrite.
const MAX_BYTES: u64 = 256 * 1024;

/// Makes sure `<data_dir>/.gitignore` holds the current managed block: creates the file when it
/// is missing, puts the block at the top of a file that has none, and replaces an outdated
/// block in place. A `.gitignore` that is not a regular file (a symlink, a folder) or is
/// oversized is left alone.
pub fn ensure(data_dir: &Path) -> io::Result<()> {
    let path = data_dir.join(".gitignore");
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return super::write_atomic(&path, BLOCK.as_bytes(), None);
        }
        Err(e) => return Err(e),
    };
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return Ok(());
    }
    let mut current = String::new();
    let read =
        std::fs::File::open(&path).and_then(|f| f.take(MAX_BYTES).read_to_string(&mut current));
    if read.is_err() {
        return Ok(()); // not UTF-8 or unreadable: not a file we can safely rewrite
    }
    match updated(&current) {
        Some(text) => super::write_atomic(&path, text.as_bytes(), None),
        None => Ok(()),
    }
}

/// The new content for a file holding `current`, or `None` when it is up to date.
fn updated(current: &str) -> Option<String> {
    let Some(begin) = line_start(current, BEGIN, 0) else {
        return Some(format!("{BLOCK}{current}"));
    };
    let Some(end) = line_start(current, END, begin) else {
        // A begin marker without an end: leave it as a comment and put a whole block first.
        return Some(format!("{BLOCK}{current}"));
    };
    let after = current[end..]
        .find('\n')
        .map_or(current.len(), |i| end + i + 1);
    if &current[begin..after] == BLOCK {
        return None;
    }
    Some(format!("{}{BLOCK}{}", &current[..begin], &current[after..]))
}

/// Where a line equal to `marker` starts, at or after byte `from`.
fn line_start(text: &str, marker: &str, from: usize) -> Option<usize> {
    let mut at = from;
    for line in text[from..].split_inclusive('\n') {
        if line.trim_end() == marker {
            return Some(at);
        }
        at += line.len();
    }
    None
}
