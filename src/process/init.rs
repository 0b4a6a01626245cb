//! The init (PID 1) of a confined call's PID namespace: the supervisor's child, forked after
//! it entered the namespaces. It seals itself (`sandbox::launch::seal`: Landlock, no
//! capabilities, seccomp), hands the supervisor the listener of the attribution filter
//! (`sandbox::launch::notify`) when it asked for one, starts `bash -c <command>` (with `TMPDIR` and the cache variables
//! of `sandbox::cache`), reaps every process orphaned into it
//! and, when `bash` exits, reports bash's raw wait status (and whether anything it started was
//! still running) on the control socket and exits. The kernel then kills everything left in
//! the namespace, `setsid` and double-forked processes included: nothing a call started
//! outlives it. It dies with the supervisor (`PR_SET_PDEATHSIG`), so with minicode too.
//!
//! Runs in a freshly forked copy of the single-threaded supervisor: ordinary code is safe.
//! It never returns.

use std::io::Write;
use std::os::unix::net::UnixStream;

use crate::sandbox::launch::{self, Launch};

/// The init's main: never returns.
pub(crate) fn run(
    launch: &Launch,
    command: &std::ffi::OsStr,
    mut control: UnixStream,
    notify: Option<UnixStream>,
) -> ! {
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    if let Err(unavailable) = launch::seal(launch) {
        let json = serde_json::to_string(&unavailable).unwrap_or_default();
        let _ = control.write_all(format!("unavailable {json}\n").as_bytes());
        std::process::exit(126);
    }
    // Last, after every layer that confines: the filter that tells the supervisor what the
    // command changes (attribution only; without it the call simply has no record).
    if let Some(channel) = notify {
        launch::notify(&channel);
    }
    let mut bash = std::process::Command::new("bash");
    bash.arg("-c")
        .arg(command)
        .env("TMPDIR", &launch.policy.tmpdir);
    super::supervisor::restore_sigterm(&mut bash);
    let current = |name: &str| std::env::var_os(name).map(std::path::PathBuf::from);
    for (name, dir) in crate::sandbox::cache::vars(&launch.policy, &current) {
        bash.env(name, dir);
    }
    let raw = match bash.spawn() {
        Ok(child) => reap_until(child.id() as libc::pid_t),
        // As a shell reports a command it cannot run.
        Err(_) => 127 << 8,
    };
    let leftover = others_alive();
    let _ = control.write_all(format!("status {raw} {}\n", u8::from(leftover)).as_bytes());
    std::process::exit(0)
}

/// Waits for any child until `pid` ends (reaping the orphans that came to init meanwhile);
/// its raw wait status.
fn reap_until(pid: libc::pid_t) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        #[allow(unsafe_code)]
        let done = unsafe { libc::waitpid(-1, &mut status, 0) };
        if done == pid {
            return status;
        }
        if done == -1 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // No child at all any more: it can only have been reaped already.
            return 127 << 8;
        }
    }
}

/// Whether any process other than init is still in the namespace (after reaping the zombies
/// already there): `kill(-1, 0)` reaches every one of them.
fn others_alive() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        #[allow(unsafe_code)]
        let done = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if done <= 0 {
            break;
        }
    }
    // SAFETY: signal 0 only checks that the targets exist; init itself is never one.
    #[allow(unsafe_code)]
    let reached = unsafe { libc::kill(-1, 0) };
    reached == 0
}
