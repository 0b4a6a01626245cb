//! The small supervisor every `bash` command runs under, so that nothing a command started
//! outlives the call or minicode, even a SIGKILLed one. minicode starts its own binary again
//! with [`ARG`] (a fresh exec: nothing of the runtime is touched between fork and exec) in a
//! new session, holding one end of a socket pair on file descriptor 3; minicode keeps the
//! other. The supervisor:
//! - when the call is confined, enters the sandbox's namespaces (`sandbox::launch::enter`)
//!   while still single-threaded, and forks the init of the new PID namespace
//!   (`process::init`), which seals itself, runs `bash -c <command>` and reports; when it ends,
//!   the kernel kills everything left in the namespace;
//! - when it is not (`--sandbox off`), starts `bash -c <command>` itself and reports;
//! - if minicode's end closes (minicode exited or was killed: the kernel closes it), kills
//!   its whole process group (init or bash, and what stayed in the group);
//! - once the command is done and reported, kills the group, itself included, so no
//!   background job survives the call even if minicode dies at that very moment.
//!
//! When a layer cannot be applied it starts nothing and reports the [`Unavailable`] instead.
//! minicode reads the report from the socket (one line: `status <raw wait status> <0|1>`, the
//! last field saying whether processes the command started were still running when it ended,
//! or `unavailable <json>`); the supervisor's own exit (SIGKILL) says nothing. It prints
//! nothing and reads no configuration.

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
    /// `bash` ran and ended with this raw wait status; `leftover`: processes it started were
    /// still running then (they were killed with the call).
    Status { raw: i32, leftover: bool },
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
    #[cfg(target_os = "linux")]
    let log = crate::sandbox::notifier::take_log();
    #[cfg(not(target_os = "linux"))]
    let log: Option<std::fs::File> = None;
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
    let Ok(watch) = control.try_clone() else {
        return 125;
    };
    // A SIGTERM to the group (`bash_kill` of a background process) is meant for the command:
    // the supervisor stays, to report how it ended and to kill what is left. The command
    // gets the default back (`restore_sigterm`).
    // SAFETY: changing this process's disposition of one signal; no handler runs.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
    let launch = match Launch::from_arg(launch) {
        Ok(launch) if launch.hold => return hold(&launch, control),
        Ok(launch) => launch,
        Err(unavailable) => {
            report_unavailable(control, &unavailable);
            kill_own_group();
            return 126;
        }
    };
    // Before the watcher thread: a user namespace can only be entered single-threaded.
    let launch = match launch::enter(&launch).map(|()| launch) {
        Ok(launch) => launch,
        Err(unavailable) => {
            report_unavailable(control, &unavailable);
            kill_own_group();
            return 126;
        }
    };
    if launch.policy.is_confined() {
        confined(&launch, command, control, (watch, log))
    } else {
        watch_minicode(watch);
        unconfined(command, control)
    }
}

/// The session's network holder: makes the namespaces later calls join
/// (`sandbox::launch::hold`), says `ready` (or why not), then waits until minicode's end of
/// the socket closes (the session ended, or minicode died) and exits. It runs no command.
fn hold(launch: &Launch, mut control: std::os::unix::net::UnixStream) -> u8 {
    match launch::hold(launch) {
        Ok(()) => {
            if control.write_all(b"ready\n").is_err() {
                return 125;
            }
            let mut byte = [0u8; 1];
            // Nothing is ever sent this way: any return means minicode's end is closed.
            let _ = control.read(&mut byte);
            0
        }
        Err(unavailable) => {
            report_unavailable(control, &unavailable);
            126
        }
    }
}

/// Kills the group as soon as minicode's end of the socket closes (read on a thread).
fn watch_minicode(mut watch: std::os::unix::net::UnixStream) {
    std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        // Nothing is ever sent this way: any return means minicode's end is closed.
        let _ = watch.read(&mut byte);
        kill_own_group();
    });
}

fn report_unavailable(mut control: std::os::unix::net::UnixStream, unavailable: &Unavailable) {
    let json = serde_json::to_string(unavailable).unwrap_or_default();
    let _ = control.write_all(format!("unavailable {json}\n").as_bytes());
}

