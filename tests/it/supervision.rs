//! Nothing a `bash` command started outlives minicode: each command runs under a supervisor
//! that kills its whole process group when minicode dies, even by SIGKILL; and a resumed
//! session kills a group its session record names that is still running, before it calls
//! the call interrupted.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply, wait_until_blocking};

const WAIT: Duration = Duration::from_secs(30);

/// Waits `for_how_long` and says whether `path` appeared meanwhile (polling).
fn appears_within(path: &Path, for_how_long: Duration) -> bool {
    let end = Instant::now() + for_how_long;
    while Instant::now() < end {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    path.exists()
}

/// A one-shot `--yes` run in `ws` whose model runs `script` with bash; returns the process
/// once the script has touched `started`.
fn run_until_started(ws: &Path, server: &MockServer, script: &str) -> std::process::Child {
    write_config(ws, server);
    let child = command(ws)
        .args(["--yes", "run it"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until_blocking(WAIT, || ws.join("started").exists()),
        "the command never started: {script}"
    );
    child
}

fn bash_call(script: &str) -> MockServer {
    let args = serde_json::json!({ "command": script }).to_string();
    MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &args)], 16),
        text_reply("done", 4),
        text_reply("resumed", 4),
    ])
}

#[test]
fn a_background_child_dies_with_a_sigkilled_minicode() {
    let (_tmp, ws) = crate::support::workspace();
    let script = "sh -c 'sleep 3; touch marker' & touch started; sleep 30";
    let server = bash_call(script);
    let mut child = run_until_started(&ws, &server, script);
    child.kill().unwrap();
    child.wait().unwrap();
    // The background job would touch the marker 3 s after it started.
    assert!(
        !appears_within(&ws.join("marker"), Duration::from_secs(5)),
        "a command's background child outlived minicode"
    );
}

#[test]
fn a_process_that_left_the_group_dies_with_a_sigkilled_minicode() {
    let (_tmp, ws) = crate::support::workspace();
    // `setsid -f` leaves the command's process group; the call's PID namespace still holds it.
    let script = "setsid -f sh -c 'sleep 3; touch marker'; touch started; sleep 30";
    let server = bash_call(script);
    let mut child = run_until_started(&ws, &server, script);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !appears_within(&ws.join("marker"), Duration::from_secs(5)),
        "a process started with setsid outlived minicode"
    );
}

/// The minicode binary started as a supervisor of `script` in a session of its own, the way
/// minicode starts one (its end of the socket pair on fd 3). The returned stream is the other
/// end: while it is open the supervisor keeps running.
fn fake_supervisor(
    ws: &Path,
    tag: &str,
    script: &str,
) -> (std::process::Child, std::os::unix::net::UnixStream) {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let fd = theirs.as_raw_fd();
    let mut cmd = command(ws);
    let launch = serde_json::json!({ "policy": minicode::sandbox::Policy::unconfined() });
    cmd.args([
        minicode::cli::SUPERVISOR_ARG,
        tag,
        &launch.to_string(),
        script,
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    // SAFETY: dup2 is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 3) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    drop(theirs);
    (child, ours)
}

#[test]
fn resuming_kills_a_recorded_group_that_is_still_alive_before_calling_the_call_interrupted() {
    let (_tmp, ws) = crate::support::workspace();
    let script = "touch started; sleep 30";
    let server = bash_call(script);
    let mut first = run_until_started(&ws, &server, script);
    // While the command runs, its group is recorded beside the session.
    let running = ws.join(".minicode/running");
    let record = || {
        std::fs::read_dir(&running)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "json"))
    };
    assert!(wait_until_blocking(WAIT, || record().is_some()));
    let record = record().unwrap();
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert!(recorded["c1"]["pgid"].as_i64().unwrap() > 1, "{recorded}");
    assert!(recorded["c1"]["tag"].as_str().is_some(), "{recorded}");
    first.kill().unwrap();
    first.wait().unwrap();
    // Its own supervisor killed that group. Stand in for one that survived: a live group led
    // by a supervisor, under the same call. Another live supervisor whose id is recorded with
    // a tag that is not its own (a recycled id) must be left alone.
    let (mut left, _keep) = fake_supervisor(&ws, "t-left", "touch started2; sleep 3; touch marker");
    let (mut other, keep_other) = fake_supervisor(&ws, "t-other", "touch started3; sleep 60");
    assert!(wait_until_blocking(WAIT, || ws.join("started2").exists()
        && ws.join("started3").exists()));
    let planted = serde_json::json!({
        "c1": {"pgid": left.id(), "tag": "t-left"},
        "c9": {"pgid": other.id(), "tag": "t-wrong"},
    });
    std::fs::write(&record, planted.to_string()).unwrap();
    let out = command(&ws)
        .args(["--yes", "--continue", "go on"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let killed = err
        .find("tool call c1 was still running after an earlier exit")
        .unwrap_or_else(|| panic!("{err}"));
    let interrupted = err
        .find("tool call c1 was interrupted by an earlier exit")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(killed < interrupted, "{err}");
    let status = left.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert!(!appears_within(&ws.join("marker"), Duration::from_secs(4)));
    assert!(!record.exists(), "the record is taken on resume");
    assert!(
        other.try_wait().unwrap().is_none(),
        "another supervisor's group was killed"
    );
    // Closing its socket end is what minicode's death looks like: the group goes.
    drop(keep_other);
    assert_eq!(other.wait().unwrap().signal(), Some(libc::SIGKILL));
}

#[test]
fn the_commands_own_exit_status_comes_through_its_supervisor() {
    for (script, shown) in [
        ("echo out; exit 3", "[exit code 3]"),
        ("kill -TERM $$", "[killed by signal 15]"),
        ("true", "[exit code 0]"),
    ] {
        let (_tmp, ws) = crate::support::workspace();
        let server = bash_call(script);
        write_config(&ws, &server);
        let out = command(&ws).args(["--yes", "run it"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let result = &server.requests()[1].raw_body;
        assert!(result.contains(shown), "{script}: {result}");
    }
}
