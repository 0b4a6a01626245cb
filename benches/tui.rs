//! Full-screen UI cost: frame time with a long transcript while a reply streams, CPU to stream
//! and render a 1 MB Markdown reply in 4-character chunks, and peak RSS after 10 MB of
//! transcript. Frames are drawn through ratatui's crossterm backend into a sink, so diffing and
//! escape generation are included; only the terminal itself is missing.
//!
//! Run: `cargo bench --bench tui` (figures go to docs/performance.md).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Resource usage is read with libc (getrusage, wait4, sysconf): measurement only.
#![allow(unsafe_code)]

use std::hint::black_box;
use std::io::Sink;
use std::time::{Duration, Instant};

use minicode::chat::ToolStatus;
use minicode::protocol::Event;
use minicode::tui::state::{Msg, State};
use minicode::tui::view;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

const W: u16 = 120;
const H: u16 = 40;

fn terminal() -> Terminal<CrosstermBackend<Sink>> {
    let options = TerminalOptions {
        viewport: Viewport::Fixed(Rect::new(0, 0, W, H)),
    };
    Terminal::with_options(CrosstermBackend::new(std::io::sink()), options)
        .expect("a sink never fails")
}

fn state() -> State {
    let mut s = State::new("bench-model", 262_144);
    s.update(Msg::Resize(W, H));
    s
}

fn ev(s: &mut State, e: Event) {
    s.update(Msg::Agent(e));
}

const PARA: &str = "Some **bold** text, `inline code`, a [link](https://example.com) and enough words to wrap across the width of a terminal window at least once.\n\n";
const CODE: &str = "```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n\n";
const LIST: &str = "- one item\n- two items\n  1. nested\n  2. nested again\n\n";

/// A Markdown body of about `bytes` bytes.
fn markdown(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 256);
    let mut i = 0;
    while s.len() < bytes {
        match i % 8 {
            0 => s.push_str(&format!("## Section {i}\n\n")),
            3 => s.push_str(CODE),
            5 => s.push_str(LIST),
            7 => s.push_str("| a | b |\n|---|---|\n| 1 | 2 |\n\n"),
            _ => s.push_str(PARA),
        }
        i += 1;
    }
    s
}

/// Adds `n` entries (prompt, reply, tool call, in turn) of about `entry_bytes` each.
fn fill(s: &mut State, n: usize, entry_bytes: usize) {
    let body = markdown(entry_bytes);
    for i in 0..n {
        match i % 3 {
            0 => {
                s.update(Msg::Paste(format!("question {i}")));
                // Submitting through the state keeps the transcript shape real.
                s.update(Msg::Key(crossterm::event::KeyEvent::from(
                    crossterm::event::KeyCode::Enter,
                )));
            }
            1 => ev(s, Event::AssistantMessage { text: body.clone() }),
            _ => {
                let call = format!("c{i}");
                ev(
                    s,
                    Event::ToolCallBegan {
                        kind: minicode::chat::ToolKind::Other,
                        paths: Vec::new(),
                        call: call.clone(),
                        tool: "bash".into(),
                        summary: "ls".into(),
                        arguments: serde_json::json!({}),
                        change: None,
                    },
                );
                ev(
                    s,
                    Event::ToolCallEnded {
                        call,
                        status: ToolStatus::Succeeded,
                        output: body.clone(),
                    },
                );
                let stats = minicode::protocol::TurnStats::default();
                ev(
                    s,
                    Event::TurnEnded {
                        turn: i as u64,
                        end: minicode::protocol::TurnEnd::Completed,
                        stats: Box::new(stats),
                    },
                );
            }
        }
    }
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Peak resident set of this process (VmHWM; `ru_maxrss` would include cargo's, which is
/// inherited across fork and exec).
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// Peak RSS after a 10 MB transcript, drawn at the tail and scrolled through to the top.
fn rss_after_10mb() {
    let before = peak_rss_mb();
    let mut s = state();
    let mut term = terminal();
    fill(&mut s, 10_000, 1536);
    term.draw(|f| view::render(&s, f)).expect("draw");
    for _ in 0..400 {
        s.update(Msg::Key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::PageUp,
        )));
        term.draw(|f| view::render(&s, f)).expect("draw");
    }
    println!(
        "peak RSS after a 10 MB transcript (10,000 entries of 1.5 KB plus stats lines, drawn and paged up 400 times): {:.1} MB (process start {:.1} MB, cached lines {})",
        peak_rss_mb(),
        before,
        s.transcript.cached_lines()
    );
    black_box(s);
}

