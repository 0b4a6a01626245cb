//! Context-management benchmarks (issue 4 targets), as a plain binary so it can measure peak
//! memory: token estimation (≥ 100 MB/s), keep boundary + request assembly for a
//! 100,000-message history (≤ 10 ms), and peak RSS of a resumed 100,000-message session
//! (≤ 3x its file size, read from /proc/self/status VmHWM in a fresh child process).
//!
//! Run: `cargo bench --bench context`. Exits non-zero when a target is missed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use minicode::agent::context::{Context, keep_boundary};
use minicode::agent::validate;
use minicode::chat::estimate_text;
use minicode::chat::{Message, ToolCall};
use minicode::session::{Checkpoint, Session};

const MESSAGES: usize = 100_000;

/// Code- and prose-like filler of about `len` bytes; `cjk` mixes in Chinese text.
fn text(len: usize, seed: usize, cjk: bool) -> String {
    let words: &[&str] = if cjk {
        &[
            "fn",
            "main()",
            "读取文件",
            "src/lib.rs",
            "错误处理",
            "{",
            "}",
            "let x = 42;",
            "测试通过",
            "\n",
        ]
    } else {
        &[
            "fn",
            "main()",
            "reads",
            "src/lib.rs",
            "error",
            "{",
            "}",
            "let x = 42;",
            "\"quoted\"",
            "\n",
        ]
    };
    let mut out = String::with_capacity(len + 16);
    let mut i = seed;
    while out.len() < len {
        out.push_str(words[i % words.len()]);
        out.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out
}

/// A history of `n` messages: user request, tool call, tool output, answer (about 450 bytes
/// per message on average).
fn history(n: usize) -> Vec<Message> {
    let mut messages = Vec::with_capacity(n);
    let mut i = 0;
    while messages.len() < n {
        let id = format!("call_{i:06}");
        messages.push(Message::user(text(200, i, i % 7 == 0)));
        let args = serde_json::json!({ "command": text(100, i + 1, false) }).to_string();
        messages.push(Message::assistant(
            None,
            vec![ToolCall {
                id: id.clone(),
                name: "bash".into(),
                arguments: args,
            }],
        ));
        messages.push(Message::tool_result(id, text(1000, i + 2, i % 5 == 0)));
        messages.push(Message::assistant(Some(text(400, i + 3, false)), vec![]));
        i += 1;
    }
    messages.truncate(n);
    messages
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn estimation() -> bool {
    let mut ok = true;
    for (label, cjk) in [("ascii code/prose", false), ("mixed with CJK", true)] {
        let sample = text(32 << 20, 1, cjk);
        let mut samples = Vec::new();
        let mut tokens = 0;
        for _ in 0..5 {
            let start = Instant::now();
            tokens = black_box(estimate_text(black_box(&sample)));
            samples.push(start.elapsed());
        }
        let t = median(samples);
        let mbps = sample.len() as f64 / 1e6 / t.as_secs_f64();
        println!(
            "estimate_text, {label}: {:.1} MB in {t:?} -> {mbps:.0} MB/s ({tokens} tokens)",
            sample.len() as f64 / 1e6
        );
        ok &= mbps >= 100.0;
    }
    ok
}

fn assembly(messages: &[Message]) -> bool {
    let mut ok = true;
    let start = Instant::now();
    let mut ctx = Context::new(text(8000, 3, false), &[]);
    ctx.sync(messages);
    println!(
        "context cold start (estimate all {} messages once): {:?}",
        messages.len(),
        start.elapsed()
    );
    let boundary = keep_boundary(messages, 20_000);
    let checkpoint = Checkpoint {
        summary: text(6000, 9, false),
        first_kept_index: boundary,
    };
    for (label, cp) in [
        ("no checkpoint", None),
        ("with checkpoint", Some(checkpoint)),
    ] {
        if let Err(e) = ctx.set_checkpoint(cp, messages) {
            println!("cannot install checkpoint: {e}");
            return false;
        }
        let mut samples = Vec::new();
        let mut sent = 0;
        for _ in 0..50 {
            let start = Instant::now();
            let at = ctx.keep_boundary(black_box(messages), 20_000);
            let used = ctx.used_tokens();
            let request = ctx.build(black_box(messages));
            sent = request.len();
            black_box((at, used, request));
            samples.push(start.elapsed());
        }
        let t = median(samples);
        println!(
            "keep boundary + estimate + build, {} messages, {label}: {t:?} ({sent} sent)",
            messages.len()
        );
        ok &= t <= Duration::from_millis(10);
    }
    let request = ctx.build(messages);
    let start = Instant::now();
    let valid = validate::messages(&request).is_ok();
    println!(
        "validate the request ({} messages): {:?}",
        request.len(),
        start.elapsed()
    );
    let start = Instant::now();
    let valid_all = validate::history(messages).is_ok();
    println!(
        "validate the whole history ({} messages): {:?}",
        messages.len(),
        start.elapsed()
    );
    ok && valid && valid_all
}

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The child's job: resume the session, rebuild the request context, report peak RSS.
fn resume_child(workspace: &Path, id: &str) {
    let start = Instant::now();
    let session = match Session::open(workspace, id) {
        Ok(s) => s,
        Err(e) => {
            println!("error: {e}");
            std::process::exit(1);
        }
    };
    let mut ctx = Context::new("system prompt", &[]);
    if let Err(e) = ctx.set_checkpoint(session.checkpoint().cloned(), session.messages()) {
        println!("error: {e}");
        std::process::exit(1);
    }
    let request = ctx.build(session.messages());
    let valid = validate::messages(&request).is_ok();
    black_box((&request, ctx.used_tokens()));
    println!(
        "{} {} {} {}",
        vm_hwm_kib().unwrap_or(0),
        session.messages().len(),
        valid,
        start.elapsed().as_millis()
    );
}

fn resume_memory(messages: Vec<Message>) -> bool {
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    let (id, file_size) = {
        let Ok(mut session) = Session::create(dir.path()) else {
            return false;
        };
        let boundary = keep_boundary(&messages, 20_000);
        for m in messages {
            session.push(m);
        }
        session.set_checkpoint(Some(Checkpoint {
            summary: text(6000, 9, false),
            first_kept_index: boundary,
        }));
        if let Err(e) = session.save() {
            println!("save failed: {e}");
            return false;
        }
        let size = std::fs::metadata(session.path())
            .map(|m| m.len())
            .unwrap_or(0);
        (session.id().to_string(), size)
    };
    let Ok(exe) = std::env::current_exe() else {
        return false;
    };
    let output = std::process::Command::new(exe)
        .arg("--resume-child")
        .arg(dir.path())
        .arg(&id)
        .output();
    let Ok(output) = output else { return false };
    let out = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<&str> = out.split_whitespace().collect();
    let (Some(hwm), Some(count), Some(valid), Some(ms)) =
        (fields.first(), fields.get(1), fields.get(2), fields.get(3))
    else {
        println!("resume child failed: {out}");
        return false;
    };
    let hwm: u64 = hwm.parse().unwrap_or(u64::MAX / 2048) * 1024;
    let ratio = hwm as f64 / file_size as f64;
    println!(
        "resumed session: {count} messages, file {:.1} MB, peak RSS {:.1} MB = {ratio:.2}x the file, resume + build {ms} ms, valid: {valid}",
        file_size as f64 / 1e6,
        hwm as f64 / 1e6
    );
    ratio <= 3.0 && *valid == "true"
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, workspace, id, ..] = args.as_slice()
        && flag == "--resume-child"
    {
        resume_child(Path::new(workspace), id);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too, with fewer messages.
    let quick = !args.iter().any(|a| a == "--bench");
    let n = if quick { 10_000 } else { MESSAGES };
    let mut ok = estimation();
    let messages = history(n);
    ok &= assembly(&messages);
    ok &= resume_memory(messages);
    if !ok && !quick {
        println!("FAILED: a context benchmark missed its target");
        std::process::exit(1);
    }
}
