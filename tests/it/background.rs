//! Background processes (issue 36, item 1): `bash` with `background: true` returns an id at
//! once, `bash_output` reads what came since the last read, `bash_kill` ends the whole tree;
//! at most `[tools] max_background` run at once; they keep the call's sandbox (and, with the
//! network off, the session's one network namespace, so a later call reaches a server they
//! serve); nothing outlives minicode, even a SIGKILLed one. Runs the real binary against the
//! mock model server, sandboxed as configured by default (workspace-write, network off).

use std::path::Path;
use std::time::Duration;

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{
    MockReply, MockServer, text_reply, tool_calls_reply, wait_until_blocking,
};

/// One reply calling `tool` with `args`.
fn call(id: &str, tool: &str, args: serde_json::Value) -> MockReply {
    tool_calls_reply(&[(id, tool, &args.to_string())], 64)
}

fn bash(id: &str, command: &str) -> MockReply {
    call(id, "bash", serde_json::json!({ "command": command }))
}

fn background(id: &str, command: &str) -> MockReply {
    call(
        id,
        "bash",
        serde_json::json!({ "command": command, "background": true }),
    )
}

/// Runs one `--yes` one-shot prompt in `ws` against `server`, to its end.
fn run(ws: &Path, server: &MockServer) -> std::process::Output {
    write_config(ws, server);
    command(ws).args(["--yes", "go"]).output().unwrap()
}

/// The tool results the model was sent, in order (the last request holds them all).
fn results(server: &MockServer) -> Vec<String> {
    let requests = server.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_background_command_returns_an_id_at_once_and_its_output_is_read_later() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![
        background("c1", "echo first; sleep 0.3; echo second; exec sleep 1000"),
        bash("c2", "sleep 1"),
        call("c3", "bash_output", serde_json::json!({ "id": "bg1" })),
        call("c4", "bash_output", serde_json::json!({ "id": "bg1" })),
        call("c5", "bash_kill", serde_json::json!({ "id": "bg1" })),
        text_reply("done", 4),
    ]);
    let out = run(&ws, &server);
    let results = results(&server);
    assert!(out.status.success(), "{results:?}");
    assert!(results[0].contains("bg1"), "{}", results[0]);
    assert!(
        results[2].contains("first\nsecond\n") && results[2].contains("[bg1: running]"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("(no new output)"),
        "a second read shows only what is new: {}",
        results[3]
    );
    assert!(results[4].contains("bg1 stopped"), "{}", results[4]);
}

#[test]
fn bash_output_filters_lines_and_reports_the_exit_code() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![
        background(
            "c1",
            "echo 'GET / 200'; echo noise; echo 'GET /x 404'; exit 3",
        ),
        bash("c2", "sleep 1"),
        call(
            "c3",
            "bash_output",
            serde_json::json!({ "id": "bg1", "filter": "^GET" }),
        ),
        text_reply("done", 4),
    ]);
    run(&ws, &server);
    let results = results(&server);
    let read = &results[2];
    assert!(read.contains("GET / 200\nGET /x 404\n"), "{read}");
    assert!(!read.contains("noise"), "{read}");
    assert!(read.contains("exited with code 3"), "{read}");
}

#[test]
fn more_than_max_background_at_once_is_refused_with_the_setting_named() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![
        background("c1", "exec sleep 1000"),
        background("c2", "exec sleep 1000"),
        text_reply("done", 4),
    ]);
    write_config(&ws, &server);
    let config = ws.join(".minicode/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[tools]\nmax_background = 1\n")).unwrap();
    command(&ws).args(["--yes", "go"]).output().unwrap();
    let results = results(&server);
    assert!(results[0].contains("bg1"), "{}", results[0]);
    assert!(
        results[1].contains("max_background") && !results[1].contains("bg2"),
        "{}",
        results[1]
    );
}

#[test]
fn a_call_that_leaves_a_process_behind_is_told_to_use_background() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![
        bash(
            "c1",
            "setsid -f sleep 100; nohup sleep 100 >/dev/null 2>&1 & echo ok",
        ),
        text_reply("done", 4),
    ]);
    run(&ws, &server);
    let results = results(&server);
    assert!(results[0].contains("background: true"), "{}", results[0]);
}

