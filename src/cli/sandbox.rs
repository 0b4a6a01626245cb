//! `minicode sandbox [--mode M] [--network] -- CMD ARGS…`: runs one command under the same
//! helper and rules as a `bash` call, in the current folder as the workspace, and exits with
//! its status — for users to try what their build needs. A layer that cannot be enforced is
//! named with its fix (exit 1); nothing then runs. The profile is resolved as a session's is
//! (the user's `[sandbox]`, narrowed by a trusted workspace's, then this command's flags), so
//! what works here works in a session of this folder.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{ExitCode, Stdio};

use super::Failure;
use crate::config::Overrides;
use crate::process::supervisor::{self, Reported};
use crate::sandbox::guard::{self, Guard};
use crate::sandbox::launch::Launch;
use crate::sandbox::{Mode, Policy, tmpdir};
use crate::sanitize::sanitize;

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

#[derive(Debug, clap::Args)]
pub(crate) struct SandboxArgs {
    /// The profile: workspace-write, read-only or off (default: the configured one).
    #[arg(long, value_parser = parse_mode)]
    mode: Option<Mode>,
    /// Allow IPv4/IPv6 sockets.
    #[arg(long)]
    network: bool,
    /// The command and its arguments (run directly, not through a shell).
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<OsString>,
}

fn parse_mode(text: &str) -> Result<Mode, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| "expected workspace-write, read-only or off".to_string())
}

pub(super) fn run(
    args: &SandboxArgs,
    env: Env<'_>,
    workspace: &Path,
    config_path: Option<&Path>,
) -> Result<ExitCode, Failure> {
    let fail = |message: String| Failure { code: 1, message };
    let sandbox = configured(args, env, workspace, config_path)?;
    let session = format!("sandbox-{}", uuid::Uuid::new_v4().simple());
    let policy = sandbox.policy(workspace, &session);
    let guard =
        Guard::before(&policy).map_err(|e| fail(format!("cannot prepare the sandbox: {e}")))?;
    let outcome = supervised(&args.command, workspace, &policy);
    let created = guard.after(&policy);
    tmpdir::remove(&policy.tmpdir);
    let mut err = std::io::stderr().lock();
    for path in &created {
        let _ = writeln!(
            err,
            "minicode: blocked by the sandbox: the command created {}, which stays read-only; it was removed",
            guard::shown(&policy, path)
        );
    }
    match outcome.map_err(|e| fail(format!("cannot start the sandbox helper: {e}")))? {
        Reported::Unavailable(u) => Err(fail(u.to_string())),
        Reported::Status { raw, .. } => {
            let status = std::process::ExitStatus::from_raw(raw);
            if status.signal() == Some(libc::SIGSYS) {
                let _ = writeln!(
                    err,
                    "minicode: blocked by the sandbox: a forbidden system call (SIGSYS)"
                );
            }
            let code = status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1);
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
    }
}

/// The sandbox a session of `workspace` would run under, with this command's flags laid over
/// it. A workspace file that cannot be used as it is (untrusted but redirecting the model,
/// or changed since it was trusted) is left out with a notice: its `[sandbox]` could only
/// narrow the user's, and would not be applied untrusted either.
fn configured(
    args: &SandboxArgs,
    env: Env<'_>,
    workspace: &Path,
    config_path: Option<&Path>,
) -> Result<crate::config::Sandbox, Failure> {
    // No model is needed: load as the demo does, so no server or key is required.
    let overrides = Overrides {
        config_path: config_path.map(Path::to_path_buf),
        demo: true,
        sandbox: args.mode,
        network: args.network,
        ..Overrides::default()
    };
    // The runtime and the log are not needed: the command runs under the supervisor, a
    // process of its own.
    let started = super::prelude::start(super::prelude::Setup {
        env,
        launch: workspace,
        overrides,
        refused: super::prelude::Refused::Skip,
        log: super::prelude::Log::OnRequest,
    })?;
    let config = started.config;
    let mut err = std::io::stderr().lock();
    for notice in &config.notices {
        let _ = writeln!(err, "minicode: {}", sanitize(notice));
    }
    Ok(config.sandbox)
}

/// Runs `true` confined by `policy` in `workspace` (the doctor's trial): whether every layer
/// applied.
pub(super) fn trial(
    policy: &Policy,
    workspace: &Path,
) -> std::io::Result<Result<(), crate::sandbox::Unavailable>> {
    let guard = Guard::before(policy)?;
    let reported = supervised(&[OsString::from("true")], workspace, policy);
    guard.after(policy);
    match reported? {
        Reported::Unavailable(u) => Ok(Err(u)),
        Reported::Status { raw: 0, .. } => Ok(Ok(())),
        Reported::Status { raw, .. } => Err(std::io::Error::other(format!(
            "`true` ended with wait status {raw}"
        ))),
    }
}

/// Runs `command` under the supervisor, confined by `policy`; what it reported.
fn supervised(
    command: &[OsString],
    workspace: &Path,
    policy: &Policy,
) -> std::io::Result<Reported> {
    let program = supervisor::program()
        .ok_or_else(|| std::io::Error::other("the minicode binary cannot be found"))?;
    let (mut ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&theirs);
    let mut cmd = std::process::Command::new(program);
    cmd.arg0("minicode")
        .arg(supervisor::ARG)
        .arg(supervisor::new_tag())
        .arg(Launch::new(policy).to_arg())
        .arg(shell_words(command))
        .current_dir(workspace);
    // The configured key variable is already gone from this process (`forget_key`).
    crate::process::child::scrub_env(&mut cmd, &[]);
    if std::io::stdin().is_terminal() {
        // The terminal is not the command's to read: it would compete with the shell.
        cmd.stdin(Stdio::null());
    }
    // SAFETY: setsid and dup2 are async-signal-safe and touch only the child.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            // A session of its own, as for a `bash` call: its own group (which it kills when
            // done, never ours) and no controlling terminal, so the command cannot push
            // input into the user's shell (TIOCSTI) or read its keys.
            if libc::setsid() == -1 || libc::dup2(fd, supervisor::CONTROL_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    drop(theirs);
    let _ = child.wait()?;
    supervisor::reported(&mut ours)
        .ok_or_else(|| std::io::Error::other("the helper ended without a report"))
}

/// `exec 'arg0' 'arg1' …`: the argument vector as one `bash -c` command, each word quoted.
fn shell_words(command: &[OsString]) -> OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut text = b"exec".to_vec();
    for word in command {
        text.extend_from_slice(b" '");
        for &byte in word.as_bytes() {
            match byte {
                b'\'' => text.extend_from_slice(br"'\''"),
                _ => text.push(byte),
            }
        }
        text.push(b'\'');
    }
    OsString::from_vec(text)
}
