//! How minicode starts every child process (a `bash` command's supervisor, an MCP server, a
//! hook, `minicode sandbox`'s command, eval's runs):
//! one place that removes the secrets from the child's environment, gives it its own session
//! (its own process group and no controlling terminal) and, where asked, makes it die with
//! minicode. A new spawn path goes through [`command`], so none of these can be forgotten.
//! Between fork and exec it runs only async-signal-safe calls.

use std::ffi::OsStr;

/// How the child learns that minicode is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Death {
    /// `PR_SET_PDEATHSIG` (Linux): the child itself is killed when minicode dies. What it
    /// started lives on.
    Signal,
    /// The child watches its end of a socket pair (see `process::supervisor`), handed to it
    /// on descriptor 3 from `control`, and kills its whole group when minicode's end closes.
    /// `log`, when given, goes on descriptor 4: the file the supervisor records what the
    /// command may have changed in (`sandbox::written`).
    Watched {
        control: std::os::fd::RawFd,
        log: Option<std::os::fd::RawFd>,
    },
}

/// A `tokio` command for `program` with the secrets removed from its environment (see
/// [`scrub_env`]; `scrub` names the configured ones), in a new session of its own, killed when
/// dropped.
pub(crate) fn command(
    program: impl AsRef<OsStr>,
    scrub: &[String],
    death: Death,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.kill_on_drop(true);
    scrub_env(cmd.as_std_mut(), scrub);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec (setsid, prctl, getppid), no
    // allocation, touching no memory of the parent.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            // A new session: the child leads its own process group (pgid = its pid, which
            // `GroupGuard` kills) and has no controlling terminal. `sudo`, `ssh` or a git
            // credential helper then fail at once instead of prompting over the UI.
            nix::unistd::setsid()?;
            match death {
                Death::Signal => die_with_parent(parent),
                Death::Watched { control, log } => hand_over(control, log),
            }
        });
    }
    cmd
}

/// Kills the process group when dropped, so a dropped call (not only a cancelled one) leaves
/// nothing running.
#[derive(Debug)]
pub(crate) struct GroupGuard(pub(crate) libc::pid_t);

impl GroupGuard {
    pub(crate) fn kill(&self) {
        kill_group(self.0);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL to process group `pgid`; a group that is already gone (ESRCH) is fine.
pub(crate) fn kill_group(pgid: libc::pid_t) {
    if pgid > 1 {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// If minicode itself is killed (SIGKILL, no chance to clean up), the child dies with it
/// instead of running on unattended (Linux only; elsewhere it may outlive us). Runs in the
/// child between fork and exec; a parent that died before the signal was armed is caught by
/// comparing the parent's pid.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(parent: libc::pid_t) -> std::io::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    if nix::unistd::getppid().as_raw() != parent {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn die_with_parent(_parent: libc::pid_t) -> std::io::Result<()> {
    Ok(())
}

/// Puts `control` (and `log`) on the supervisor's descriptors, without close-on-exec. Runs in
/// the child between fork and exec (dup2 and fcntl are async-signal-safe). `control` is never
/// 0–2 and `log` is 10 or above (see `tools::bash::spawn`), so neither the standard streams
/// set up before this nor `log` is overwritten by the first `dup2`.
fn hand_over(control: std::os::fd::RawFd, log: Option<std::os::fd::RawFd>) -> std::io::Result<()> {
    put(control, super::supervisor::CONTROL_FD)?;
    match log {
        Some(log) => put(log, crate::sandbox::written::LOG_FD),
        None => Ok(()),
    }
}

/// `fd` on descriptor `target`, inherited across exec.
fn put(control: std::os::fd::RawFd, target: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: plain descriptor calls on descriptors of this (child) process.
    #[allow(unsafe_code)]
    let done = unsafe {
        if control == target {
            libc::fcntl(target, libc::F_SETFD, 0)
        } else {
            libc::dup2(control, target)
        }
    };
    if done == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Removes the secrets from the environment `cmd` would inherit: the `configured` names (a
/// configured key variable), the fixed key variables, every `MINICODE_*` variable (the key and
/// minicode's own switches are minicode's, never a child's) and the OpenTelemetry header
/// variables (a collector's credentials). Every child minicode starts goes through here,
/// directly or through [`command`]: the `bash` supervisor, MCP servers, hooks, the command of
/// `minicode sandbox`, and eval's setup, check and agent runs.
pub(crate) fn scrub_env(cmd: &mut std::process::Command, configured: &[String]) {
    for name in configured {
        cmd.env_remove(name);
    }
    for name in crate::defaults::SECRET_ENV_VARS {
        cmd.env_remove(name);
    }
    for (key, _) in std::env::vars_os() {
        if is_secret(&key) {
            cmd.env_remove(&key);
        }
    }
}

/// `MINICODE_*`, `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_<SIGNAL>_HEADERS`.
fn is_secret(name: &OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    bytes.starts_with(b"MINICODE_")
        || (bytes.starts_with(b"OTEL_EXPORTER_OTLP_") && bytes.ends_with(b"HEADERS"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minicode_and_otlp_header_variables_are_secret() {
        for name in [
            "MINICODE_API_KEY",
            "MINICODE_LOG",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
        ] {
            assert!(is_secret(OsStr::new(name)), "{name}");
        }
        for name in ["PATH", "OTEL_EXPORTER_OTLP_ENDPOINT", "HOME", "XMINICODE_X"] {
            assert!(!is_secret(OsStr::new(name)), "{name}");
        }
    }
}
