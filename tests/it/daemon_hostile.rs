//! The daemon and `attach` against hostile neighbours: another local user's folder or fake
//! daemon in the runtime folder, a repository that plants FIFOs or links where the event log
//! lives, and a local user without the token who opens thousands of connections.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::daemon::DEADLINE;

/// What became of `minicode attach` run against a fake daemon in `<xdg>/minicode`.
enum AttachOutcome {
    /// It exited before connecting: its code and stderr.
    Refused(Option<i32>, String),
    /// The fake daemon got a connection (and would have received the token, the workspace
    /// path and every prompt typed).
    Connected,
}

/// Puts a fake daemon (a listening socket and a token) in `<xdg>/minicode`, whose mode is
/// `mode`, and runs `minicode attach` with `XDG_RUNTIME_DIR=<xdg>` (the same folder the
/// `/tmp/minicode-<uid>` fallback goes through; the real `/tmp` is shared and not touched).
fn attach_to_fake(dir: &Path, mode: u32, owner: Option<u32>) -> Option<AttachOutcome> {
    let xdg = dir.join("xdg");
    let runtime = xdg.join("minicode");
    std::fs::create_dir_all(&runtime).unwrap();
    let listener = UnixListener::bind(runtime.join("daemon.sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::write(runtime.join("token"), "not-a-real-token").unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(mode)).unwrap();
    if let Some(uid) = owner
        && std::os::unix::fs::chown(&runtime, Some(uid), None).is_err()
    {
        return None;
    }
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut child = crate::support::binary::command(&ws)
        .arg("attach")
        .env("XDG_RUNTIME_DIR", &xdg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + DEADLINE;
    let outcome = loop {
        if listener.accept().is_ok() {
            break AttachOutcome::Connected;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            break AttachOutcome::Refused(status.code(), stderr);
        }
        assert!(Instant::now() < end, "attach neither connected nor exited");
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = child.kill();
    let _ = child.wait();
    Some(outcome)
}

#[test]
fn attach_refuses_a_runtime_folder_other_users_can_write() {
    let dir = tempfile::tempdir().unwrap();
    match attach_to_fake(dir.path(), 0o777, None).unwrap() {
        AttachOutcome::Connected => panic!("attach talked to a daemon in a 0777 folder"),
        AttachOutcome::Refused(code, stderr) => {
            assert_eq!(code, Some(2), "{stderr}");
            assert!(stderr.contains("open to other users"), "{stderr}");
            assert!(stderr.contains("0777"), "{stderr}");
            assert!(stderr.contains("xdg/minicode"), "{stderr}");
        }
    }
}

/// A folder owned by another user: the tests run as root here, so a `chown` to a uid nobody
/// has stands in for that user. Where `chown` is not permitted (not root) there is no way to
/// make a second user's folder, and the test says so and checks nothing.
#[test]
fn attach_refuses_a_runtime_folder_owned_by_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let Some(outcome) = attach_to_fake(dir.path(), 0o700, Some(4242)) else {
        eprintln!("skipped: chown to another uid is not permitted for this user");
        return;
    };
    match outcome {
        AttachOutcome::Connected => panic!("attach talked to another user's daemon"),
        AttachOutcome::Refused(code, stderr) => {
            assert_eq!(code, Some(2), "{stderr}");
            assert!(stderr.contains("belongs to another user"), "{stderr}");
            assert!(stderr.contains("uid 4242"), "{stderr}");
        }
    }
}

#[test]
fn attach_connects_through_a_private_runtime_folder_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    match attach_to_fake(dir.path(), 0o700, None).unwrap() {
        AttachOutcome::Connected => {}
        AttachOutcome::Refused(code, stderr) => panic!("refused ({code:?}): {stderr}"),
    }
}
