//! The checkpoint cost around one `bash` call that changes one file in a generated
//! 10,000-file workspace (issue 23 target: at most 20 ms wall and 10 ms CPU): `before` (a
//! metadata scan against the stat cache), one file changed, `after` (a second scan, one file
//! read and stored). The first checkpoint of the session (every file read once, the base) is
//! measured apart. `cargo bench --bench checkpoints`; `cargo test --benches` runs a 500-file
//! tree as a check that the bench still works.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Resource usage is read with libc (getrusage): measurement only.
#![allow(unsafe_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use minicode::checkpoints::{Position, Recorder, Settings};

const RUNS: usize = 21;

fn generate(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("d{:02}/s{:02}", i % 100, (i / 100) % 10));
        std::fs::create_dir_all(&dir).unwrap();
        let body = format!("// file {i}\n{}\n", "fn main() {}\n".repeat(i % 50 + 1));
        std::fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
    }
}

/// The process's user + system CPU time.
fn cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let files = if full { 10_000 } else { 500 };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    generate(&ws, files);
    let mut recorder = Recorder::new(&ws, "bench", Settings::default());
    let position = |n: usize| Position {
        turn: 1,
        call: format!("c{n}"),
        tool: "bash".into(),
    };
    let started = Instant::now();
    recorder.before(&position(0)).unwrap();
    recorder.after().unwrap();
    let base = started.elapsed();
    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    for run in 1..=RUNS {
        let target = ws.join(format!("d{:02}/s00/f{}.rs", run % 100, run % 100));
        let (wall, cpu_start) = (Instant::now(), cpu());
        recorder.before(&position(run)).unwrap();
        std::fs::write(&target, format!("changed {run}\n")).unwrap();
        recorder.after().unwrap();
        walls.push(wall.elapsed());
        cpus.push(cpu() - cpu_start);
    }
    let (wall, cpu) = (median(walls), median(cpus));
    println!(
        "checkpoints: {files} files; first checkpoint (base) {:.1} ms; one-file bash call: \
         median {:.2} ms wall, {:.2} ms CPU (before + after, {RUNS} runs)",
        base.as_secs_f64() * 1e3,
        wall.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3,
    );
}
