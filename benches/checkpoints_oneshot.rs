//! Issue 32 item 16's targets, measured on whole `minicode` processes against the local mock
//! server: (a) in a generated 100,000-file tree, the 5-call one-shot run (read, edit, bash,
//! read, write) after the first, checkpoints on against `[checkpoints] enabled = false`
//! (target: within 1.5x); (b) ten such runs in a 10,000-file tree with
//! `max_bytes = 2000000`, then what `du -sb` and `du -s` say of `.minicode/checkpoints`
//! (target: within `max_bytes`); (c) S1, the same 5-call run in the small bench workspace,
//! CPU on against off (target: within 10%).
//!
//! `cargo bench --bench checkpoints_oneshot`; `MINICODE_BENCH_FILES=N` changes the large
//! tree's size (a), `MINICODE_BENCH_ONLY=a|b|c` runs one part, `MINICODE_BENCH_RUNS=N` sets
//! (c)'s runs per round, and `MINICODE_BENCH_WRAP` runs each `minicode` under a tool
//! (`valgrind --tool=callgrind --callgrind-out-file=/tmp/cg/%q{MINICODE_BENCH_TAG}.%p`: `on` or
//! `off`, for instruction counts).
//! `cargo test --benches` runs a 2,000-file tree once as a check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Resource usage is read with libc (wait4): measurement only.
#![allow(unsafe_code)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

#[path = "support/scenario.rs"]
#[allow(dead_code)]
mod scenario;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_openai::MockServer;

