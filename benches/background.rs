//! What background processes (issue 36) cost: the start of one (`bash` with
//! `background: true`, call → id returned), the time until its first output can be read,
//! a `bash_output` read, and a `bash_kill` of a process that ends on SIGTERM; unconfined
//! (`off`) and confined (`workspace-write`, network off: the session's network namespace is
//! held after the first call, whose one-off cost is shown apart). 50 rounds each. Targets:
//! start under 20 ms, a read under 1 ms. A plain timing binary:
//! `cargo bench --bench background`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use minicode::sandbox::{Mode, Policy};
use minicode::tools::bash::{self, Args};
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const RUNS: usize = 50;

fn stats(mut times: Vec<Duration>) -> (f64, f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = times.iter().map(|d| ms(*d)).sum::<f64>() / times.len() as f64;
    (
        ms(times[times.len() / 2]),
        mean,
        ms(times[times.len() * 9 / 10]),
    )
}

/// Start, first output, read, kill: one round's four durations.
async fn round(registry: &Registry, (ctx, policy): (&ToolCtx, &Policy), n: usize) -> [Duration; 4] {
    let run = |tool: &str, args: serde_json::Value| {
        let (tool, args) = registry.resolve(tool, &args.to_string()).unwrap();
        async move { tool.run(args, ctx, CancellationToken::new()).await }
    };
    let start = Instant::now();
    // `bash` itself runs as the core runs it, under the policy its sandbox part holds.
    let args: Args = serde_json::from_value(
        json!({"command": "echo ready; exec sleep 1000", "background": true}),
    )
    .unwrap();
    let out = bash::run(&args, ctx, policy, CancellationToken::new())
        .await
        .output;
    let started = start.elapsed();
    let id = format!("bg{n}");
    assert!(out.content.contains(&id), "{}", out.content);
    let mut seen = String::new();
    while !seen.contains("ready") {
        seen.push_str(&run("bash_output", json!({ "id": id })).await.content);
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let first_output = start.elapsed();
    let read_at = Instant::now();
    let out = run("bash_output", json!({ "id": id })).await;
    let read = read_at.elapsed();
    assert!(out.content.contains("running"), "{}", out.content);
    let kill_at = Instant::now();
    let out = run("bash_kill", json!({ "id": id })).await;
    let killed = kill_at.elapsed();
    assert!(out.content.contains("stopped"), "{}", out.content);
    [started, first_output, read, killed]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join(".git")).unwrap();
    let registry = Registry::builtin();
    println!("background processes, {RUNS} rounds per profile (ms):");
    println!("  profile         step           median   mean    p90");
    for mode in [Mode::Off, Mode::WorkspaceWrite] {
        let mut ctx = ToolCtx::new(ws.clone(), Duration::from_secs(60), Vec::new());
        ctx.supervisor = Some(env!("CARGO_BIN_EXE_minicode").into());
        let tmp = ws.join(".bench-tmp");
        let policy = Policy::for_workspace(mode, false, &ws, &[], tmp);
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); 4];
        let first = rt.block_on(round(&registry, (&ctx, &policy), 1));
        for n in 2..=RUNS + 1 {
            let t = rt.block_on(round(&registry, (&ctx, &policy), n));
            for (i, d) in t.into_iter().enumerate() {
                times[i].push(d);
            }
        }
        let name = format!("{mode:?}");
        println!(
            "  {name:<15} first start    {:>7.2}  (holder included when confined)",
            first[0].as_secs_f64() * 1000.0
        );
        let steps = ["start → id", "first output", "bash_output", "bash_kill"];
        for (step, t) in steps.iter().zip(times) {
            let (median, mean, p90) = stats(t);
            println!("  {name:<15} {step:<14} {median:>7.2} {mean:>7.2} {p90:>6.2}");
        }
    }
}