/// Mean and worst frame time while a reply streams, after `entries` entries.
fn frame_time(entries: usize) {
    let mut s = state();
    let mut term = terminal();
    fill(&mut s, entries, 512);
    ev(&mut s, Event::TurnStarted { turn: 0 });
    let reply = markdown(64 * 1024);
    let mut times = Vec::new();
    let bytes = reply.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let mut end = (at + 40).min(bytes.len());
        while !reply.is_char_boundary(end) {
            end += 1;
        }
        ev(
            &mut s,
            Event::TextDelta {
                text: reply[at..end].to_string(),
            },
        );
        at = end;
        let t = Instant::now();
        term.draw(|f| view::render(&s, f)).expect("draw");
        times.push(t.elapsed());
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    let p99 = times[times.len() * 99 / 100];
    println!(
        "frame at {W}x{H}, {entries:>6} entries, reply streaming in 40-byte deltas: mean {:>7.1} µs, p99 {:>7.1} µs, max {:>7.1} µs ({} frames)",
        mean.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e6,
        times.len()
    );
}

/// CPU to stream a 1 MB reply in 4-character chunks, drawing a frame every `every` deltas.
fn stream_1mb(every: usize) {
    let cpu = stream_reply(&markdown(1024 * 1024), every);
    println!(
        "stream + render a 1 MB Markdown reply in 4-char chunks, a frame every {every} deltas: CPU {cpu:.3} s"
    );
}

/// A command printing 1 MB/s for a minute (cargo-like lines, every tenth a `\r` progress
/// line), arriving as the core sends it: a piece per 50 ms (about 50 KB), a frame after each.
/// Compared with streaming the same bytes as reply text: 60 MB of text would cost 60 times
/// the 1 MB figure.
fn live_output() {
    let mut s = state();
    let mut term = terminal();
    ev(&mut s, Event::TurnStarted { turn: 0 });
    ev(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: "c1".into(),
            tool: "bash".into(),
            summary: "./build.sh".into(),
            arguments: serde_json::Value::Null,
            change: None,
        },
    );
    let mut piece = String::new();
    let mut i = 0u64;
    let (mut sent, mut pieces) = (0usize, 0u32);
    let start = cpu_time();
    while sent < 60 * 1024 * 1024 {
        piece.clear();
        while piece.len() < 1024 * 1024 / 20 {
            if i.is_multiple_of(10) {
                piece.push_str(&format!("\rdownloading {:>3}%", i % 101));
            } else {
                piece.push_str(&format!(
                    "   Compiling crate-{i} v1.{}.0 (registry)\n",
                    i % 40
                ));
            }
            i += 1;
        }
        sent += piece.len();
        pieces += 1;
        ev(
            &mut s,
            Event::ToolOutputDelta {
                call: "c1".into(),
                text: piece.clone(),
            },
        );
        term.draw(|f| view::render(&s, f)).expect("draw");
    }
    let cpu = (cpu_time() - start).as_secs_f64();
    println!(
        "live bash output, 60 MB in {pieces} pieces of ~50 KB (1 MB/s for a minute), a frame after each: CPU {cpu:.3} s (generating the text included)"
    );
}

