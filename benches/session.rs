//! Saving and loading a 10,000-message session (issue target: ≤ 50 ms each). Messages mix
//! user prompts, assistant tool calls, tool output and answers, about 500 bytes on average.
//! A save is one of two things since the journal: a full rewrite of the snapshot (the first
//! save of an opened session, and now and then) or an append of what a round added. Each is
//! timed on its own; timing `save` with nothing added would time an empty journal line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use minicode::chat::{Message, ToolCall};
use minicode::session::Session;

const MESSAGES: usize = 10_000;

/// Prose-like filler of `len` bytes with some JSON-escaped characters in it.
fn text(len: usize, seed: usize) -> String {
    let words = [
        "the",
        "agent",
        "reads",
        "src/main.rs",
        "and",
        "\"quotes\"",
        "line\n",
        "tab\t",
        "ünïcode",
        "42",
    ];
    let mut out = String::with_capacity(len + 16);
    let mut i = seed;
    while out.len() < len {
        out.push_str(words[i % words.len()]);
        out.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out
}

/// One round of a turn, as the agent saves it: a prompt, a `bash` call, its output and an
/// answer (about 1.9 KB of text).
fn push_round(session: &mut Session, i: usize) {
    let id = format!("call_{i:06}");
    session.push(Message::user(text(200, i)));
    let args = serde_json::json!({ "command": text(120, i + 1) }).to_string();
    session.push(Message::assistant(
        None,
        vec![ToolCall {
            id: id.clone(),
            name: "bash".into(),
            arguments: args,
        }],
    ));
    session.push(Message::tool_result(id, text(1200, i + 2)));
    session.push(Message::assistant(Some(text(400, i + 3)), vec![]));
}

fn fill(session: &mut Session) {
    let mut i = 0;
    while session.messages().len() < MESSAGES {
        push_round(session, i);
        i += 1;
    }
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Times `iters` saves that each append one round to the journal. The round is pushed outside
/// the timing; before the journal would outgrow the snapshot (when the save would rewrite it
/// instead), the session is reopened and saved once, untimed, so every timed save is an append.
fn appends(tmp: &Path, id: &str, iters: u64) -> Duration {
    let mut session = Session::open(tmp, id).expect("open");
    session.save().expect("first save after opening rewrites");
    let journal = session.path().with_extension("journal");
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        if len(&journal) + 64 * 1024 > len(session.path()) {
            drop(session);
            session = Session::open(tmp, id).expect("open");
            session.save().expect("rewrite");
        }
        // Seeded by the history's length: call ids stay unique across criterion's calls.
        let seed = session.messages().len();
        push_round(&mut session, seed);
        let start = Instant::now();
        session.save().expect("append");
        total += start.elapsed();
        assert!(len(&journal) > 0, "the timed save appended");
    }
    total
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut session = Session::create(tmp.path()).expect("create");
    fill(&mut session);
    session.save().expect("save");
    let bytes = std::fs::metadata(session.path()).expect("metadata").len();
    eprintln!(
        "snapshot: {MESSAGES} messages, {} bytes ({} bytes/message)",
        bytes,
        bytes / MESSAGES as u64
    );

    let id = session.id().to_string();
    drop(session);

    let mut group = c.benchmark_group("session_10k_messages");
    group.sample_size(30);
    // A freshly opened session's first save: every message serialized, the whole snapshot
    // written to a temp file, fsync'd and renamed (the open is outside the timing).
    group.bench_function("save_rewrite", |b| {
        b.iter_batched(
            || Session::open(tmp.path(), &id).expect("open"),
            |mut session| {
                session.save().expect("save");
                session
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("load", |b| {
        b.iter(|| black_box(Session::open(tmp.path(), &id).expect("open")))
    });
    // Last: it grows the history (the append's cost does not depend on it).
    group.bench_function("save_append_round", |b| {
        b.iter_custom(|iters| appends(tmp.path(), &id, iters))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
