//! Built-in tool costs that matter for an agent turn: streaming a large bash output through
//! the 64 KiB cap (throughput, and that memory stays bounded while the full log is written),
//! reading a window at the end of a huge file (streamed, never loaded), and a read + edit of
//! a 1 MB file. A plain timing binary: `cargo bench --bench tools`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use minicode::tools::{Registry, ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Peak resident set size of this process so far, in KiB (Linux `VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn call(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> ToolOutput {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve(tool, &args.to_string()).unwrap();
    tool.prepare(&value, ctx).unwrap();
    tool.run(value, ctx, CancellationToken::new()).await
}

/// Median of `runs` timings of `f`.
async fn median<F, Fut>(runs: usize, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        f().await;
        times.push(start.elapsed());
    }
    times.sort();
    times[runs / 2]
}

fn big_file(path: &Path, bytes: usize) {
    let line = format!("{}\n", "abcdefghij".repeat(9) + "012345678");
    let mut text = String::with_capacity(bytes + line.len());
    while text.len() < bytes {
        text.push_str(&line);
    }
    text.push_str("the end\n");
    std::fs::write(path, text).unwrap();
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let ctx = ToolCtx::new(ws.clone(), Duration::from_secs(120), Vec::new());
    rt.block_on(async {
        // Warm up process spawning and the allocator.
        call(&ctx, "bash", json!({ "command": "true" })).await;
        let rss_before = peak_rss_kib();

        const MB: usize = 1024 * 1024;
        let bash_bytes = 200 * MB;
        let command = format!("head -c {bash_bytes} /dev/zero | tr '\\0' 'x'");
        let t = median(3, || async {
            let out = call(&ctx, "bash", json!({ "command": command })).await;
            assert!(out.content.contains("bytes cut"));
        })
        .await;
        let rss_bash = peak_rss_kib();
        println!(
            "bash 200 MiB output through the cap: {:.0} ms median, {:.0} MiB/s, peak RSS +{} KiB",
            t.as_secs_f64() * 1e3,
            bash_bytes as f64 / MB as f64 / t.as_secs_f64(),
            rss_bash.saturating_sub(rss_before)
        );
        let _ = std::fs::remove_dir_all(ws.join(".minicode"));

        big_file(&ws.join("huge.txt"), 100 * MB);
        let lines = 100 * MB / 100 + 1;
        let rss_before = peak_rss_kib();
        let t = median(3, || async {
            let out = call(&ctx, "read", json!({ "path": "huge.txt", "offset": lines })).await;
            assert!(out.content.contains("the end"), "{}", out.content);
        })
        .await;
        println!(
            "read the last line of a 100 MiB file: {:.0} ms median, peak RSS +{} KiB",
            t.as_secs_f64() * 1e3,
            peak_rss_kib().saturating_sub(rss_before)
        );

        big_file(&ws.join("one.txt"), MB);
        let mut flip = false;
        let t = median(11, || {
            flip = !flip;
            let (old, new) = if flip {
                ("the end", "THE END")
            } else {
                ("THE END", "the end")
            };
            let ctx = &ctx;
            async move {
                call(ctx, "read", json!({ "path": "one.txt", "limit": 1 })).await;
                let out = call(
                    ctx,
                    "edit",
                    json!({ "path": "one.txt", "old_string": old, "new_string": new }),
                )
                .await;
                assert!(out.content.starts_with("edited"), "{}", out.content);
            }
        })
        .await;
        println!(
            "read + edit (with diffs) of a 1 MiB file: {:.1} ms median",
            t.as_secs_f64() * 1e3
        );
    });
}
