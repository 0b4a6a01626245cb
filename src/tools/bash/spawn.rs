//! Starting one `bash` command: under the supervisor when there is one (which confines itself
//! with the call's sandbox policy before it starts `bash`), else `bash` directly.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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
    spawn_recorded(command, ctx, policy, tag, streams, false)
        .map(|(child, control, _)| (child, control))
}

/// [`spawn`], and with `record` for a confined call under a supervisor also the file in which
/// the supervisor records what the command may have changed (`sandbox::written`), read after
/// the call (see `checkpoints`, "Attribution").
pub(crate) fn spawn_recorded(
    command: &str,
    ctx: &ToolCtx,
    policy: &Policy,
    tag: &str,
    streams: Streams,
    record: bool,
) -> std::io::Result<(tokio::process::Child, Option<UnixStream>, Option<File>)> {
    let log = if record && ctx.record_writes && policy.is_confined() && ctx.supervisor.is_some() {
        record_file()
    } else {
        None
    };
    let (mut cmd, ends) = match &ctx.supervisor {
        Some(program) => {
            let (ours, theirs) = UnixStream::pair()?;
            let theirs = above_std_streams(theirs)?;
            let death = child::Death::Watched {
                control: theirs.as_raw_fd(),
                log: log.as_ref().map(AsRawFd::as_raw_fd),
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
    Ok((spawned?, ours, log))
}

/// An anonymous memory file at descriptor 10 or above (so that handing the supervisor its
/// descriptors overwrites nothing, see `process::child`), close-on-exec here. `None` where it
/// cannot be made: the call then has no record, as an unconfined one.
#[cfg(target_os = "linux")]
fn record_file() -> Option<File> {
    // SAFETY: memfd_create takes a C string and flags; a non-negative result is ours.
    #[allow(unsafe_code)]
    let fd = unsafe { libc::memfd_create(c"minicode-written".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: just returned to us, owned by nothing else.
    #[allow(unsafe_code)]
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    if file.as_raw_fd() >= 10 {
        return Some(File::from(file));
    }
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor (at 10 or above) that only we own.
    #[allow(unsafe_code)]
    let moved = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    // SAFETY: as above; `file` (the low one) closes when dropped.
    #[allow(unsafe_code)]
    (moved >= 0).then(|| File::from(unsafe { OwnedFd::from_raw_fd(moved) }))
}

#[cfg(not(target_os = "linux"))]
fn record_file() -> Option<File> {
    None
}

/// What the record file says, read from its start after the call: `None` when the call has
/// no complete record.
pub(crate) fn read_record(file: &File) -> Option<crate::sandbox::Written> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata().ok()?.len();
    let mut bytes = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut bytes, 0).ok()?;
    crate::sandbox::written::parse(&bytes)
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
