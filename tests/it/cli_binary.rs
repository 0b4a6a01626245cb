//! The built `minicode` binary run as a process against the mock server: exit codes 0/1/2, the
//! stdout/stderr split, output formats, approvals without a terminal, resume, signals, and the
//! offline demo end to end.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::mock_openai::{
    MockServer, error_reply, text_reply, tool_calls_reply, wait_until_blocking,
};

const SECRET: &str = "sk-test-secret-key-5f3a9c";

/// A temp workspace with an isolated HOME and no inherited MINICODE_* settings.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn with_config(self, server: &MockServer, extra: &str) -> Self {
        std::fs::create_dir_all(self.path().join(".minicode")).unwrap();
        let config = format!(
            "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n{extra}",
            server.base_url()
        );
        std::fs::write(self.path().join(".minicode/config.toml"), config).unwrap();
        self.trust();
        self
    }

    /// The seed layout: the workspace's file holds the server (and maybe the key), and the
    /// user trusted the workspace once.
    fn trust(&self) {
        crate::support::user_config::write_trusting(&self.path().join("home"), self.path(), "");
    }

    fn command(&self) -> Command {
        crate::support::binary::command(self.path())
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn session_id(stderr: &str) -> String {
    let at = stderr.find("--session ").expect("stderr names the session");
    stderr[at + 10..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(')')
        .to_string()
}

#[test]
fn version_exits_zero() {
    let out = Workspace::new().run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("minicode "));
}

#[test]
fn the_version_fast_path_prints_what_the_parser_prints() {
    let ws = Workspace::new();
    // `-V` alone takes the fast path; with another flag clap answers it.
    let fast = ws.run(&["-V"]);
    let parsed = ws.run(&["--demo", "--version"]);
    assert_eq!(fast.status.code(), Some(0));
    assert_eq!(parsed.status.code(), Some(0));
    assert_eq!(stdout(&fast), stdout(&parsed));
    assert_eq!(
        stdout(&fast),
        format!("minicode {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn unknown_flag_exits_2() {
    let out = Workspace::new().run(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_config_exits_2_with_how_to_and_no_network() {
    let ws = Workspace::new();
    let out = ws.run(&["hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("config.example.toml") && err.contains("--demo"),
        "{err}"
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn one_shot_prints_only_the_answer_on_stdout() {
    let server = MockServer::start_in_thread(vec![text_reply("The answer is **42**.", 4)]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws.run(&["what is the answer?"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "The answer is **42**.\n");
    let err = stderr(&out);
    assert!(
        err.contains("completed") && err.contains("1 model call ·"),
        "{err}"
    );
    let body = &server.requests()[0].body;
    assert_eq!(body["messages"][1]["content"], "what is the answer?");
}

#[test]
fn piped_stdin_is_the_prompt() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4)]);
    let ws = Workspace::new().with_config(&server, "");
    let mut child = ws
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from the pipe\nsecond line")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "from the pipe\nsecond line"
    );
}

#[test]
fn yes_runs_tools_and_exits_zero() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"echo made > made.txt"}"#)],
            5,
        ),
        text_reply("done", 4),
    ]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws.run(&["--yes", "make a file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(ws.path().join("made.txt").exists());
    assert_eq!(stdout(&out), "done\n");
    assert!(stderr(&out).contains("bash"));
}

#[test]
fn stderr_that_is_not_a_terminal_gets_no_live_tail() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[(
                "call_1",
                "bash",
                r#"{"command":"echo first; printf '\\rprogress 50%%'; echo endmark"}"#,
            )],
            5,
        ),
        text_reply("done", 4),
    ]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws.run(&["--yes", "run it"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    // Only the call and its result's first line: no tail line, no `\r` rewrites.
    assert!(err.contains("succeeded: first"), "{err:?}");
    assert!(!err.contains('\r'), "{err:?}");
    assert!(!err.contains('\u{2502}'), "{err:?}");
    // Named once, in the call's line, never as output.
    assert_eq!(err.matches("endmark").count(), 1, "{err:?}");
    assert_eq!(err.matches("progress").count(), 1, "{err:?}");
}

#[test]
fn without_yes_or_terminal_tools_are_refused_and_model_told() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"touch refused.txt"}"#)],
            5,
        ),
        text_reply("understood", 4),
    ]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws.run(&["make a file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!ws.path().join("refused.txt").exists());
    assert!(stderr(&out).contains("--yes"));
    let second = server.requests()[1].body.to_string();
    assert!(
        second.contains("--yes"),
        "the model learns how the user can allow it"
    );
}

#[test]
fn auth_failure_exits_1_and_never_shows_the_key() {
    let server = MockServer::start_in_thread(vec![error_reply(401, "invalid api key")]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws
        .command()
        .env("MINICODE_API_KEY", SECRET)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("authentication"), "{err}");
    assert!(!err.contains(SECRET) && !stdout(&out).contains(SECRET));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let sessions = std::fs::read_dir(ws.path().join(".minicode/sessions")).unwrap();
    for entry in sessions {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        assert!(
            !text.contains(SECRET),
            "the key never reaches session files"
        );
    }
}

#[test]
fn round_limit_prints_summary_and_exits_1() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", r#"{"command":"true"}"#)], 5),
        text_reply("summary of progress", 4),
    ]);
    let ws = Workspace::new().with_config(&server, "[tools]\nmax_rounds = 1\n");
    let out = ws.run(&["--yes", "loop"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "summary of progress\n");
    assert!(stderr(&out).contains("limit of 1 tool rounds"));
    assert!(
        server.requests()[1].body.get("tools").is_none(),
        "summary request has no tools"
    );
}

