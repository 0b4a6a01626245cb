//! The `.minicode/.gitignore` minicode maintains, so `git add -A` never commits a conversation,
//! a log or a saved output, while what a team shares (`memory/`, `skills/`, `commands/` and the
//! workspace's `config.toml`) stays committable. It owns only the lines between its two markers and never touches the rest.
//!
//! Everything in `.minicode/` is ignored unless listed as shareable, so a private folder added
//! later is ignored without a code change. The block goes last in the file and is moved back
//! there when it is not: git applies the last matching pattern, so a repository's own line
//! such as `!/sessions/` above it cannot stage the user's conversations. Such lines are also
//! reported ([`warnings`]), so the user learns what the repository tried.

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
# folders are listed with '!'. minicode keeps this block last, so lines above cannot re-include
# private data.
/*
!/.gitignore
!/memory/
!/skills/
!/commands/
!/config.toml
# <<< minicode <<<
";

/// A `.gitignore` larger than this is not something we wrote or should rewrite.
const MAX_BYTES: u64 = 256 * 1024;

/// Makes sure `<data_dir>/.gitignore` ends with the current managed block: creates the file
/// when it is missing, appends the block to a file that has none, and moves an outdated block
/// or one that is not last to the end. A `.gitignore` that is not a regular file (a symlink, a folder) or is
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
    // The last complete block counts; a begin marker without an end stays as a comment.
    let end = last_line_start(current, END, current.len());
    let block = end.and_then(|end| Some((last_line_start(current, BEGIN, end)?, end)));
    let rest = match block {
        Some((begin, end)) => {
            let after = current[end..]
                .find('\n')
                .map_or(current.len(), |i| end + i + 1);
            format!("{}{}", &current[..begin], &current[after..])
        }
        None => current.to_string(),
    };
    let separator = if rest.is_empty() || rest.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let text = format!("{rest}{separator}{BLOCK}");
    (text != current).then_some(text)
}

/// Where the last line equal to `marker` that starts before byte `before` starts.
fn last_line_start(text: &str, marker: &str, before: usize) -> Option<usize> {
    let mut at = 0;
    let mut found = None;
    for line in text.split_inclusive('\n') {
        if at >= before {
            break;
        }
        if line.trim_end() == marker {
            found = Some(at);
        }
        at += line.len();
    }
    found
}

/// Top-level entries of `.minicode/` a `!` line may re-include without a warning.
const SHARED: [&str; 3] = [".gitignore", "memory", "skills"];

/// Warnings about lines of `<workspace>/.minicode/.gitignore`, outside the managed block, that
/// re-include private data (`!/sessions/`, `!logs`, `!*`): the block overrides them, but a
/// repository that ships one was trying to get the user's conversations or logs committed.
/// Nothing is read from a file that is not a regular one or is oversized. The line is quoted
/// as written: the caller shows it through the sanitiser.
pub(crate) fn warnings(workspace: &Path) -> Vec<String> {
    let path = workspace.join(super::DATA_DIR).join(".gitignore");
    let readable = std::fs::symlink_metadata(&path)
        .is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_BYTES);
    let mut text = String::new();
    if !readable
        || std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_BYTES).read_to_string(&mut text))
            .is_err()
    {
        return Vec::new();
    }
    let mut in_block = false;
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end();
        match line {
            BEGIN => in_block = true,
            END => in_block = false,
            _ if !in_block && reincludes_private(line) => found.push(format!(
                ".minicode/.gitignore, line {}: `{}` would put private data (sessions, logs, \
                 saved outputs) into git; minicode's block at the end of the file overrides it, \
                 but remove the line",
                number + 1,
                line
            )),
            _ => {}
        }
    }
    found
}

/// Whether a `.gitignore` line is a negation of anything but a shared entry.
fn reincludes_private(line: &str) -> bool {
    let Some(pattern) = line.strip_prefix('!') else {
        return false;
    };
    let pattern = pattern.trim_start_matches('/').trim_start_matches("**/");
    let first = pattern.split('/').next().unwrap_or("");
    !pattern.is_empty() && !SHARED.contains(&first)
}
