//! What a test needs of the kernel, asserted rather than skipped: the sandbox tests (and the
//! hook and plan-mode tests that run under the sandbox) need Landlock and unprivileged user
//! namespaces. This machine and CI have both (`.ci/run` says so); on a kernel without them
//! these tests fail with what is missing, never pass by returning early.

use std::path::Path;

/// Panics, naming what is missing, unless this kernel has what the `bash` sandbox needs.
pub fn require_sandbox() {
    let missing = match minicode::sandbox::probe::landlock_abi() {
        Err(e) => Some(format!("no Landlock: {e}")),
        Ok(abi) if abi < minicode::sandbox::probe::MIN_LANDLOCK_ABI => {
            Some(format!("Landlock ABI {abi} is too old"))
        }
        Ok(_) => minicode::sandbox::probe::userns_restriction()
            .map(|s| format!("unprivileged user namespaces are off ({s})")),
    };
    if let Some(missing) = missing {
        panic!(
            "this test needs the bash sandbox, which this kernel cannot enforce: {missing} \
             (see docs/security.md; skip the sandbox tests with `-- --skip sandbox`)"
        );
    }
}

/// Panics with minicode's own explanation unless `minicode sandbox -- true` runs in `dir`
/// (hooks and plan mode's `bash` run under the sandbox).
pub fn require_working_sandbox(dir: &Path) {
    let out = super::binary::command(dir)
        .args(["sandbox", "--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "this test needs the bash sandbox, which cannot be enforced here: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
