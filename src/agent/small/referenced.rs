//! The workspace files a named file points at, for the first look. Asked to make `sh test.sh`
//! pass "by fixing the code", Qwen2.5-Coder 1.5B had `test.sh` attached and edited the test
//! itself: the code it sources (`. ./lib.sh`) was never in view. A file the prompt names goes
//! with the files its text names by a path that exists in the workspace, while the first look
//! has room; nothing is followed further than that one step.

use std::path::Path;

/// Largest named file whose text is looked through for paths.
const MAX_SCANNED_BYTES: u64 = 16 * 1024;

/// The workspace-relative paths of regular files that the text of `file` (relative to
/// `workspace`) names, in order of first mention, at most `room`, none of them `skip`ped (a
/// secret, a hidden file, one attached already).
pub(super) fn referenced(
    workspace: &Path,
    file: &str,
    room: usize,
    skip: impl Fn(&str) -> bool,
) -> Vec<String> {
    let path = workspace.join(file);
    let small =
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SCANNED_BYTES);
    if !small || room == 0 {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let folder = Path::new(file).parent().unwrap_or(Path::new(""));
    let mut found: Vec<String> = Vec::new();
    for token in text.split(|c: char| c.is_whitespace() || "()[]{}<>\"'`,;:=|&$".contains(c)) {
        let Some(rel) = candidate(token) else {
            continue;
        };
        // Relative to the file's folder first (`. ./lib.sh` from its own folder), then to the
        // root (a path written from the project's top).
        let resolved = [folder.join(rel), Path::new(rel).to_path_buf()]
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned())
            .find(|p| regular_in(workspace, p));
        let Some(rel) = resolved else {
            continue;
        };
        if rel == file || found.contains(&rel) || skip(&rel) {
            continue;
        }
        found.push(rel);
        if found.len() == room {
            break;
        }
    }
    found
}

/// `token` as a relative path worth trying: a file name with an extension (`lib.sh`,
/// `./src/util.py`), no `..`, not absolute, not a URL.
fn candidate(token: &str) -> Option<&str> {
    let token = token.trim_end_matches(['.', ',']);
    let token = token.strip_prefix("./").unwrap_or(token);
    let name = token.rsplit('/').next()?;
    let (stem, ext) = name.rsplit_once('.')?;
    let plain = !token.starts_with('/')
        && !token.contains("..")
        && !token.contains("//")
        && !stem.is_empty()
        && !ext.is_empty()
        && ext.chars().all(|c| c.is_ascii_alphanumeric());
    plain.then_some(token)
}

/// Whether `rel` is a regular file (not a link) in `workspace`.
fn regular_in(workspace: &Path, rel: &str) -> bool {
    std::fs::symlink_metadata(workspace.join(rel)).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn files_a_script_sources_or_reads_are_found_in_order_once() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::write(
            ws.join("test.sh"),
            "#!/bin/sh\n. ./lib.sh\n[ \"$(cat value.txt)\" = x ] && . ./lib.sh\ncat gone.txt \
             /etc/passwd ../up.sh https://x.org/a.sh\n",
        )
        .unwrap();
        for f in ["lib.sh", "value.txt", "up.sh"] {
            std::fs::write(ws.join(f), "x").unwrap();
        }
        assert_eq!(
            referenced(ws, "test.sh", 3, |_| false),
            ["lib.sh", "value.txt"]
        );
        assert_eq!(referenced(ws, "test.sh", 1, |_| false), ["lib.sh"]);
        assert_eq!(
            referenced(ws, "test.sh", 3, |p| p == "lib.sh"),
            ["value.txt"]
        );
        assert!(referenced(ws, "test.sh", 0, |_| false).is_empty());
        assert!(referenced(ws, "missing.sh", 3, |_| false).is_empty());
    }

    #[test]
    fn a_path_is_tried_from_the_files_folder_then_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("app")).unwrap();
        std::fs::write(ws.join("app/run.sh"), "python3 ./main.py config/app.toml\n").unwrap();
        std::fs::write(ws.join("app/main.py"), "x").unwrap();
        std::fs::create_dir_all(ws.join("config")).unwrap();
        std::fs::write(ws.join("config/app.toml"), "x").unwrap();
        assert_eq!(
            referenced(ws, "app/run.sh", 3, |_| false),
            ["app/main.py", "config/app.toml"]
        );
    }
}
