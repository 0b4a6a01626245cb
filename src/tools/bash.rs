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
//!
//! The supervisor confines itself with the policy the caller hands over before it starts the
//! shell (`sandbox`); a layer it cannot apply means nothing ran. Around the call, protected
//! names the call must not create are watched (`sandbox::guard`); after it, a denial its
//! failure shows is told apart (`sandbox::denial`). A run answers with [`Ran`]: the output
//! beside the call's `sandbox::Report`. The policy is the core's (its sandbox part, see
//! `agent::sandboxing`): the tool holds none, so through the registry alone a call does not
//! run ([`CoreTool::Bash`]).

pub(crate) mod network;
mod piped;
mod sink;
pub(crate) mod spawn;

pub(crate) use piped::{Piped, run_piped};

pub(crate) use sink::Sink;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{Aim, CoreCall, CoreTool, Prepared, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::ApprovalRequest;
use crate::chat::{ToolKind, ToolSpec};
use crate::process::child::GroupGuard;
use crate::process::supervisor::{self, Reported};
use crate::sandbox::guard::Guard;
use crate::sandbox::{Blocked, Layer, Policy, Report, Unavailable};
/// How long to keep reading after the group was killed, in case a process that escaped the
/// group (e.g. via `setsid`) still holds the pipe open: we stop rather than wait for it.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

/// The description in the small profile (see `tools::lean`).
const BRIEF: &str =
    "Run a shell command in the workspace root; returns its output and exit status.";

const DESCRIPTION: &str = "Run a command with `bash -c` in the workspace root. Each call is a \
fresh shell with no stdin and no terminal: use non-interactive flags. Returns stdout and \
stderr (long output keeps head and tail; the full log is saved) and the exit status. For a \
dev server, a watcher or a long build, set `background: true`: it returns an id at once; \
read new output with `bash_output` and end it with `bash_kill`.";

pub struct Bash;

/// A `bash` call's arguments, as the model writes them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line, run with `bash -c`.
    pub(crate) command: String,
    timeout_secs: Option<u64>,
    #[serde(default)]
    background: bool,
}

/// A checked call.
pub(crate) struct Call {
    command: String,
    timeout: Duration,
    background: bool,
}

fn check(args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
    if args.command.trim().is_empty() {
        return Err("command is empty".to_string());
    }
    let timeout = match args.timeout_secs {
        Some(0) => return Err("timeout_secs must be at least 1".to_string()),
        Some(s) => Duration::from_secs(s),
        None => ctx.bash_timeout,
    };
    Ok(Call {
        command: args.command.clone(),
        timeout: timeout.min(crate::defaults::BASH_TIMEOUT_CEILING),
        background: args.background,
    })
}

impl Typed for Bash {
    type Args = Args;
    type Checked = Call;

    fn aim(args: &Args) -> Aim {
        Aim::Command(args.command.clone())
    }

    fn check(&self, args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
        check(args, ctx)
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::Bash.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Shell command"},
                    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Seconds before it is killed"},
                    "background": {"type": "boolean", "description": "Keep it running and return an id at once"}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn brief(&self) -> Option<&'static str> {
        Some(BRIEF)
    }

    fn lean_drops(&self) -> &'static [(&'static str, &'static str)] {
        &[("background", "bash_output")]
    }

    fn core(&self) -> Option<CoreTool> {
        Some(CoreTool::Bash)
    }

    fn core_call(args: &Args) -> Option<CoreCall> {
        Some(CoreCall::Bash(args.clone()))
    }

    fn describe(&self, call: Call, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let first = call
            .command
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        let mut summary = if call.command.trim_end().contains('\n') {
            format!("{} …", first.trim_end())
        } else {
            first.trim_end().to_string()
        };
        if call.background {
            summary.push_str(" (background)");
        }
        Ok(Prepared {
            summary,
            approval: Some(ApprovalRequest::Command {
                command: call.command,
            }),
            protected: None,
        })
    }

    /// Only the core runs a call, under its sandbox policy (see [`run`]).
    fn run<'a>(&'a self, _: Call, _: &'a ToolCtx, _: CancellationToken) -> ToolFuture<'a> {
        CoreTool::Bash.outside_core()
    }
}

impl Args {
    /// A plain command: the session's timeout, in the foreground.
    pub fn command(command: String) -> Self {
        Self {
            command,
            timeout_secs: None,
            background: false,
        }
    }
}

/// A `bash` call run: what the model reads, and what the sandbox did to the call (the
/// profile, whether it stopped the call, the record of what it may have changed), which the
/// core keeps to itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub output: ToolOutput,
    pub report: Report,
}

impl Ran {
    /// A call that was not stopped by the sandbox: `output` as it is, under `policy`.
    fn under(policy: &Policy, output: ToolOutput) -> Self {
        Self {
            output,
            report: Report::ran(policy),
        }
    }
}

