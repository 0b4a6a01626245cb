//! The `bash` tool: runs one command with `bash -c` in the workspace root.
//!
//! Each call gets a fresh shell in its own session (so its own process group, and no
//! controlling terminal: `/dev/tty` cannot be opened, so nothing can draw over the UI or wait
//! for a password at a prompt nobody sees), stdin from /dev/null and one pipe for stdout and
//! stderr (so output interleaves in arrival order). A timeout, a cancel or dropping the call
//! kills the whole group with SIGKILL, grandchildren included; background jobs do not outlive
//! the call. The shell runs under a supervisor (`process::supervisor`) that kills the group
//! when minicode dies, even by SIGKILL; the group's id is told to the call's scope
//! (`tools::running`) so that a resumed session can kill a group a crash left behind. Output
//! for the model is capped (head and tail kept) while the full text is streamed to a log
//! file, so memory stays bounded; as it arrives it also goes, redacted and coalesced, to the
//! call's live sink (`tools::live`). Secrets are removed from the child's environment. It must
//! never prompt the user or print anything itself.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{Prepared, Secrets, Tool, ToolCtx, ToolFuture, ToolOutput, outputs, parse_args};
use crate::chat::ApprovalRequest;
use crate::chat::{ToolKind, ToolSpec};
use crate::process::child::{self, GroupGuard};
use crate::process::supervisor;
use crate::sandbox::{Policy, Report};
/// How long to keep reading after the group was killed, in case a process that escaped the
/// group (e.g. via `setsid`) still holds the pipe open: we stop rather than wait for it.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

const DESCRIPTION: &str = "Run a command with `bash -c` in the workspace root. Each call is a \
fresh shell with no stdin and no terminal: use non-interactive flags. Returns stdout and \
stderr (long output keeps head and tail; the full log is saved) and the exit status.";

pub struct Bash;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    timeout_secs: Option<u64>,
}

struct Call {
    command: String,
    timeout: Duration,
}

fn check(args: &serde_json::Value, ctx: &ToolCtx) -> Result<Call, String> {
    let args: Args = parse_args(args)?;
    if args.command.trim().is_empty() {
        return Err("command is empty".to_string());
    }
    let timeout = match args.timeout_secs {
        Some(0) => return Err("timeout_secs must be at least 1".to_string()),
        Some(s) => Duration::from_secs(s),
        None => ctx.bash_timeout,
    };
    Ok(Call {
        command: args.command,
        timeout: timeout.min(crate::defaults::BASH_TIMEOUT_CEILING),
    })
}

impl Tool for Bash {
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Shell command"},
                    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Seconds before it is killed"}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn prepare(&self, args: &serde_json::Value, ctx: &ToolCtx) -> Result<Prepared, String> {
        let call = check(args, ctx)?;
        let first = call
            .command
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        let summary = if call.command.trim_end().contains('\n') {
            format!("{} …", first.trim_end())
        } else {
            first.trim_end().to_string()
        };
        Ok(Prepared {
            summary,
            approval: Some(ApprovalRequest::Command {
                command: call.command,
            }),
            protected: None,
        })
    }

    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let call = match check(&args, ctx) {
                Ok(c) => c,
                Err(e) => return ToolOutput::failed(e),
            };
            if cancel.is_cancelled() {
                return ToolOutput::interrupted("interrupted by the user; the command did not run");
            }
            let policy = ctx.sandbox();
            run_call(&call, ctx, &policy, &cancel).await
        })
    }
}

/// Runs one `bash` call under `policy` instead of the session's (for "retry outside the
/// sandbox", which passes [`Policy::unconfined`]): the same checks and output as
/// [`Tool::run`].
pub async fn run_with_policy(
    args: serde_json::Value,
    ctx: &ToolCtx,
    policy: &Policy,
    cancel: CancellationToken,
) -> ToolOutput {
    let call = match check(&args, ctx) {
        Ok(c) => c,
        Err(e) => return ToolOutput::failed(e),
    };
    if cancel.is_cancelled() {
        return ToolOutput::interrupted("interrupted by the user; the command did not run");
    }
    run_call(&call, ctx, policy, &cancel).await
}

async fn run_call(
    call: &Call,
    ctx: &ToolCtx,
    policy: &Policy,
    cancel: &CancellationToken,
) -> ToolOutput {
    tracing::debug!(timeout_s = call.timeout.as_secs(), sandbox = ?policy.mode, "bash start");
    let mut out = execute(call, ctx, cancel).await;
    tracing::debug!(status = ?out.status, "bash end");
    out.sandbox.get_or_insert_with(|| Report::ran(policy));
    out
}

enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    WaitFailed(std::io::Error),
}

