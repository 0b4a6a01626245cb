//! Saving and loading a 10,000-message session (issue target: ≤ 50 ms each). Messages mix
//! user prompts, assistant tool calls, tool output and answers, about 500 bytes on average.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
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

fn fill(session: &mut Session) {
    let mut i = 0;
    while session.messages().len() < MESSAGES {
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
        i += 1;
    }
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

    let mut group = c.benchmark_group("session_10k_messages");
    group.sample_size(30);
    group.bench_function("save", |b| b.iter(|| session.save().expect("save")));
    let id = session.id().to_string();
    drop(session);
    group.bench_function("load", |b| {
        b.iter(|| black_box(Session::open(tmp.path(), &id).expect("open")))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
