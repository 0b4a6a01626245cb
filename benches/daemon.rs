//! The daemon's costs, measured on the built binary as a process over its Unix socket, against
//! the in-process mock server (issue 14 targets):
//!
//! - idle: 10 open sessions, each with a subscriber, then a 3 s window: CPU used in it must be
//!   0 (not one clock tick) and the resident set under 30 MB;
//! - fan-out: one run streaming a 200 KB reply in 4-character chunks (~50,000 events) to 1 and
//!   to 10 subscribers; the daemon's CPU for the run with 10 must stay under 2x that with 1
//!   (medians of 3 alternating runs each).
//!
//! Run with `cargo bench --bench daemon`; it exits non-zero on a miss. Figures go to
//! docs/performance.md ("Daemon").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The shared binary helper starts the daemon in its own session (pre_exec + setsid).
#![allow(unsafe_code)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

#[path = "../tests/it/support/binary.rs"]
#[allow(dead_code)]
mod binary;

#[path = "../tests/it/support/user_config.rs"]
#[allow(dead_code)]
mod user_config;

#[path = "../tests/it/support/daemon.rs"]
#[allow(dead_code)]
mod daemon;

use std::io::Write;
use std::time::{Duration, Instant};

use daemon::{Daemon, layout};
use mock_openai::{MockServer, text_reply};

/// The process's user + system CPU time so far, in clock ticks, from /proc.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 here.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn status_kb(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap())
        .unwrap_or(0)
}

fn ticks_per_second() -> f64 {
    // Linux has used 100 for USER_HZ on every architecture we run on.
    100.0
}

/// A subscriber that reads raw lines until the run ends, without parsing them (the bench
/// measures the daemon, not the client).
fn raw_subscriber(daemon: &Daemon, session: &str) -> std::thread::JoinHandle<usize> {
    let mut client = daemon.client();
    client.subscribe(session, 0);
    std::thread::spawn(move || {
        let mut lines = 0;
        while let Some(line) = client.read_raw_line() {
            lines += 1;
            if line.contains("\"type\":\"run_ended\"") {
                break;
            }
        }
        lines
    })
}

fn idle(dir: &std::path::Path, server: &MockServer) -> bool {
    let daemon = Daemon::start(dir, server, &[]);
    let (_, ws) = layout(dir);
    let mut owner = daemon.client();
    let mut watchers = Vec::new();
    for i in 0..10 {
        let folder = ws.join(format!("project-{i}"));
        std::fs::create_dir_all(&folder).unwrap();
        let session = owner.open(&folder, None);
        let mut watcher = daemon.client();
        watcher.subscribe(&session, 0);
        watchers.push(watcher);
    }
    // Let the sessions' start-up (probes answered 404 by the mock) settle.
    std::thread::sleep(Duration::from_millis(500));
    let pid = daemon.child.id();
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(pid) - before;
    let rss_kb = status_kb(pid, "VmRSS:");
    println!(
        "idle, 10 sessions with a subscriber each: cpu {used} ticks in 3 s ({:.1} ms), rss {:.1} MB",
        used as f64 * 1000.0 / ticks_per_second(),
        rss_kb as f64 / 1024.0
    );
    used == 0 && rss_kb < 30 * 1024
}

fn fan_out(dir: &std::path::Path, reply: &str, subscribers: usize) -> f64 {
    let server = MockServer::start_in_thread(vec![text_reply(reply, 4)]);
    let daemon = Daemon::start(dir, &server, &[]);
    let (_, ws) = layout(dir);
    let mut owner = daemon.client();
    let session = owner.open(&ws, None);
    let readers: Vec<_> = (0..subscribers)
        .map(|_| raw_subscriber(&daemon, &session))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let pid = daemon.child.id();
    let before = cpu_ticks(pid);
    let started = Instant::now();
    owner.start_run(&session, "stream");
    let mut lines = 0;
    for reader in readers {
        lines = reader.join().unwrap();
    }
    let wall = started.elapsed();
    let cpu = (cpu_ticks(pid) - before) as f64 / ticks_per_second();
    println!(
        "fan-out to {subscribers:>2}: {lines} lines each, daemon cpu {:.0} ms, wall {:.0} ms",
        cpu * 1000.0,
        wall.as_secs_f64() * 1000.0
    );
    cpu
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let quick =
        std::env::args().any(|a| a == "--test") || std::env::var("MINICODE_BENCH_QUICK").is_ok();
    let mut ok = true;
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    if !idle(dir.path(), &server) {
        println!("MISS: an idle daemon must use no CPU and stay under 30 MB");
        ok = false;
    }
    let size = if quick { 20_000 } else { 200_000 };
    let reply: String = "word ".repeat(size / 5);
    let runs = if quick { 1 } else { 3 };
    let (mut one, mut ten) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        one.push(fan_out(tempfile::tempdir().unwrap().path(), &reply, 1));
        ten.push(fan_out(tempfile::tempdir().unwrap().path(), &reply, 10));
    }
    let (one, ten) = (median(one), median(ten));
    let ratio = ten / one.max(0.001);
    println!(
        "fan-out of {} KB: 1 subscriber {:.0} ms, 10 subscribers {:.0} ms: {ratio:.2}x (median of {runs})",
        size / 1000,
        one * 1000.0,
        ten * 1000.0
    );
    if !quick && ratio >= 2.0 {
        println!("MISS: fan-out to 10 subscribers must cost under 2x one");
        ok = false;
    }
    let _ = std::io::stdout().flush();
    if !ok {
        std::process::exit(1);
    }
}