/// Runs one `bash` call under `policy`: the core's sandbox part hands over the session's
/// policy, "retry outside the sandbox" [`Policy::unconfined`].
pub async fn run(args: &Args, ctx: &ToolCtx, policy: &Policy, cancel: CancellationToken) -> Ran {
    let call = match check(args, ctx) {
        Ok(call) => call,
        Err(e) => return Ran::under(policy, ToolOutput::failed(e)),
    };
    if cancel.is_cancelled() {
        let out = ToolOutput::interrupted("interrupted by the user; the command did not run");
        return Ran::under(policy, out);
    }
    if call.background {
        return in_background(&call, ctx, policy);
    }
    tracing::debug!(timeout_s = call.timeout.as_secs(), sandbox = ?policy.mode, "bash start");
    let ran = execute(&call, ctx, policy, &cancel).await;
    tracing::debug!(status = ?ran.output.status, "bash end");
    ran
}

/// Starts `call` as a background process of the session: its id, at once.
fn in_background(call: &Call, ctx: &ToolCtx, policy: &Policy) -> Ran {
    if policy.is_confined() && ctx.supervisor.is_none() {
        let reason = "no helper process to confine the command in (the program is not minicode)";
        return unavailable(policy, Layer::Platform, reason);
    }
    let out = match ctx.background.start(&call.command, ctx, policy) {
        Ok(id) => ToolOutput::ok(format!(
            "started in the background as {id}; read its output with bash_output (id {id:?}) \
             and end it with bash_kill"
        )),
        Err(e) => ToolOutput::failed(e),
    };
    Ran::under(policy, out)
}

enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    WaitFailed(std::io::Error),
}

/// A started command: its shell (or supervisor), the socket its supervisor reports on, its
/// process group (killed when dropped) and its output.
struct Running {
    child: tokio::process::Child,
    control: Option<UnixStream>,
    /// The supervisor's record of what the command may have changed (`sandbox::written`).
    record: Option<std::fs::File>,
    group: GroupGuard,
    rx: tokio::net::unix::pipe::Receiver,
    /// The shell has been waited for.
    reaped: bool,
    /// Its output reached end of file.
    eof: bool,
}

async fn execute(call: &Call, ctx: &ToolCtx, policy: &Policy, cancel: &CancellationToken) -> Ran {
    if policy.is_confined() && ctx.supervisor.is_none() {
        let reason = "no helper process to confine the command in (the program is not minicode)";
        return unavailable(policy, Layer::Platform, reason);
    }
    let guard = match Guard::before(policy) {
        Ok(guard) => guard,
        Err(e) => {
            let out = ToolOutput::failed(format!("could not prepare the sandbox: {e}"));
            return Ran::under(policy, out);
        }
    };
    let mut run = match start(call, ctx, policy) {
        Ok(run) => run,
        Err(message) => return Ran::under(policy, ToolOutput::failed(message)),
    };
    let mut sink = Sink::new(ctx, ctx.output_limit());
    let mut live = super::live::Feed::new(&ctx.secrets);
    let end = collect(&mut run, call.timeout, cancel, &mut sink, &mut live).await;
    wind_down(&mut run, &mut sink, &mut live).await;
    super::running::report(None);
    live.finish();
    // What the model reads shows a `\r` progress bar's last state only (the saved full
    // output keeps every byte).
    let mut content = crate::sanitize::collapse_rewrites(&sink.finish(&ctx.workspace)).into_owned();
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    let reported = run.control.as_mut().and_then(supervisor::reported);
    let created = guard.after(policy);
    let mut leftover = false;
    let status = match (&end, reported) {
        (_, Some(Reported::Unavailable(u))) => return not_confined(policy, u),
        // Under a supervisor, bash's own status is what it reported; the supervisor's own
        // exit (a SIGKILL of its group) says nothing.
        (
            End::Exited(_),
            Some(Reported::Status {
                raw,
                leftover: left,
            }),
        ) => {
            leftover = left;
            Some(ExitStatus::from_raw(raw))
        }
        (End::Exited(s), None) => Some(*s),
        _ => None,
    };
    let mut out = conclude(end, status, content, call.timeout);
    if leftover {
        out.content.push_str(LEFTOVER_NOTICE);
    }
    let mut report = judge(&mut out, status, policy, ctx, &created);
    report.written = run
        .record
        .as_ref()
        .and_then(spawn::read_record)
        .map(std::sync::Arc::new);
    Ran {
        output: out,
        report,
    }
}

