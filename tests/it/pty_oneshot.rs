//! One-shot mode in a real pseudo-terminal: approvals are asked on the controlling terminal
//! (answered `y`, the command runs; a `y` typed before the question appeared answers nothing),
//! Ctrl+C at that prompt ends the run at once with exit code 130 instead of waiting for an
//! answer, and nothing the model or a tool says reaches the terminal raw: no escape sequence,
//! C1 control or bidi override, and a `bash` child cannot draw on the terminal through
//! `/dev/tty`. A workspace's `.mcp.json` server is asked about on the terminal too, and the
//! answer is recorded in the user's config. A running command's latest output line is shown
//! on the terminal's stderr (plain `\r` rewrites) until its result line replaces it.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::mock_openai::{Gate, MockServer, text_reply, tool_calls_reply};
use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

const DEADLINE: Duration = Duration::from_secs(30);

struct OneShot {
    output: Arc<Mutex<String>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    dir: tempfile::TempDir,
}

impl OneShot {
    fn spawn(server: &MockServer, prompt: &str) -> OneShot {
        Self::spawn_with(server, &[], prompt)
    }

    fn spawn_with(server: &MockServer, flags: &[&str], prompt: &str) -> OneShot {
        Self::spawn_in(tempfile::tempdir().unwrap(), server, flags, prompt)
    }

    /// In `dir` (the workspace and HOME), prepared by the test.
    fn spawn_in(
        dir: tempfile::TempDir,
        server: &MockServer,
        flags: &[&str],
        prompt: &str,
    ) -> OneShot {
        let size = PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        };
        let pair = native_pty_system().openpty(size).unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
        cmd.args(["--base-url", &server.base_url(), "--model", "m"]);
        cmd.args(flags);
        cmd.arg(prompt);
        cmd.cwd(dir.path());
        crate::support::binary::isolate_pty(&mut cmd, dir.path());
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let output = Arc::new(Mutex::new(String::new()));
        let mut reader = pair.master.try_clone_reader().unwrap();
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let writer = pair.master.take_writer().unwrap();
        // The master must outlive the child or the terminal hangs up on it.
        std::mem::forget(pair.master);
        OneShot {
            output,
            writer,
            child,
            dir,
        }
    }

    fn wait_for(&self, what: &str) {
        let end = Instant::now() + DEADLINE;
        while Instant::now() < end {
            if self.output.lock().unwrap().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "timed out waiting for {what:?}; output:\n{}",
            self.output.lock().unwrap()
        );
    }

    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    fn wait_exit(&mut self, within: Duration) -> u32 {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.exit_code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!(
            "did not exit in {within:?}; output:\n{}",
            self.output.lock().unwrap()
        );
    }
}

#[test]
fn approval_is_asked_on_the_terminal_and_yes_runs_the_command() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("c1", "bash", r#"{"command":"echo hi > approved.txt"}"#)],
            8,
        ),
        text_reply("all done", 4),
    ]);
    let mut run = OneShot::spawn(&server, "make a file");
    run.wait_for("Allow?");
    run.send(b"y\r");
    assert_eq!(run.wait_exit(DEADLINE), 0);
    assert!(run.dir.path().join("approved.txt").exists());
    run.wait_for("all done");
}

#[test]
fn ctrl_c_at_the_approval_prompt_exits_130_at_once() {
    let server = MockServer::start_in_thread(vec![tool_calls_reply(
        &[("c1", "bash", r#"{"command":"touch never.txt"}"#)],
        8,
    )]);
    let mut run = OneShot::spawn(&server, "make a file");
    run.wait_for("Allow?");
    run.send(b"\x03");
    assert_eq!(run.wait_exit(Duration::from_secs(10)), 130);
    assert!(!run.dir.path().join("never.txt").exists());
    assert!(
        !run.output
            .lock()
            .unwrap()
            .contains("no approval is pending")
    );
}

#[test]
fn a_y_typed_before_the_question_appears_does_not_approve() {
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("c1", "bash", r#"{"command":"touch typed-ahead.txt"}"#)],
            8,
        )
        .after(&gate),
        text_reply("understood", 4),
    ]);
    let mut run = OneShot::spawn(&server, "make a file");
    // The request is out and its reply held back: the user types "y" meant for something else.
    assert!(crate::support::mock_openai::wait_until_blocking(
        DEADLINE,
        || { server.request_count() == 1 }
    ));
    run.send(b"y\r");
    // Echoed by the terminal: the line sits in the terminal's input queue, unread.
    run.wait_for("y\r\n");
    gate.open();
    run.wait_for("Allow?");
    run.send(b"n\r");
    assert_eq!(run.wait_exit(DEADLINE), 0);
    assert!(
        !run.dir.path().join("typed-ahead.txt").exists(),
        "the typed-ahead y approved the call"
    );
    assert!(
        server.requests()[1]
            .raw_body
            .contains("the user denied this call")
    );
}

