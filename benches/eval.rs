//! What `minicode eval` costs beyond the agent's own work (issue 25 targets: under 20 ms and
//! 5 MB per run), and how `--parallel` shortens a suite. Three measurements, each through the
//! built binary as a user runs it:
//! - overhead per run: a one-task suite (a three-file fixture, no setup, no checks) run 20
//!   times with `--parallel 1` and the demo model; per run, the evaluator's wall time minus the
//!   agent process's (workspace made and copied, transcript parsed, session kept, scratch
//!   removed);
//! - memory: the evaluator's peak RSS (VmHWM, sampled from /proc while it runs) for 1 run and
//!   for 20 runs: the difference is what each run adds;
//! - `evals/smoke --demo` wall time with `--parallel 1` and `--parallel 4`, 3 rounds,
//!   interleaved so the machine's drift hits both alike.
//!
//! A plain timing binary: `cargo bench --bench eval`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const RUNS: u32 = 20;

/// Runs `minicode eval ARGS` in `dir` with HOME there; the report, the wall time and the
/// evaluator's peak RSS in KiB.
fn eval(dir: &Path, args: &[&str]) -> (Value, Duration, u64) {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_minicode"))
        .arg("eval")
        .args(args)
        .args(["--output-format", "json"])
        .current_dir(dir)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    // Sampled until the process is gone: VmHWM only grows, so the last reading is the peak
    // up to then.
    while child.try_wait().unwrap().is_none() {
        if let Ok(text) = std::fs::read_to_string(&status)
            && let Some(kib) = text
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        {
            peak = kib;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let wall = started.elapsed();
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    (serde_json::from_str(&out).unwrap(), wall, peak)
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let suite = dir.join("suite");
    std::fs::create_dir_all(suite.join("fixture/src")).unwrap();
    std::fs::write(suite.join("fixture/notes.txt"), "release day is Friday\n").unwrap();
    std::fs::write(suite.join("fixture/README.md"), "# bench\n").unwrap();
    std::fs::write(suite.join("fixture/src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(
        suite.join("t.toml"),
        "prompt = \"Summarise notes.txt\"\nworkspace = \"fixture\"\n",
    )
    .unwrap();
    let suite_arg = suite.to_str().unwrap();
    let runs = RUNS.to_string();
    let out = |name: &str| dir.join(name).to_str().unwrap().to_string();

    let (_, _, peak_one) = eval(
        &dir,
        &[suite_arg, "--demo", "--parallel", "1", "--out", &out("o1")],
    );
    let (report, _, peak_many) = eval(
        &dir,
        &[
            suite_arg,
            "--demo",
            "--runs",
            &runs,
            "--parallel",
            "1",
            "--out",
            &out("o20"),
        ],
    );
    let mut overhead: Vec<f64> = report["tasks"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["wall_ms"].as_f64().unwrap() - r["agent_wall_ms"].as_f64().unwrap())
        .collect();
    overhead.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = overhead.iter().sum::<f64>() / overhead.len() as f64;
    println!(
        "eval overhead per run ({RUNS} runs, --parallel 1, demo): median {:.1} ms, mean {mean:.1} ms, p90 {:.1} ms",
        percentile(&overhead, 50),
        percentile(&overhead, 90)
    );
    println!(
        "evaluator peak RSS: {:.1} MiB for 1 run, {:.1} MiB for {RUNS} runs ({:+.2} MiB per added run)",
        peak_one as f64 / 1024.0,
        peak_many as f64 / 1024.0,
        (peak_many as f64 - peak_one as f64) / 1024.0 / f64::from(RUNS - 1)
    );

    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/smoke");
    let smoke = smoke.to_str().unwrap();
    let (mut one, mut four) = (Vec::new(), Vec::new());
    for round in 0..3 {
        for (parallel, times) in [("1", &mut one), ("4", &mut four)] {
            let target = out(&format!("smoke-{parallel}-{round}"));
            let (report, wall, _) = eval(
                &dir,
                &[smoke, "--demo", "--parallel", parallel, "--out", &target],
            );
            assert_eq!(report["all_met"], true, "{report:#}");
            times.push(wall.as_secs_f64());
        }
    }
    one.sort_by(|a, b| a.partial_cmp(b).unwrap());
    four.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "evals/smoke --demo wall (median of 3): --parallel 1 {:.2} s, --parallel 4 {:.2} s ({} cores)",
        one[1],
        four[1],
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
}