/// Replies of one shape (no blank lines inside lists, tables and paragraphs), to check that the
/// streaming cost stays linear whatever the shape.
fn shaped(kind: &str, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 256);
    if kind == "table" {
        s.push_str("| n | name | value |\n|---|---|---:|\n");
    }
    let mut i = 0;
    while s.len() < bytes {
        match kind {
            "paragraphs" => s.push_str(PARA),
            "list" => {
                s.push_str(&format!("- item {i} with a few **words** and `code`\n"));
                if i % 5 == 0 {
                    s.push_str("  - a nested item under it\n");
                }
            }
            "ordered" => s.push_str(&format!("{}. step {i}: do the next thing\n", i + 1)),
            "table" => s.push_str(&format!("| {i} | name {i} | {} |\n", i * 7)),
            "long paragraph" => {
                s.push_str("a line of one long paragraph with no blank line after it, wrapped\n")
            }
            _ => {
                // List-heavy: long lists with a heading and a short paragraph between them.
                if i % 200 == 0 {
                    s.push_str(&format!("\n## Part {i}\n\nThe items of part {i}:\n\n"));
                }
                s.push_str(&format!(
                    "- item {i}: **bold** words, `code` and a [link](https://e.x)\n"
                ));
            }
        }
        i += 1;
    }
    s
}

/// CPU of streaming 90 KB replies of each shape, and of a 1 MB list-heavy reply.
fn shapes() {
    for kind in ["paragraphs", "long paragraph", "list", "ordered", "table"] {
        let cpu = stream_reply(&shaped(kind, 90 * 1024), 16);
        println!(
            "stream + render a 90 KB reply of {kind:<14} in 4-char chunks, a frame every 16 deltas: CPU {cpu:.3} s"
        );
    }
    let reply = shaped("list-heavy", 1024 * 1024);
    for every in [256, 16] {
        let cpu = stream_reply(&reply, every);
        println!(
            "stream + render a 1 MB list-heavy reply in 4-char chunks, a frame every {every} deltas: CPU {cpu:.3} s"
        );
    }
}

/// Streams `reply` in 4-character deltas, drawing a frame every `every` deltas; returns CPU s.
fn stream_reply(reply: &str, every: usize) -> f64 {
    let reply = reply.to_string();
    let chars: Vec<char> = reply.chars().collect();
    let chunks: Vec<String> = chars.chunks(4).map(|c| c.iter().collect()).collect();
    let mut s = state();
    let mut term = terminal();
    ev(&mut s, Event::TurnStarted { turn: 0 });
    let cpu = cpu_time();
    let wall = Instant::now();
    let mut frames = 0;
    for (i, c) in chunks.into_iter().enumerate() {
        ev(&mut s, Event::TextDelta { text: c });
        if i % every == 0 {
            term.draw(|f| view::render(&s, f)).expect("draw");
            frames += 1;
        }
    }
    ev(
        &mut s,
        Event::AssistantMessage {
            text: reply.clone(),
        },
    );
    term.draw(|f| view::render(&s, f)).expect("draw");
    black_box((frames, wall.elapsed()));
    (cpu_time() - cpu).as_secs_f64()
}

fn main() {
    // `cargo test --benches` passes `--bench`-less args; run a tiny smoke version then.
    let quick = !std::env::args().any(|a| a == "--bench");
    if quick {
        frame_time(100);
        return;
    }
    // `cargo bench --bench tui -- shapes` runs only the reply shapes, `-- live` only the live
    // bash output, `-- stream` only the 1 MB streaming figures.
    if std::env::args().any(|a| a == "shapes") {
        shapes();
        return;
    }
    if std::env::args().any(|a| a == "live") {
        live_output();
        return;
    }
    if std::env::args().any(|a| a == "stream") {
        stream_1mb(256);
        stream_1mb(16);
        return;
    }
    rss_after_10mb();
    for entries in [100, 1_000, 10_000] {
        frame_time(entries);
    }
    stream_1mb(256);
    stream_1mb(16);
    live_output();
    shapes();
}
