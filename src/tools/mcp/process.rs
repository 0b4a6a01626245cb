//! One MCP server's child process: started in its own session (no controlling terminal, its
//! own process group), with the secrets scrubbed from its environment like a `bash` child,
//! its stderr copied to `.minicode/logs/mcp-<id>.log` (bounded) with the last line kept for
//! failure messages, and stopped with SIGTERM to the group, then SIGKILL after a grace period.
//! Dropping a [`Child`] kills the group at once, so no path leaves a server running.
//!
//! It knows nothing of the protocol: it hands out the stdin/stdout pipes and watches the exit.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};

use super::ServerConfig;
use crate::process::child::{self, GroupGuard};
use crate::sanitize::text::{floor_boundary, truncate};
use crate::sync::lock;

/// How long a server may take to exit after SIGTERM before it is killed.
pub(crate) const GRACE: Duration = Duration::from_secs(2);
/// The most a server's stderr log grows to; older content is dropped when a start finds the
/// file larger, and a running server's further output is discarded past it.
const LOG_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// How much of the last stderr line a failure message quotes.
const TAIL_CHARS: usize = 300;

/// A started server process.
pub(crate) struct Child {
    child: tokio::process::Child,
    /// Kills the whole group when dropped (after a clean stop it finds nothing left).
    group: GroupGuard,
    pid: u32,
    /// The last non-empty line the server wrote to stderr.
    last_line: Arc<Mutex<String>>,
    pub(crate) log: Option<PathBuf>,
}

/// The pipes the protocol runs over.
pub(crate) type Pipes = (ChildStdout, ChildStdin);

/// Starts `config.command` in `workspace` (or the configured folder). The error is a message
/// for the user.
pub(super) fn spawn(
    config: &ServerConfig,
    workspace: &Path,
    scrub: &[String],
) -> Result<(Child, Pipes), String> {
    // Its own session: no controlling terminal (a server cannot draw over the UI or read the
    // user's keys) and its own process group, which stopping it signals whole.
    let mut cmd = child::command(&config.command, scrub, child::Death::Signal);
    cmd.args(&config.args)
        .current_dir(config.cwd.as_deref().unwrap_or(workspace))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The server's own variables come last: the user wrote them for this server.
    cmd.envs(config.env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start `{}`: {e}", config.command))?;
    let pid = child
        .id()
        .ok_or_else(|| "could not start the server: no process id".to_string())?;
    let group = GroupGuard(pid as libc::pid_t);
    let (Some(stdin), Some(stdout), stderr) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("could not connect to the server's pipes".to_string());
    };
    let last_line = Arc::new(Mutex::new(String::new()));
    let log = open_log(workspace, &config.id);
    let (file, log) = match log {
        Ok((file, path)) => (Some(file), Some(path)),
        Err(e) => {
            tracing::warn!(server = %config.id, error = %e, "no stderr log for MCP server");
            (None, None)
        }
    };
    if let Some(stderr) = stderr {
        tokio::spawn(copy_stderr(stderr, file, last_line.clone()));
    }
    let child = Child {
        child,
        group,
        pid,
        last_line,
        log,
    };
    Ok((child, (stdout, stdin)))
}

impl Child {
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the process to exit.
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// "exit code 1" or "killed by signal 9", and the server's last stderr line if any.
    pub(crate) fn describe_exit(&self, status: Option<ExitStatus>) -> String {
        use std::os::unix::process::ExitStatusExt;
        let how = match status.map(|s| (s.code(), s.signal())) {
            Some((Some(code), _)) => format!("exited with code {code}"),
            Some((None, Some(signal))) => format!("was killed by signal {signal}"),
            _ => "stopped".to_string(),
        };
        match self.last_stderr() {
            Some(line) => format!("{how}; its last message: {line}"),
            None => how,
        }
    }

    /// The last line the server wrote to stderr, shortened.
    pub(crate) fn last_stderr(&self) -> Option<String> {
        let line = lock(&self.last_line).clone();
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        Some(truncate(line, TAIL_CHARS))
    }

    /// Stops the server: SIGTERM to its group, then SIGKILL if it has not exited within
    /// [`GRACE`]. Its stdin was closed before (the protocol's own way to ask it to exit).
    pub(crate) async fn terminate(mut self) {
        signal_group(self.pid, nix::sys::signal::Signal::SIGTERM);
        if tokio::time::timeout(GRACE, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!(pid = self.pid, "MCP server ignored SIGTERM; killing it");
        }
        // Whatever is left of the group (the server or something it started) goes now.
        self.group.kill();
        let _ = tokio::time::timeout(GRACE, self.child.wait()).await;
    }
}

fn signal_group(pid: u32, signal: nix::sys::signal::Signal) {
    // A group already gone gives ESRCH, which is fine.
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as libc::pid_t), signal);
}

/// `.minicode/logs/mcp-<id>.log` (0600), appended to; emptied first when it grew past the
/// limit. Written only through `fsutil::private_dir`.
fn open_log(workspace: &Path, id: &str) -> std::io::Result<(std::fs::File, PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = crate::fsutil::private_dir(workspace, "logs")?;
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("mcp-{name}.log"));
    let too_big = std::fs::symlink_metadata(&path).is_ok_and(|m| m.len() > LOG_MAX_BYTES);
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)?;
    if too_big {
        file.set_len(0)?;
    }
    Ok((file, path))
}

/// Copies the server's stderr to its log (up to the limit) and keeps its last line.
async fn copy_stderr(
    mut stderr: tokio::process::ChildStderr,
    mut file: Option<std::fs::File>,
    last_line: Arc<Mutex<String>>,
) {
    use std::io::Write;
    let mut buf = vec![0u8; 8 * 1024];
    let mut written = file
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .map_or(0, |m| m.len());
    let mut partial = String::new();
    if let Some(f) = &mut file {
        let _ = writeln!(
            f,
            "--- started {} ---",
            humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        );
    }
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let data = &buf[..n];
        if let Some(f) = &mut file
            && written < LOG_MAX_BYTES
        {
            let take = data.len().min((LOG_MAX_BYTES - written) as usize);
            if f.write_all(&data[..take]).is_err() {
                file = None;
            }
            written += take as u64;
        }
        partial.push_str(&String::from_utf8_lossy(data));
        if let Some(end) = partial.rfind('\n') {
            let complete = &partial[..end];
            if let Some(line) = complete.lines().rev().find(|l| !l.trim().is_empty()) {
                *lock(&last_line) = line.to_string();
            }
            partial.drain(..=end);
        }
        // A line without an end is kept only up to a bound.
        if partial.len() > 4 * TAIL_CHARS {
            let cut = floor_boundary(&partial, partial.len() - 2 * TAIL_CHARS);
            partial.drain(..cut);
        }
    }
    if !partial.trim().is_empty() {
        *lock(&last_line) = partial;
    }
}

impl std::fmt::Debug for Child {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Child").field("pid", &self.pid).finish()
    }
}
