//! What the compiler's word after an edit (issue 36, item 4) costs per edit: the session's
//! `lsp::Servers` asked after a change of a Python file, as the core asks after `write` and
//! `edit`, with a real pyright (`MINICODE_TEST_PYRIGHT`, the `pyright-langserver` path `.ci/run`
//! installs) confined like `bash` (workspace-write, network off). The first edit (start-up,
//! initialisation, first analysis) is shown apart; then 30 edits alternate between a file with
//! a type error and the same file fixed, so half the answers carry an error. The cost for a
//! file no server is for is measured over 1,000 calls. Targets: under 300 ms per edit once the
//! server is warm; nothing measurable without a server. A plain timing binary:
//! `MINICODE_TEST_PYRIGHT=... cargo bench --bench diagnostics`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use minicode::lsp::{ServerCommand, Servers, Settings};
use minicode::sandbox::{Mode, Policy};
use minicode::tools::ToolCtx;

const EDITS: usize = 30;
const PLAIN_CALLS: usize = 1000;

fn stats(mut times: Vec<Duration>) -> (f64, f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = times.iter().map(|d| ms(*d)).sum::<f64>() / times.len() as f64;
    (
        ms(times[times.len() / 2]),
        mean,
        ms(times[times.len() * 9 / 10]),
    )
}

fn main() {
    let Ok(pyright) = std::env::var("MINICODE_TEST_PYRIGHT") else {
        eprintln!("set MINICODE_TEST_PYRIGHT to a pyright-langserver (see .ci/run)");
        std::process::exit(2);
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let tmp = ws.join(".minicode/tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut ctx = ToolCtx::new(ws.clone(), Duration::from_secs(60), Vec::new());
    ctx.supervisor = Some(env!("CARGO_BIN_EXE_minicode").into());
    let policy = Policy::for_workspace(Mode::WorkspaceWrite, false, &ws, &[], tmp);
    let mut settings = Settings {
        start_timeout: Duration::from_secs(60),
        timeout: Duration::from_secs(30),
        ..Settings::default()
    };
    settings.servers.insert(
        "python".into(),
        ServerCommand {
            command: pyright,
            args: vec!["--stdio".into()],
        },
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut servers = Servers::new(settings);
    let file = ws.join("calc.py");
    let text = |i: usize| {
        let value = if i.is_multiple_of(2) { "2" } else { "\"two\"" };
        format!("def double(n: int) -> int:\n    return n * 2\n\n\nresult: int = double({value})\n")
    };
    std::fs::write(&file, text(1)).unwrap();
    let start = Instant::now();
    let first = rt.block_on(servers.after_edit(&file, &ctx, &policy));
    let first_time = start.elapsed();
    assert!(
        first.as_deref().is_some_and(|s| s.contains("calc.py:5:")),
        "{first:?}"
    );
    let mut warm = Vec::new();
    let mut with_error = 0;
    for i in 0..EDITS {
        std::fs::write(&file, text(i)).unwrap();
        let start = Instant::now();
        let said = rt.block_on(servers.after_edit(&file, &ctx, &policy));
        warm.push(start.elapsed());
        if let Some(said) = said {
            assert!(said.contains("calc.py:5:"), "{said}");
            assert!(!said.contains("[note"), "{said}");
            with_error += 1;
        }
    }
    let plain = ws.join("notes.md");
    std::fs::write(&plain, "# notes\n").unwrap();
    let start = Instant::now();
    for _ in 0..PLAIN_CALLS {
        assert!(
            rt.block_on(servers.after_edit(&plain, &ctx, &policy))
                .is_none()
        );
    }
    let per_plain = start.elapsed() / PLAIN_CALLS as u32;
    rt.block_on(servers.shut_down());
    let (median, mean, p90) = stats(warm);
    println!(
        "first edit (start-up included): {:.1} ms",
        first_time.as_secs_f64() * 1000.0
    );
    println!(
        "warm edit ({EDITS}, {with_error} with a new error): median {median:.1} ms, mean {mean:.1} ms, p90 {p90:.1} ms"
    );
    println!(
        "file with no server: {:.2} µs per call",
        per_plain.as_secs_f64() * 1e6
    );
}
