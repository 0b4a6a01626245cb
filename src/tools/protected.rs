//! Protected paths: places in the workspace that `write` and `edit` may change only with the
//! user's approval each time, even after "always allow" for the tool. They are `.git/**` (the
//! repository's history, config and hooks: a hook runs code on the user's next commit),
//! `.minicode/**` except `.minicode/memory/` (minicode's own sessions, logs and outputs) and
//! the workspace's `config/config.toml` (it can choose the server and the key once trusted).
//!
//! This module only classifies a resolved path; the agent decides what a protected path
//! means for approval. `bash` is not covered: a command is shown whole and approved as such.

use std::path::{Component, Path};

/// Why `path` (already resolved by `fsutil::resolve_in_workspace`, so `..` and symbolic links
/// are gone) is protected, or `None`. Names are compared without regard to ASCII case, so a
/// case-insensitive file system cannot slip `.GIT/config` past the check; a protected folder
/// that is itself a link elsewhere in the workspace is matched by its real path as well.
pub fn reason(workspace: &Path, path: &Path) -> Option<&'static str> {
    if let Ok(rel) = path.strip_prefix(workspace)
        && let Some(reason) = by_name(rel)
    {
        return Some(reason);
    }
    for (root, reason) in [
        (".git", GIT),
        (".minicode", DATA),
        ("config/config.toml", CONFIG),
    ] {
        let lexical = workspace.join(root);
        let Ok(real) = lexical.canonicalize() else {
            continue;
        };
        if real == lexical || !path.starts_with(&real) {
            continue;
        }
        if root == ".minicode"
            && let Ok(memory) = lexical.join("memory").canonicalize()
            && path.starts_with(memory)
        {
            return None;
        }
        return Some(reason);
    }
    None
}

const GIT: &str = "inside .git (the repository's history, config and hooks)";
const DATA: &str = "inside .minicode (minicode's sessions, logs and outputs)";
const CONFIG: &str = "the workspace's config file (it can choose the server and the key)";

fn by_name(rel: &Path) -> Option<&'static str> {
    let mut parts = rel.components().map(|c| match c {
        Component::Normal(name) => name.to_str().unwrap_or(""),
        _ => "",
    });
    let is = |part: Option<&str>, name: &str| part.is_some_and(|p| p.eq_ignore_ascii_case(name));
    let first = parts.next();
    if is(first, ".git") {
        return Some(GIT);
    }
    let second = parts.next();
    if is(first, ".minicode") {
        return (!is(second, "memory")).then_some(DATA);
    }
    if is(first, "config") && is(second, "config.toml") && parts.next().is_none() {
        return Some(CONFIG);
    }
    None
}
