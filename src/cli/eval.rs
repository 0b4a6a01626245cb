//! `minicode eval SUITE…`: the command line of the evaluator (`src/eval.rs` does the work)
//! and the report on stdout, text or JSON. Exit 0 when every task met its pass rate, 1
//! otherwise (or when `report.json` could not be written), 2 for usage errors and malformed
//! task files. SIGINT and SIGTERM stop every run (`eval::Stop`); the report of the runs so far
//! is printed and the exit status is 130 or 143.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use super::{Failure, usage};
use crate::print::OutputFormat;

#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// Suite folders (every *.toml task file in them) or single task files.
    #[arg(required = true, value_name = "SUITE")]
    suites: Vec<PathBuf>,
    /// Runs of each task.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Runs at once (default: the number of cores, at most 4).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    parallel: Option<u32>,
    /// Model name for every run.
    #[arg(long)]
    model: Option<String>,
    /// Server base URL for every run.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The config file every run reads (default: your user config, if there is one).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Use the built-in offline demo model.
    #[arg(long)]
    demo: bool,
    /// text (tables) or json (one object).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
    /// Where every run's transcript, session file and stderr are kept (default: a new folder
    /// under the system's temporary folder, named in the report).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub(super) fn run(
    args: &EvalArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ExitCode, Failure> {
    if args.output_format == OutputFormat::StreamJson {
        return Err(usage("eval reports as text or json"));
    }
    // A task is measured as written: the user's hooks (which may add context or block a
    // call) stay out of every run; tasks name no hooks of their own.
    let mut model_args: Vec<OsString> = vec!["--no-hooks".into()];
    if args.demo {
        model_args.push("--demo".into());
    }
    if let Some(model) = &args.model {
        model_args.extend(["--model".into(), model.into()]);
    }
    if let Some(url) = &args.base_url {
        model_args.extend(["--base-url".into(), url.into()]);
    }
    // Each run has a HOME of its own, so the user's config is named to it explicitly.
    let config = args
        .config
        .clone()
        .or_else(|| crate::config::user_config_path(env).filter(|p| p.is_file()));
    let mut key_env = None;
    if let Some(path) = config {
        let path = path
            .canonicalize()
            .map_err(|e| usage(format!("{}: {e}", path.display())))?;
        key_env = configured_key_env(&path, env);
        model_args.extend(["--config".into(), path.into()]);
    }
    let stop = Arc::new(crate::eval::Stop::default());
    watch_signals(stop.clone())?;
    let options = crate::eval::Options {
        suites: args.suites.clone(),
        runs: args.runs,
        parallel: args
            .parallel
            .map_or_else(crate::eval::default_parallel, |p| p as usize),
        model_args,
        out: args.out.clone(),
        agent_env: agent_env(key_env.as_deref(), env),
        scrub: key_env.into_iter().collect(),
        stop: stop.clone(),
    };
    let report = crate::eval::run(&options).map_err(|e| match e {
        crate::eval::Error::Usage(message) => usage(message),
        crate::eval::Error::Io(message) => Failure { code: 1, message },
    })?;
    let text = match args.output_format {
        OutputFormat::Json => serde_json::to_string(&report).unwrap_or_default() + "\n",
        _ => crate::sanitize::sanitize(&report.text()),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    if let Some(message) = report.unsaved {
        return Err(Failure { code: 1, message });
    }
    Ok(match stop.signal() {
        Some(signal) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)),
        None if report.all_met => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
    })
}

/// Throws `stop` on the first SIGINT or SIGTERM, from a thread of its own (the runs block in
/// waits). Returns once the handlers are in place, so no signal can kill the evaluator
/// before it can stop its runs.
fn watch_signals(stop: Arc<crate::eval::Stop>) -> Result<(), Failure> {
    use tokio::signal::unix::{SignalKind, signal};
    // The evaluator passes the key on to the runs it starts, so of the prelude it takes
    // only the runtime.
    let runtime = super::runtime()?;
    let (ready, installed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let handlers = signal(SignalKind::interrupt())
                .and_then(|int| Ok((int, signal(SignalKind::terminate())?)));
            let (mut int, mut term) = match handlers {
                Ok(handlers) => {
                    let _ = ready.send(Ok(()));
                    handlers
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            let signal = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
            };
            stop.interrupt(signal);
        });
    });
    match installed.recv() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Failure {
            code: 1,
            message: format!("cannot watch for signals: {e}"),
        }),
        Err(_) => Err(Failure {
            code: 1,
            message: "cannot watch for signals".to_string(),
        }),
    }
}

/// The key variable `config` names (`api_key_env`), if it names one: it is scrubbed from
/// setup and check commands, and handed to the agent runs.
fn configured_key_env(
    config: &std::path::Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let overrides = crate::config::Overrides {
        config_path: Some(config.to_path_buf()),
        demo: true,
        skip_workspace_file: true,
        ..crate::config::Overrides::default()
    };
    crate::config::load(std::path::Path::new("."), env, &overrides)
        .ok()?
        .api_key_env
}

/// The variables an agent run reads to reach its model, as this process has them.
fn agent_env(
    key_env: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<(OsString, OsString)> {
    let names = crate::defaults::SECRET_ENV_VARS
        .iter()
        .copied()
        .chain([crate::config::ENV_BASE_URL, crate::config::ENV_MODEL])
        .chain(key_env);
    names
        .filter_map(|name| env(name).map(|value| (name.into(), value.into())))
        .collect()
}