async fn execute(call: &Call, ctx: &ToolCtx, cancel: &CancellationToken) -> ToolOutput {
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return ToolOutput::failed(format!("could not create a pipe: {e}")),
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return ToolOutput::failed(format!("could not create a pipe: {e}")),
    };
    let tag = supervisor::new_tag();
    let (mut child, mut control) = match spawn(call, ctx, &tag, writer, writer2) {
        Ok(spawned) => spawned,
        Err(e) => return ToolOutput::failed(format!("could not start bash: {e}")),
    };
    let Some(pid) = child.id() else {
        return ToolOutput::failed("could not start bash: no process id");
    };
    let group = GroupGuard(pid as libc::pid_t);
    // Recorded only under a supervisor: a bare shell's group cannot be recognised later.
    if control.is_some() {
        super::running::report(Some(&super::running::Group {
            pgid: pid as i32,
            tag,
        }));
    }
    let mut rx = match tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)) {
        Ok(r) => r,
        Err(e) => return ToolOutput::failed(format!("could not read the command's output: {e}")),
    };

    let mut sink = Sink::new(ctx, ctx.output_limit());
    let mut live = super::live::Feed::new(&ctx.secrets);
    let mut buf = vec![0u8; 16 * 1024];
    let deadline = tokio::time::sleep(call.timeout);
    tokio::pin!(deadline);
    let mut eof = false;
    let mut status: Option<ExitStatus> = None;
    let end = loop {
        if let (Some(s), true) = (status, eof) {
            break End::Exited(s);
        }
        let live_due = live.due_at();
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break End::Cancelled,
            _ = &mut deadline => break End::TimedOut,
            _ = tokio::time::sleep_until(live_due.unwrap_or_else(tokio::time::Instant::now)), if live_due.is_some() => {
                live.flush(tokio::time::Instant::now());
            }
            r = rx.read(&mut buf), if !eof => match r {
                Ok(0) => eof = true,
                Ok(n) => {
                    sink.push(&buf[..n]);
                    live.push(&buf[..n], tokio::time::Instant::now());
                }
                Err(e) => {
                    sink.note(&format!("\n[reading output failed: {e}]\n"));
                    eof = true;
                }
            },
            w = child.wait(), if status.is_none() => match w {
                // The shell is done; anything left in its group is a background job that
                // must not outlive the call. Kill it below, then drain what was written.
                Ok(s) => {
                    status = Some(s);
                    if !eof {
                        break End::Exited(s);
                    }
                }
                Err(e) => break End::WaitFailed(e),
            },
        }
    };
    group.kill();
    if !eof {
        let drain = async {
            loop {
                match rx.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        sink.push(&buf[..n]);
                        live.push(&buf[..n], tokio::time::Instant::now());
                    }
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_GRACE, drain).await;
    }
    if status.is_none() {
        // Reap the killed shell; SIGKILL makes this quick, the grace only guards odd cases.
        let _ = tokio::time::timeout(DRAIN_GRACE, child.wait()).await;
    }
    super::running::report(None);
    live.finish();
    // What the model reads shows a `\r` progress bar's last state only (the saved full
    // output keeps every byte).
    let mut content = crate::sanitize::collapse_rewrites(&sink.finish(&ctx.workspace)).into_owned();
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    let secs = call.timeout.as_secs();
    match end {
        End::Exited(s) => {
            // Under a supervisor, bash's own status is what it reported; its own exit (a
            // SIGKILL of its group) says nothing.
            let s = match control.as_mut() {
                Some(c) => supervisor::reported_status(c).map_or(s, ExitStatus::from_raw),
                None => s,
            };
            let line = describe(s);
            if content.is_empty() {
                content.push_str("(no output)\n");
            }
            content.push_str(&format!("[{line}]"));
            if s.success() {
                ToolOutput::ok(content)
            } else {
                ToolOutput::failed(content)
            }
        }
        End::TimedOut => {
            content.push_str(&format!(
                "[timed out after {secs} s; the process group was killed]"
            ));
            ToolOutput::failed(content)
        }
        End::Cancelled => {
            content.push_str("[interrupted by the user; the process group was killed]");
            ToolOutput::interrupted(content)
        }
        End::WaitFailed(e) => {
            content.push_str(&format!(
                "[could not wait for the command: {e}; the process group was killed]"
            ));
            ToolOutput::failed(content)
        }
    }
}

/// Starts the command: under the supervisor when there is one (then also returns minicode's
/// end of its socket pair, which must stay open while the command runs), else `bash`
/// directly. stdout and stderr are the two write ends of the output pipe.
fn spawn(
    call: &Call,
    ctx: &ToolCtx,
    tag: &str,
    writer: std::io::PipeWriter,
    writer2: std::io::PipeWriter,
) -> std::io::Result<(tokio::process::Child, Option<UnixStream>)> {
    let (mut cmd, ends) = match &ctx.supervisor {
        Some(program) => {
            let (ours, theirs) = UnixStream::pair()?;
            // Above the standard streams, so setting those up in the child cannot clobber it.
            let theirs = OwnedFd::from(theirs);
            let theirs = if theirs.as_raw_fd() <= 2 {
                // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor (at 10 or above) that only we
                // own; a failure is reported, never wrapped.
                #[allow(unsafe_code)]
                unsafe {
                    let fd = libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
                    if fd == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    std::os::fd::FromRawFd::from_raw_fd(fd)
                }
            } else {
                theirs
            };
            let death = child::Death::Watched {
                control: theirs.as_raw_fd(),
            };
            let mut cmd = child::command(program, &ctx.scrub_env, death);
            // Named as what it is in `ps` (the program path may be `/proc/self/exe`).
            cmd.arg0("minicode").arg(supervisor::ARG).arg(tag);
            (cmd, Some((ours, theirs)))
        }
        None => {
            let mut cmd = child::command("bash", &ctx.scrub_env, child::Death::Signal);
            cmd.arg("-c");
            (cmd, None)
        }
    };
    cmd.arg(&call.command)
        .current_dir(&ctx.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2));
    let spawned = cmd.spawn();
    // The command holds our copies of the pipe's write end (and the supervisor's end of the
    // socket pair): drop them now, or EOF never comes.
    drop(cmd);
    let (ours, theirs) = ends.unzip();
    drop(theirs);
    Ok((spawned?, ours))
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "exit status unknown".to_string(),
    }
}

