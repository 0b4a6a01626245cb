//! `minicode eval`: runs task suites against a model and reports, per task, how often the
//! runs met every expectation. Each run is an ordinary one-shot run of this binary in a
//! scratch workspace (see `eval/runner.rs`), so what is measured is what users run. The
//! library never prints: the CLI prints the report this returns.

mod expect;
pub(crate) mod export;
mod report;
mod runner;
mod scratch;
mod stop;
mod task;
mod trajectory;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) use report::Report;
pub(crate) use stop::Stop;

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
    /// Variables the agent runs read to reach the model (the key, `MINICODE_BASE_URL`,
    /// `MINICODE_MODEL`, a configured key variable), handed to them by name; no other
    /// `MINICODE_*` or secret variable reaches a run, and none reaches setup or checks.
    pub(crate) agent_env: Vec<(OsString, OsString)>,
    /// Configured secret variable names removed from every child's environment.
    pub(crate) scrub: Vec<String>,
    /// The switch the CLI throws on SIGINT or SIGTERM.
    pub(crate) stop: Arc<Stop>,
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
/// An interrupted evaluation still reports the runs so far; a report that could not be
/// written to `report.json` says so in [`Report::unsaved`].
pub(crate) fn run(options: &Options) -> Result<Report, Error> {
    scratch::sweep_orphans();
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
        agent_env: options.agent_env.clone(),
        scrub: options.scrub.clone(),
        stop: options.stop.clone(),
    };
    let jobs: Vec<(usize, u32)> = (0..tasks.len())
        .flat_map(|t| (1..=options.runs).map(move |r| (t, r)))
        .collect();
    let results = run_all(&plan, &tasks, &jobs, options.parallel);
    let mut report = Report::new(&tasks, &results, &out);
    report.interrupted = options.stop.signal_name();
    report.all_met &= report.interrupted.is_none();
    let path = out.join("report.json");
    let written = serde_json::to_string_pretty(&report)
        .map_err(std::io::Error::other)
        .and_then(|json| std::fs::write(&path, json));
    if let Err(e) = written {
        report.unsaved = Some(format!("cannot write {}: {e}", path.display()));
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
                while plan.stop.signal().is_none()
                    && let Some(&(t, r)) = jobs.get(next.fetch_add(1, Ordering::Relaxed))
                {
                    let _ = tx.send(runner::run(plan, &tasks[t], t, r));
                }
            });
        }
    });
    drop(tx);
    rx.into_iter().collect()
}
