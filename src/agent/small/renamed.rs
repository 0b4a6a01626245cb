//! A rename left half done. Qwen2.5-Coder 1.5B, asked to rename a function everywhere, with
//! the folder's three files in view, replaced the name in one file and said the whole rename
//! was done (two runs of three). When, in the small profile, a turn that replaced one
//! identifier by another with `edit` would end while files the model read still hold the old
//! name, it is told where, once. Only files the session has read are looked at (no walk of
//! the workspace), each at most [`MAX_FILE_BYTES`].

use std::path::{Path, PathBuf};

/// Bytes of a read file looked at for the old name; a larger one is passed over.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Files named in the reminder at most.
const MAX_FILES: usize = 5;
/// Line numbers named per file at most.
const MAX_LINES: usize = 5;

/// The old identifier of an `edit` call's arguments that replace one identifier by another
/// (`fetch_data` → `load_data`); `None` for any other edit.
pub(super) fn renamed_identifier(arguments: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let old = value.get("old_string")?.as_str()?.trim();
    let new = value.get("new_string")?.as_str()?.trim();
    (identifier(old) && identifier(new) && old != new).then(|| old.to_string())
}

/// Whether `word` is an identifier worth following: a letter or `_` first, then letters,
/// digits and `_`, at least three characters (so `a` → `b` is not a rename to chase).
fn identifier(word: &str) -> bool {
    let mut chars = word.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && word.len() >= 3 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The 1-based numbers of the lines of `text` where `word` stands as a whole word.
pub(super) fn lines_with_word(text: &str, word: &str) -> Vec<usize> {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.match_indices(word).any(|(at, _)| {
                let before = line[..at].chars().next_back().is_some_and(part);
                let after = line[at + word.len()..].chars().next().is_some_and(part);
                !before && !after
            })
        })
        .map(|(index, _)| index + 1)
        .collect()
}

/// Where the read files (`seen`, canonical paths) still hold one of `olds`: (old name, the
/// file relative to `workspace`, line numbers), in the order of `seen`.
pub(super) fn left_behind(
    workspace: &Path,
    seen: &[PathBuf],
    olds: &[String],
) -> Vec<(String, String, Vec<usize>)> {
    let mut found = Vec::new();
    for path in seen {
        if found.len() == MAX_FILES {
            break;
        }
        let Ok(rel) = path.strip_prefix(workspace) else {
            continue;
        };
        let small =
            std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES);
        let Some(text) = small.then(|| std::fs::read_to_string(path).ok()).flatten() else {
            continue;
        };
        for old in olds {
            let mut lines = lines_with_word(&text, old);
            if !lines.is_empty() {
                lines.truncate(MAX_LINES);
                found.push((old.clone(), rel.display().to_string(), lines));
                break;
            }
        }
    }
    found
}

/// The reminder naming what [`left_behind`] found; `None` when it found nothing.
pub(super) fn reminder(found: &[(String, String, Vec<usize>)]) -> Option<String> {
    let (old, _, _) = found.first()?;
    let places: Vec<String> = found
        .iter()
        .map(|(_, file, lines)| {
            let numbers: Vec<String> = lines.iter().map(usize::to_string).collect();
            let word = if lines.len() == 1 { "line" } else { "lines" };
            format!("{file} ({word} {})", numbers.join(", "))
        })
        .collect();
    Some(format!(
        "You replaced `{old}` with `edit`, but files you read still contain it: {}. If the task \
         is to rename it everywhere, edit those places too (read a file again first if it \
         changed); if they should keep it, give your final answer and say why.",
        places.join("; ")
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_replacing_one_identifier_by_another_is_a_rename() {
        let args = r#"{"path": "app/util.py", "old_string": "fetch_data", "new_string": "load_data", "replace_all": true}"#;
        assert_eq!(renamed_identifier(args).as_deref(), Some("fetch_data"));
        for args in [
            r#"{"path": "a", "old_string": "def fetch_data(path):", "new_string": "def load_data(path):"}"#,
            r#"{"path": "a", "old_string": "ab", "new_string": "cd"}"#,
            r#"{"path": "a", "old_string": "same", "new_string": "same"}"#,
            r#"{"path": "a", "old_string": "2fast", "new_string": "slow"}"#,
            r#"{"path": "a", "new_string": "x_y"}"#,
            "not json",
        ] {
            assert_eq!(renamed_identifier(args), None, "{args}");
        }
    }

    #[test]
    fn only_whole_words_count_as_the_old_name() {
        let text = "from app.util import fetch_data\nfetch_database()\nx = fetch_data(1)\n";
        assert_eq!(lines_with_word(text, "fetch_data"), vec![1, 3]);
        assert!(lines_with_word("prefetch_data_x", "fetch_data").is_empty());
    }

    #[test]
    fn read_files_still_holding_the_old_name_are_named_with_their_lines() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("util.py"), "def load_data(p):\n    pass\n").unwrap();
        std::fs::write(root.join("main.py"), "import fetch_data\nfetch_data(1)\n").unwrap();
        let seen = vec![
            root.join("util.py"),
            root.join("main.py"),
            root.join("gone.py"),
        ];
        let found = left_behind(&root, &seen, &["fetch_data".to_string()]);
        assert_eq!(
            found,
            vec![("fetch_data".to_string(), "main.py".to_string(), vec![1, 2])]
        );
        let text = reminder(&found).unwrap();
        assert!(
            text.contains("`fetch_data`") && text.contains("main.py (lines 1, 2)"),
            "{text}"
        );
        assert_eq!(reminder(&[]), None);
    }
}
