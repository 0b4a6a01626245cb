//! What the sandbox's attribution filter costs (issue 32 item 14): a confined `bash` call that
//! writes 1,000 files, and one that reads them back, each run with the supervisor recording
//! the paths the command names (every writing `open` traps to it) and without, interleaved so
//! the machine's drift hits both alike. A plain timing binary:
//! `cargo bench --bench sandbox_notify` (`MINICODE_BENCH_RUNS=N` calls per variant, 20).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use minicode::sandbox::{Mode, Policy};
use minicode::tools::ToolCtx;
use minicode::tools::bash::{self, Args};
use tokio_util::sync::CancellationToken;

fn median_ms(mut times: Vec<Duration>) -> (f64, f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
    )
}

fn main() {
    let runs: usize = std::env::var("MINICODE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join(".git")).unwrap();
    let commands = [
        (
            "write 1,000 files",
            "mkdir -p out && cd out && for i in $(seq 1000); do echo $i > f$i; done",
        ),
        ("read them (cat)", "cat out/* > /dev/null"),
    ];
    let ctxs: Vec<(ToolCtx, Policy)> = [true, false]
        .iter()
        .map(|record| {
            let mut ctx = ToolCtx::new(ws.clone(), Duration::from_secs(120), Vec::new());
            ctx.supervisor = Some(env!("CARGO_BIN_EXE_minicode").into());
            ctx.record_writes = *record;
            let tmp = ws.join(".bench-tmp");
            let policy = Policy::for_workspace(Mode::WorkspaceWrite, false, &ws, &[], tmp);
            (ctx, policy)
        })
        .collect();
    println!("confined bash calls, {runs} each, ms (min / median / max):");
    for (name, command) in commands {
        // `bash` runs as the core runs it, under the policy its sandbox part holds.
        let args = Args::command(command.to_string());
        let call = async |(ctx, policy): &(ToolCtx, Policy)| {
            bash::run(&args, ctx, policy, CancellationToken::new()).await
        };
        let mut times = vec![Vec::new(), Vec::new()];
        rt.block_on(async {
            for ctx in &ctxs {
                let out = call(ctx).await.output;
                assert!(out.content.contains("exit code 0"), "{}", out.content);
            }
            for _ in 0..runs {
                for (i, ctx) in ctxs.iter().enumerate() {
                    let start = Instant::now();
                    let out = call(ctx).await.output;
                    times[i].push(start.elapsed());
                    assert!(out.content.contains("exit code 0"), "{}", out.content);
                }
            }
        });
        for (label, t) in ["recorded", "not recorded"].iter().zip(times) {
            let (min, median, max) = median_ms(t);
            println!("  {name:<18} {label:<13} {min:>8.1} {median:>8.1} {max:>8.1}");
        }
    }
}
