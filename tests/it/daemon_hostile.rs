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

/// Waits for `child` to exit after SIGTERM, within the deadline.
fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < end, "the daemon ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A repository can put anything in `.minicode/events/<id>/`: a FIFO where a segment of the
/// log or the call journal should be, or a link to `/dev/zero`. Opening that session is
/// refused with the reason; the daemon never blocks on it, keeps answering, and stops on
/// SIGTERM.
#[test]
fn a_fifo_or_device_link_planted_in_the_event_log_never_hangs_the_daemon() {
    use crate::support::daemon::{Daemon, layout};
    use crate::support::mock_openai::MockServer;
    use serde_json::json;

    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let (_, ws) = layout(dir.path());
    let events = ws.join(".minicode/events");
    let fifo = |path: &Path| {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    };
    let planted = [
        ("aaaa0001", "00000000000000000001.jsonl", "not a regular file"),
        ("aaaa0002", "00000000000000000001.jsonl", "outside"),
        ("aaaa0003", "calls.jsonl", "not a regular file"),
    ];
    for (id, name, _) in planted {
        std::fs::create_dir_all(events.join(id)).unwrap();
    }
    fifo(&events.join("aaaa0001/00000000000000000001.jsonl"));
    std::os::unix::fs::symlink("/dev/zero", events.join("aaaa0002/00000000000000000001.jsonl"))
        .unwrap();
    fifo(&events.join("aaaa0003/calls.jsonl"));

    let mut daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    for (id, name, why) in planted {
        let answer = client.call(
            "session.open",
            json!({"workspace": ws.display().to_string(), "session_id": id}),
        );
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(answer["error"]["code"], -32008, "{answer}");
        assert!(message.contains(name) && message.contains(why), "{answer}");
    }
    // Still answering, to this client and to a new one.
    assert_eq!(client.ok("session.list", json!({}))["sessions"], json!([]));
    daemon.client().ok("session.list", json!({}));
    let status = terminate(&mut daemon.child);
    assert!(status.success(), "{status:?}");
}
