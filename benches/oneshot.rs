//! End-to-end cost of the built binary, measured as a user pays it: wall time, CPU time and
//! peak RSS of whole `minicode` processes (from `wait4`'s rusage) against a local mock server
//! that answers at once.
//!
//! Scenarios: `--version`; a one-shot task with 5 tool calls (read, edit, bash, read, write);
//! streaming a 200 KB reply in 4-character chunks; the same 5-call task with telemetry on,
//! exporting to a local OTLP receiver. Run with `cargo bench --bench oneshot`.
//!
//! `MINICODE_BENCH_BINARY=/path/to/minicode` measures that binary instead of the one built
//! with the bench (to compare two builds under the same load, alternating runs); the telemetry
//! scenario then runs only if the variable is unset.
//!
//! Budgets (issue 35): `--version`, the 5-call task with checkpoints off and on, and the 200 KB
//! stream each have a CPU budget (`BUDGETS`, the quiet-machine figures of docs/performance.md);
//! the bench exits non-zero when a scenario's fastest run exceeds 1.5x its budget
//! (`support/budget.rs` says why the fastest run and why that margin).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Resource usage is read with libc (getrusage, wait4, sysconf): measurement only.
#![allow(unsafe_code)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

#[path = "support/scenario.rs"]
#[allow(dead_code)]
mod scenario;

#[path = "support/budget.rs"]
mod budget;

#[path = "../tests/it/support/otlp_receiver.rs"]
#[allow(dead_code)]
mod otlp_receiver;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use budget::{Budget, Verdicts};
use mock_openai::{MockServer, text_reply};

/// CPU (user + system of the process tree) of each scenario on a quiet 2-core machine.
const BUDGETS: [Budget; 4] = [
    Budget {
        scenario: "--version",
        cpu: Duration::from_micros(2_000),
    },
    Budget {
        scenario: "one-shot, 5 tool calls",
        cpu: Duration::from_millis(25),
    },
    Budget {
        scenario: "one-shot, 5 tool calls, checkpoints off",
        cpu: Duration::from_millis(20),
    },
    Budget {
        scenario: "one-shot, 200 KB in 4-char chunks",
        cpu: Duration::from_millis(80),
    },
];

/// Reports `costs` (their median) and checks their CPU against the scenario's budget.
fn judge(verdicts: &mut Verdicts, name: &str, costs: Vec<Cost>) {
    let runs = costs.len();
    let cpu: Vec<Duration> = costs.iter().map(|c| c.cpu).collect();
    report(name, median(costs), runs);
    if let Some(budget) = BUDGETS.iter().find(|b| b.scenario == name) {
        verdicts.check(budget, &cpu);
    }
}

/// What one process cost.
#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
    max_rss_kb: i64,
}

fn run(cmd: &mut Command) -> Cost {
    let started = Instant::now();
    // Reaped below with wait4, which also yields the CPU times.
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let status_path = format!("/proc/{pid}/status");
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // ru_maxrss would include the forked copy of this bench process before exec, so the peak
    // is read from the child's own VmHWM while it runs (the last value before it exits).
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
    let wall = started.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "minicode failed: {status}"
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Cost {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kb: hwm_kb,
    }
}

fn median(mut costs: Vec<Cost>) -> Cost {
    let mid = costs.len() / 2;
    let by = |f: fn(&Cost) -> u128, c: &mut Vec<Cost>| {
        c.sort_by_key(f);
        c[mid]
    };
    let wall = by(|c| c.wall.as_micros(), &mut costs).wall;
    let cpu = by(|c| c.cpu.as_micros(), &mut costs).cpu;
    let rss = costs.iter().map(|c| c.max_rss_kb).max().unwrap_or(0);
    Cost {
        wall,
        cpu,
        max_rss_kb: rss,
    }
}

fn report(name: &str, cost: Cost, runs: usize) {
    println!(
        "{name:<34} wall {:>8.2} ms   cpu {:>8.2} ms   peak rss {:>6.1} MB   (median of {runs})",
        cost.wall.as_secs_f64() * 1e3,
        cost.cpu.as_secs_f64() * 1e3,
        cost.max_rss_kb as f64 / 1024.0
    );
}

fn minicode(dir: &std::path::Path, args: &[&str]) -> Command {
    // `env -C` changes directory in the child, so `Command` can use posix_spawn: a forked copy
    // of this (large) bench process would otherwise count in the child's peak RSS.
    let binary = std::env::var("MINICODE_BENCH_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_minicode").to_string());
    let mut cmd = Command::new("env");
    cmd.arg("-C")
        .arg(dir)
        .arg(binary)
        .args(args)
        .env_remove("MINICODE_LOG")
        .env("HOME", dir);
    // Telemetry off unless a scenario turns it on.
    for name in [
        "OTEL_SDK_DISABLED",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_SERVICE_NAME",
    ] {
        cmd.env_remove(name);
    }
    cmd
}

fn main() {
    let runs = 15;
    let mut verdicts = Verdicts::default();
    let dir = tempfile::tempdir().unwrap();
    let version: Vec<Cost> = (0..runs)
        .map(|_| run(&mut minicode(dir.path(), &["--version"])))
        .collect();
    judge(&mut verdicts, "--version", version);

    for (name, checkpoints) in [
        ("one-shot, 5 tool calls", true),
        ("one-shot, 5 tool calls, checkpoints off", false),
    ] {
        let mut costs = Vec::new();
        for _ in 0..runs {
            let server = MockServer::start_in_thread(scenario::five_tool_script());
            let ws = scenario::trusted_workspace(&server, "");
            if !checkpoints {
                // The user config (HOME is the workspace) turns checkpoints off, so the S1
                // figure can be told apart from the checkpoint base's cost.
                let config = ws.path().join(".config/minicode/config.toml");
                let mut text = std::fs::read_to_string(&config).unwrap();
                text.push_str("\n[checkpoints]\nenabled = false\n");
                std::fs::write(&config, text).unwrap();
            }
            costs.push(run(&mut minicode(
                ws.path(),
                &["--yes", "do the five steps"],
            )));
            assert_eq!(server.request_count(), 6);
        }
        judge(&mut verdicts, name, costs);
    }

    let reply: String = "word ".repeat(40_000);
    let mut costs = Vec::new();
    for _ in 0..7 {
        let server = MockServer::start_in_thread(vec![text_reply(&reply, 4)]);
        let ws = scenario::trusted_workspace(&server, "");
        costs.push(run(&mut minicode(ws.path(), &["stream it"])));
    }
    judge(&mut verdicts, "one-shot, 200 KB in 4-char chunks", costs);

    if std::env::var_os("MINICODE_BENCH_BINARY").is_some() {
        verdicts.finish();
        return;
    }
    let receiver = otlp_receiver::Receiver::start(otlp_receiver::Mode::Answer);
    let mut costs = Vec::new();
    for _ in 0..runs {
        let server = MockServer::start_in_thread(scenario::five_tool_script());
        let ws = scenario::trusted_workspace(&server, "");
        let before = receiver.requests().len();
        let mut cmd = minicode(ws.path(), &["--yes", "do the five steps"]);
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
        costs.push(run(&mut cmd));
        assert_eq!(server.request_count(), 6);
        assert!(receiver.requests().len() > before, "nothing was exported");
    }
    report("one-shot, 5 tool calls, telemetry on", median(costs), runs);
    verdicts.finish();
}
