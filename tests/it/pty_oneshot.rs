//! One-shot mode in a real pseudo-terminal: approvals are asked on the controlling terminal
//! (answered `y`, the command runs), and Ctrl+C at that prompt ends the run at once with exit
//! code 130 instead of waiting for an answer.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
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
        let dir = tempfile::tempdir().unwrap();
        let size = PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        };
        let pair = native_pty_system().openpty(size).unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
        cmd.args(["--base-url", &server.base_url(), "--model", "m", prompt]);
        cmd.cwd(dir.path());
        cmd.env("HOME", dir.path());
        cmd.env_remove("MINICODE_API_KEY");
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
