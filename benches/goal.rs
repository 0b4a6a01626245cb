//! The cost of a long goal run (issue 9): the release binary runs a 256-round goal against a
//! local mock server that answers at once, each round a `read` tool call and a short text.
//!
//! Measured: CPU per round of the minicode process (all its threads, from
//! `/proc/<pid>/task/*/schedstat`, read when each round starts), over rounds 1-16 and 240-256
//! (target: late ≤ 1.5x early, judged on the median of each window, the means printed too;
//! the ratio varies from run to run on a shared machine, see docs/performance.md); peak RSS (VmHWM, target < 60 MB); and the cost of one session
//! save at the history of each round (in process, through the library, the same
//! `Session::save` the core calls three times per round): wall time, the saving thread's CPU
//! time (write and fsync included) and the bytes written, so a save that grows with the
//! history shows (a save mostly appends to the session's journal; the snapshot rewrites it
//! does now and then show in the mean over all rounds). Exits non-zero on a missed target. Run with `cargo bench --bench goal`.
//!
//! `MINICODE_BENCH_BINARY=/path/to/minicode` measures that binary instead of the one built
//! with the bench.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

#[path = "support/scenario.rs"]
#[allow(dead_code)]
mod scenario;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use minicode::session::Session;
use mock_openai::{MockServer, Recorded, text_reply, tool_calls_reply};

const ROUNDS: u32 = 256;

/// Whether the latest goal round already ran its tool call.
fn called_in_round(r: &Recorded) -> bool {
    let Some(messages) = r.body["messages"].as_array() else {
        return false;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| {
            !m["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("<goal_round "))
        })
        .any(|m| m["role"] == "tool")
}

/// CPU time of every thread of `pid` so far.
fn cpu(pid: u32) -> Duration {
    let mut total = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) {
                total += text
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(total)
}

fn hwm_kb(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

fn mean(values: &[Duration]) -> Duration {
    values.iter().sum::<Duration>() / values.len().max(1) as u32
}

fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// CPU time of the calling thread so far (its `schedstat`: user and kernel time, so the
/// write and the fsync of a save count).
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let nanos = text.split_whitespace().next().unwrap().parse().unwrap();
    Duration::from_nanos(nanos)
}

/// One save: wall time, the thread's CPU time, the bytes it wrote.
struct Save {
    wall: Duration,
    cpu: Duration,
    bytes: u64,
}

/// A save appends to the journal beside the snapshot, or rewrites the snapshot (and removes
/// the journal) when the journal has outgrown it: the bytes written are the journal's growth
/// or the new snapshot's size.
fn timed_save(session: &mut Session) -> Save {
    let journal = session.path().with_extension("journal");
    let size = |path: &Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let before = size(&journal);
    let (started, cpu) = (Instant::now(), thread_cpu());
    session.save().unwrap();
    let (wall, cpu) = (started.elapsed(), thread_cpu() - cpu);
    let after = size(&journal);
    let bytes = if after > before {
        after - before
    } else {
        size(session.path())
    };
    Save { wall, cpu, bytes }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The goal run: per-round CPU (index 0 = round 1), peak RSS, the session's id.
fn goal_run(dir: &Path) -> (Vec<Duration>, u64, String, Duration) {
    let binary = std::env::var("MINICODE_BENCH_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_minicode").to_string());
    let rounds = ROUNDS.to_string();
    let started = Instant::now();
    let mut child = Command::new("env")
        .arg("-C")
        .arg(dir)
        .arg(binary)
        .args(["--goal", "keep reading the README", "--yes"])
        .args(["--goal-rounds", &rounds, "--output-format", "stream-json"])
        .env_remove("MINICODE_LOG")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut marks = Vec::new();
    let mut peak = 0;
    let mut session = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let event: serde_json::Value = serde_json::from_str(&line).unwrap();
        match event["type"].as_str() {
            Some("session_configured") => {
                session = event["session_id"].as_str().unwrap().to_string();
            }
            Some("goal_round_started") => marks.push(cpu(pid)),
            Some("goal_changed") if event["change"] == "blocked" => {
                marks.push(cpu(pid));
                peak = hwm_kb(pid).unwrap_or(0);
            }
            _ => {}
        }
    }
    let status = child.wait().unwrap();
    let wall = started.elapsed();
    // Blocked at the round limit: exit 1 by design.
    assert_eq!(status.code(), Some(1), "the goal run failed");
    assert_eq!(marks.len(), ROUNDS as usize + 1, "not every round ran");
    let per_round = marks
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    (per_round, peak, session, wall)
}

