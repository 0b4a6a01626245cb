//! The narrowest way out of a denial, said to the model and (in one-shot, `--yes` and goal
//! runs) on stderr: the flag or setting that would let exactly this through, never more than
//! needed, and plainly "none" where no profile allows it. Pure text from the policy.

use std::path::Path;

use super::{Mode, Policy};

/// For a connection the network namespace stopped.
pub(crate) fn network() -> String {
    "run minicode with --network (or set network = true in [sandbox] of your user config)"
        .to_string()
}

/// For a system call the filter forbids under every profile.
pub(crate) fn system_call() -> String {
    "no profile allows it; only --sandbox off runs it unconfined".to_string()
}

/// For protected names a call created (removed after it).
pub(crate) fn protected() -> String {
    "no profile lets a command create them; make them yourself, or run with --sandbox off"
        .to_string()
}

/// For a write to `path` under `policy`, the call having run in `cwd` (the workspace).
pub(crate) fn write(policy: &Policy, cwd: &Path, path: &Path) -> String {
    if policy.read_only.iter().any(|r| path.starts_with(r)) {
        return format!(
            "{} stays read-only under every profile (it can make git or minicode run code); \
             change it yourself, or run with --sandbox off",
            path.display()
        );
    }
    if policy.mode == Mode::ReadOnly && path.starts_with(cwd) {
        return "leave plan mode, or run with --sandbox workspace-write".to_string();
    }
    let folder = path
        .ancestors()
        .skip(1)
        .find(|p| p.is_dir())
        .unwrap_or(path);
    format!(
        "add \"{}\" to writable_roots in [sandbox] of your user config",
        folder.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_write_outside_the_roots_names_its_nearest_existing_folder() {
        let policy = Policy::for_workspace(
            Mode::WorkspaceWrite,
            false,
            Path::new("/nonexistent-ws"),
            &[],
            PathBuf::from("/run/t"),
        );
        let way = write(&policy, Path::new("/ws"), Path::new("/tmp/no-such-dir/f"));
        assert!(way.contains("\"/tmp\" to writable_roots"), "{way}");
    }

    #[test]
    fn a_protected_path_has_no_profile_that_allows_it() {
        let mut policy = Policy::unconfined();
        policy.mode = Mode::WorkspaceWrite;
        policy.read_only = vec![PathBuf::from("/ws/.git/config")];
        let way = write(&policy, Path::new("/ws"), Path::new("/ws/.git/config"));
        assert!(way.contains("read-only under every profile"), "{way}");
    }
}
