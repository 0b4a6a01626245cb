//! The `find` tool's ranking quality and speed on this repository's own `src/` (issue 26): a
//! fixed set of questions in words, each with the file and symbol a developer would want,
//! gives Recall@1, Recall@5 and MRR@5, beside a regex baseline through `search`; the same run
//! times the first index build, a query on the built index, and the re-index after one file
//! changes.
//!
//! `src/` is copied into a temp folder first, so the bench never writes an index into the
//! checkout. `cargo bench --bench find`; `cargo test --benches` runs it once as a check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use minicode::chat::ToolStatus;
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Question, expected file, expected symbol.
const CASES: &[(&str, &str, &str)] = &[
    (
        "resolve a path argument so it stays inside the workspace",
        "src/fsutil.rs",
        "resolve_in_workspace",
    ),
    (
        "do these bytes look like a binary file",
        "src/fsutil.rs",
        "looks_binary",
    ),
    (
        "make the private data folder with mode 0700",
        "src/fsutil.rs",
        "private_dir",
    ),
    (
        "replace a file atomically so a crash leaves old or new content",
        "src/fsutil/atomic.rs",
        "write_atomic",
    ),
    (
        "remove leftover temporary files at start-up",
        "src/fsutil/atomic.rs",
        "sweep_temp_files",
    ),
    (
        "split identifiers at camel case boundaries",
        "src/tools/find/rank.rs",
        "camel_pieces",
    ),
    (
        "where a definition ends by counting braces",
        "src/tools/find/symbols.rs",
        "brace_end",
    ),
    (
        "end of a python block from its indentation",
        "src/tools/find/symbols.rs",
        "indent_end",
    ),
    (
        "strip word suffixes so word forms meet",
        "src/tools/find/rank.rs",
        "stem",
    ),
    (
        "hash character trigrams into a unit vector",
        "src/tools/find/rank.rs",
        "vector",
    ),
    (
        "system prompt given to a delegated sub-agent",
        "src/agent/prompt.rs",
        "subagent_prompt",
    ),
    (
        "cut a long matching line around the match",
        "src/tools/search.rs",
        "shown_line",
    ),
    (
        "ignore files must be regular files inside the workspace",
        "src/tools/walk.rs",
        "ignore_files_usable",
    ),
    (
        "deserialize tool call arguments into a typed struct",
        "src/tools.rs",
        "parse_args",
    ),
    (
        "closing note about files hidden by permission rules",
        "src/tools.rs",
        "withheld_note",
    ),
    (
        "whether a permission rule applies to a tool",
        "src/permissions.rs",
        "covers_tool",
    ),
    (
        "title shown to the ACP client for a tool call",
        "src/acp/convert.rs",
        "title",
    ),
    (
        "parse the Retry-After header value",
        "src/provider/http_error.rs",
        "parse_retry_after",
    ),
    (
        "milliseconds to wait from the retry headers",
        "src/provider/http_error.rs",
        "retry_after_ms",
    ),
    (
        "detect that the prompt overflowed the context window",
        "src/provider/http_error.rs",
        "is_context_overflow",
    ),
    (
        "error for a model call past its deadline",
        "src/provider/retry.rs",
        "deadline_error",
    ),
    (
        "check a session id is a valid uuid",
        "src/session.rs",
        "is_valid_id",
    ),
    (
        "folder where a workspace's sessions are stored",
        "src/session.rs",
        "sessions_dir",
    ),
    (
        "accept the compaction summary only when complete",
        "src/agent/compact.rs",
        "accept",
    ),
    (
        "render the conversation as a transcript for summarising",
        "src/agent/compact.rs",
        "transcript",
    ),
    (
        "fingerprint of content just written",
        "src/tools/edit.rs",
        "fingerprint_written",
    ),
    (
        "short diff shown to the model after an edit",
        "src/tools/edit.rs",
        "edited",
    ),
    (
        "count the lines of a file",
        "src/tools/read.rs",
        "count_lines",
    ),
    (
        "format one numbered line of a file",
        "src/tools/read.rs",
        "format_line",
    ),
    (
        "combine the prompt with text piped on stdin",
        "src/cli.rs",
        "with_piped_text",
    ),
    (
        "flags to resume this session later",
        "src/cli.rs",
        "resume_flags",
    ),
    ("build the tokio runtime", "src/cli.rs", "runtime"),
];

const LIMIT: usize = 5;
const RUNS: usize = 5;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// One registry for the whole run, as one session has: the tool keeps its index in memory.
fn query(
    rt: &tokio::runtime::Runtime,
    registry: &Registry,
    ctx: &ToolCtx,
    text: &str,
) -> (String, Duration) {
    let args = json!({"query": text, "limit": LIMIT}).to_string();
    let (tool, value) = registry.resolve("find", &args).unwrap();
    let started = Instant::now();
    let out = rt.block_on(tool.run(value, ctx, CancellationToken::new()));
    let took = started.elapsed();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    (out.content, took)
}

