//! `doctor`'s sandbox section: what the kernel offers (Landlock ABI, seccomp, unprivileged
//! user namespaces) and a real trial of the helper (`true` confined as `workspace-write` in a
//! scratch workspace), which says which profile features are active; each missing one comes
//! with its fix; and the paths a confined command cannot see (`[sandbox] hidden` and the
//! defaults), those missing here marked so. It never changes the exit status: that is about the server.

use super::{Check, Status};
use crate::sandbox::probe::{self, MIN_LANDLOCK_ABI};
use crate::sandbox::{Layer, Mode, Policy, tmpdir};

/// The rows of the section, in order; `hidden` is the session's list of hidden paths.
pub(super) fn checks(hidden: &[std::path::PathBuf]) -> Vec<Check> {
    let row = |name, status, detail: String, fix: Option<String>| Check {
        name,
        status,
        detail,
        fix,
    };
    let mut rows = Vec::new();
    let abi = probe::landlock_abi();
    rows.push(match &abi {
        Ok(v) if *v >= MIN_LANDLOCK_ABI => row("landlock", Status::Ok, format!("ABI {v}"), None),
        Ok(v) => row(
            "landlock",
            Status::Fail,
            format!("ABI {v}, older than {MIN_LANDLOCK_ABI}"),
            Some(probe::fix(Layer::Landlock)),
        ),
        Err(e) => row(
            "landlock",
            Status::Fail,
            e.clone(),
            Some(probe::fix(Layer::Landlock)),
        ),
    });
    rows.push(if probe::seccomp_available() {
        row("seccomp", Status::Ok, "filters available".into(), None)
    } else {
        row(
            "seccomp",
            Status::Fail,
            "the kernel offers no seccomp filters".into(),
            Some(probe::fix(Layer::Seccomp)),
        )
    });
    rows.push(match probe::userns_restriction() {
        None => row("user namespaces", Status::Ok, "allowed".into(), None),
        Some(sysctl) => row(
            "user namespaces",
            Status::Warn,
            format!(
                "refused by a sysctl (needs {sysctl}); workspace-write cannot keep .git read-only"
            ),
            Some(probe::fix(Layer::UserNamespace)),
        ),
    });
    rows.push(trial(abi.unwrap_or(0)));
    rows.push(hidden_row(hidden));
    rows
}

/// The hidden paths, each marked `(missing)` when there is nothing to hide here.
fn hidden_row(hidden: &[std::path::PathBuf]) -> Check {
    let shown: Vec<String> = hidden
        .iter()
        .map(|p| {
            let missing = if std::fs::symlink_metadata(p).is_ok() {
                ""
            } else {
                " (missing)"
            };
            format!("{}{missing}", p.display())
        })
        .collect();
    Check {
        name: "hidden",
        status: Status::Ok,
        detail: format!("not visible to confined commands: {}", shown.join(", ")),
        fix: None,
    }
}

/// Runs `true` through the helper under `workspace-write` with the network off.
fn trial(abi: i32) -> Check {
    let scratch = tmpdir::for_session(&format!("doctor-{}", uuid::Uuid::new_v4().simple()));
    let workspace = scratch.join("workspace");
    let ran = tmpdir::ensure(&scratch)
        .and_then(|()| std::fs::create_dir(&workspace))
        .and_then(|()| {
            let policy = Policy::for_workspace(
                Mode::WorkspaceWrite,
                false,
                &workspace,
                &[],
                scratch.join("tmp"),
            );
            crate::cli::sandbox::trial(&policy, &workspace)
        });
    tmpdir::remove(&scratch);
    let (status, detail, fix) = match ran {
        Ok(Ok(())) => (Status::Ok, active(abi), None),
        Ok(Err(u)) => (
            Status::Fail,
            format!("bash calls cannot be confined: {:?}: {}", u.layer, u.reason),
            Some(u.fix),
        ),
        Err(e) => (
            Status::Fail,
            format!("the helper could not be tried: {e}"),
            Some("run with `--sandbox off`".to_string()),
        ),
    };
    Check {
        name: "sandbox",
        status,
        detail,
        fix,
    }
}

/// The features a confined call gets on this kernel.
fn active(abi: i32) -> String {
    let mut features = vec![
        "writes only in the workspace, extra roots and TMPDIR (Landlock)",
        "git config, hooks and links, .minicode and protected config read-only; git data writable (mount namespace)",
        "runtime folder and credentials hidden (mount namespace)",
        "each call in its own PID namespace: nothing it starts outlives it",
        "no capabilities, even as root",
        "mount API and device nodes denied (seccomp)",
        "network off by default: each call has only its own loopback (network namespace)",
        "ptrace, process_vm_*, io_uring denied (seccomp)",
        "no_new_privs",
    ];
    if abi >= 6 {
        features.push("signals and abstract sockets scoped (Landlock ABI 6)");
    }
    format!("enforced: {}", features.join("; "))
}
