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
/// make a second user's folder: the test is ignored, and `.ci/run` (as root) runs it.
#[test]
#[ignore = "needs root to chown a folder to another uid; .ci/run runs it"]
fn attach_refuses_a_runtime_folder_owned_by_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = attach_to_fake(dir.path(), 0o700, Some(4242))
        .expect("chown to another uid is not permitted: run this test as root");
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
        (
            "aaaa0001",
            "00000000000000000001.jsonl",
            "not a regular file",
        ),
        ("aaaa0002", "00000000000000000001.jsonl", "outside"),
        ("aaaa0003", "calls.jsonl", "not a regular file"),
    ];
    for (id, _, _) in planted {
        std::fs::create_dir_all(events.join(id)).unwrap();
    }
    fifo(&events.join("aaaa0001/00000000000000000001.jsonl"));
    std::os::unix::fs::symlink(
        "/dev/zero",
        events.join("aaaa0002/00000000000000000001.jsonl"),
    )
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

/// `minicode serve --listen 127.0.0.1:0` with at most 1024 descriptors (a usual default, set
/// in the child only); returns it, its address and its token.
fn serve_tcp(dir: &Path, base_url: &str) -> (std::process::Child, String, String) {
    use std::os::unix::process::CommandExt;
    let (_, ws) = crate::support::daemon::layout(dir);
    let runtime = dir.join("xdg");
    std::fs::create_dir_all(&runtime).unwrap();
    let mut cmd = crate::support::binary::command(dir);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--allowed-root"])
        .arg(&ws)
        .args(["--base-url", base_url, "--model", "m"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdout(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let addr = crate::support::daemon::tcp_address(&mut child);
    let token = std::fs::read_to_string(runtime.join("minicode/token")).unwrap();
    (child, addr, token)
}

/// A `handshake` over a new TCP connection; returns the connection and the answer.
fn handshake(addr: &str, token: &str) -> (std::net::TcpStream, serde_json::Value) {
    use std::io::{BufRead, BufReader, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let hello = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "handshake", "params": {"token": token}});
    writeln!(stream, "{hello}").unwrap();
    let mut answer = String::new();
    BufReader::new(stream.try_clone().unwrap())
        .read_line(&mut answer)
        .unwrap();
    (stream, serde_json::from_str(&answer).unwrap_or_default())
}

/// A local user without the token holds 2,000 idle connections and 300 half-sent 1 MiB lines
/// against a daemon limited to 1,024 descriptors: the real client's handshake is still
/// answered within a second and the daemon stays small. Runs in a child process of its own:
/// it needs some 2,400 descriptors, and raises its own limit for them.
#[test]
fn idle_and_half_sent_connections_without_the_token_cannot_exhaust_the_daemon() {
    let name = "daemon_hostile::idle_and_half_sent_connections_without_the_token_cannot_exhaust_the_daemon";
    if !crate::support::isolated::in_child(name, &[], &[]) {
        return;
    }
    use std::io::Write;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if limit.rlim_cur < 4096 {
        limit.rlim_cur = limit.rlim_max.min(8192);
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    }
    let dir = tempfile::tempdir().unwrap();
    let server = crate::support::mock_openai::MockServer::start_in_thread(vec![]);
    let (mut child, addr, token) = serve_tcp(dir.path(), &server.base_url());
    let mut held = Vec::new();
    for _ in 0..2000 {
        held.push(std::net::TcpStream::connect(&addr).unwrap());
    }
    let half = vec![b'a'; 1024 * 1024];
    for _ in 0..300 {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_nonblocking(true).unwrap();
        // As much of the line as the socket takes now; the rest never comes.
        let _ = stream.write(&half);
        held.push(stream);
    }
    let started = Instant::now();
    let (_real, answer) = handshake(&addr, &token);
    let took = started.elapsed();
    assert_eq!(answer["result"]["server"], "minicode", "{answer}");
    assert!(took < Duration::from_secs(1), "the handshake took {took:?}");
    let (peak, now) = crate::support::daemon::memory_mb(child.id());
    assert!(peak < 60 && now < 60, "VmHWM {peak} MB, VmRSS {now} MB");
    drop(held);
    let status = terminate(&mut child);
    assert!(status.success(), "{status:?}");
}

/// A connection that never says anything is closed once the handshake deadline passes.
#[test]
fn a_connection_without_a_handshake_is_closed_after_the_deadline() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let server = crate::support::mock_openai::MockServer::start_in_thread(vec![]);
    let (mut child, addr, _) = serve_tcp(dir.path(), &server.base_url());
    let stream = std::net::TcpStream::connect(&addr).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let started = Instant::now();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no handshake")
    );
    line.clear();
    assert_eq!(reader.read_line(&mut line).unwrap(), 0, "then closed");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(15),
        "{took:?}"
    );
    terminate(&mut child);
}
