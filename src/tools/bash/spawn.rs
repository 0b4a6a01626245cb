//! Starting one `bash` command: under the supervisor when there is one (which confines itself
//! with the call's sandbox policy before it starts `bash`), else `bash` directly.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::Stdio;

use crate::process::child;
use crate::process::supervisor;
use crate::sandbox::Policy;
use crate::sandbox::launch::Launch;
use crate::tools::ToolCtx;

/// The standard streams of a started command.
pub(crate) struct Streams {
    pub(crate) stdin: Stdio,
    pub(crate) stdout: Stdio,
    pub(crate) stderr: Stdio,
}

/// Starts `command` under `policy`; also returns minicode's end of the supervisor's socket
/// pair, which must stay open while the command runs. A `bash` call's stdin is /dev/null and
/// its stdout and stderr the two write ends of one output pipe; a hook's are three pipes.
pub(crate) fn spawn(
    command: &str,
    ctx: &ToolCtx,
    policy: &Policy,
    tag: &str,
    streams: Streams,
) -> std::io::Result<(tokio::process::Child, Option<UnixStream>)> {
    let (mut cmd, ends) = match &ctx.supervisor {
        Some(program) => {
            let (ours, theirs) = UnixStream::pair()?;
            let theirs = above_std_streams(theirs)?;
            let death = child::Death::Watched {
                control: theirs.as_raw_fd(),
            };
            let mut cmd = child::command(program, &ctx.scrub_env, death);
            let mut launch = Launch::new(policy);
            launch.join = ctx.session_net.join_for(policy, ctx);
            // Named as what it is in `ps` (the program path may be `/proc/self/exe`).
            cmd.arg0("minicode")
                .arg(supervisor::ARG)
                .arg(tag)
                .arg(launch.to_arg());
            (cmd, Some((ours, theirs)))
        }
        None => {
            let mut cmd = child::command("bash", &ctx.scrub_env, child::Death::Signal);
            cmd.arg("-c");
            (cmd, None)
        }
    };
    cmd.arg(command)
        .current_dir(&ctx.workspace)
        .stdin(streams.stdin)
        .stdout(streams.stdout)
        .stderr(streams.stderr);
    let spawned = cmd.spawn();
    // The command holds our copies of the pipe's write end (and the supervisor's end of the
    // socket pair): drop them now, or EOF never comes.
    drop(cmd);
    let (ours, theirs) = ends.unzip();
    drop(theirs);
    Ok((spawned?, ours))
}

/// The supervisor's end, moved above the standard streams, so setting those up in the child
/// cannot clobber it.
pub(super) fn above_std_streams(theirs: UnixStream) -> std::io::Result<OwnedFd> {
    let theirs = OwnedFd::from(theirs);
    if theirs.as_raw_fd() > 2 {
        return Ok(theirs);
    }
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor (at 10 or above) that only we own; a
    // failure is reported, never wrapped.
    #[allow(unsafe_code)]
    unsafe {
        let fd = libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
        if fd == -1 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(std::os::fd::FromRawFd::from_raw_fd(fd))
    }
}
