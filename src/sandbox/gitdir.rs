//! Which parts of a workspace's repository a confined command may write. Git's data (objects,
//! refs, the index, logs, `HEAD` and the like) is writable so that `git add` and `git commit`
//! work; what makes git run a program outside the sandbox stays read-only: `config` (and
//! `config.worktree`), `hooks`, `info`, the `commondir` and `gitdir` links (they redirect git to
//! another directory and so to another config), the folder `core.hooksPath` names, and the
//! same in every submodule's and linked work tree's git directory. Pure path work on what
//! exists when the call starts; the namespace binds (`enforce::namespace`) and the guard
//! (`sandbox::guard`, for names that do not exist yet) enforce it.

use std::path::{Path, PathBuf};

/// The names inside a git directory that make git run code or look elsewhere.
const CODE: &[&str] = &[
    "config",
    "config.worktree",
    "hooks",
    "info",
    "commondir",
    "gitdir",
];

/// How deep submodules of submodules are followed.
const MAX_DEPTH: usize = 6;

/// A workspace's git directories and what stays read-only in them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Layout {
    /// Git directories whose data may change but which cannot be moved, removed or replaced
    /// (each is bound over itself).
    pub(super) dirs: Vec<PathBuf>,
    /// Paths that stay read-only (or, missing, must not be created).
    pub(super) read_only: Vec<PathBuf>,
}

impl Layout {
    fn pin(&mut self, dir: PathBuf) {
        if !self.dirs.contains(&dir) {
            self.dirs.push(dir);
        }
    }

    fn protect(&mut self, path: PathBuf) {
        if !self.read_only.contains(&path) {
            self.read_only.push(path);
        }
    }
}

/// The layout of the repository whose work tree is `root` (canonical). Without a `.git`,
/// `.git` itself is protected: a call must not make a repository whose config the user's git
/// would later obey.
pub(super) fn layout(root: &Path) -> Layout {
    let mut layout = Layout::default();
    if std::fs::symlink_metadata(root.join(".git")).is_err() {
        layout.protect(root.join(".git"));
        return layout;
    }
    work_tree(root, &mut layout);
    for path in submodule_paths(root) {
        let sub = root.join(path);
        if sub.starts_with(root) && sub.is_dir() {
            work_tree(&sub, &mut layout);
        }
    }
    layout
}

/// The git directory of the work tree `root` and everything it names (nothing when it has
/// none: an uninitialised submodule).
fn work_tree(root: &Path, layout: &mut Layout) {
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return;
    };
    if meta.is_dir() {
        git_dir(root, &dot_git, layout, 0);
        return;
    }
    // A `.git` file (linked work tree, submodule) or a link: the name itself stays put.
    layout.protect(dot_git);
    if let Some(dir) = named_git_dir(root) {
        if let Some(common) = common_dir(&dir) {
            git_dir(root, &common, layout, 0);
        }
        git_dir(root, &dir, layout, 0);
    }
}

/// Pins `dir` and protects its code paths, its hooks folder and those of the git directories
/// inside it (linked work trees, submodules).
fn git_dir(root: &Path, dir: &Path, layout: &mut Layout, depth: usize) {
    layout.pin(dir.to_path_buf());
    for name in CODE {
        layout.protect(dir.join(name));
    }
    for config in ["config", "config.worktree"] {
        if let Some(hooks) = hooks_path(root, &dir.join(config)) {
            layout.protect(hooks);
        }
    }
    if depth >= MAX_DEPTH {
        return;
    }
    for entry in subdirs(&dir.join("worktrees")) {
        for name in CODE {
            layout.protect(entry.join(name));
        }
    }
    modules(root, &dir.join("modules"), layout, depth + 1);
}

/// Submodules' git directories below `dir` (`modules/<name>`, where a name may hold `/`).
fn modules(root: &Path, dir: &Path, layout: &mut Layout, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for entry in subdirs(dir) {
        if entry.join("HEAD").exists() {
            git_dir(root, &entry, layout, depth);
        } else {
            modules(root, &entry, layout, depth + 1);
        }
    }
}

/// The real folders directly inside `dir` (links are not followed).
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// The real git directory a `.git` file (a work tree or submodule) points to, canonical.
pub(super) fn named_git_dir(root: &Path) -> Option<PathBuf> {
    let named = small_file(&root.join(".git"))?;
    let named = named
        .lines()
        .find_map(|l| l.strip_prefix("gitdir:"))?
        .trim();
    relative_to(root, named).canonicalize().ok()
}

