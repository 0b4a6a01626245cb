//! The cost of one `fetch` of a 1 MB HTML page from a server on this machine: wall time and
//! CPU time (user + system, this process: the tool and the small server thread) per fetch,
//! from the request to the Markdown the model reads, and the size of that Markdown. A plain
//! timing binary: `cargo bench --bench fetch`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use minicode::chat::ToolStatus;
use minicode::permissions::{Action, Rule, Rules};
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const RUNS: usize = 15;

/// A documentation-like page of about `bytes`: headings, paragraphs with links, lists, code
/// blocks and tables, with the scripts and styles a real page carries.
fn page(bytes: usize) -> String {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><title>Bench</title><style>body{margin:0}</style>\
         <script>var analytics = 1;</script></head><body>",
    );
    let mut i = 0;
    while html.len() < bytes {
        html.push_str(&format!(
            "<h2 id=\"s{i}\">Section {i}</h2><p>Some <em>prose</em> about item {i}, with \
             <a href=\"https://docs.example/item/{i}\">a link</a> and <code>inline()</code> \
             code.</p><ul><li>first point</li><li>second point</li></ul>\
             <pre><code>fn item_{i}() -&gt; u32 {{\n    {i}\n}}\n</code></pre>\
             <table><tr><th>key</th><th>value</th></tr><tr><td>k{i}</td><td>v{i}</td></tr>\
             </table><script>track({i});</script>"
        ));
        i += 1;
    }
    html.push_str("</body></html>");
    html
}

/// Serves `body` as text/html to every connection, one request each, until the process ends.
fn serve(body: Arc<String>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    port
}

/// User + system CPU time of this process so far.
fn cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let body = Arc::new(page(1024 * 1024));
    let port = serve(body.clone());
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ToolCtx::new(
        dir.path().to_path_buf(),
        Duration::from_secs(60),
        Vec::new(),
    );
    let rule = Rule::parse("fetch(domain:127.0.0.1)", Action::Allow, "bench").unwrap();
    ctx.permissions = Some(Arc::new(Rules::new(vec![rule])));
    let registry = Registry::builtin();
    let args = json!({ "url": format!("http://127.0.0.1:{port}/page.html") }).to_string();
    let mut walls = Vec::with_capacity(RUNS);
    let mut cpus = Vec::with_capacity(RUNS);
    let mut shown = 0;
    rt.block_on(async {
        for _ in 0..RUNS {
            let (tool, value) = registry.resolve("fetch", &args).unwrap();
            let (wall, used) = (Instant::now(), cpu());
            let out = tool.run(value, &ctx, CancellationToken::new()).await;
            walls.push(wall.elapsed());
            cpus.push(cpu() - used);
            assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
            shown = out.content.len();
        }
    });
    walls.sort();
    cpus.sort();
    let markdown = saved_len(dir.path());
    println!(
        "fetch of a {} KiB HTML page from 127.0.0.1 ({RUNS} runs): median wall {:.1} ms \
         (min {:.1}, max {:.1}), median CPU {:.1} ms; Markdown {} KiB, {} bytes shown to the model",
        body.len() / 1024,
        walls[RUNS / 2].as_secs_f64() * 1e3,
        walls[0].as_secs_f64() * 1e3,
        walls[RUNS - 1].as_secs_f64() * 1e3,
        cpus[RUNS / 2].as_secs_f64() * 1e3,
        markdown / 1024,
        shown,
    );
}

/// The size of the whole Markdown: the largest output saved under `.minicode/outputs`.
fn saved_len(workspace: &std::path::Path) -> u64 {
    std::fs::read_dir(workspace.join(".minicode/outputs"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}