/// Creates the output pipe and starts the command, recording its group.
fn start(call: &Call, ctx: &ToolCtx, policy: &Policy) -> Result<Running, String> {
    let (reader, writer) = std::io::pipe().map_err(|e| format!("could not create a pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("could not create a pipe: {e}"))?;
    let tag = supervisor::new_tag();
    let streams = spawn::Streams {
        stdin: std::process::Stdio::null(),
        stdout: writer.into(),
        stderr: writer2.into(),
    };
    let (child, control, record) =
        spawn::spawn_recorded(&call.command, ctx, policy, &tag, streams, true)
            .map_err(|e| format!("could not start bash: {e}"))?;
    let pid = child.id().ok_or("could not start bash: no process id")?;
    let group = GroupGuard(pid as libc::pid_t);
    // Recorded only under a supervisor: a bare shell's group cannot be recognised later.
    if control.is_some() {
        super::running::report(Some(&super::running::Group {
            pgid: pid as i32,
            tag,
        }));
    }
    let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| format!("could not read the command's output: {e}"))?;
    Ok(Running {
        child,
        control,
        record,
        group,
        rx,
        reaped: false,
        eof: false,
    })
}

/// Reads output until the shell exits and its output ends, or the call times out or is
/// cancelled.
async fn collect(
    run: &mut Running,
    timeout: Duration,
    cancel: &CancellationToken,
    sink: &mut Sink<'_>,
    live: &mut super::live::Feed<'_>,
) -> End {
    let mut buf = vec![0u8; 16 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut status: Option<ExitStatus> = None;
    loop {
        if let (Some(s), true) = (status, run.eof) {
            return End::Exited(s);
        }
        let live_due = live.due_at();
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return End::Cancelled,
            _ = &mut deadline => return End::TimedOut,
            _ = tokio::time::sleep_until(live_due.unwrap_or_else(tokio::time::Instant::now)), if live_due.is_some() => {
                live.flush(tokio::time::Instant::now());
            }
            r = run.rx.read(&mut buf), if !run.eof => match r {
                Ok(0) => run.eof = true,
                Ok(n) => {
                    sink.push(&buf[..n]);
                    live.push(&buf[..n], tokio::time::Instant::now());
                }
                Err(e) => {
                    sink.note(&format!("\n[reading output failed: {e}]\n"));
                    run.eof = true;
                }
            },
            w = run.child.wait(), if status.is_none() => match w {
                // The shell is done; anything left in its group is a background job that
                // must not outlive the call. It is killed next, then what was written drained.
                Ok(s) => {
                    run.reaped = true;
                    status = Some(s);
                    if !run.eof {
                        return End::Exited(s);
                    }
                }
                Err(e) => return End::WaitFailed(e),
            },
        }
    }
}

/// Kills the group, drains what is left of the output and reaps the shell.
async fn wind_down(run: &mut Running, sink: &mut Sink<'_>, live: &mut super::live::Feed<'_>) {
    run.group.kill();
    if !run.eof {
        let mut buf = vec![0u8; 16 * 1024];
        let drain = async {
            loop {
                match run.rx.read(&mut buf).await {
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
    if !run.reaped {
        // Reap the killed shell; SIGKILL makes this quick, the grace only guards odd cases.
        let _ = tokio::time::timeout(DRAIN_GRACE, run.child.wait()).await;
    }
}

/// Told to the model when the command left processes running: they ended with the call.
const LEFTOVER_NOTICE: &str = "\n[processes the command left running in the background were \
     stopped when it ended (each call runs in its own PID namespace); to keep a server, a \
     watcher or a long build running, run it with `background: true` instead (then \
     bash_output reads it and bash_kill ends it)]";

/// The output for the model: the text and how the call ended.
fn conclude(
    end: End,
    status: Option<ExitStatus>,
    mut content: String,
    timeout: Duration,
) -> ToolOutput {
    let secs = timeout.as_secs();
    match end {
        End::Exited(s) => {
            let s = status.unwrap_or(s);
            if content.is_empty() {
                content.push_str("(no output)\n");
            }
            content.push_str(&format!("[{}]", describe(s)));
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

/// Whether the sandbox stopped the call: a protected path it created (removed now), or a
/// denial its failure shows. Either is said to the model and recorded in the report returned.
fn judge(
    out: &mut ToolOutput,
    status: Option<ExitStatus>,
    policy: &Policy,
    ctx: &ToolCtx,
    created: &[std::path::PathBuf],
) -> Report {
    let mut report = Report::ran(policy);
    if !created.is_empty() {
        let names: Vec<String> = created
            .iter()
            .map(|p| crate::sandbox::guard::shown(policy, p))
            .collect();
        let what = format!("creating {} (removed after the call)", names.join(", "));
        report.blocked = Some(Blocked::Denied {
            what: Some(what),
            fix: Some(crate::sandbox::way_out::protected()),
        });
        out.status = crate::chat::ToolStatus::Failed;
    } else if let Some(status) = status {
        report.blocked =
            crate::sandbox::denial::detect(policy, &ctx.workspace, status, &out.content);
    }
    if let Some(Blocked::Denied { what, .. }) = &report.blocked {
        let what = what.as_deref().unwrap_or("an operation");
        out.content.push_str(&format!(
            "\n[blocked by the sandbox ({:?} profile): {what}]",
            policy.mode
        ));
    }
    report
}

/// A call that could not be confined: nothing ran.
fn not_confined(policy: &Policy, unavailable: Unavailable) -> Ran {
    let mut ran = Ran::under(
        policy,
        ToolOutput::failed(format!("not run: {unavailable}")),
    );
    ran.report.blocked = Some(Blocked::Unavailable(unavailable));
    ran
}

fn unavailable(policy: &Policy, layer: Layer, reason: &str) -> Ran {
    not_confined(
        policy,
        Unavailable {
            layer,
            reason: reason.to_string(),
            fix: crate::sandbox::probe::fix(layer),
        },
    )
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "exit status unknown".to_string(),
    }
}
