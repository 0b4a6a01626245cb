//! One background process: started like any `bash` call (under the supervisor, confined by
//! the call's policy, in a group of its own), then watched by a task of its own that moves its
//! output into the unread buffer and the saved log, learns how it ended, and ends it when
//! asked: SIGTERM to its group, SIGKILL after a grace period. Dropping the task (the runtime
//! going away) kills the group; minicode dying closes the supervisor's socket, which kills it
//! too.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::unread::Unread;
use crate::chat::{Background, BackgroundState};
use crate::process::child::GroupGuard;
use crate::process::supervisor::{self, Reported};
use crate::sandbox::Policy;
use crate::tools::{Secrets, ToolCtx, outputs};

/// How long a process asked to end may take before its group is killed.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// What the registry and the job's task share.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) command: String,
    pub(crate) started: u64,
    /// The group the process leads (killed when the session ends).
    pub(crate) pgid: i32,
    pub(crate) inner: Mutex<Inner>,
    /// Asks the task to end the process.
    pub(crate) stop: CancellationToken,
    /// Fired by the task once the process is gone and its output read.
    pub(crate) ended: CancellationToken,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) unread: Unread,
    pub(crate) state: BackgroundState,
    /// Where the full output is saved (shown relative to the workspace), or why it is not.
    pub(crate) log: String,
}

impl Job {
    pub(crate) fn snapshot(&self) -> Background {
        Background {
            id: self.id.clone(),
            command: self.command.clone(),
            started: self.started,
            state: crate::sync::lock(&self.inner).state,
        }
    }
}

/// A started process, handed to its task.
pub(crate) struct Started {
    child: tokio::process::Child,
    control: Option<UnixStream>,
    group: GroupGuard,
    rx: tokio::net::unix::pipe::Receiver,
}

impl Started {
    pub(crate) fn pgid(&self) -> i32 {
        self.group.0
    }
}

/// Starts `command` under `policy` with its output on one pipe.
pub(crate) fn start(command: &str, ctx: &ToolCtx, policy: &Policy) -> Result<Started, String> {
    let (reader, writer) = std::io::pipe().map_err(|e| format!("could not create a pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("could not create a pipe: {e}"))?;
    let streams = crate::tools::bash::spawn::Streams {
        stdin: std::process::Stdio::null(),
        stdout: writer.into(),
        stderr: writer2.into(),
    };
    let tag = supervisor::new_tag();
    let (child, control) = crate::tools::bash::spawn::spawn(command, ctx, policy, &tag, streams)
        .map_err(|e| format!("could not start bash: {e}"))?;
    let pid = child.id().ok_or("could not start bash: no process id")?;
    let group = GroupGuard(pid as libc::pid_t);
    let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| format!("could not read the command's output: {e}"))?;
    Ok(Started {
        child,
        control,
        group,
        rx,
    })
}

/// What the task needs besides the process: where the log goes and what it must not show.
pub(crate) struct Saving {
    pub(crate) workspace: PathBuf,
    pub(crate) secrets: Secrets,
    pub(crate) limits: outputs::Limits,
}

impl Saving {
    pub(crate) fn of(ctx: &ToolCtx) -> Self {
        Self {
            workspace: ctx.workspace.clone(),
            secrets: ctx.secrets.clone(),
            limits: ctx.outputs,
        }
    }
}

/// The task of one job: runs until the process is gone; `changed` is called once it is.
pub(crate) async fn watch(
    job: Arc<Job>,
    mut run: Started,
    saving: Saving,
    changed: impl Fn() + Send,
) {
    let mut saved = outputs::Saved::create(
        &saving.workspace,
        &saving.secrets,
        saving.limits.max_file_bytes,
    );
    crate::sync::lock(&job.inner).log = match &saved {
        Ok(s) => format!(
            "full output in {}",
            crate::fsutil::display_path(&saving.workspace, s.path())
        ),
        Err(e) => format!("full output not saved: {e}"),
    };
    let mut redactor = saving.secrets.stream();
    let mut clean = Vec::new();
    let mut feed = |data: &[u8], job: &Job| {
        if let Ok(s) = &mut saved {
            s.write(data);
        }
        clean.clear();
        redactor.push(data, &mut clean);
        crate::sync::lock(&job.inner).unread.push(&clean);
    };
    let status = pump(&job, &mut run, &mut feed).await;
    run.group.kill();
    let state = conclude(status, &mut run, &job);
    if let Ok(s) = saved {
        let _ = s.finish(&saving.workspace);
    }
    let mut tail = Vec::new();
    redactor.finish(&mut tail);
    {
        let mut inner = crate::sync::lock(&job.inner);
        inner.unread.push(&tail);
        inner.state = state;
    }
    job.ended.cancel();
    changed();
}

/// Reads output until the process exits and its output ends (or the pipe is held open by
/// something that escaped: then a short drain); handles the stop request on the way.
async fn pump(
    job: &Job,
    run: &mut Started,
    feed: &mut impl FnMut(&[u8], &Job),
) -> Option<std::process::ExitStatus> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut status = None;
    let mut eof = false;
    let mut kill_at: Option<tokio::time::Instant> = None;
    loop {
        if status.is_some() && eof {
            return status;
        }
        tokio::select! {
            _ = job.stop.cancelled(), if kill_at.is_none() => {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(run.pgid()),
                    nix::sys::signal::Signal::SIGTERM,
                );
                kill_at = Some(tokio::time::Instant::now() + GRACE);
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or_else(tokio::time::Instant::now)), if kill_at.is_some() => {
                run.group.kill();
                kill_at = Some(tokio::time::Instant::now() + Duration::from_secs(3600));
            }
            r = run.rx.read(&mut buf), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => feed(&buf[..n], job),
            },
            w = run.child.wait(), if status.is_none() => match w {
                Ok(s) => {
                    status = Some(s);
                    if !eof {
                        // Whatever is still buffered, briefly: an escaped holder of the pipe
                        // is not waited for.
                        run.group.kill();
                        let drain = async {
                            while let Ok(n) = run.rx.read(&mut buf).await {
                                if n == 0 { break; }
                                feed(&buf[..n], job);
                            }
                        };
                        let _ = tokio::time::timeout(Duration::from_millis(300), drain).await;
                        return status;
                    }
                }
                Err(_) => return None,
            },
        }
    }
}

/// How the process ended: the shell's status as its supervisor reported it, or the
/// supervisor's own.
fn conclude(
    status: Option<std::process::ExitStatus>,
    run: &mut Started,
    job: &Job,
) -> BackgroundState {
    let reported = run.control.as_mut().and_then(supervisor::reported);
    let raw = match (reported, status) {
        (Some(Reported::Status { raw, .. }), _) => raw,
        (Some(Reported::Unavailable(u)), _) => {
            let note = format!("[not run: {u}]\n");
            crate::sync::lock(&job.inner).unread.push(note.as_bytes());
            return BackgroundState::Ended;
        }
        // A supervisor that reported nothing was killed (a stop that needed SIGKILL).
        (None, Some(s)) if run.control.is_some() => {
            return match s.signal() {
                Some(sig) if job.stop.is_cancelled() => BackgroundState::Killed(sig),
                _ => BackgroundState::Ended,
            };
        }
        (None, Some(s)) => s.into_raw(),
        (None, None) => return BackgroundState::Ended,
    };
    let s = std::process::ExitStatus::from_raw(raw);
    match (s.code(), s.signal()) {
        (Some(code), _) => BackgroundState::Exited(code),
        (None, Some(sig)) => BackgroundState::Killed(sig),
        (None, None) => BackgroundState::Ended,
    }
}
