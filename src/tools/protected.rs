//! Protected paths: places in the workspace that `write` and `edit` may change only with the
//! user's approval each time, even after "always allow" for the tool and even under `--yes`.
//! They are every path with a `.git` component at any depth (a repository's history, config
//! and hooks, nested repositories included: a hook or `core.fsmonitor` runs code on the next
//! git command), the hooks folder git is configured to use (`core.hooksPath`, e.g. `.husky/`),
//! `.minicode/**` except `.minicode/memory/` and `.minicode/plans/` (plan mode's plan files)
//! (minicode's own sessions, logs and outputs), the
//! skill and command roots (`.minicode/skills/`, `.agents/skills/`, `.minicode/commands/`:
//! instructions the model follows), `.mcp.json` (programs to start) and `config/config.toml`
//! (where older versions kept the workspace's config, read while it holds only minicode's
//! tables: protected even when it is a service's own file, since an edit leaving only
//! minicode's tables would make it the workspace's config; the current file,
//! `.minicode/config.toml`, is covered by `.minicode/**`).
//!
//! This module only classifies a resolved path; the agent decides what a protected path
//! means for approval. `bash` is not covered: a command is shown whole and approved as such.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

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
    for (root, reason) in ROOTS {
        let lexical = workspace.join(root);
        let Ok(real) = lexical.canonicalize() else {
            continue;
        };
        if real == lexical || !path.starts_with(&real) {
            continue;
        }
        if *root == ".minicode"
            && ["memory", "plans"].iter().any(|open| {
                lexical
                    .join(open)
                    .canonicalize()
                    .is_ok_and(|dir| path.starts_with(dir))
            })
        {
            return None;
        }
        return Some(reason);
    }
    in_hooks_path(workspace, path).then_some(HOOKS)
}

const GIT: &str = "inside a .git folder (a repository's history, config and hooks)";
const DATA: &str = "inside .minicode (minicode's sessions, logs and outputs)";
const SKILLS: &str = "a skills or commands folder (instructions the model follows)";
const MCP: &str = "the workspace's .mcp.json (it names programs to start)";
const CONFIG: &str = "the workspace's config file (it can choose the server and the key)";
const HOOKS: &str = "inside the hooks folder git is configured to use (core.hooksPath)";

/// Protected names at the workspace root, most specific first (their real paths are checked
/// too, for a root that is a link elsewhere in the workspace).
const ROOTS: &[(&str, &str)] = &[
    (".git", GIT),
    (".minicode/skills", SKILLS),
    (".minicode/commands", SKILLS),
    (".minicode", DATA),
    (".agents/skills", SKILLS),
    (".mcp.json", MCP),
    ("config/config.toml", CONFIG),
];

fn by_name(rel: &Path) -> Option<&'static str> {
    let parts: Vec<&str> = rel
        .components()
        .map(|c| match c {
            Component::Normal(name) => name.to_str().unwrap_or(""),
            _ => "",
        })
        .collect();
    let is = |i: usize, name: &str| parts.get(i).is_some_and(|p| p.eq_ignore_ascii_case(name));
    if (0..parts.len()).any(|i| is(i, ".git")) {
        return Some(GIT);
    }
    if is(0, ".minicode") {
        if is(1, "skills") || is(1, "commands") {
            return Some(SKILLS);
        }
        return (!is(1, "memory") && !is(1, "plans")).then_some(DATA);
    }
    if is(0, ".agents") && is(1, "skills") {
        return Some(SKILLS);
    }
    if is(0, ".mcp.json") && parts.len() == 1 {
        return Some(MCP);
    }
    if is(0, "config") && is(1, "config.toml") && parts.len() == 2 {
        return Some(CONFIG);
    }
    None
}

/// The most of a `.git/config` that is read: a real one is a few hundred bytes.
const GIT_CONFIG_LIMIT: u64 = 256 * 1024;

/// Whether `path` is inside the hooks folder `core.hooksPath` names in the `.git/config` of
/// the workspace or of a repository between it and `path` (a nested one). The file is read
/// confined to the workspace and never through a FIFO or device; git itself is not run.
fn in_hooks_path(workspace: &Path, path: &Path) -> bool {
    let mut repo = path.parent();
    while let Some(dir) = repo {
        if !dir.starts_with(workspace) {
            break;
        }
        if let Some(hooks) = hooks_path(workspace, dir) {
            let real = hooks.canonicalize().unwrap_or_else(|_| hooks.clone());
            if path.starts_with(&hooks) || path.starts_with(&real) {
                return true;
            }
        }
        repo = dir.parent();
    }
    false
}

/// The hooks folder the repository at `repo` configures, resolved against `repo` (where git
/// runs hooks from in a work tree) when relative.
fn hooks_path(workspace: &Path, repo: &Path) -> Option<PathBuf> {
    let file = repo.join(".git").join("config");
    let (handle, meta) = crate::fsutil::open_confined(workspace, &file).ok()?;
    if meta.len() > GIT_CONFIG_LIMIT {
        return None;
    }
    let mut text = String::new();
    handle
        .take(GIT_CONFIG_LIMIT)
        .read_to_string(&mut text)
        .ok()?;
    let value = core_hooks_path(&text)?;
    let value = Path::new(&value);
    Some(if value.is_absolute() {
        value.to_path_buf()
    } else {
        repo.join(value)
    })
}

/// The last `hooksPath` of a `[core]` section in git config text (sections and keys ignore
/// case; a value may be quoted and followed by a comment). `None` when unset or empty.
fn core_hooks_path(text: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some(end) = rest.find(']') else {
                continue;
            };
            in_core = rest[..end].trim().eq_ignore_ascii_case("core");
            // `[core] hooksPath = x` on one line is valid git config.
            line = rest[end + 1..].trim();
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("hookspath") {
            found = Some(config_value(value));
        }
    }
    found.filter(|v| !v.is_empty())
}

/// A git config value: quotes removed, `\"` and `\\` unescaped, an unquoted `#` or `;` ends it.
fn config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => out.extend(chars.next()),
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim_end().to_string()
}