/// Bytes that would act on a terminal: ESC, the C1 controls (8-bit CSI, OSC, DCS…) and the
/// bidi overrides and isolates.
fn raw_controls(output: &str) -> Vec<char> {
    output
        .chars()
        .filter(|&c| matches!(c as u32, 0x1b | 0x80..=0x9f | 0x202a..=0x202e | 0x2066..=0x2069))
        .collect()
}

#[test]
fn escape_sequences_from_the_model_and_tools_reach_the_terminal_inert() {
    // A reply that would set the title and the clipboard, clear the screen, use the 8-bit
    // CSI and reverse the text; a command whose text and output carry sequences too.
    let reply = "answer \x1b]0;reply-title\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[2J \u{9b}31m \u{202e}desrever done";
    let command = r#"{"command":"echo 'out\u001b]0;tool-title\u0007put'; echo '\u009b2J'"}"#;
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", command)], 8),
        text_reply(reply, 3),
    ]);
    let mut run = OneShot::spawn_with(&server, &["--yes"], "go");
    assert_eq!(run.wait_exit(DEADLINE), 0);
    run.wait_for("done");
    let output = run.output.lock().unwrap().clone();
    assert_eq!(raw_controls(&output), Vec::<char>::new(), "{output:?}");
    // What was there is still visible, just inert.
    assert!(output.contains("␛]0;reply-title"), "{output:?}");
    assert!(
        output.contains("▶ bash echo 'out␛]0;tool-title"),
        "{output:?}"
    );
    assert!(
        output.contains("succeeded: out␛]0;tool-title"),
        "{output:?}"
    );
}

#[test]
fn a_running_command_shows_its_latest_line_on_a_terminal_stderr_then_the_result() {
    // The command prints, rewrites a progress line with `\r`, then waits until the test lets
    // it finish by creating a file: the tail is checked while the command certainly runs.
    let command = "printf 'step 1\\n'; for p in 10 50 100; do printf '\\rprogress %s%%' $p; done; \
        while [ ! -e go ]; do sleep 0.05; done; echo; echo finished";
    let args = serde_json::json!({ "command": command }).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &args)], 8),
        text_reply("all done", 4),
    ]);
    let mut run = OneShot::spawn_with(&server, &["--yes"], "go");
    run.wait_for("│ progress 100%");
    let live = run.output.lock().unwrap().clone();
    assert!(!live.contains("progress 10%"), "{live:?}");
    std::fs::write(run.dir.path().join("go"), "").unwrap();
    assert_eq!(run.wait_exit(DEADLINE), 0);
    run.wait_for("all done");
    let output = run.output.lock().unwrap().clone();
    assert!(output.contains("succeeded: step 1"), "{output:?}");
    // The tail is drawn and erased with `\r` and spaces only: no escape sequence.
    assert_eq!(raw_controls(&output), Vec::<char>::new(), "{output:?}");
}

#[test]
fn a_bash_child_cannot_reach_the_terminal() {
    // Without a new session the child would inherit the controlling terminal: `tty` would
    // name it and the echo would land on the user's screen.
    let command = r#"{"command":"tty; echo DRAWN-$((6*7)) > /dev/tty; echo status=$?"}"#;
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", command)], 8),
        text_reply("ok", 4),
    ]);
    let mut run = OneShot::spawn_with(&server, &["--yes"], "go");
    assert_eq!(run.wait_exit(DEADLINE), 0);
    run.wait_for("ok");
    let output = run.output.lock().unwrap().clone();
    assert!(!output.contains("DRAWN-42"), "{output:?}");
    let result = server.requests()[1].raw_body.clone();
    assert!(result.contains("not a tty"), "{result}");
    assert!(result.contains("status=1"), "{result}");
}

#[test]
fn a_mcp_json_server_is_asked_about_on_the_terminal_and_the_answer_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    crate::support::user_config::write_trusting(&ws, &ws, "");
    let pid = ws.join("server.pid");
    let (command, args) = crate::support::mcp_server::command();
    let json = serde_json::json!({"mcpServers": {"t": {
        "command": command,
        "args": args,
        "env": {"IT_MCP_MODE": "paged", "IT_MCP_PID": pid.to_str().unwrap()},
    }}});
    std::fs::write(ws.join(".mcp.json"), json.to_string()).unwrap();
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![text_reply("done", 4).after(&gate)]);
    let mut run = OneShot::spawn_in(dir, &server, &[], "hi");
    run.wait_for("Start it?");
    assert!(run.output.lock().unwrap().contains("IT_MCP_MODE=paged"));
    run.send(b"y\r");
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let started =
                crate::support::mock_openai::wait_until_blocking(DEADLINE, || pid.exists());
            gate.open();
            assert!(started, "the approved server did not start");
        });
    });
    assert_eq!(run.wait_exit(DEADLINE), 0);
    let config = std::fs::read_to_string(crate::support::user_config::path(&ws)).unwrap();
    assert!(
        config.contains("[[approved_mcp_servers]]") && config.contains("server = \"t\""),
        "{config}"
    );
}