#[test]
fn json_output_is_one_object_with_result_and_stats() {
    let server = MockServer::start_in_thread(vec![text_reply("json answer", 4)]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws.run(&["--output-format", "json", "q"]);
    assert_eq!(out.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(value["result"], "json answer");
    assert_eq!(value["stats"]["model_calls"], 1);
    assert!(value["session_id"].as_str().unwrap().len() == 36);
    assert!(value["error"].is_null());
}

#[test]
fn json_status_is_a_plain_string_with_error_beside_it() {
    let server = MockServer::start_in_thread(vec![
        text_reply("fine", 4),
        error_reply(400, "bad request"),
        tool_calls_reply(&[("c1", "bash", r#"{"command":"true"}"#)], 5),
        text_reply("summary", 4),
    ]);
    let ws = Workspace::new().with_config(&server, "[tools]\nmax_rounds = 1\n");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let out = ws.run(&["--yes", "--output-format", "json", "q"]);
        let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        seen.push((
            out.status.code(),
            value["status"].clone(),
            value["error"].clone(),
        ));
    }
    assert_eq!(
        seen[0],
        (Some(0), "completed".into(), serde_json::Value::Null)
    );
    assert_eq!(seen[1].0, Some(1));
    assert_eq!(seen[1].1, "failed");
    assert!(
        seen[1].2.as_str().unwrap().contains("bad request"),
        "{seen:?}"
    );
    assert_eq!(seen[2].0, Some(1));
    assert_eq!(seen[2].1, "round_limit");
    assert!(
        seen[2]
            .2
            .as_str()
            .unwrap()
            .contains("limit of 1 tool rounds")
    );
}

#[test]
fn stream_json_prints_one_event_per_line() {
    let server = MockServer::start_in_thread(vec![text_reply("streamed words", 3)]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws.run(&["--output-format", "stream-json", "q"]);
    assert_eq!(out.status.code(), Some(0));
    let events: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "session_configured");
    assert!(events.iter().filter(|e| e["type"] == "text_delta").count() >= 3);
    assert!(events.iter().any(|e| e["type"] == "turn_ended"));
}

#[test]
fn resume_runs_the_next_turn_with_earlier_history() {
    let server = MockServer::start_in_thread(vec![
        text_reply("first answer", 4),
        text_reply("second answer", 4),
    ]);
    let ws = Workspace::new().with_config(&server, "");
    let first = ws.run(&["first question"]);
    assert_eq!(first.status.code(), Some(0));
    let id = session_id(&stderr(&first));
    let second = ws.run(&["--session", &id, "second question"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("first question") && body.contains("first answer"));
    let listed = ws.run(&["sessions"]);
    assert!(stdout(&listed).contains(&id) && stdout(&listed).contains("first question"));
    let cont = ws.run(&["--continue", "third"]);
    assert_eq!(
        cont.status.code(),
        Some(1),
        "script exhausted → server error → exit 1"
    );
    assert_eq!(session_id(&stderr(&cont)), id);
}

#[test]
fn bad_session_ids_exit_2() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".minicode")).unwrap();
    std::fs::write(
        ws.path().join(".minicode/config.toml"),
        "[model]\nprovider = \"demo\"\n",
    )
    .unwrap();
    ws.trust();
    for id in [
        "../etc/passwd",
        "not-a-uuid",
        "6f1c2a4e-0000-4000-8000-000000000000",
    ] {
        let out = ws.run(&["--session", id, "hi"]);
        assert_eq!(out.status.code(), Some(2), "{id}: {}", stderr(&out));
    }
}

/// Whether process `pid` has a handler for `signal` (the `SigCgt` mask in its `/proc` status).
fn catches(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

#[test]
fn sigint_interrupts_saves_and_exits_130() {
    let slow =
        text_reply("a slow reply that keeps coming", 2).with_delay(Duration::from_millis(300));
    let server = MockServer::start_in_thread(vec![slow]);
    let ws = Workspace::new().with_config(&server, "");
    let child = ws
        .command()
        .arg("hi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_until_blocking(Duration::from_secs(20), || server
        .request_count()
        == 1));
    // The watcher that turns SIGINT into an interrupt is installed by a task of its own: wait
    // until the process catches the signal, or the default action would kill it instead.
    assert!(wait_until_blocking(Duration::from_secs(20), || catches(
        child.id(),
        libc::SIGINT
    )));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"));
    let id = session_id(&stderr(&out));
    let saved =
        std::fs::read_to_string(ws.path().join(format!(".minicode/sessions/{id}.json"))).unwrap();
    assert!(saved.contains("\"hi\""));
}

#[test]
fn demo_runs_end_to_end_offline() {
    let ws = Workspace::new();
    std::fs::write(
        ws.path().join("README.md"),
        "# Tiny Project\n\nIt does one thing well.\n",
    )
    .unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    let out = ws.run(&["--demo", "--yes", "summarise this project"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let answer = stdout(&out);
    assert!(
        answer.contains("## What I found") && answer.contains("Tiny Project"),
        "{answer}"
    );
    assert!(
        answer.contains("**2** files"),
        "the listing really ran: {answer}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("bash") && err.contains("read"),
        "tool activity on stderr: {err}"
    );
    assert!(
        err.contains("resume with: minicode --demo --session "),
        "{err}"
    );
}

#[test]
fn demo_without_approval_still_reads_and_summarises() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("README.md"), "# Tiny Project\n").unwrap();
    let out = ws.run(&["--demo", "summarise this project"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--yes"),
        "the refused listing is explained"
    );
    assert!(stdout(&out).contains("Tiny Project"));
}

#[test]
fn demo_change_request_proposes_an_edit_that_yes_applies() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("notes.md"), "# Notes\n\nfirst note\n").unwrap();
    let out = ws.run(&["--demo", "--yes", "add a line to notes.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let notes = std::fs::read_to_string(ws.path().join("notes.md")).unwrap();
    assert!(notes.contains("minicode demo"), "{notes}");
    assert!(stdout(&out).contains("was applied"));
}

#[test]
fn demo_edit_refused_for_want_of_a_terminal_is_summarised_as_denied() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("notes.md"), "# Notes\n\nfirst note\n").unwrap();
    let out = ws.run(&["--demo", "add a line to notes.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let notes = std::fs::read_to_string(ws.path().join("notes.md")).unwrap();
    assert!(!notes.contains("minicode demo"), "{notes}");
    // The refusal's text never says "denied": its status does.
    assert!(
        stdout(&out).contains("was **denied**, so nothing changed"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn crash_mid_call_is_marked_unknown_on_resume_and_never_rerun() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[(
                "c1",
                "bash",
                r#"{"command":"echo started >> runs.log; sleep 30"}"#,
            )],
            5,
        ),
        text_reply("resumed fine", 4),
    ]);
    let ws = Workspace::new().with_config(&server, "");
    let mut child = ws
        .command()
        .args(["--yes", "long job"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = ws.path().join("runs.log");
    assert!(wait_until_blocking(Duration::from_secs(20), || log.exists()));
    child.kill().unwrap();
    child.wait().unwrap();
    let out = ws.run(&["--continue", "what happened?"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("outcome is unknown"),
        "{}",
        stderr(&out)
    );
    let body = server.requests()[1].body.clone();
    let messages = body["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .expect("call answered");
    assert!(result["content"].as_str().unwrap().contains("interrupted"));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "started\n",
        "never run again"
    );
}

#[test]
fn failed_turn_prints_no_stale_answer() {
    let mut first = crate::support::mock_openai::tool_call_payloads(
        &[("c1", "bash", r#"{"command":"true"}"#)],
        5,
    );
    first.insert(0, crate::support::mock_openai::chunk_text("Running it."));
    let server = MockServer::start_in_thread(vec![
        crate::support::mock_openai::MockReply::sse(crate::support::mock_openai::sse_events(
            &first,
        )),
        error_reply(400, "bad request"),
    ]);
    let ws = Workspace::new().with_config(&server, "");
    let out = ws.run(&["--yes", "go"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "", "no narration presented as the answer");
    let json = ws.run(&["--yes", "--output-format", "json", "again"]);
    assert_eq!(json.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    assert_eq!(value["result"], "");
    assert!(
        value["error"]
            .as_str()
            .unwrap()
            .contains("script exhausted")
    );
}

#[test]
fn the_key_never_reaches_the_model_or_session_through_tools() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("c1", "bash", r#"{"command":"cat .minicode/config.toml"}"#)],
            5,
        ),
        text_reply("read it", 4),
    ]);
    let ws = Workspace::new().with_config(&server, &format!("api_key = \"{SECRET}\"\n"));
    let out = ws.run(&["--yes", "show the config"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = &server.requests()[1].raw_body;
    assert!(
        !second.contains(SECRET) && second.contains("[redacted]"),
        "{second}"
    );
    let id = session_id(&stderr(&out));
    let saved =
        std::fs::read_to_string(ws.path().join(format!(".minicode/sessions/{id}.json"))).unwrap();
    assert!(!saved.contains(SECRET));
    assert!(!stderr(&out).contains(SECRET));
}

#[test]
fn oversized_stdin_prompt_exits_2() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".minicode")).unwrap();
    std::fs::write(
        ws.path().join(".minicode/config.toml"),
        "[model]\nprovider = \"demo\"\n",
    )
    .unwrap();
    ws.trust();
    let mut child = ws
        .command()
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    let chunk = vec![b'a'; 1024 * 1024];
    for _ in 0..9 {
        if stdin.write_all(&chunk).is_err() {
            break;
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("larger than 8 MiB"));
}

#[test]
fn demo_reads_the_named_file_even_when_the_listing_is_refused() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("README.md"), "# Not this one\n").unwrap();
    std::fs::write(
        ws.path().join("main.rs"),
        "// the file I named\nfn main() {}\n",
    )
    .unwrap();
    let out = ws.run(&["--demo", "read main.rs please"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("the file I named"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_run_that_kept_nothing_names_no_session_to_resume() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".minicode")).unwrap();
    std::fs::write(
        ws.path().join(".minicode/config.toml"),
        "[model]\nprovider = \"demo\"\n",
    )
    .unwrap();
    ws.trust();
    std::fs::write(ws.path().join("MiniCode.md"), "bad\0memory").unwrap();
    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("MiniCode.md"), "{err}");
    assert!(
        !err.contains("resume with"),
        "the empty session was removed: {err}"
    );
    let json = ws.run(&["--output-format", "json", "hi"]);
    let value: serde_json::Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    assert!(value["session_id"].is_null());
}
