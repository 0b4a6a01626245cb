//! The full-screen session measured as a user runs it: the release binary in a 120x40
//! pseudo-terminal streams one 200 KB Markdown reply (4-character SSE chunks from the local
//! mock server), and we read the process's own CPU time and peak RSS from /proc when the turn
//! has ended. Also: CPU and wake-ups of an idle session over 3 seconds.
//!
//! Run with `cargo bench --bench tui_pty` (`MINICODE_BENCH_BINARY=<path>` measures another
//! build of the binary). The terminal side (this process) only drains the
//! output and answers the keyboard-protocol and cursor queries a real terminal would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Resource usage is read with libc (getrusage, wait4, sysconf): measurement only.
#![allow(unsafe_code)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_openai::{MockServer, text_reply};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

fn markdown_reply(bytes: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < bytes {
        i += 1;
        text.push_str(&format!(
            "## Section {i}\n\nSome **bold** text, `inline code` and a [link](https://example.com/{i}); \
             中文字符 and emoji 🚀 wrap by width.\n\n- item one\n- item two\n  - nested {i}\n\n\
             ```rust\nfn f{i}() -> u32 {{ {i} }}\n```\n\n| a | b |\n| --- | --- |\n| {i} | x |\n\n> quote {i}\n\n"
        ));
    }
    text
}

/// (CPU seconds, peak RSS in MB, voluntary context switches) of a live process.
fn usage(pid: u32) -> (f64, f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(") ")
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let cpu = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After ") ": state is field 0, utime field 11, stime field 12.
    let seconds = (cpu(11) + cpu(12)) / ticks;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| {
                v.split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<f64>().ok())
            })
            .unwrap_or(0.0)
    };
    (
        seconds,
        field("VmHWM:") / 1024.0,
        field("voluntary_ctxt_switches:") as u64,
    )
}

fn main() {
    let reply = markdown_reply(200_000);
    let paced = format!("{reply}\n\nPACED-DONE\n");
    let paced = text_reply(&paced, 40).with_delay(Duration::from_millis(1));
    let big = format!("{}\n\nBIG-DONE\n", markdown_reply(1_000_000));
    let server =
        MockServer::start_in_thread(vec![text_reply(&reply, 4), paced, text_reply(&big, 4)]);
    let dir = tempfile::tempdir().unwrap();
    let size = PtySize {
        rows: 40,
        cols: 120,
        pixel_width: 0,
        pixel_height: 0,
    };
    let pair = native_pty_system().openpty(size).unwrap();
    // `MINICODE_BENCH_BINARY=<path>` measures another build (A/B under the same load).
    let binary = std::env::var("MINICODE_BENCH_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_minicode").to_string());
    let mut cmd = CommandBuilder::new(binary);
    cmd.args(["--base-url", &server.base_url(), "--model", "m"]);
    cmd.cwd(dir.path());
    cmd.env("HOME", dir.path());
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let pid = child.process_id().unwrap();
    let seen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
    let mut reader = pair.master.try_clone_reader().unwrap();
    let (s, w) = (seen.clone(), writer.clone());
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            let bytes = &buf[..n];
            if bytes.windows(4).any(|x| x == b"\x1b[?u") {
                let _ = w.lock().unwrap().write_all(b"\x1b[?0u\x1b[?62;22c");
            }
            if bytes.windows(4).any(|x| x == b"\x1b[6n") {
                let _ = w.lock().unwrap().write_all(b"\x1b[1;1R");
            }
            let mut seen = s.lock().unwrap();
            seen.extend_from_slice(bytes);
            // Keep only a tail: enough to find the markers below.
            if seen.len() > 1 << 20 {
                let cut = seen.len() - (1 << 16);
                seen.drain(..cut);
            }
        }
    });
    let wait_for = |what: &[u8], within: Duration| {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if seen.lock().unwrap().windows(what.len()).any(|x| x == what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("never saw {:?}", String::from_utf8_lossy(what));
    };
    // The placeholder's last word: a terminal only gets the cells that changed, so under
    // `NO_COLOR` (plain spaces, like the blank screen) "ask anything" arrives as two words
    // with a cursor move between them.
    wait_for(b"/help", Duration::from_secs(30));
    let (cpu0, _, _) = usage(pid);
    seen.lock().unwrap().clear();
    let started = Instant::now();
    writer.lock().unwrap().write_all(b"stream it\r").unwrap();
    wait_for(b"1 model call", Duration::from_secs(120));
    let wall = started.elapsed();
    let (cpu1, rss, ctx1) = usage(pid);
    println!(
        "stream + render 200 KB Markdown, 4-char chunks, 120x40: {:.3} s CPU, peak RSS {rss:.1} MB, {:.2} s wall",
        cpu1 - cpu0,
        wall.as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(3));
    let (cpu2, _, ctx2) = usage(pid);
    println!(
        "idle for 3 s afterwards: {:.3} s CPU, {} voluntary wake-ups",
        cpu2 - cpu1,
        ctx2 - ctx1
    );
    // The same reply paced like a fast model (40-char pieces, 1 ms apart: several seconds),
    // so the frame timer runs for the whole stream instead of one burst.
    seen.lock().unwrap().clear();
    let started = Instant::now();
    writer
        .lock()
        .unwrap()
        .write_all(b"again, slowly\r")
        .unwrap();
    wait_for(b"PACED-DONE", Duration::from_secs(300));
    let wall = started.elapsed();
    // Let the turn end and the last frame be drawn.
    std::thread::sleep(Duration::from_millis(300));
    let (cpu3, rss, _) = usage(pid);
    println!(
        "same reply paced over {:.1} s (40-char chunks, 1 ms apart): {:.3} s CPU, peak RSS {rss:.1} MB",
        wall.as_secs_f64(),
        cpu3 - cpu2
    );
    // 1 MB of Markdown in 4-character chunks (issue 3's "total CPU ... ≤ 1 s").
    seen.lock().unwrap().clear();
    let (cpu4, _, _) = usage(pid);
    let started = Instant::now();
    writer.lock().unwrap().write_all(b"one megabyte\r").unwrap();
    wait_for(b"BIG-DONE", Duration::from_secs(300));
    std::thread::sleep(Duration::from_millis(300));
    let (cpu5, rss, _) = usage(pid);
    println!(
        "stream + render 1 MB Markdown, 4-char chunks: {:.3} s CPU, peak RSS {rss:.1} MB, {:.2} s wall",
        cpu5 - cpu4,
        started.elapsed().as_secs_f64()
    );
    writer.lock().unwrap().write_all(b"\x04").unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
}
