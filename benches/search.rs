//! The `search` tool against ripgrep on the same tree, side by side (issue 11 target: a
//! literal over a 100,000-file, 1 GB tree within 2x of `rg`). The tree is generated in a temp
//! folder (deterministic content, removed afterwards), both are run once to warm the page
//! cache, then alternately `RUNS` times; the medians are compared.
//!
//! `rg` is a measuring tool, not a dependency: it is taken from `$RG` or `PATH`, and without it
//! only our figure is printed. `cargo bench --bench search`; `cargo test --benches` runs a
//! 1,000-file, 10 MB tree as a check that the bench still works. Exits non-zero when the
//! ratio misses the target in a release build.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use minicode::chat::ToolStatus;
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const NEEDLE: &str = "zq_needle_7731";
/// Files that hold the needle (once each).
const HITS: usize = 10;
const RUNS: usize = 7;
const TARGET_RATIO: f64 = 2.0;

const WORDS: &[&str] = &[
    "fn", "let", "mut", "self", "struct", "impl", "return", "match", "Some", "None", "Ok", "Err",
    "value", "index", "buffer", "reader", "writer", "config", "session", "token", "request",
    "reply", "stream", "event", "handle", "error", "result", "string", "vector", "length", "=",
    "{", "}", "(", ")", ";", "->", "&", "::", "//", "0", "1", "42", "true", "false",
];

/// Writes `files` files of about `total / files` bytes each (between half and one and a half
/// of it) under 100 folders of 10 sub-folders, and puts the needle in `HITS` of them.
fn generate(root: &Path, files: usize, total: usize) -> usize {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let average = total / files;
    let hit_every = files / HITS;
    let mut written = 0;
    let mut line = String::new();
    for i in 0..files {
        let dir = root.join(format!("d{:02}/s{}", i % 100, (i / 100) % 10));
        if i < 1000 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let size = average / 2 + rng.usize(0..average);
        let mut text = String::with_capacity(size + 128);
        let needle_at = (i % hit_every == hit_every / 2).then(|| rng.usize(0..size.max(1)));
        while text.len() < size {
            line.clear();
            let indent = rng.usize(0..4) * 4;
            line.extend(std::iter::repeat_n(' ', indent));
            for _ in 0..rng.usize(3..14) {
                line.push_str(WORDS[rng.usize(0..WORDS.len())]);
                line.push(' ');
            }
            if needle_at.is_some_and(|at| text.len() <= at && at < text.len() + line.len()) {
                line.push_str(NEEDLE);
            }
            line.push('\n');
            text.push_str(&line);
        }
        let mut f = std::fs::File::create(dir.join(format!("f{i:06}.rs"))).unwrap();
        f.write_all(text.as_bytes()).unwrap();
        written += text.len();
    }
    written
}

fn rg_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RG") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("rg"))
            .find(|p| p.is_file())
    })
}

/// One `rg` run; returns its wall time and the matching lines it printed.
fn run_rg(rg: &Path, root: &Path) -> (Duration, usize) {
    let start = Instant::now();
    let out = Command::new(rg)
        .args(["--no-config", "-n", "--color", "never", "--", NEEDLE])
        .arg(root)
        .output()
        .unwrap();
    let took = start.elapsed();
    assert!(out.status.success(), "rg failed");
    (took, String::from_utf8_lossy(&out.stdout).lines().count())
}

/// One `search` call as the agent makes it; returns its wall time and the lines shown.
fn run_ours(rt: &tokio::runtime::Runtime, ctx: &ToolCtx) -> (Duration, usize) {
    let registry = Registry::builtin();
    let args = json!({ "pattern": NEEDLE }).to_string();
    let (tool, value) = registry.resolve("search", &args).unwrap();
    tool.prepare(&value, ctx).unwrap();
    let start = Instant::now();
    let out = rt.block_on(tool.run(value, ctx, CancellationToken::new()));
    let took = start.elapsed();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    let lines = out.content.lines().filter(|l| l.contains(NEEDLE)).count();
    (took, lines)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let release = !cfg!(debug_assertions);
    let (files, total) = if release {
        (100_000, 1 << 30)
    } else {
        (1_000, 10 << 20)
    };
    let dir = tempfile::Builder::new()
        .prefix("minicode-search-bench-")
        .tempdir()
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let started = Instant::now();
    let bytes = generate(&root, files, total);
    println!(
        "tree: {files} files, {:.2} GiB in {}, generated in {:.1} s",
        bytes as f64 / f64::from(1 << 30),
        root.display(),
        started.elapsed().as_secs_f64()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolCtx::new(root.clone(), Duration::from_secs(60), Vec::new());
    let rg = rg_path();
    // Warm the page cache (and check both find every hit).
    let (_, found) = run_ours(&rt, &ctx);
    assert_eq!(found, HITS, "search found {found} of {HITS}");
    if let Some(rg) = &rg {
        let (_, found) = run_rg(rg, &root);
        assert_eq!(found, HITS, "rg found {found} of {HITS}");
    }
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        ours.push(run_ours(&rt, &ctx).0);
        if let Some(rg) = &rg {
            theirs.push(run_rg(rg, &root).0);
        }
    }
    let all = |v: &[Duration]| v.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ");
    let ours_median = median(ours.clone());
    println!(
        "search tool: median {} (runs: {})",
        ms(ours_median),
        all(&ours)
    );
    let Some(rg) = rg else {
        println!("rg not found (set RG or put it on PATH): no comparison");
        return;
    };
    let rg_version = Command::new(&rg)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    let rg_median = median(theirs.clone());
    let ratio = ours_median.as_secs_f64() / rg_median.as_secs_f64();
    println!(
        "{rg_version}: median {} (runs: {})",
        ms(rg_median),
        all(&theirs)
    );
    println!("ratio search / rg: {ratio:.2} (target ≤ {TARGET_RATIO})");
    if release && ratio > TARGET_RATIO {
        eprintln!("search is more than {TARGET_RATIO}x slower than rg");
        std::process::exit(1);
    }
}
