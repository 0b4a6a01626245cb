//! The runs' scratch workspaces: fresh private folders under the system's temporary folder,
//! named after the evaluator's pid and removed when their run ends. An evaluator that was
//! killed cannot remove its own; the next one sweeps them: folders of that name, ours, whose
//! evaluator is gone.

use std::path::{Path, PathBuf};

const PREFIX: &str = "minicode-eval-";

/// A fresh private folder, removed when dropped. Outside `--out` on purpose: a workspace
/// inside a repository would pick up its AGENTS.md and git root.
pub(super) struct Scratch(PathBuf);

impl Scratch {
    pub(super) fn new() -> std::io::Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        loop {
            let path = base.join(format!(
                "{PREFIX}{}-{:016x}",
                std::process::id(),
                fastrand::u64(..)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Scratch(path.canonicalize()?)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes the scratch folders of evaluators that are gone (killed before they could).
/// Only folders named exactly as [`Scratch::new`] names them, owned by this user, not links.
pub(crate) fn sweep_orphans() {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let uid = nix::unistd::getuid().as_raw();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(evaluator_pid) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() && meta.uid() == uid && !alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The pid in `minicode-eval-<pid>-<16 hex digits>`, the scratch folders' name.
fn evaluator_pid(name: &str) -> Option<i32> {
    let (pid, random) = name.strip_prefix(PREFIX)?.split_once('-')?;
    let hex = random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    if hex && digits {
        pid.parse().ok()
    } else {
        None
    }
}

/// Whether process `pid` exists (a process of another user counts as alive).
fn alive(pid: i32) -> bool {
    pid > 0
        && !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scratch_names_give_a_pid() {
        assert_eq!(evaluator_pid("minicode-eval-42-00000000deadbeef"), Some(42));
        for name in [
            "minicode-eval-2026-12-07T131837Z",
            "minicode-eval-42-beef",
            "minicode-eval--00000000deadbeef",
            "other-42-00000000deadbeef",
        ] {
            assert_eq!(evaluator_pid(name), None, "{name}");
        }
    }
}
