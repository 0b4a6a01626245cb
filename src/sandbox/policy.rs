//! Building the [`Policy`] of a workspace: which folders a confined command may write and which
//! paths inside them stay read-only. Pure path work: nothing here confines anything (the
//! helper process does, see `sandbox::enforce`), and nothing is created but what the caller
//! asks for.

use std::path::{Path, PathBuf};

use super::{Mode, Policy};

/// Names below the workspace root that stay read-only inside a writable root: minicode's own
/// data (sessions, logs, skills, commands) and the files the trust rule protects (see
/// `tools::protected`): programs to start and the workspace's config. The repository's own
/// read-only parts are `sandbox::gitdir`'s.
const PROTECTED: &[&str] = &[
    ".minicode",
    ".agents/skills",
    ".mcp.json",
    "config/config.toml",
];

impl Policy {
    /// The policy of `mode` for `workspace` (canonical): the workspace and `extra_writable`
    /// are the writable roots (none under [`Mode::ReadOnly`]), `tmpdir` the private temporary
    /// folder (see `sandbox::tmpdir`). Roots that do not exist are left out, paths are made
    /// canonical where they exist.
    pub fn for_workspace(
        mode: Mode,
        network: bool,
        workspace: &Path,
        extra_writable: &[PathBuf],
        tmpdir: PathBuf,
    ) -> Policy {
        let writable: Vec<PathBuf> = match mode {
            Mode::WorkspaceWrite => std::iter::once(workspace)
                .chain(extra_writable.iter().map(PathBuf::as_path))
                .filter_map(|p| p.canonicalize().ok())
                .fold(Vec::new(), |mut roots, p| {
                    if !roots.contains(&p) {
                        roots.push(p);
                    }
                    roots
                }),
            Mode::ReadOnly | Mode::Off => Vec::new(),
        };
        let mut read_only = Vec::new();
        let mut git_dirs = Vec::new();
        if let Some(root) = writable.first() {
            for name in PROTECTED {
                push_unique(&mut read_only, root.join(name));
            }
            let repo = super::gitdir::layout(root);
            for path in repo.read_only {
                push_unique(&mut read_only, path);
            }
            git_dirs = repo.dirs;
        }
        Policy {
            mode,
            network: network || mode == Mode::Off,
            writable,
            tmpdir,
            read_only,
            git_dirs,
            cache: None,
            hidden: Vec::new(),
        }
    }

    /// This policy with `hidden` as the paths a command must not see (see
    /// `sandbox::hidden`).
    pub fn hiding(mut self, hidden: Vec<PathBuf>) -> Policy {
        self.hidden = hidden;
        self
    }

    /// This policy with `cache` (absolute) as the folder caches go to, writable (see
    /// `sandbox::cache`); `None` keeps them in the temporary folder.
    pub fn caching(mut self, cache: Option<PathBuf>) -> Policy {
        if self.is_confined() {
            self.cache = cache;
        }
        self
    }

    /// No confinement: what library users and tests get unless they choose a profile.
    pub fn unconfined() -> Policy {
        Policy {
            mode: Mode::Off,
            network: true,
            writable: Vec::new(),
            tmpdir: PathBuf::new(),
            read_only: Vec::new(),
            git_dirs: Vec::new(),
            cache: None,
            hidden: Vec::new(),
        }
    }

    /// Whether calls under this policy are confined at all.
    pub(crate) fn is_confined(&self) -> bool {
        self.mode != Mode::Off
    }

    /// Whether `path` (absolute) may be written under this policy: below a writable root or
    /// the temporary folder, and not below a read-only path.
    pub(crate) fn allows_write(&self, path: &Path) -> bool {
        if !self.is_confined() {
            return true;
        }
        if path == Path::new("/dev/null") {
            return true;
        }
        if self.read_only.iter().any(|r| path.starts_with(r)) {
            return false;
        }
        (!self.tmpdir.as_os_str().is_empty() && path.starts_with(&self.tmpdir))
            || self.cache.as_ref().is_some_and(|c| path.starts_with(c))
            || self.writable.iter().any(|w| path.starts_with(w))
            || self.git_dirs.iter().any(|g| path.starts_with(g))
    }
}

fn push_unique(list: &mut Vec<PathBuf>, path: PathBuf) {
    let path = path.canonicalize().unwrap_or(path);
    if !list.contains(&path) {
        list.push(path);
    }
}