/// Collects output with bounded memory: the first half of the cap, a ring of the last half,
/// and — once the total passes the cap — the whole stream saved to a file as it comes
/// (redacted, and itself capped: see [`outputs`]). Each half keeps a margin of the longest
/// secret's length beyond its cut, so a secret across a cut is seen whole and redacted rather
/// than half shown.
pub(crate) struct Sink<'a> {
    /// Bytes of output the model gets: `head_cap` from the start, the rest from the end.
    cap: usize,
    head_cap: usize,
    margin: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
    secrets: &'a Secrets,
    /// The workspace, under whose `.minicode/outputs` the full output is kept.
    workspace: PathBuf,
    limits: outputs::Limits,
    log: Option<Result<outputs::Saved<'a>, String>>,
    notes: String,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(ctx: &'a ToolCtx, cap: usize) -> Self {
        Self {
            cap,
            head_cap: cap / 2,
            margin: ctx.secrets.longest(),
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
            secrets: &ctx.secrets,
            workspace: ctx.workspace.clone(),
            limits: ctx.outputs,
            log: None,
            notes: String::new(),
        }
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.total > self.cap as u64 && self.log.is_none() {
            // First time over the cap: everything so far is still in head + tail (together
            // they hold more than the cap), so the saved file starts complete.
            self.log = Some(self.open_log());
        }
        if let Some(Ok(saved)) = &mut self.log {
            saved.write(data);
        }
        let head_keep = self.head_cap + self.margin;
        let tail_keep = self.cap - self.head_cap + self.margin;
        let room = head_keep.saturating_sub(self.head.len()).min(data.len());
        self.head.extend_from_slice(&data[..room]);
        data = &data[room..];
        if data.len() >= tail_keep {
            self.tail.clear();
            self.tail.extend(&data[data.len() - tail_keep..]);
        } else {
            let overflow = (self.tail.len() + data.len()).saturating_sub(tail_keep);
            self.tail.drain(..overflow);
            self.tail.extend(data);
        }
    }

    fn open_log(&self) -> Result<outputs::Saved<'a>, String> {
        let mut saved =
            outputs::Saved::create(&self.workspace, self.secrets, self.limits.max_file_bytes)?;
        let (a, b) = self.tail.as_slices();
        for part in [&self.head[..], a, b] {
            saved.write(part);
        }
        Ok(saved)
    }

    /// A note from us (not the command), shown after the output.
    fn note(&mut self, text: &str) {
        self.notes.push_str(text);
    }

    /// The text for the model: everything, or head + marker + tail when over the cap, with
    /// secrets redacted after the cuts were moved off them.
    pub(crate) fn finish(self, workspace: &Path) -> String {
        let tail: Vec<u8> = self.tail.into();
        let head = self.head;
        let tail_cap = self.cap - self.head_cap;
        let secrets = self.secrets;
        let text =
            |bytes: &[u8]| String::from_utf8_lossy(&secrets.redact_bytes(bytes)).into_owned();
        let retained_all = self.total == (head.len() + tail.len()) as u64;
        let all;
        let (first, last, cut) = if self.total <= self.cap as u64 {
            (&head[..], &tail[..], 0)
        } else if retained_all {
            all = [head.as_slice(), tail.as_slice()].concat();
            let end = secrets.head_cut(&all, self.head_cap);
            let start = secrets.tail_cut(&all, all.len() - tail_cap).max(end);
            (&all[..end], &all[start..], (start - end) as u64)
        } else {
            let end = secrets.head_cut(&head, self.head_cap);
            let start = secrets.tail_cut(&tail, tail.len().saturating_sub(tail_cap));
            let cut = self.total - (end + tail.len() - start) as u64;
            (&head[..end], &tail[start..], cut)
        };
        let saved = match self.log {
            Some(Ok(saved)) => {
                let (path, note) = saved.finish(workspace);
                outputs::prune(&self.workspace, &self.limits, Some(&path));
                note
            }
            Some(Err(e)) => format!("full output not saved: {e}"),
            None => "full output not saved".to_string(),
        };
        let mut out = text(first);
        // (Over the cap by less than two secrets' length, nothing may be cut at all.)
        if cut > 0 {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("[... {cut} bytes cut; {saved} ...]\n"));
        }
        out.push_str(&text(last));
        out.push_str(&self.notes);
        out
    }
}
