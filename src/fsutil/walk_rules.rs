//! What a walk of the workspace sees, in one place: the tools' walks (`list`, `search`, `find`),
//! the checkpoint scan and the search for nested `AGENTS.md` files start from the same setup, so
//! a file the model can list is a file a checkpoint records, and an ignored one is neither.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

/// The ignore files a walk with these rules reads in every folder it enters.
const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".git/info/exclude"];

/// Git config files larger than this are not searched here; the `ignore` crate reads them.
const CONFIG_SCAN_LIMIT: u64 = 1 << 20;

/// `builder` set up to see what git would: every ignore file (also outside a git repository),
/// hidden files included, links never followed.
pub(crate) fn with_ignore_rules(mut builder: WalkBuilder) -> WalkBuilder {
    builder
        .hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(global_excludes_may_apply())
        .require_git(false)
        .follow_links(false);
    builder
}

/// Whether a walk may read `dir`'s ignore files: each is absent or a regular file. A repository
/// can plant a FIFO there, which would block the walk forever, or a link or device that reads
/// anything; a walk must neither start in nor enter a folder where one is something else.
pub(crate) fn ignore_files_safe(dir: &Path) -> bool {
    IGNORE_FILES
        .iter()
        .all(|name| std::fs::symlink_metadata(dir.join(name)).map_or(true, |m| m.is_file()))
}

/// Whether the user may have a global excludes file. The `ignore` crate finds it by compiling a
/// regex over the git config files: about 1.4 million instructions once per process, 5% of a
/// whole five-call one-shot run. When no config mentions `excludesFile` and git's
/// default file does not exist there is nothing to find, so the walk skips the search; otherwise
/// the crate's own lookup decides, so the rules applied are git's either way.
fn global_excludes_may_apply() -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg_config = non_empty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let configs = [
        non_empty("GIT_CONFIG_GLOBAL").map(PathBuf::from),
        home.as_ref().map(|h| h.join(".gitconfig")),
        xdg_config.as_ref().map(|x| x.join("git/config")),
        Some(non_empty("GIT_CONFIG_SYSTEM").map_or_else(|| "/etc/gitconfig".into(), PathBuf::from)),
    ];
    let mentioned = configs
        .iter()
        .flatten()
        .any(|path| match std::fs::metadata(path) {
            Err(_) => false,
            Ok(meta) if !meta.is_file() || meta.len() > CONFIG_SCAN_LIMIT => true,
            Ok(_) => std::fs::read(path).map_or(true, |data| mentions_excludes_file(&data)),
        });
    mentioned || xdg_config.is_some_and(|x| x.join("git/ignore").is_file())
}

/// An environment variable's value when it is set and not empty (git treats empty as unset).
fn non_empty(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Whether `excludesfile` appears anywhere in `data`, in any case (git keys are
/// case-insensitive); a mention in a comment only makes the answer cautious.
fn mentions_excludes_file(data: &[u8]) -> bool {
    const KEY: &[u8] = b"excludesfile";
    data.windows(KEY.len()).any(|w| w.eq_ignore_ascii_case(KEY))
}
