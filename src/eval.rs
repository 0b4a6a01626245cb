//! `minicode eval`: runs task suites against a model and reports, per task, how often the
//! runs met every expectation. Each run is an ordinary one-shot run of this binary in a
//! scratch workspace (see `eval/runner.rs`), so what is measured is what users run. The
//! library never prints: the CLI prints the report this returns.

mod expect;
pub(crate) mod export;
mod report;
mod runner;
mod task;
mod trajectory;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) use report::Report;

/// What the command line asked for.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) suites: Vec<PathBuf>,
    pub(crate) runs: u32,
    pub(crate) parallel: usize,
    /// The flags that choose the model, passed to every run as they are.
    pub(crate) model_args: Vec<OsString>,
    /// Where runs are kept; `None`: a new folder under the system's temporary folder.
    pub(crate) out: Option<PathBuf>,
}

/// Why no report could be made.
#[derive(Debug)]
pub(crate) enum Error {
    /// A malformed suite or task file, or bad options: exit 2.
    Usage(String),
    /// The runs could not be set up at all: exit 1.
    Io(String),
}

/// The default `--parallel`: the machine's cores, at most 4.
pub(crate) fn default_parallel() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Loads the suites, runs every task `runs` times, `parallel` at once, and reports.
pub(crate) fn run(options: &Options) -> Result<Report, Error> {
    let tasks = task::load_suites(&options.suites).map_err(Error::Usage)?;
    if options.runs == 0 || options.parallel == 0 {
        return Err(Error::Usage(
            "--runs and --parallel must be at least 1".to_string(),
        ));
    }
    let exe =
        std::env::current_exe().map_err(|e| Error::Io(format!("cannot find this binary: {e}")))?;
    let out = match &options.out {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!(
            "minicode-eval-{}",
            humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string()
                .replace(':', "")
        )),
    };
    std::fs::create_dir_all(&out)
        .map_err(|e| Error::Io(format!("cannot make {}: {e}", out.display())))?;
    let out = out
        .canonicalize()
        .map_err(|e| Error::Io(format!("{}: {e}", out.display())))?;
    let plan = runner::Plan {
        exe,
        model_args: options.model_args.clone(),
        out: out.clone(),
    };
    let jobs: Vec<(usize, u32)> = (0..tasks.len())
        .flat_map(|t| (1..=options.runs).map(move |r| (t, r)))
        .collect();
    let results = run_all(&plan, &tasks, &jobs, options.parallel);
    let report = Report::new(&tasks, &results, &out);
    if let Ok(json) = serde_json::to_string_pretty(&report) {
        let _ = std::fs::write(out.join("report.json"), json);
    }
    Ok(report)
}

/// `parallel` workers take the jobs in order; results come back in any order.
fn run_all(
    plan: &runner::Plan,
    tasks: &[task::Task],
    jobs: &[(usize, u32)],
    parallel: usize,
) -> Vec<runner::RunResult> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..parallel.min(jobs.len()) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                while let Some(&(t, r)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let _ = tx.send(runner::run(plan, &tasks[t], t, r));
                }
            });
        }
    });
    drop(tx);
    rx.into_iter().collect()
}
