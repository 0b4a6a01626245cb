//! A change the final answer claims and no call made. Qwen2.5-Coder 1.5B, asked to add a
//! function to `lib.sh` and a check to `test.sh`, edited `lib.sh` and answered "I added the
//! `mul` function to `lib.sh` and created a check for it in `test.sh`": the turn ended
//! `completed` with half the task done and the user told otherwise; another time it "added"
//! the function with `bash` running `echo 'mul() …'`, which printed it and changed nothing.
//! When, in the small profile, a turn's last reply says in a sentence with a verb of change
//! ("added", "created", "updated", …) that it changed a file that was not modified since the
//! turn began (or does not exist), it is told which, once. The file's modification time is
//! the judge, so a change made by any tool or command counts, and nothing is tracked per call.

use std::path::Path;
use std::time::SystemTime;

/// Verbs that, in a sentence of the answer, claim a change was made.
const CLAIMS: [&str; 14] = [
    "added",
    "appended",
    "changed",
    "corrected",
    "created",
    "edited",
    "fixed",
    "inserted",
    "modified",
    "renamed",
    "replaced",
    "updated",
    "wrote",
    "written",
];

/// The files `reply` claims it changed (workspace-relative, in order of mention) that were not
/// modified since `since` (the turn's start): missing, or older.
pub(super) fn unmade(reply: &str, workspace: &Path, since: SystemTime) -> Vec<String> {
    let mut unmade: Vec<String> = Vec::new();
    for sentence in sentences(reply) {
        let claims = sentence
            .split(|c: char| !c.is_ascii_alphabetic())
            .any(|word| CLAIMS.contains(&word.to_ascii_lowercase().as_str()));
        if !claims {
            continue;
        }
        for name in file_names(sentence) {
            if !unmade.iter().any(|u| u == name) && untouched(workspace, name, since) {
                unmade.push(name.to_string());
            }
        }
    }
    unmade
}

/// The sentences of `text`: cut after `!`, `?`, `;`, a line break, or a `.` that ends a word
/// (followed by a space or the end), so `lib.sh` stays whole.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next_blank = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        if matches!(c, '!' | '?' | ';' | '\n') || (c == '.' && next_blank) {
            out.push(&text[start..at]);
            start = at + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out
}

/// The file names (`lib.sh`, `app/util.py`) a sentence mentions.
fn file_names(sentence: &str) -> Vec<&str> {
    sentence
        .split(|c: char| c.is_whitespace() || "`'\"()[],:*".contains(c))
        .map(|token| token.strip_prefix("./").unwrap_or(token))
        .filter(|token| shaped(token))
        .collect()
}

/// Whether `token` is shaped like a relative file name: a name with a short alphanumeric
/// extension, no `..`, not absolute.
fn shaped(token: &str) -> bool {
    let name = token.rsplit('/').next().unwrap_or(token);
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && !token.contains("..")
        && !token.starts_with('/')
}

/// Whether `name` was not changed since `since`: it is a regular file modified before then,
/// or it is missing from a folder that exists (a file the answer says it created). A name
/// whose folder is missing is no file of this workspace; a time that cannot be read is taken
/// as a change.
fn untouched(workspace: &Path, name: &str, since: SystemTime) -> bool {
    let path = workspace.join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta.is_file() && meta.modified().is_ok_and(|m| m < since),
        Err(_) => path
            .parent()
            .is_some_and(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())),
    }
}

/// The reminder naming the files of [`unmade`]; `None` when there are none.
pub(super) fn reminder(unmade: &[String]) -> Option<String> {
    if unmade.is_empty() {
        return None;
    }
    let names: Vec<String> = unmade.iter().map(|n| format!("`{n}`")).collect();
    Some(format!(
        "Your answer says you changed {}, but no tool call in this task changed {}: nothing \
         was done there. Make that change now with a tool call, or correct your answer.",
        names.join(" and "),
        if unmade.len() == 1 { "it" } else { "them" }
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A workspace whose three files were written before the returned time, then `lib.sh`
    /// and `test.sh` again after it.
    fn workspace() -> (tempfile::TempDir, SystemTime) {
        let dir = tempfile::tempdir().unwrap();
        for f in ["lib.sh", "test.sh", "README.md"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        for f in ["lib.sh", "test.sh", "README.md"] {
            let file = std::fs::File::options()
                .write(true)
                .open(dir.path().join(f))
                .unwrap();
            file.set_modified(old).unwrap();
        }
        let since = SystemTime::now() - std::time::Duration::from_secs(1);
        (dir, since)
    }

    fn touch(dir: &Path, name: &str) {
        std::fs::write(dir.join(name), "y").unwrap();
    }

    #[test]
    fn a_file_claimed_changed_that_no_call_changed_is_named() {
        let (dir, since) = workspace();
        touch(dir.path(), "lib.sh");
        let reply = "I added the `mul` function to `lib.sh` and created a check for it in \
                     `test.sh`.";
        assert_eq!(unmade(reply, dir.path(), since), ["test.sh"]);
        let reply = "Created CHANGELOG.md with the heading.";
        assert_eq!(unmade(reply, dir.path(), since), ["CHANGELOG.md"]);
        let text = reminder(&["test.sh".into()]).unwrap();
        assert!(
            text.contains("`test.sh`") && text.contains("changed it"),
            "{text}"
        );
        assert_eq!(reminder(&[]), None);
    }

    #[test]
    fn mentions_without_a_claim_or_of_changed_files_are_not_named() {
        let (dir, since) = workspace();
        touch(dir.path(), "lib.sh");
        touch(dir.path(), "test.sh");
        for reply in [
            "I added the `mul` function to lib.sh and a check to test.sh.",
            "The check in test.sh verifies `add`. README.md is unchanged.",
            "I fixed the typo in the heading.",
            "I created notes in src/deep/new.rs.",
            "Updated ../outside.sh and /etc/hosts.",
        ] {
            assert!(unmade(reply, dir.path(), since).is_empty(), "{reply}");
        }
    }
}