#[test]
fn a_server_started_in_the_background_answers_a_later_call_of_the_same_session() {
    let (_tmp, ws) = crate::support::workspace();
    std::fs::write(ws.join("index.html"), "hello\n").unwrap();
    let port = 18531;
    let fetch = format!(
        "for i in $(seq 100); do
  code=$(curl -s -m 1 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/) && break
  sleep 0.1
done
echo \"status=$code\""
    );
    let server = MockServer::start_in_thread(vec![
        background(
            "c1",
            &format!("exec python3 -m http.server --bind 127.0.0.1 {port}"),
        ),
        bash("c2", &fetch),
        text_reply("done", 4),
    ]);
    run(&ws, &server);
    let results = results(&server);
    assert!(results[1].contains("status=200"), "{results:?}");
}

#[test]
fn a_call_in_the_session_namespace_still_cannot_reach_the_hosts_loopback() {
    let (_tmp, ws) = crate::support::workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            use std::io::Write;
            let mut stream = stream;
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let fetch =
        format!("curl -s -m 3 -o /dev/null -w 'status=%{{http_code}}' http://127.0.0.1:{port}/");
    let server = MockServer::start_in_thread(vec![
        background("c1", "exec sleep 1000"),
        bash("c2", &fetch),
        text_reply("done", 4),
    ]);
    run(&ws, &server);
    let results = results(&server);
    assert!(!results[1].contains("status=200"), "{results:?}");
}

/// Processes whose command line names `ws` (every supervisor and holder carries the
/// workspace in its policy; the test's sleeper is named after it).
fn processes_naming(ws: &Path) -> Vec<String> {
    let needle = ws.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect()
}

#[test]
fn background_processes_and_the_network_holder_die_with_a_sigkilled_minicode() {
    dies_with_a_sigkilled_minicode(&[]);
}

#[test]
fn unsandboxed_background_processes_die_with_a_sigkilled_minicode_too() {
    dies_with_a_sigkilled_minicode(&["--sandbox", "off"]);
}

/// Starts a background process in a one-shot run with `flags`, SIGKILLs minicode, and checks
/// that nothing naming the workspace is left (the process, its supervisor, the holder).
fn dies_with_a_sigkilled_minicode(flags: &[&str]) {
    let (_tmp, ws) = crate::support::workspace();
    // The model never answers the second request: minicode waits while the process runs.
    let server = MockServer::start_in_thread(vec![
        background(
            "c1",
            "(sleep 3; touch marker) & touch started; exec -a \"$PWD/sleeper\" sleep 1000",
        ),
        text_reply("done", 4).with_delay(Duration::from_secs(60)),
    ]);
    write_config(&ws, &server);
    let mut child = command(&ws)
        .args(flags)
        .args(["--yes", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until_blocking(Duration::from_secs(30), || ws.join("started").exists()),
        "the background command never started"
    );
    assert!(
        processes_naming(&ws).iter().any(|c| c.contains("sleeper")),
        "{:?}",
        processes_naming(&ws)
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_until_blocking(Duration::from_secs(10), || processes_naming(&ws).is_empty()),
        "left running after minicode was killed: {:?}",
        processes_naming(&ws)
    );
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        !ws.join("marker").exists(),
        "a background process outlived a SIGKILLed minicode"
    );
}

#[test]
fn sessions_and_resume_say_which_background_processes_were_running_at_the_end() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![
        background("c1", "exec sleep 1000"),
        text_reply("done", 4),
        text_reply("again", 4),
    ]);
    let out = run(&ws, &server);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = command(&ws).arg("sessions").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(list.contains("background running: bg1"), "{list}");
    let json = command(&ws)
        .args(["sessions", "--output-format", "json"])
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&json.stdout).into_owned();
    assert!(json.contains("exec sleep 1000"), "{json}");
    let resumed = command(&ws)
        .args(["--yes", "--continue", "again"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&resumed.stderr).into_owned();
    assert!(
        said.contains("not restarted") && said.contains("bg1"),
        "{said}"
    );
}

#[test]
fn the_small_profile_offers_no_background_unless_asked() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![text_reply("hi", 4)]);
    write_config(&ws, &server);
    let config = ws.join(".minicode/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("[model]\n", "[model]\nprofile = \"small\"\n"),
    )
    .unwrap();
    command(&ws).args(["--yes", "go"]).output().unwrap();
    let requests = server.requests();
    let tools = &requests[0].body["tools"];
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(!names.contains(&"bash_output"), "{names:?}");
    let bash = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "bash")
        .unwrap();
    assert!(
        bash["function"]["parameters"]["properties"]
            .get("background")
            .is_none(),
        "{bash}"
    );
}