/// One `Session::save` at the history of each round, replayed from the run's file into a
/// fresh session (index 0 = after round 1).
fn save_times(dir: &Path, id: &str) -> Vec<Save> {
    let done = Session::open(dir, id).unwrap();
    let messages = done.messages().to_vec();
    drop(done);
    let scratch = tempfile::tempdir().unwrap();
    let mut session = Session::create(scratch.path()).unwrap();
    let mut times = Vec::new();
    for message in messages {
        let round_start = message.text().starts_with("<goal_round ");
        if round_start && !session.messages().is_empty() {
            times.push(timed_save(&mut session));
        }
        session.push(message);
    }
    times.push(timed_save(&mut session));
    // The first push precedes round 1's start marker only for the goal record: drop the
    // save before round 1.
    times.remove(0);
    times
}

fn main() {
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(|r| {
        Some(if called_in_round(r) {
            text_reply("Read it again; nothing changed.", 16)
        } else {
            tool_calls_reply(&[("r", "read", r#"{"path":"README.md"}"#)], 64)
        })
    });
    // A window large enough that 256 rounds never compact: the history itself is measured.
    let ws = scenario::trusted_workspace(&server, "context_window = 1000000\n");
    let (per_round, peak_kb, id, wall) = goal_run(ws.path());
    let (early, late) = (&per_round[..16], &per_round[239..]);
    let ratio = median(late).as_secs_f64() / median(early).as_secs_f64();
    let file = |ext: &str| {
        std::fs::metadata(minicode::session::sessions_dir(ws.path()).join(format!("{id}.{ext}")))
            .map(|m| m.len() as f64 / 1024.0)
            .unwrap_or(0.0)
    };
    println!(
        "goal run, {ROUNDS} rounds: wall {:.2} s, {} requests, session file {:.0} KB + journal \
         {:.0} KB",
        wall.as_secs_f64(),
        server.request_count(),
        file("json"),
        file("journal")
    );
    // The ratio moves with what else the machine does: say how busy it was.
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let load: Vec<&str> = load.split_whitespace().take(3).collect();
        println!("load average (1, 5, 15 min): {}", load.join(" "));
    }
    println!(
        "cpu per round (median / mean): rounds 1-16 {:.3} / {:.3} ms, rounds 240-256 {:.3} / \
         {:.3} ms (median x{ratio:.2}, target <= 1.5; mean x{:.2})",
        ms(median(early)),
        ms(mean(early)),
        ms(median(late)),
        ms(mean(late)),
        mean(late).as_secs_f64() / mean(early).as_secs_f64()
    );
    println!("peak rss: {:.1} MB (target < 60)", peak_kb as f64 / 1024.0);
    let saves = save_times(ws.path(), &id);
    let (first, last) = (&saves[..16], &saves[saves.len() - 17..]);
    let stat =
        |saves: &[Save], f: fn(&Save) -> Duration| median(&saves.iter().map(f).collect::<Vec<_>>());
    let kb = |saves: &[Save]| {
        saves.iter().map(|s| s.bytes).sum::<u64>() as f64 / 1024.0 / saves.len() as f64
    };
    for (label, f) in [
        ("wall", (|s: &Save| s.wall) as fn(&Save) -> Duration),
        ("cpu", |s: &Save| s.cpu),
    ] {
        let mean_of = |saves: &[Save]| mean(&saves.iter().map(f).collect::<Vec<_>>());
        println!(
            "one session save, {label} (median): at rounds 1-16 {:.3} ms, at rounds 240-256 \
             {:.3} ms (x{:.2}); mean over all rounds {:.3} ms",
            ms(stat(first, f)),
            ms(stat(last, f)),
            stat(last, f).as_secs_f64() / stat(first, f).as_secs_f64(),
            ms(mean_of(&saves))
        );
    }
    println!(
        "one session save writes {:.1} KB at rounds 1-16, {:.1} KB at rounds 240-256 (mean; \
         {:.1} KB over all rounds, snapshot rewrites included); the core saves 3 times per round",
        kb(first),
        kb(last),
        kb(&saves)
    );
    let mut missed = Vec::new();
    if ratio > 1.5 {
        missed.push("cpu per round grew more than 1.5x");
    }
    if peak_kb >= 60 * 1024 {
        missed.push("peak rss reached 60 MB");
    }
    if !missed.is_empty() {
        eprintln!("missed: {}", missed.join("; "));
        std::process::exit(1);
    }
}