/// Wall and CPU (user + system, from `wait4`) of one process.
fn run(cmd: &mut Command) -> (Duration, Duration) {
    let started = Instant::now();
    // Reaped below with wait4, which also yields the CPU times.
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "minicode failed: {status}"
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (started.elapsed(), tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// The 5-call one-shot run in `ws` (HOME = `ws`, as the scenario's layout requires).
fn five_calls(ws: &Path) -> (Duration, Duration) {
    let server = MockServer::start_in_thread(scenario::five_tool_script());
    let config = ws.join("config/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let (head, _) = text.split_once("base_url").unwrap();
    let (_, tail) = text.split_once("\nname").unwrap();
    let text = format!("{head}base_url = \"{}\"\nname{tail}", server.base_url());
    std::fs::write(&config, text).unwrap();
    // The edit needs its text back.
    std::fs::write(ws.join("README.md"), "# Bench\n\nhello world\n").unwrap();
    let user = std::fs::read_to_string(ws.join(".config/minicode/config.toml")).unwrap();
    let tag = if user.contains("enabled = false") {
        "off"
    } else {
        "on"
    };
    let mut cmd = Command::new("env");
    cmd.arg("-C").arg(ws).env("MINICODE_BENCH_TAG", tag);
    // A measuring tool to run minicode under (`valgrind --tool=callgrind ...`).
    if let Ok(wrap) = std::env::var("MINICODE_BENCH_WRAP") {
        cmd.args(wrap.split_whitespace());
    }
    cmd.arg(env!("CARGO_BIN_EXE_minicode"))
        .args(["--yes", "do the five steps"])
        .env_remove("MINICODE_LOG")
        .env("HOME", ws);
    let cost = run(&mut cmd);
    assert_eq!(server.request_count(), 6);
    cost
}

/// A scenario workspace with `[checkpoints]` set as given in the user's config.
fn workspace(checkpoints: &str) -> tempfile::TempDir {
    let server = MockServer::start_in_thread(Vec::new());
    let dir = scenario::trusted_workspace(&server, "");
    let user = dir.path().join(".config/minicode/config.toml");
    let mut text = std::fs::read_to_string(&user).unwrap();
    text.push_str(&format!("\n[checkpoints]\n{checkpoints}\n"));
    std::fs::write(user, text).unwrap();
    dir
}

fn generate(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("src/d{:03}/s{:02}", i % 1000, (i / 1000) % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.rs")), format!("// file {i}\n")).unwrap();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// (a): the first run (the base), then `runs` runs after it, on and off alternated.
fn large_tree(files: usize, runs: usize) {
    let on = workspace("enabled = true");
    let off = workspace("enabled = false");
    generate(on.path(), files);
    generate(off.path(), files);
    let (first_on, _) = five_calls(on.path());
    let (first_off, _) = five_calls(off.path());
    let (mut wall_on, mut cpu_on, mut wall_off, mut cpu_off) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let (w, c) = five_calls(on.path());
        wall_on.push(w);
        cpu_on.push(c);
        let (w, c) = five_calls(off.path());
        wall_off.push(w);
        cpu_off.push(c);
    }
    let (w_on, w_off) = (median(wall_on), median(wall_off));
    println!(
        "(a) {files} files, 5-call one-shot: first run on {:.0} ms / off {:.0} ms; after it \
         (median of {runs}): on {:.0} ms wall {:.0} ms CPU, off {:.0} ms wall {:.0} ms CPU: \
         {:.2}x wall",
        ms(first_on),
        ms(first_off),
        ms(w_on),
        ms(median(cpu_on)),
        ms(w_off),
        ms(median(cpu_off)),
        w_on.as_secs_f64() / w_off.as_secs_f64()
    );
}

/// (b): ten runs in a 10,000-file tree under a 2,000,000-byte cap, then `du`.
fn capped_store(files: usize) {
    let ws = workspace("max_bytes = 2000000");
    generate(ws.path(), files);
    for _ in 0..10 {
        five_calls(ws.path());
    }
    let store = ws.path().join(".minicode/checkpoints");
    let du = |flag: &str| {
        let out = Command::new("du").arg(flag).arg(&store).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.split_whitespace().next().unwrap_or("?").to_string()
    };
    println!(
        "(b) {files} files, ten 5-call runs, max_bytes = 2000000: du -sb {} bytes, du -s {} KiB",
        du("-sb"),
        du("-s")
    );
    let parts = Command::new("sh")
        .arg("-c")
        .arg("du -sb * | tr '\\n\\t' '; '; echo; ls -l bases packs sessions; ls blobs | wc -l")
        .current_dir(&store)
        .output()
        .unwrap();
    println!("    by part: {}", String::from_utf8_lossy(&parts.stdout));
}

/// (c): S1 in fresh small workspaces, on and off alternated, `rounds` rounds of `runs`.
fn s1(rounds: usize, runs: usize) {
    let (mut on, mut off) = (vec![], vec![]);
    for _ in 0..rounds {
        let (mut round_on, mut round_off) = (vec![], vec![]);
        for _ in 0..runs {
            let ws = workspace("enabled = true");
            round_on.push(five_calls(ws.path()).1);
            let ws = workspace("enabled = false");
            round_off.push(five_calls(ws.path()).1);
        }
        on.push(median(round_on));
        off.push(median(round_off));
    }
    let (c_on, c_off) = (median(on.clone()), median(off.clone()));
    println!(
        "(c) S1 CPU, median of {rounds} rounds of {runs} (range): on {:.1} ms ({:.1}-{:.1}), \
         off {:.1} ms ({:.1}-{:.1}): {:+.1}%",
        ms(c_on),
        ms(*on.iter().min().unwrap()),
        ms(*on.iter().max().unwrap()),
        ms(c_off),
        ms(*off.iter().min().unwrap()),
        ms(*off.iter().max().unwrap()),
        (c_on.as_secs_f64() / c_off.as_secs_f64() - 1.0) * 100.0
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    if !full {
        large_tree(2_000, 1);
        return;
    }
    let files = std::env::var("MINICODE_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let only = std::env::var("MINICODE_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only.contains('a') {
        large_tree(files, 5);
    }
    if only.is_empty() || only.contains('b') {
        capped_store(10_000);
    }
    if only.is_empty() || only.contains('c') {
        let runs = std::env::var("MINICODE_BENCH_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(15);
        s1(5, runs);
    }
}
