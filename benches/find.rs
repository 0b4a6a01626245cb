//! The `find` tool's ranking quality and speed (issues 26 and 34). Labelled sets of questions in
//! words, each with the file and symbol a developer would want: `find/ring.txt` over the source
//! of `ring` (a pinned dependency, Rust and C, found through `cargo metadata` in the cargo
//! registry, so any machine that built the project has it), `find/pulldown.txt` over
//! `pulldown-cmark` (held out: written blind and never used for tuning), `find/own.txt` over
//! this repository's `src/`, and issue 34's `find/tuning.txt` (Python `json` and `logging`,
//! `globset`) and `find/heldout.txt` (Python `http` and `urllib`, `similar`), which need the
//! system's Python 3.11 standard library (`FIND_BENCH_PYTHON_LIB`). Each gives Recall@1,
//! Recall@5 and MRR@5 for `find` (file and symbol, and file alone) and for two baselines judged
//! on the file alone (`find/baselines.rs`); the run also times the index build, queries and
//! re-indexing. `FIND_BENCH_SETS=heldout,tuning` runs only the named sets.
//!
//! Every corpus is copied into a temp folder first, so the bench never writes an index into a
//! checkout or the registry. `cargo bench --bench find`; `cargo test --benches` runs it once as
//! a check. The latency part generates trees of `FIND_BENCH_FILES` (10,000) and, when set,
//! `FIND_BENCH_BIG_FILES` files of `FIND_BENCH_FILE_BYTES` (10,000) bytes each.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use minicode::chat::ToolStatus;
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[path = "find/baselines.rs"]
mod baselines;

use baselines::{baseline_rank, figures, file_rank_of, rank_of, search_list_rank};

const LIMIT: usize = 5;
const RUNS: usize = 5;

/// One labelled question: the words, the wanted file, and the symbols any of which counts.
struct Case {
    text: String,
    path: String,
    symbols: Vec<String>,
}

fn cases(set: &str) -> Vec<Case> {
    set.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let parts: Vec<&str> = l.split(" => ").collect();
            assert_eq!(parts.len(), 3, "bad case line: {l}");
            Case {
                text: parts[0].to_string(),
                path: parts[1].to_string(),
                symbols: parts[2].split_whitespace().map(str::to_string).collect(),
            }
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_name() == "__pycache__" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The target triple `rustc` builds for by default (this machine's).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_string()
}

/// The source folder of the pinned package `name`, from `cargo metadata` (offline: the
/// registry copy a build of this project unpacked). Filtered to the host platform: a machine
/// that only built for itself has no copy of other platforms' packages, and metadata for all
/// platforms would fail to fetch them.
fn registry_source(name: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host_triple()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata failed");
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let package = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} is in the dependency tree"));
    let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap());
    manifest.parent().unwrap().to_path_buf()
}

/// A tool session over one copied tree: one registry, as one session has, so the tool keeps
/// its index in memory between calls.
struct Bench {
    rt: tokio::runtime::Runtime,
    registry: Registry,
    ctx: ToolCtx,
    root: PathBuf,
}

impl Bench {
    fn new(root: &Path) -> Bench {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Bench {
            rt,
            registry: Registry::builtin(),
            ctx: ToolCtx::new(root.to_path_buf(), Duration::from_secs(60), Vec::new()),
            root: root.to_path_buf(),
        }
    }

    fn tool(&self, name: &str, args: serde_json::Value) -> (String, Duration) {
        let (tool, value) = self.registry.resolve(name, &args.to_string()).unwrap();
        let started = Instant::now();
        let out = self
            .rt
            .block_on(tool.run(value, &self.ctx, CancellationToken::new()));
        let took = started.elapsed();
        assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
        (out.content, took)
    }

    fn find(&self, text: &str) -> (String, Duration) {
        self.tool("find", json!({"query": text, "limit": LIMIT}))
    }

