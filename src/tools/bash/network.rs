//! The session's one network namespace when the network is off: a holder process (the
//! supervisor started with `hold`, see `process::supervisor`) makes a user namespace with a
//! network namespace whose loopback is up, and every later confined call of the session
//! joins both instead of making its own (`sandbox::launch::Launch::join`). So a server a
//! background process serves on 127.0.0.1 answers a later call's `curl`, while nothing
//! outside the namespace is reachable, as before. With the network on, or unconfined, nothing
//! is held. The holder dies with the session (dropped here) or with minicode (its socket
//! closes); a holder that could not start leaves each call its own namespace, as before.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::Duration;

use crate::process::{child, supervisor};
use crate::sandbox::Policy;
use crate::sandbox::launch::Launch;
use crate::tools::ToolCtx;

/// How long the holder may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(5);

/// The session's network holder, started on first need.
#[derive(Debug, Default)]
pub struct SessionNet {
    holder: Mutex<Option<Holder>>,
}

#[derive(Debug)]
struct Holder {
    /// Killed when dropped (`kill_on_drop`); never reaped while held, so its pid is not
    /// reused by another process meanwhile.
    child: tokio::process::Child,
    /// Minicode's end of the holder's socket: closing it ends the holder.
    _control: UnixStream,
    pid: i32,
}

impl SessionNet {
    /// The holder a call under `policy` should join: `None` when the call makes its own
    /// namespaces (network on, unconfined, no supervisor, or the holder could not start).
    pub(crate) fn join_for(&self, policy: &Policy, ctx: &ToolCtx) -> Option<i32> {
        if !policy.is_confined() || policy.network {
            return None;
        }
        let program = ctx.supervisor.as_ref()?;
        let mut holder = crate::sync::lock(&self.holder);
        if let Some(h) = holder.as_mut()
            && matches!(h.child.try_wait(), Ok(None))
        {
            return Some(h.pid);
        }
        *holder = None;
        match start(program, ctx, policy) {
            Ok(h) => {
                let pid = h.pid;
                *holder = Some(h);
                Some(pid)
            }
            Err(e) => {
                tracing::warn!(error = %e, "no session network namespace; each call gets its own");
                None
            }
        }
    }

    /// Whether a holder runs now (for tests and the doctor).
    pub fn is_held(&self) -> bool {
        crate::sync::lock(&self.holder).is_some()
    }
}

/// Starts the holder and waits for its `ready`.
fn start(program: &std::path::Path, ctx: &ToolCtx, policy: &Policy) -> Result<Holder, String> {
    let (ours, theirs) = UnixStream::pair().map_err(|e| e.to_string())?;
    let theirs = super::spawn::above_std_streams(theirs).map_err(|e| e.to_string())?;
    let death = child::Death::Watched {
        control: theirs.as_raw_fd(),
        log: None,
    };
    let mut launch = Launch::new(policy);
    launch.hold = true;
    let mut cmd = child::command(program, &ctx.scrub_env, death);
    cmd.arg0("minicode")
        .arg(supervisor::ARG)
        .arg(supervisor::new_tag())
        .arg(launch.to_arg())
        .arg("")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let spawned = cmd.spawn();
    drop(cmd);
    drop(theirs);
    let child = spawned.map_err(|e| format!("could not start the holder: {e}"))?;
    let pid = child.id().ok_or("the holder has no process id")? as i32;
    let mut control = ours;
    control
        .set_read_timeout(Some(READY_WITHIN))
        .map_err(|e| e.to_string())?;
    let mut said = [0u8; 6];
    match control.read_exact(&mut said) {
        Ok(()) if &said == b"ready\n" => Ok(Holder {
            child,
            _control: control,
            pid,
        }),
        Ok(()) => Err("the holder could not make the namespace".to_string()),
        Err(e) => Err(format!("the holder did not answer: {e}")),
    }
}
