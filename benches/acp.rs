//! What `minicode acp` costs beside a one-shot run of the same work: wall time, CPU time and
//! peak RSS of the whole process (from `wait4` and `VmHWM`), driven over its stdio by a plain
//! JSON-RPC client in this bench (initialize, session/new, session/prompt, every permission
//! allowed) against the local mock server.
//!
//! Scenarios: a prompt with 5 tool calls (read, edit, bash, read, write), the same as a
//! one-shot `--yes` run; a 200 KB reply streamed in 4-character chunks (50,000 SSE events, so
//! as many `session/update` notifications), beside the one-shot run of it, with the bytes the
//! client received. Run with `cargo bench --bench acp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Resource usage is read with libc (wait4): measurement only.
#![allow(unsafe_code)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

#[path = "support/scenario.rs"]
#[allow(dead_code)]
mod scenario;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use mock_openai::{MockServer, text_reply};
use serde_json::{Value, json};

#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
    max_rss_kb: i64,
    stdout_bytes: usize,
}

/// Waits for the child with `wait4`, sampling its peak RSS meanwhile.
fn reap(child: Child, started: Instant, stdout_bytes: usize) -> Cost {
    let pid = child.id() as libc::pid_t;
    std::mem::forget(child);
    let status_path = format!("/proc/{pid}/status");
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut hwm_kb = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status_path)
            && let Some(kb) = text.lines().find_map(|l| l.strip_prefix("VmHWM:"))
        {
            hwm_kb = kb
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(hwm_kb);
        }
        let waited = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if waited == pid {
            break;
        }
        assert_eq!(waited, 0, "wait4 failed");
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "minicode failed: {status}"
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Cost {
        wall: started.elapsed(),
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kb: hwm_kb,
        stdout_bytes,
    }
}

fn median(mut costs: Vec<Cost>) -> Cost {
    let mid = costs.len() / 2;
    costs.sort_by_key(|c| c.wall);
    let wall = costs[mid].wall;
    costs.sort_by_key(|c| c.cpu);
    let mut cost = costs[mid];
    cost.wall = wall;
    cost.max_rss_kb = costs.iter().map(|c| c.max_rss_kb).max().unwrap_or(0);
    cost
}

fn report(name: &str, cost: Cost, runs: usize) {
    println!(
        "{name:<40} wall {:>8.2} ms   cpu {:>8.2} ms   peak rss {:>5.1} MB   stdout {:>8} B   (median of {runs})",
        cost.wall.as_secs_f64() * 1e3,
        cost.cpu.as_secs_f64() * 1e3,
        cost.max_rss_kb as f64 / 1024.0,
        cost.stdout_bytes,
    );
}

fn minicode(dir: &std::path::Path, args: &[&str]) -> Command {
    // `env -C`: posix_spawn, so no forked copy of this bench counts in the child's RSS.
    let mut cmd = Command::new("env");
    cmd.arg("-C")
        .arg(dir)
        .arg(env!("CARGO_BIN_EXE_minicode"))
        .args(args)
        .env_remove("MINICODE_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env("HOME", dir);
    cmd
}

/// A one-shot run (stdout and stderr discarded).
fn one_shot(dir: &std::path::Path, args: &[&str]) -> Cost {
    let started = Instant::now();
    let child = minicode(dir, args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    reap(child, started, 0)
}

/// `minicode acp`: initialize, a new session in `dir`, one prompt (permissions allowed), then
/// stdin closed; returns once the process exited.
fn over_acp(dir: &std::path::Path, prompt: &str) -> Cost {
    let started = Instant::now();
    let mut child = minicode(dir, &["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Shared with the reader, which answers permission requests; taken out to close it.
    let stdin = Arc::new(Mutex::new(child.stdin.take()));
    let stdout = child.stdout.take().unwrap();
    let (answers_tx, answers) = mpsc::channel::<Value>();
    let writer = stdin.clone();
    let reader = std::thread::spawn(move || {
        let mut bytes = 0;
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            bytes += line.len() + 1;
            let message: Value = serde_json::from_str(&line).unwrap();
            match (message.get("method"), message.get("id")) {
                (Some(method), Some(id)) => {
                    assert_eq!(method, "session/request_permission");
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result":
                        {"outcome": {"outcome": "selected", "optionId": "allow_once"}}});
                    if let Some(pipe) = writer.lock().unwrap().as_mut() {
                        writeln!(pipe, "{answer}").unwrap();
                    }
                }
                (None, Some(_)) => answers_tx.send(message).unwrap(),
                _ => {}
            }
        }
        bytes
    });
    let call = |id: u64, method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin.lock().unwrap().as_mut().unwrap(), "{request}").unwrap();
        let answer = answers.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(answer.get("error").is_none(), "{answer}");
        answer["result"].clone()
    };
    call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let session = call(
        2,
        "session/new",
        json!({"cwd": dir.canonicalize().unwrap(), "mcpServers": []}),
    );
    let id = session["sessionId"].clone();
    let done = call(
        3,
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": prompt}]}),
    );
    assert_eq!(done["stopReason"], "end_turn");
    // Closing stdin ends the connection: the agent saves and exits.
    drop(stdin.lock().unwrap().take());
    let cost = reap(child, started, 0);
    let bytes = reader.join().unwrap();
    Cost {
        stdout_bytes: bytes,
        ..cost
    }
}

fn main() {
    let runs = 11;
    let (mut shot, mut acp) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let server = MockServer::start_in_thread(scenario::five_tool_script());
        let ws = scenario::trusted_workspace(&server, "");
        shot.push(one_shot(ws.path(), &["--yes", "do the five steps"]));
        let server = MockServer::start_in_thread(scenario::five_tool_script());
        let ws = scenario::trusted_workspace(&server, "");
        acp.push(over_acp(ws.path(), "do the five steps"));
        assert_eq!(server.request_count(), 6);
    }
    report("one-shot, 5 tool calls", median(shot), runs);
    report("acp, 5 tool calls (5 permissions)", median(acp), runs);

    let reply: String = "word ".repeat(40_000);
    let (mut shot, mut acp) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let server = MockServer::start_in_thread(vec![text_reply(&reply, 4)]);
        let ws = scenario::trusted_workspace(&server, "");
        shot.push(one_shot(ws.path(), &["stream it"]));
        let server = MockServer::start_in_thread(vec![text_reply(&reply, 4)]);
        let ws = scenario::trusted_workspace(&server, "");
        acp.push(over_acp(ws.path(), "stream it"));
    }
    report("one-shot, 200 KB in 4-char chunks", median(shot), 5);
    report("acp, 200 KB in 4-char chunks", median(acp), 5);
}