    /// Queries until the index reports no build under way; the first call's time is the build's.
    fn build(&self) -> (String, Duration) {
        let started = Instant::now();
        loop {
            let (out, _) = self.find("warm up the index");
            if !out.contains("[index incomplete") {
                return (out, started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Bytes of the text files the index covers (binary files are walked but not indexed).
    fn text_bytes(&self) -> u64 {
        fn walk(dir: &Path, total: &mut u64) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let kind = entry.file_type().unwrap();
                if kind.is_dir() && entry.file_name() != ".minicode" {
                    walk(&entry.path(), total);
                } else if kind.is_file() {
                    let bytes = std::fs::read(entry.path()).unwrap();
                    if !bytes.iter().take(8192).any(|b| *b == 0) {
                        *total += bytes.len() as u64;
                    }
                }
            }
        }
        let mut total = 0;
        walk(&self.root, &mut total);
        total
    }

    /// Bytes of everything under `.minicode/index/`.
    fn index_bytes(&self) -> u64 {
        let dir = self.root.join(".minicode/index");
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Ranking figures on one corpus made of `sources`, each copied under its folder name (`""`:
/// at the root); returns the bench for the latency figures.
fn ranking(name: &str, sources: &[(&Path, &str)], set: &str) -> (Bench, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix("minicode-find-bench-")
        .tempdir()
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (source, folder) in sources {
        copy_tree(source, &root.join(folder));
    }
    let bench = Bench::new(&root);
    let (first, build) = bench.build();
    let summary = first
        .lines()
        .find(|l| l.starts_with("[index: "))
        .unwrap_or("");
    println!("== {name}: index build {} {summary}", ms(build));
    let (index, text) = (bench.index_bytes(), bench.text_bytes());
    println!(
        "index size: {:.1} KiB for {:.1} KiB of text ({:.0}%)",
        index as f64 / 1024.0,
        text as f64 / 1024.0,
        100.0 * index as f64 / text as f64
    );
    let cases = cases(set);
    let mut ranks = Vec::new();
    let mut file_ranks = Vec::new();
    let mut latencies = Vec::new();
    for case in &cases {
        let (out, took) = bench.find(&case.text);
        latencies.push(took);
        let rank = rank_of(&out, case);
        file_ranks.push(file_rank_of(&out, case));
        if rank != Some(1) && std::env::var_os("FIND_BENCH_VERBOSE").is_some() {
            let top = out.lines().next().unwrap_or("");
            println!(
                "  {rank:?}: {:?} wanted {} {:?}; top {top}",
                case.text, case.path, case.symbols
            );
            // Where the wanted chunk is among the first 20, and its score.
            let (wide, _) = bench.tool("find", json!({"query": case.text, "limit": 20}));
            let at = rank_of(&wide, case);
            let line = at.and_then(|r| wide.lines().find(|l| l.starts_with(&format!("{r}. "))));
            println!("      wanted at {at:?}: {}", line.unwrap_or(""));
        }
        ranks.push(rank);
    }
    let n = cases.len();
    println!("{n} queries, find: {}", figures(&ranks));
    println!("{n} queries, find (files only): {}", figures(&file_ranks));
    if std::env::var_os("FIND_BENCH_QUICK").is_some() {
        return (bench, dir);
    }
    let base: Vec<Option<usize>> = cases.iter().map(|c| baseline_rank(&bench, c)).collect();
    println!(
        "{n} queries, regex baseline (files only): {}",
        figures(&base)
    );
    let both: Vec<Option<usize>> = cases.iter().map(|c| search_list_rank(&bench, c)).collect();
    println!(
        "{n} queries, search + list (files only): {}",
        figures(&both)
    );
    println!("query latency: median {}", ms(median(latencies)));

    (bench, dir)
}

/// Words generated code is made of, so generated files share a realistic vocabulary.
const WORDS: &[&str] = &[
    "config",
    "parse",
    "request",
    "retry",
    "buffer",
    "session",
    "token",
    "cache",
    "index",
    "stream",
    "render",
    "queue",
    "socket",
    "header",
    "payload",
    "schema",
    "record",
    "batch",
    "window",
    "cursor",
    "digest",
    "signal",
    "worker",
    "budget",
    "ledger",
    "invoice",
    "tenant",
    "widget",
    "filter",
    "report",
    "upload",
    "thumbnail",
    "locale",
    "currency",
    "shipment",
    "coupon",
    "profile",
    "avatar",
    "metric",
    "alert",
    "channel",
    "message",
    "archive",
    "quota",
];

/// Writes `files` generated Rust files of about `bytes_each` bytes under `root/gen/`, 100 to a
/// folder, deterministic for a seed. Returns the bytes written.
fn generate(root: &Path, files: usize, bytes_each: usize) -> u64 {
    let mut rng = fastrand::Rng::with_seed(26);
    let mut total = 0u64;
    for i in 0..files {
        let dir = root.join(format!("gen/m{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut text = String::with_capacity(bytes_each + 512);
        let mut n = 0;
        while text.len() < bytes_each {
            let a = WORDS[rng.usize(..WORDS.len())];
            let b = WORDS[rng.usize(..WORDS.len())];
            let c = WORDS[rng.usize(..WORDS.len())];
            text.push_str(&format!(
                "/// Updates the {a} of a {b} when the {c} changes.\n\
                 pub fn {a}_{b}_{n}(input: &{c}::Input) -> Result<usize, Error> {{\n    \
                 let {c} = input.{a}()?;\n    if {c}.is_empty() {{\n        \
                 return Err(Error::{b}({c}.len()));\n    }}\n    \
                 Ok({c}.len() * {n})\n}}\n\n"
            ));
            n += 1;
        }
        total += text.len() as u64;
        std::fs::write(dir.join(format!("f{i}.rs")), text).unwrap();
    }
    total
}

/// The baseline for a build: what listing the files (with the `ignore` crate, as `rg --files`
/// does) and reading each once costs.
fn walk_and_read(root: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let mut bytes = 0u64;
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            bytes += std::fs::read(entry.path()).map_or(0, |b| b.len() as u64);
        }
    }
    (started.elapsed(), bytes)
}

/// `rg --files` plus reading the files, when `rg` is installed.
fn rg_files_and_read(root: &Path) -> Option<Duration> {
    let started = Instant::now();
    let out = std::process::Command::new("rg")
        .arg("--files")
        .current_dir(root)
        .output()
        .ok()?;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let _ = std::fs::read(root.join(line));
    }
    Some(started.elapsed())
}

/// Build, query and re-index figures on a generated tree of `files` files.
fn latency(files: usize, bytes_each: usize) {
    let dir = tempfile::Builder::new()
        .prefix("minicode-find-gen-")
        .tempdir()
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let written = generate(&root, files, bytes_each);
    println!(
        "== generated tree: {files} files, {:.1} MiB",
        written as f64 / (1 << 20) as f64
    );
    walk_and_read(&root);
    let (baseline, _) = walk_and_read(&root);
    match rg_files_and_read(&root) {
        Some(rg) => println!("rg --files + read: {}", ms(rg)),
        None => println!("rg is not installed: baseline is the ignore-crate walk + read"),
    }
    println!("walk (ignore crate) + read: {}", ms(baseline));
    let bench = Bench::new(&root);
    let (out, build) = bench.build();
    let summary = out
        .lines()
        .find(|l| l.starts_with("[index: "))
        .unwrap_or("");
    println!(
        "index build: {} ({:.1}x the walk + read) {summary}",
        ms(build),
        build.as_secs_f64() / baseline.as_secs_f64()
    );
    let text = written as f64;
    println!(
        "index size: {:.1} MiB ({:.0}% of the text)",
        bench.index_bytes() as f64 / (1 << 20) as f64,
        100.0 * bench.index_bytes() as f64 / text
    );
    let questions = [
        "update the invoice of a tenant",
        "retry a request when the socket changes",
        "render a thumbnail for an avatar",
        "parse the config schema",
    ];
    let mut queries = Vec::new();
    for _ in 0..RUNS {
        for q in questions {
            queries.push(bench.find(q).1);
        }
    }
    println!("query: median {}", ms(median(queries)));
    let mut reindex = Vec::new();
    for i in 0..RUNS {
        let file = root.join("gen/m0000/f0.rs");
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(&format!("\npub fn touched_{i}() {{}}\n"));
        std::fs::write(&file, text).unwrap();
        let (out, took) = bench.find(&format!("touched {i}"));
        assert!(out.contains(&format!("touched_{i}")), "{out}");
        reindex.push(took);
    }
    println!(
        "re-index after one file changed + query: median {}",
        ms(median(reindex))
    );
}

/// The labelled sets, and a re-index on this repository's own tree.
fn ranking_figures() {
    let only = std::env::var("FIND_BENCH_SETS").unwrap_or_default();
    let wanted = |set: &str| only.is_empty() || only.split(',').any(|s| s == set);
    if wanted("ring") {
        let ring = registry_source("ring");
        ranking(
            "ring (Rust and C)",
            &[(&ring, "")],
            include_str!("find/ring.txt"),
        );
    }
    if wanted("pulldown") {
        let pulldown = registry_source("pulldown-cmark");
        let set = include_str!("find/pulldown.txt");
        ranking("pulldown-cmark (held out)", &[(&pulldown, "")], set);
    }
    python_sets(&wanted);
    if !wanted("own") {
        return;
    }
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (bench, _tree) = ranking("own src/", &[(&own, "src")], include_str!("find/own.txt"));
    let mut reindex = Vec::new();
    for i in 0..RUNS {
        let file = bench.root.join("src/tools/find/rank.rs");
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(&format!("\n// touched {i}\n"));
        std::fs::write(&file, text).unwrap();
        reindex.push(bench.find("split identifiers at camel case boundaries").1);
    }
    println!(
        "re-index after one file changed + query: median {}",
        ms(median(reindex))
    );
}

/// The folder of Python's standard library the issue 34 sets were written from:
/// `FIND_BENCH_PYTHON_LIB`, else the system's `/usr/lib/python3.11`.
fn python_lib() -> Option<PathBuf> {
    let dir = std::env::var_os("FIND_BENCH_PYTHON_LIB")
        .map_or_else(|| PathBuf::from("/usr/lib/python3.11"), PathBuf::from);
    dir.join("http/client.py").is_file().then_some(dir)
}

/// Issue 34's two sets, each over Python packages and a Rust crate: the tuning set and the
/// held-out one (see their headers). Skipped, with a note, where that Python is not installed.
fn python_sets(wanted: &dyn Fn(&str) -> bool) {
    let Some(py) = python_lib() else {
        println!(
            "== issue 34 sets skipped: no Python 3.11 standard library (FIND_BENCH_PYTHON_LIB)"
        );
        return;
    };
    if wanted("tuning") {
        let (json, logging) = (py.join("json"), py.join("logging"));
        let globset = registry_source("globset");
        let sources = [
            (&*json, "json"),
            (&*logging, "logging"),
            (&*globset, "globset"),
        ];
        let set = include_str!("find/tuning.txt");
        ranking("json + logging + globset (issue 34 tuning)", &sources, set);
    }
    if wanted("heldout") {
        let (http, urllib) = (py.join("http"), py.join("urllib"));
        let similar = registry_source("similar");
        let sources = [
            (&*http, "http"),
            (&*urllib, "urllib"),
            (&*similar, "similar"),
        ];
        let set = include_str!("find/heldout.txt");
        ranking("http + urllib + similar (issue 34 held out)", &sources, set);
    }
}

/// A count from the environment, or `default`.
fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::var_os("FIND_BENCH_LATENCY_ONLY").is_none() {
        ranking_figures();
    }
    // The figures: a query and a re-index on 10,000 files, and a build on 100,000 files
    // of 1 GiB (FIND_BENCH_BIG_FILES, FIND_BENCH_FILE_BYTES; smaller by default, as the bench
    // must also run on a laptop: scale the figure and say so).
    latency(
        env_count("FIND_BENCH_FILES", 10_000),
        env_count("FIND_BENCH_FILE_BYTES", 10_000),
    );
    let big = env_count("FIND_BENCH_BIG_FILES", 0);
    if big > 0 {
        latency(big, env_count("FIND_BENCH_FILE_BYTES", 10_000));
    }
}