/// The common directory a linked work tree's git directory names in `commondir`.
fn common_dir(dir: &Path) -> Option<PathBuf> {
    let named = small_file(&dir.join("commondir"))?;
    relative_to(dir, named.trim()).canonicalize().ok()
}

/// The folder `core.hooksPath` names in the git config file `config`, if any (`~/` is the
/// home folder, a relative path is taken from the work tree `root`, as git does).
fn hooks_path(root: &Path, config: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let name = line.trim_start_matches('[').split([']', ' ', '"']).next();
            in_core = name.is_some_and(|n| n.eq_ignore_ascii_case("core"));
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if in_core && key.trim().eq_ignore_ascii_case("hookspath") {
            found = Some(value.trim().trim_matches('"').to_string());
        }
    }
    let value = found.filter(|v| !v.is_empty())?;
    let path = match value.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => relative_to(root, &value),
    };
    Some(path.canonicalize().unwrap_or(path))
}

/// The `path = …` values of the workspace's `.gitmodules`.
fn submodule_paths(root: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(root.join(".gitmodules")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.trim().split_once('='))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case("path"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty() && !v.split('/').any(|part| part == ".."))
        .collect()
}

fn small_file(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

fn relative_to(base: &Path, named: &str) -> PathBuf {
    let path = Path::new(named);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Result = std::result::Result<(), Box<dyn std::error::Error>>;

    fn repo() -> std::io::Result<(tempfile::TempDir, PathBuf)> {
        let tmp = tempfile::tempdir()?;
        let root = tmp.path().canonicalize()?;
        std::fs::create_dir_all(root.join(".git/hooks"))?;
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n")?;
        Ok((tmp, root))
    }

    #[test]
    fn a_plain_repository_keeps_its_code_paths_read_only_and_its_data_writable() -> Result {
        let (_tmp, root) = repo()?;
        let layout = layout(&root);
        assert_eq!(layout.dirs, vec![root.join(".git")]);
        for name in ["config", "hooks", "info", "commondir"] {
            assert!(layout.read_only.contains(&root.join(".git").join(name)));
        }
        assert!(!layout.read_only.iter().any(|p| p.ends_with("HEAD")));
        assert!(!layout.read_only.contains(&root.join(".git")));
        Ok(())
    }

    #[test]
    fn without_a_repository_dot_git_itself_is_protected() -> Result {
        let tmp = tempfile::tempdir()?;
        let layout = layout(tmp.path());
        assert!(layout.dirs.is_empty());
        assert_eq!(layout.read_only, vec![tmp.path().join(".git")]);
        Ok(())
    }

    #[test]
    fn hooks_path_and_submodules_are_protected() -> Result {
        let (_tmp, root) = repo()?;
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n[Core]\n\thooksPath = tools/hooks\n",
        )?;
        std::fs::create_dir_all(root.join(".git/modules/lib/a/hooks"))?;
        std::fs::write(root.join(".git/modules/lib/a/HEAD"), "x\n")?;
        let layout = layout(&root);
        assert!(layout.read_only.contains(&root.join("tools/hooks")));
        let sub = root.join(".git/modules/lib/a");
        assert!(layout.dirs.contains(&sub), "{layout:?}");
        assert!(layout.read_only.contains(&sub.join("config")));
        assert!(layout.read_only.contains(&sub.join("hooks")));
        Ok(())
    }

    #[test]
    fn a_linked_work_tree_protects_its_file_and_both_git_directories() -> Result {
        let (_tmp, main) = repo()?;
        let wt_dir = main.join(".git/worktrees/wt");
        std::fs::create_dir_all(&wt_dir)?;
        std::fs::write(wt_dir.join("commondir"), "../..\n")?;
        let other = tempfile::tempdir()?;
        let tree = other.path().canonicalize()?;
        std::fs::write(tree.join(".git"), format!("gitdir: {}\n", wt_dir.display()))?;
        let layout = layout(&tree);
        assert!(layout.read_only.contains(&tree.join(".git")));
        assert!(layout.dirs.contains(&main.join(".git")));
        assert!(layout.dirs.contains(&wt_dir));
        assert!(layout.read_only.contains(&main.join(".git/config")));
        assert!(layout.read_only.contains(&wt_dir.join("commondir")));
        Ok(())
    }
}
