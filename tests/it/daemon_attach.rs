//! The daemon's wire carries the protocol's own `Op` and `Event`: a client sends any op the
//! full-screen session can send (`op` with `{"type": …}`), a malformed or unknown one is
//! refused with a clear error, an op that would switch the daemon's session is refused saying
//! why; and `minicode attach` in a pseudo-terminal does what the full-screen session does
//! (`/rewind`, `/goal`), each answered by the core through the daemon.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use serde_json::{Value, json};

use crate::support::daemon::{Client, DEADLINE, Daemon, layout};
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};

/// A session whose first turn made `made.txt` through an approved `bash` call.
fn session_with_a_turn(client: &mut Client, ws: &std::path::Path) -> String {
    let session = client.open(ws, None);
    client.subscribe(&session, 0);
    client.start_run(&session, "make a file");
    client.events_until("approval_requested");
    let answer = client.decide(&session, "call_1", json!({"decision": "approve"}));
    assert!(answer.get("result").is_some(), "{answer}");
    client.events_until("run_ended");
    assert!(ws.join("made.txt").exists());
    session
}

fn made_a_file() -> MockServer {
    let arguments = json!({ "command": "echo agent > made.txt" }).to_string();
    MockServer::start_in_thread(vec![
        tool_calls_reply(&[("call_1", "bash", arguments.as_str())], 7),
        text_reply("Done.", 5),
    ])
}

#[test]
fn ops_the_daemon_used_to_lack_are_answered_by_the_core_on_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let server = made_a_file();
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = session_with_a_turn(&mut client, &ws);
    client.op_ok(&session, json!({"type": "list_skills"}));
    client.events_until("skills_listed");
    client.op_ok(&session, json!({"type": "complete_path", "prefix": "ma"}));
    let completed = client.events_until("path_completions");
    assert_eq!(
        completed.last().unwrap()["event"]["paths"],
        json!(["made.txt"])
    );
    client.op_ok(&session, json!({"type": "list_rewind"}));
    let listed = client.events_until("rewind_list");
    assert_eq!(listed.last().unwrap()["event"]["turns"][0]["turn"], 1);
}

#[test]
fn a_malformed_or_unknown_op_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    let message = |answer: &Value| answer["error"]["message"].as_str().unwrap().to_string();
    for (op, says) in [
        (json!({"type": "launch"}), "launch"),
        (json!({"text": "no type"}), "type"),
        (json!({"type": "submit", "prompt": "old name"}), "prompt"),
        (
            json!({"type": "rewind", "turn": "one", "scope": "code"}),
            "u32",
        ),
    ] {
        let answer = client.op(&session, op.clone());
        assert_eq!(answer["error"]["code"], -32602, "{op}: {answer}");
        assert!(message(&answer).contains(says), "{op}: {answer}");
    }
    // The old per-command methods are gone: one vocabulary on the wire.
    for method in ["run.start", "goal.show", "session.rewind"] {
        let answer = client.call(method, json!({"session_id": session}));
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    let answer = client.call("op", json!({"session_id": session}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(message(&answer).contains("op"), "{answer}");
}

#[test]
fn an_op_that_would_switch_the_daemons_session_is_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    for op in [
        json!({"type": "fork"}),
        json!({"type": "new_session"}),
        json!({"type": "resume", "id": "abc"}),
        json!({"type": "rewind", "turn": 1, "scope": "both", "force": false}),
        json!({"type": "shutdown"}),
    ] {
        let answer = client.op(&session, op.clone());
        assert_eq!(answer["error"]["code"], -32010, "{op}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("daemon"),
            "{op}: {answer}"
        );
    }
    // The session is still open and serves ops.
    let listed = client.ok("session.list", json!({}));
    assert_eq!(listed["sessions"][0]["closed"], json!(false));
}

/// `minicode attach` in a 30×100 pseudo-terminal.
struct Attached {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    _master: Box<dyn MasterPty + Send>,
    child: Box<dyn Child + Send + Sync>,
}

impl Attached {
    fn start(daemon: &Daemon, session: &str, ws: &std::path::Path, home: &std::path::Path) -> Self {
        let size = PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        };
        let pair = native_pty_system().openpty(size).unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
        cmd.args(["attach", "--session", session, "--socket"]);
        cmd.arg(&daemon.socket);
        cmd.cwd(ws);
        crate::support::binary::isolate_pty(&mut cmd, home);
        cmd.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(30, 100, 0)));
        let writer = Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let mut reader = pair.master.try_clone_reader().unwrap();
        let (s, w) = (screen.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let bytes = &buf[..n];
                let has = |pat: &[u8]| bytes.windows(pat.len()).any(|x| x == pat);
                // Answer the terminal queries the UI makes (keyboard flags, cursor position).
                if has(b"\x1b[?u") {
                    let _ = w.lock().unwrap().write_all(b"\x1b[?0u\x1b[?62;22c");
                }
                if has(b"\x1b[6n") {
                    let _ = w.lock().unwrap().write_all(b"\x1b[1;1R");
                }
                s.lock().unwrap().process(bytes);
            }
        });
        Attached {
            screen,
            writer,
            _master: pair.master,
            child,
        }
    }

    fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, what: &str) {
        let end = Instant::now() + DEADLINE;
        while Instant::now() < end {
            if self.contents().contains(what) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!(
            "timed out waiting for {what:?}; screen:\n{}",
            self.contents()
        );
    }

    fn send(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    /// Types a line and Enter.
    fn command(&self, line: &str) {
        self.send(line.as_bytes());
        self.send(b"\r");
    }

    /// Ctrl+C twice: detach.
    fn leave(mut self) {
        self.send(b"\x03");
        self.wait_for("Ctrl+C again");
        self.send(b"\x03");
        let end = Instant::now() + DEADLINE;
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < end, "attach did not exit");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn attach_rewinds_the_code_and_runs_goal_commands_through_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let server = made_a_file();
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = session_with_a_turn(&mut client, &ws);

    let ui = Attached::start(&daemon, &session, &ws, &dir.path().join("home"));
    ui.wait_for("Done.");
    ui.wait_for("idle");
    ui.command("/rewind");
    ui.wait_for("turns that changed files");
    ui.command("/rewind 1 code");
    ui.wait_for("rewound to before turn 1; restored: made.txt");
    assert!(
        !ws.join("made.txt").exists(),
        "the rewind restored the files"
    );
    // A rewind of the conversation would fork the session: the daemon says why it cannot.
    ui.command("/rewind 1");
    ui.wait_for("keeps its id");
    ui.command("/goal");
    ui.wait_for("no goal: /goal <objective> sets one");
    assert!(
        !ui.contents().contains("not available while attached"),
        "{}",
        ui.contents()
    );
    ui.leave();
}