/// Forks the init of the call's PID namespace (which reports), waits for it (answering the
/// attribution filter's notifications meanwhile, when minicode handed a record file), then
/// kills the group.
#[cfg(target_os = "linux")]
fn confined(
    launch: &Launch,
    command: &OsStr,
    control: std::os::unix::net::UnixStream,
    (watch, log): (std::os::unix::net::UnixStream, Option<std::fs::File>),
) -> u8 {
    use crate::sandbox::notifier::Prepared;
    let prepared = Prepared::new(log);
    // SAFETY: the supervisor is single-threaded here (the watcher starts after the fork), so
    // the child may run any code.
    #[allow(unsafe_code)]
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            drop(watch);
            super::init::run(launch, command, control, prepared.map(Prepared::into_init))
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(control);
            wait_for_init(child.as_raw(), &watch, prepared);
        }
        Err(e) => {
            let unavailable = crate::sandbox::Unavailable {
                layer: crate::sandbox::Layer::UserNamespace,
                reason: format!("the namespace's first process could not start: {e}"),
                fix: crate::sandbox::probe::fix(crate::sandbox::Layer::UserNamespace),
            };
            report_unavailable(control, &unavailable);
        }
    }
    kill_own_group();
    126
}

/// Waits until `init` ends or minicode's end of `watch` closes, whichever comes first. No
/// thread can do the watching here: after `unshare(CLONE_NEWPID)` the kernel refuses new
/// threads, so one `poll` waits on the socket, a pidfd of init (or, on a kernel without
/// pidfds, wakes every 50 ms to look) and the attribution filter: first the channel its
/// listener comes on, then the listener, whose notifications are answered here.
#[cfg(target_os = "linux")]
fn wait_for_init(
    init: libc::pid_t,
    watch: &std::os::unix::net::UnixStream,
    prepared: Option<crate::sandbox::notifier::Prepared>,
) {
    use crate::sandbox::notifier::Notifier;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags; a non-negative result is a new descriptor.
    #[allow(unsafe_code)]
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, init, 0) };
    // SAFETY: the descriptor was just returned to us and is owned by nothing else.
    #[allow(unsafe_code)]
    let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd as i32) });
    let pollfd = |fd: i32| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut waiting = prepared;
    let mut notifier: Option<Notifier> = None;
    let timeout = if pidfd.is_some() { -1 } else { 50 };
    loop {
        let third = match (&waiting, &notifier) {
            (Some(prepared), _) => prepared.ours.as_raw_fd(),
            (None, Some(notifier)) => notifier.fd(),
            (None, None) => -1,
        };
        let mut fds = [
            pollfd(watch.as_raw_fd()),
            pollfd(pidfd.as_ref().map_or(-1, AsRawFd::as_raw_fd)),
            pollfd(third),
        ];
        // SAFETY: `fds` is a valid array of three pollfd entries (a negative fd is ignored).
        #[allow(unsafe_code)]
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 3, timeout) };
        if ready < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
        // Nothing is ever sent on the socket: readable or hung up means minicode is gone.
        if fds[0].revents != 0 {
            break;
        }
        if fds[2].revents != 0 {
            if let Some(prepared) = waiting.take() {
                notifier = Notifier::receive(prepared);
            } else if (fds[2].revents & libc::POLLIN == 0
                || notifier.as_mut().is_some_and(|n| !n.answer()))
                && let Some(done) = notifier.take()
            {
                // Hung up: no process of the call is left under the filter.
                done.finish();
            }
        }
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        #[allow(unsafe_code)]
        let reaped = unsafe { libc::waitpid(init, &mut status, libc::WNOHANG) };
        if reaped != 0 {
            break;
        }
    }
    if let Some(notifier) = notifier {
        notifier.finish();
    }
}

#[cfg(not(target_os = "linux"))]
fn confined(
    _launch: &Launch,
    _command: &OsStr,
    control: std::os::unix::net::UnixStream,
    _watch: (std::os::unix::net::UnixStream, Option<std::fs::File>),
) -> u8 {
    report_unavailable(control, &crate::sandbox::probe::platform());
    kill_own_group();
    126
}

/// Runs `bash -c command` as a plain child, reports its status, then kills the group.
fn unconfined(command: &OsStr, mut control: std::os::unix::net::UnixStream) -> u8 {
    let mut bash = std::process::Command::new("bash");
    bash.arg("-c").arg(command);
    restore_sigterm(&mut bash);
    let status = match bash.status() {
        Ok(status) => status.into_raw(),
        // As a shell reports a command it cannot run.
        Err(_) => 127 << 8,
    };
    let _ = control.write_all(format!("status {status} 0\n").as_bytes());
    kill_own_group();
    126
}

/// Gives the command the default action of SIGTERM back (the supervisor ignores it, and an
/// ignored signal stays ignored across `exec`).
pub(crate) fn restore_sigterm(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe; the closure touches nothing else.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
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
        let mut fields = status.split(' ');
        let raw = fields.next()?.parse().ok()?;
        let leftover = fields.next() == Some("1");
        return Some(Reported::Status { raw, leftover });
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
