//! What the `bash` sandbox (issue 22) costs per call: `true` run through the supervisor
//! unconfined (`off`) and confined (`workspace-write`, which adds the user and mount
//! namespace, and `read-only`), 100 calls each, interleaved so the machine's drift hits all
//! three alike. Target: confined adds at most 5 ms wall per call. A plain timing binary:
//! `cargo bench --bench sandbox`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use minicode::sandbox::{Mode, Policy};
use minicode::tools::ToolCtx;
use minicode::tools::bash::{self, Args};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 100;

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

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join(".git")).unwrap();
    // `bash` runs as the core runs it, under the policy its sandbox part holds.
    let args = Args::command("true".into());
    let modes = [Mode::Off, Mode::WorkspaceWrite, Mode::ReadOnly];
    let mut ctx = ToolCtx::new(ws.clone(), Duration::from_secs(60), Vec::new());
    ctx.supervisor = Some(env!("CARGO_BIN_EXE_minicode").into());
    let policies: Vec<Policy> = modes
        .iter()
        .map(|mode| Policy::for_workspace(*mode, false, &ws, &[], ws.join(".bench-tmp")))
        .collect();
    let call = |policy| bash::run(&args, &ctx, policy, CancellationToken::new());
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    rt.block_on(async {
        // Warm up the page cache and the binary.
        for policy in &policies {
            let out = call(policy).await.output;
            assert!(out.content.contains("exit code 0"), "{}", out.content);
        }
        for _ in 0..RUNS {
            for (i, policy) in policies.iter().enumerate() {
                let start = Instant::now();
                let out = call(policy).await.output;
                times[i].push(start.elapsed());
                assert!(out.content.contains("exit code 0"), "{}", out.content);
            }
        }
    });
    let (base, _, _) = stats(times[0].clone());
    println!("bash `true` through the supervisor, {RUNS} calls each (ms):");
    println!("  profile          median   mean    p90    added (median)");
    for (mode, t) in modes.iter().zip(times) {
        let (median, mean, p90) = stats(t);
        println!(
            "  {:<15} {median:>7.2} {mean:>7.2} {p90:>6.2}   {:+.2}",
            format!("{mode:?}"),
            median - base
        );
    }
}
