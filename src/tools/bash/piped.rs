//! One command with its input on stdin and stdout and stderr kept apart (a hook: see
//! `agent::hooks`), started exactly as a `bash` call is: under the supervisor, confined by
//! the given sandbox policy, with the scrubbed environment, in the workspace, in a group of
//! its own that is killed at the deadline, on cancel and when the call ends. A confined
//! policy without a supervisor runs nothing. Output is capped and redacted; nothing here
//! decides what the output means.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::{describe, spawn};
use crate::process::child::GroupGuard;
use crate::process::supervisor::{self, Reported};
use crate::sandbox::Policy;
use crate::tools::ToolCtx;

/// The most of stdout (and of stderr) kept.
const MAX_STREAM_BYTES: usize = 64 * 1024;

/// How a piped command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piped {
    /// It ran and exited with `code` (a kill by signal counts as no code).
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
        /// What the sandbox denied, when the failure came from it (a write the policy does
        /// not allow, a socket with the network off, a forbidden system call): the run is
        /// then the sandbox's doing, not the command's answer.
        denied: Option<String>,
    },
    /// Killed at its deadline, with its whole group.
    TimedOut,
    /// The turn was interrupted.
    Cancelled,
    /// It could not run (no supervisor for a confined policy, the sandbox unavailable, a
    /// failed spawn): why.
    NotRun(String),
}

/// Runs `command` with `input` on its stdin under `policy`; see the module doc.
pub(crate) async fn run_piped(
    command: &str,
    input: Vec<u8>,
    ctx: &ToolCtx,
    policy: &Policy,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Piped {
    if policy.is_confined() && ctx.supervisor.is_none() {
        return Piped::NotRun(
            "no helper process to confine the command in (the program is not minicode)".into(),
        );
    }
    let streams = spawn::Streams {
        stdin: Stdio::piped(),
        stdout: Stdio::piped(),
        stderr: Stdio::piped(),
    };
    let tag = supervisor::new_tag();
    let (mut child, mut control) = match spawn::spawn(command, ctx, policy, &tag, streams) {
        Ok(started) => started,
        Err(e) => return Piped::NotRun(format!("could not start bash: {e}")),
    };
    let Some(pid) = child.id() else {
        return Piped::NotRun("could not start bash: no process id".into());
    };
    let group = GroupGuard(pid as libc::pid_t);
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // The input is written beside the reading: a hook that never reads it must not stall us
    // on a full pipe, and one that exits early is no error (EPIPE is ignored).
    let feed = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input).await;
        }
    };
    let read_all = async { tokio::join!(feed, capped(stdout), capped(stderr), child.wait()) };
    let ended = tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        done = tokio::time::timeout(timeout, read_all) => Some(done),
    };
    group.kill();
    let (out, err, status) = match ended {
        None => return Piped::Cancelled,
        Some(Err(_)) => return Piped::TimedOut,
        Some(Ok(((), out, err, status))) => (out, err, status),
    };
    let status = match (status, control.as_mut().and_then(supervisor::reported)) {
        (_, Some(Reported::Unavailable(u))) => return Piped::NotRun(format!("not run: {u}")),
        (_, Some(Reported::Status { raw, .. })) => ExitStatus::from_raw(raw),
        (Ok(status), None) if control.is_none() => status,
        (Ok(status), None) => {
            return Piped::NotRun(format!("the supervisor ended ({})", describe(status)));
        }
        (Err(e), _) => return Piped::NotRun(format!("could not wait for the command: {e}")),
    };
    let shown = |bytes: Vec<u8>| {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        crate::sanitize::sanitize(&ctx.secrets.redact(text))
    };
    let (stdout, stderr) = (shown(out), shown(err));
    let said = format!("{stderr}\n{stdout}");
    let denied = match crate::sandbox::denial::detect(policy, &ctx.workspace, status, &said) {
        Some(crate::sandbox::Blocked::Denied { what, .. }) => {
            Some(what.unwrap_or_else(|| "part of the command".to_string()))
        }
        _ => None,
    };
    Piped::Exited {
        code: status.code(),
        stdout,
        stderr,
        denied,
    }
}

/// Everything `stream` yields up to end of file, keeping the first [`MAX_STREAM_BYTES`]. A
/// process that escaped the group and keeps the pipe open is not waited for long after the
/// rest ended: the caller's deadline covers it.
async fn capped(stream: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let Some(mut stream) = stream else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_STREAM_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    kept
}
