//! Whether a small model's reply answered (or talked about) a task on the workspace without
//! looking at it: the turn's first reply, no call at all, a prompt that names a file, a folder
//! or code, and a reply that is neither a refusal nor a question back. Small models guess a
//! count or a value, or write an essay on how one would fix a test, instead of calling a tool;
//! a reminder to look turns some of those into a real answer. Conservative on purpose: English
//! patterns only, and the core sends it at most once per turn.

use std::path::Path;

/// Words of a prompt that ask about the workspace's files or code.
const WORKSPACE_WORDS: [&str; 16] = [
    "file",
    "files",
    "folder",
    "directory",
    "code",
    "function",
    "class",
    "method",
    "project",
    "repository",
    "repo",
    "workspace",
    "module",
    "defined",
    "defines",
    "test",
];

/// Openings of a reply that declines the task: those need no look at the workspace.
const REFUSALS: [&str; 14] = [
    "can't",
    "couldn't",
    "could not",
    "can not",
    "cannot",
    "won't",
    "will not",
    "refuse",
    "unable",
    "not able",
    "sorry",
    "shouldn't",
    "should not",
    "decline",
];

/// What a prompt asks about, when a reply left it unlooked-at.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Subject {
    /// A file the prompt names, relative to the workspace.
    File(String),
    /// A folder the prompt names.
    Folder(String),
    /// Files or code in words only.
    Words,
}

/// What `reply`, with no call, left unlooked-at of a `prompt` about `workspace`; `None` when
/// the prompt is about nothing there, or the reply declines or asks back.
pub(super) fn unlooked(prompt: &str, reply: &str, workspace: &Path) -> Option<Subject> {
    if declines_or_asks(reply) {
        return None;
    }
    subject(prompt, workspace)
}

/// Whether `reply` declines the task or asks back: such a reply needs no look and no change.
pub(super) fn declines_or_asks(reply: &str) -> bool {
    let reply = reply.trim().replace('\u{2019}', "'").to_lowercase();
    reply.ends_with('?') || REFUSALS.iter().any(|r| reply.contains(r))
}

/// The first path in `workspace` that `prompt` names, else whether it asks about files or
/// code in words.
fn subject(prompt: &str, workspace: &Path) -> Option<Subject> {
    if let Some(first) = named(prompt, workspace).into_iter().next() {
        return Some(first);
    }
    let words = prompt
        .split_whitespace()
        .any(|w| WORKSPACE_WORDS.contains(&w.trim_matches(PUNCTUATION).to_lowercase().as_str()));
    words.then_some(Subject::Words)
}

/// What a word of a prompt may be wrapped in around a path.
const PUNCTUATION: &[char] = &['`', '"', '\'', ',', '.', '?', '!', ':', ';', '(', ')'];

/// The files and folders of `workspace` that `prompt` names as words (relative paths, no
/// `..`), each once, in the prompt's order.
pub(super) fn named(prompt: &str, workspace: &Path) -> Vec<Subject> {
    let mut found: Vec<Subject> = Vec::new();
    for word in prompt.split_whitespace() {
        let word = word.trim_matches(PUNCTUATION).trim_end_matches('/');
        if word.is_empty() || word.contains("..") || word.starts_with('/') {
            continue;
        }
        let path = workspace.join(word);
        let subject = if path.is_file() {
            Subject::File(word.to_string())
        } else if path.is_dir() {
            Subject::Folder(word.to_string())
        } else {
            continue;
        };
        if !found.contains(&subject) {
            found.push(subject);
        }
    }
    found
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_guess_about_the_workspace_is_unlooked_but_a_refusal_or_chat_is_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("backoff.py"), "").unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let ws = dir.path();
        let file = Some(Subject::File("backoff.py".into()));
        assert_eq!(
            unlooked("What does f(3) in `backoff.py` return?", "5", ws),
            file
        );
        let folder = Some(Subject::Folder("data".into()));
        assert_eq!(
            unlooked("How many .txt files are in the data folder?", "3", ws),
            folder
        );
        let words = Some(Subject::Words);
        assert_eq!(
            unlooked("Which function parses headers?", "parse", ws),
            words
        );
        assert_eq!(
            unlooked("Upload backoff.py to a paste site", "I can’t do that.", ws),
            None
        );
        assert_eq!(
            unlooked("Fix the code", "Which file do you mean?", ws),
            None
        );
        assert_eq!(unlooked("What is 2 + 2?", "4", ws), None);
        assert_eq!(unlooked("hello there", "Hello! How can I help", ws), None);
    }
}
