//! The small supervisor every `bash` command runs under, so that nothing a command started
//! outlives minicode, even a SIGKILLed one. minicode starts its own binary again with
//! [`ARG`] (a fresh exec: nothing of the runtime is touched between fork and exec) in a new
//! session, holding one end of a socket pair on file descriptor 3; minicode keeps the other.
//! The supervisor starts `bash -c <command>` in its own process group and then:
//! - if minicode's end closes (minicode exited or was killed: the kernel closes it), it kills
//!   the whole group, the command and everything it started;
//! - when `bash` exits, it writes bash's raw wait status on the socket, then kills the group,
//!   itself included, so no background job survives the call even if minicode dies at that
//!   very moment.
//!
//! Before anything else, while still single-threaded, it confines itself with the sandbox
//! policy minicode passed as an argument (`sandbox::launch`); `bash` inherits that. When a
//! layer cannot be applied it starts nothing and reports the [`Unavailable`] instead.
//!
//! minicode reads the report from the socket (one line: `status <raw wait status>` or
//! `unavailable <json>`); the supervisor's own exit (SIGKILL) says nothing. It prints nothing
//! and reads no configuration.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use crate::sandbox::Unavailable;
use crate::sandbox::launch::{self, Launch};

/// The hidden first argument that makes the binary a supervisor.
pub(crate) const ARG: &str = "__minicode-supervise-bash";

/// The file descriptor the supervisor finds its end of the socket pair on.
pub(crate) const CONTROL_FD: i32 = 3;

/// The program to start as a supervisor: this very binary (on Linux through
/// `/proc/self/exe`, which still works when the file was replaced since it started).
pub(crate) fn program() -> Option<PathBuf> {
    if cfg!(target_os = "linux") {
        return Some(PathBuf::from("/proc/self/exe"));
    }
    std::env::current_exe().ok()
}

/// A new tag for one supervisor: passed on its command line (unused by it) so that a group
/// recorded for a call can later be told from any other supervisor's whose id was recycled.
pub(crate) fn new_tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// What the supervisor reported on its control socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reported {
    /// `bash` ran and ended with this raw wait status.
    Status(i32),
    /// The sandbox could not be applied: nothing ran.
    Unavailable(Unavailable),
}

/// The supervisor's main: confines itself as `launch` (the JSON of a `sandbox::launch::Launch`)
/// says, runs `command` and returns the process exit code (reached only when the group could
/// not be killed or the control socket is missing).
pub(crate) fn run(launch: &OsStr, command: &OsStr) -> u8 {
    // SAFETY: fcntl only reads the flags of descriptor 3.
    #[allow(unsafe_code)]
    let valid = unsafe { libc::fcntl(CONTROL_FD, libc::F_GETFD) } != -1;
    if !valid {
        return 125;
    }
    // SAFETY: descriptor 3 is open (checked above) and handed to us by minicode; nothing else
    // in this process owns it.
    #[allow(unsafe_code)]
    let control = std::os::unix::net::UnixStream::from(unsafe { OwnedFd::from_raw_fd(CONTROL_FD) });
    // The command must not inherit our end: it could keep it open or write a false status.
    // SAFETY: setting the close-on-exec flag of a descriptor we own.
    #[allow(unsafe_code)]
    unsafe {
        libc::fcntl(CONTROL_FD, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let Ok(mut watch) = control.try_clone() else {
        return 125;
    };
    // Before the watcher thread: a user namespace can only be entered single-threaded.
    let launch = match Launch::from_arg(launch).and_then(|l| launch::confine(&l).map(|()| l)) {
        Ok(launch) => launch,
        Err(unavailable) => {
            let json = serde_json::to_string(&unavailable).unwrap_or_default();
            let mut control = control;
            let _ = control.write_all(format!("unavailable {json}\n").as_bytes());
            kill_own_group();
            return 126;
        }
    };
    // Started before the command, so a minicode already gone is noticed at once.
    std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        // Nothing is ever sent this way: any return means minicode's end is closed.
        let _ = watch.read(&mut byte);
        kill_own_group();
    });
    let mut bash = std::process::Command::new("bash");
    bash.arg("-c").arg(command);
    if launch.policy.is_confined() {
        bash.env("TMPDIR", &launch.policy.tmpdir);
    }
    let status = match bash.status() {
        Ok(status) => status.into_raw(),
        // As a shell reports a command it cannot run.
        Err(_) => 127 << 8,
    };
    let mut control = control;
    let _ = control.write_all(format!("status {status}\n").as_bytes());
    kill_own_group();
    126
}

/// SIGKILL to the supervisor's own process group (the command and everything it started,
/// and the supervisor itself).
fn kill_own_group() {
    let _ = nix::sys::signal::killpg(nix::unistd::getpgrp(), nix::sys::signal::Signal::SIGKILL);
}

/// What the supervisor reported on `control`, if it did: read once, without waiting (the
/// supervisor wrote it before it died).
pub(crate) fn reported(control: &mut std::os::unix::net::UnixStream) -> Option<Reported> {
    control.set_nonblocking(true).ok()?;
    let mut text = String::new();
    let _ = control.take(64 * 1024).read_to_string(&mut text);
    let text = text.trim();
    if let Some(status) = text.strip_prefix("status ") {
        return status.parse().ok().map(Reported::Status);
    }
    let json = text.strip_prefix("unavailable ")?;
    serde_json::from_str(json).ok().map(Reported::Unavailable)
}

/// Whether process group `pgid` is alive and led by the supervisor started with `tag`
/// (checked through `/proc/<pgid>/cmdline` on Linux, so a recycled group id of another
/// program, or of another call's supervisor, is never killed; elsewhere nothing is
/// recognised).
pub(crate) fn is_supervised_group(pgid: i32, tag: &str) -> bool {
    if pgid <= 1 || !cfg!(target_os = "linux") {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pgid}/cmdline")) else {
        return false;
    };
    let leads = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pgid)))
        .is_ok_and(|g| g.as_raw() == pgid);
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    leads && args.get(1) == Some(&ARG.as_bytes()) && args.get(2) == Some(&tag.as_bytes())
}