/// The 1-based rank of the wanted file and symbol among the results, if shown.
fn rank_of(out: &str, path: &str, symbol: &str) -> Option<usize> {
    let heads = out.lines().filter(|l| {
        l.split_once(". ")
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    });
    heads.enumerate().find_map(|(i, l)| {
        let rest = l.split_once(". ").unwrap().1;
        let (place, after) = rest.split_once(' ')?;
        let found_path = place.rsplit_once(':')?.0;
        let found_symbol = after.split(' ').next()?;
        (found_path == path && found_symbol == symbol).then_some(i + 1)
    })
}

/// The regex baseline: the query's longer words as one case-insensitive alternation for
/// `search`, files ranked by how many lines match. Judged on the file alone (no symbol), which
/// favours the baseline.
fn baseline_rank(
    rt: &tokio::runtime::Runtime,
    registry: &Registry,
    ctx: &ToolCtx,
    text: &str,
    path: &str,
) -> Option<usize> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 4)
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return None;
    }
    let args = json!({"pattern": words.join("|"), "case_sensitive": false, "limit": 1000});
    let (tool, value) = registry.resolve("search", &args.to_string()).unwrap();
    let out = rt.block_on(tool.run(value, ctx, CancellationToken::new()));
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for line in out.content.lines() {
        if let Some((file, _)) = line.split_once(':') {
            *counts.entry(file).or_insert(0) += 1;
        }
    }
    let mut files: Vec<(&str, usize)> = counts.into_iter().collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    files
        .iter()
        .take(LIMIT)
        .position(|(f, _)| *f == path)
        .map(|i| i + 1)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::Builder::new()
        .prefix("minicode-find-bench-")
        .tempdir()
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &root.join("src"),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolCtx::new(root.clone(), Duration::from_secs(60), Vec::new());
    let registry = Registry::builtin();
    let (first, build) = query(&rt, &registry, &ctx, "warm up the index");
    let summary = first
        .lines()
        .find(|l| l.starts_with("[index: "))
        .unwrap_or("");
    println!("index build: {:.1} ms {summary}", build.as_secs_f64() * 1e3);
    let (mut hits1, mut hits5, mut rr) = (0usize, 0usize, 0f64);
    let mut latencies = Vec::new();
    for (text, path, symbol) in CASES {
        let (out, took) = query(&rt, &registry, &ctx, text);
        latencies.push(took);
        match rank_of(&out, path, symbol) {
            Some(r) => {
                hits1 += usize::from(r == 1);
                hits5 += 1;
                rr += 1.0 / r as f64;
            }
            None => println!("miss: {text:?} (wanted {path} {symbol})"),
        }
    }
    let n = CASES.len() as f64;
    let (mut base1, mut base5, mut base_rr) = (0usize, 0usize, 0f64);
    for (text, path, _) in CASES {
        if let Some(r) = baseline_rank(&rt, &registry, &ctx, text, path) {
            base1 += usize::from(r == 1);
            base5 += 1;
            base_rr += 1.0 / r as f64;
        }
    }
    println!(
        "regex baseline (files only): Recall@1 {:.2}, Recall@5 {:.2}, MRR@5 {:.2}",
        base1 as f64 / n,
        base5 as f64 / n,
        base_rr / n
    );
    println!(
        "{} queries: Recall@1 {:.2}, Recall@5 {:.2}, MRR@5 {:.2}",
        CASES.len(),
        hits1 as f64 / n,
        hits5 as f64 / n,
        rr / n
    );
    let mut warm = Vec::new();
    for _ in 0..RUNS {
        warm.push(query(&rt, &registry, &ctx, CASES[0].0).1);
    }
    println!(
        "query latency: median {:.1} ms over the questions, {:.1} ms repeated",
        median(latencies).as_secs_f64() * 1e3,
        median(warm).as_secs_f64() * 1e3
    );
    let mut reindex = Vec::new();
    for i in 0..RUNS {
        let file = root.join("src/tools/find/rank.rs");
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(&format!("\n// touched {i}\n"));
        std::fs::write(&file, text).unwrap();
        reindex.push(query(&rt, &registry, &ctx, CASES[5].0).1);
    }
    println!(
        "re-index after one file changed + query: median {:.1} ms",
        median(reindex).as_secs_f64() * 1e3
    );
    let index = std::fs::metadata(root.join(".minicode/index/find.json"))
        .unwrap()
        .len();
    println!("index file: {:.1} KiB", index as f64 / 1024.0);
}
