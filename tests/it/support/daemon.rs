//! `minicode serve` as a process and a plain JSON-RPC client of it over its Unix socket: the
//! daemon tests and the daemon bench drive the real binary through these. Every wait reads the
//! socket or the daemon's stdout with a deadline; nothing sleeps to synchronise.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock_openai::MockServer;

pub const DEADLINE: Duration = Duration::from_secs(30);

/// A running daemon; killed (SIGKILL) when dropped.
pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    pub token: String,
}

/// Where a test's daemon lives: `<dir>/run/d.sock`, workspaces under `<dir>/ws`.
pub fn layout(dir: &Path) -> (PathBuf, PathBuf) {
    let run = dir.join("run");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    (run.join("d.sock"), ws.canonicalize().unwrap())
}

impl Daemon {
    /// Starts `minicode serve` on `<dir>/run/d.sock` with `<dir>/ws` as the allowed root,
    /// against `server`, plus `extra` arguments; returns once it listens.
    pub fn start(dir: &Path, server: &MockServer, extra: &[&str]) -> Daemon {
        Self::start_with(dir, &server.base_url(), extra)
    }

    pub fn start_with(dir: &Path, base_url: &str, extra: &[&str]) -> Daemon {
        Self::start_customized(dir, base_url, extra, |_| {})
    }

    /// `start_with`, letting the test change the command first (limits in `pre_exec`, say).
    pub fn start_customized(
        dir: &Path,
        base_url: &str,
        extra: &[&str],
        customize: impl FnOnce(&mut std::process::Command),
    ) -> Daemon {
        let (socket, ws) = layout(dir);
        let mut cmd = super::binary::command(dir);
        customize(&mut cmd);
        cmd.args(["serve", "--socket"])
            .arg(&socket)
            .arg("--allowed-root")
            .arg(&ws)
            .args(["--base-url", base_url, "--model", "mock-model"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start minicode serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            while let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
        });
        let first = rx
            .recv_timeout(DEADLINE)
            .expect("the daemon printed its listening line");
        assert!(first.starts_with("listening unix:"), "{first}");
        let token_line = rx.recv_timeout(DEADLINE).expect("the token line");
        let token_path = token_line.strip_prefix("token ").unwrap();
        let token = std::fs::read_to_string(token_path)
            .unwrap()
            .trim()
            .to_string();
        Daemon {
            child,
            socket,
            token,
        }
    }

    /// A client that has passed the handshake.
    pub fn client(&self) -> Client {
        let mut client = Client::connect(&self.socket);
        let answer = client.call("handshake", json!({ "token": self.token }));
        assert!(answer.get("result").is_some(), "{answer}");
        client
    }

    /// SIGKILL, and wait for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One connection: requests answered by id, events buffered in arrival order.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next: u64,
    pub events: VecDeque<Value>,
}

impl Client {
    pub fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).expect("connect to the daemon");
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
            next: 1,
            events: VecDeque::new(),
        }
    }

    /// A second handle on the connection, to write from another thread while this one does
    /// not read (the two must not both write).
    pub fn writer(&self) -> UnixStream {
        self.writer.try_clone().unwrap()
    }

    /// Writes raw bytes (a line, or garbage).
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)?;
        self.writer.flush()
    }

    /// The next line from the daemon as it came; `None` at the end of the stream (the daemon
    /// bench reads lines this way, without parsing them).
    pub fn read_raw_line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(line),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
            Err(e) => panic!("reading from the daemon: {e}"),
        }
    }

    /// The next line from the daemon, parsed; `None` at the end of the stream.
    pub fn read(&mut self) -> Option<Value> {
        let line = self.read_raw_line()?;
        Some(serde_json::from_str(&line).expect("a JSON line"))
    }

    /// Sends a request and returns the whole answer (`result` or `error`), keeping the events
    /// that arrive meanwhile.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(format!("{line}\n").as_bytes()).unwrap();
        loop {
            let message = self.read().expect("an answer before the connection closed");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
            self.events.push_back(message);
        }
    }

    /// `call`, expecting a result.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {answer}"))
    }

    /// `call`, expecting an error; returns its code.
    pub fn error_code(&mut self, method: &str, params: Value) -> i64 {
        let answer = self.call(method, params);
        answer["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{method} did not fail: {answer}"))
    }

    /// Opens a session of `workspace` (a new one without `id`); returns its id.
    pub fn open(&mut self, workspace: &Path, id: Option<&str>) -> String {
        let result = self.ok(
            "session.open",
            json!({"workspace": workspace.display().to_string(), "session_id": id}),
        );
        result["session_id"].as_str().unwrap().to_string()
    }

    pub fn subscribe(&mut self, session: &str, after: u64) {
        self.ok(
            "session.subscribe",
            json!({"session_id": session, "after_sequence": after}),
        );
    }

    /// Sends the protocol's `op` (its JSON, `{"type": …}`) to `session`; the whole answer.
    pub fn op(&mut self, session: &str, op: Value) -> Value {
        self.call("op", json!({"session_id": session, "op": op}))
    }

    /// `op`, expecting a result.
    pub fn op_ok(&mut self, session: &str, op: Value) -> Value {
        let answer = self.op(session, op.clone());
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{op} failed: {answer}"))
    }

    /// `op`, expecting an error; returns its code.
    pub fn op_error(&mut self, session: &str, op: Value) -> i64 {
        let answer = self.op(session, op.clone());
        answer["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{op} did not fail: {answer}"))
    }

    /// Submits a prompt (a run); returns its run id.
    pub fn start_run(&mut self, session: &str, prompt: &str) -> String {
        let result = self.op_ok(session, json!({"type": "submit", "text": prompt}));
        result["run_id"].as_str().unwrap().to_string()
    }

    /// Answers the approval of `call` with `decision` (`{"decision": "approve"}` …).
    pub fn decide(&mut self, session: &str, call: &str, decision: Value) -> Value {
        self.op(
            session,
            json!({"type": "decide", "call": call, "decision": decision}),
        )
    }

    /// The next event notification's params (`session_id`, `sequence`, `run_id`, `event`);
    /// a `subscription.ended` instead is a failure.
    pub fn next_event(&mut self) -> Value {
        loop {
            let message = match self.events.pop_front() {
                Some(m) => m,
                None => self.read().expect("an event before the connection closed"),
            };
            if message["method"] == "event" {
                return message["params"].clone();
            }
            // No event follows it on this connection: say why instead of waiting in vain.
            if message["method"] == "subscription.ended" {
                panic!("the subscription ended: {}", message["params"]);
            }
        }
    }

    /// Every event up to and including the first whose `event.type` is `kind`.
    pub fn events_until(&mut self, kind: &str) -> Vec<Value> {
        let end = Instant::now() + DEADLINE;
        let mut seen = Vec::new();
        while Instant::now() < end {
            let event = self.next_event();
            let done = event["event"]["type"] == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("no {kind} event in time; saw {seen:?}");
    }
}

/// The `event.type` of each event.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The address a `serve --listen` child prints on its first stdout line.
pub fn tcp_address(child: &mut Child) -> String {
    let mut out = BufReader::new(child.stdout.take().expect("the daemon's stdout is piped"));
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    line.trim()
        .strip_prefix("listening tcp:")
        .unwrap_or_else(|| panic!("not a listening line: {line:?}"))
        .to_string()
}

/// VmHWM and VmRSS of `pid`, in MB.
pub fn memory_mb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap()
            / 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}
