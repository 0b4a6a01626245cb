//! Which session files git tracks. A repository can commit `.minicode/sessions/<id>.json` (past
//! the ignore file, with `git add -f`): such a file is someone else's conversation, planted by a
//! clone, never one `--continue` should pick. We ask the `git` binary (`ls-files`, which only
//! reads the index) rather than parse `.git/index` ourselves: index versions, split and sparse
//! indexes and worktrees stay git's business. What a repository's config could make git run
//! while reading the index (an fsmonitor hook) is switched off on the command line, which
//! overrides every config file; nothing else `ls-files` does runs repository code. The child gets
//! no variable but `PATH` and `HOME` (never a key), no terminal, and a deadline.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `git ls-files` may take before we give up and treat nothing as tracked.
const DEADLINE: Duration = Duration::from_secs(3);

/// The most output read from git: far more than any real list of session files.
const MAX_OUTPUT: u64 = 4 * 1024 * 1024;

/// The ids of the session files under `<workspace>/.minicode/sessions/` that git tracks. Empty
/// when the workspace is not in a repository, git is missing, or it fails or hangs: the listing
/// must work without git, and a file git does not know about was not planted by a clone.
pub(super) fn ids(workspace: &Path) -> HashSet<String> {
    // No process for a workspace outside any repository (the common case for a scratch folder):
    // git would only walk up and fail.
    if !workspace
        .ancestors()
        .any(|dir| dir.join(".git").symlink_metadata().is_ok())
    {
        return HashSet::new();
    }
    let mut cmd = Command::new("git");
    cmd.current_dir(workspace)
        .env_clear()
        .envs(
            ["PATH", "HOME"]
                .iter()
                .filter_map(|n| Some((n, std::env::var_os(n)?))),
        )
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.untrackedCache=false",
        ])
        .args(["ls-files", "-z", "--", ".minicode/sessions/"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = cmd.spawn() else {
        return HashSet::new();
    };
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return HashSet::new();
    };
    // Read on a thread so a full pipe cannot stall git while we wait for it to exit.
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.take(MAX_OUTPUT).read_to_end(&mut bytes);
        bytes
    });
    let started = Instant::now();
    let succeeded = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.success(),
            Ok(None) if started.elapsed() < DEADLINE => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
        }
    };
    let bytes = reader.join().unwrap_or_default();
    if !succeeded {
        return HashSet::new();
    }
    bytes
        .split(|b| *b == 0)
        .filter_map(|path| std::str::from_utf8(path).ok())
        .filter_map(|path| {
            path.strip_prefix(".minicode/sessions/")?
                .strip_suffix(".json")
        })
        .filter(|id| super::is_valid_id(id))
        .map(str::to_string)
        .collect()
}
