//! What every entry point that reads the configuration does first, in the one order that is
//! safe: load the configuration with one policy for a workspace file it may not use (untrusted,
//! or changed since it was trusted: both are handled alike), take the key out of the process's
//! environment while the process is still single-threaded, start the log (and the trace export
//! the configuration asks for), then start the runtime. `run`, `acp`, `serve`, `sandbox`,
//! `doctor` and `mcp list` start here; `eval`, which passes the key on to the runs it starts,
//! takes only the runtime.
//!
//! It must stay the first thing an entry point does after parsing its arguments: nothing may
//! start a thread before the key is forgotten.

use std::io::Write;
use std::path::Path;

use super::{Failure, trust, usage};
use crate::config::{self, Config, ConfigError, Overrides};
use crate::logging::LogGuard;
use crate::sanitize::sanitize;

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What to do when the workspace's file may not be used as it is (untrusted but choosing the
/// server or the key, or changed since it was trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Ask on the terminal: trust it, go on without it, or quit (a full-screen session).
    Ask,
    /// Fail with exit 2 before anything starts (one-shot, `doctor`, `mcp list`).
    Fail,
    /// Go on without the workspace's file, saying so on stderr (`minicode sandbox`).
    Skip,
    /// Go on without it, silently, and without any configuration when even the user's cannot
    /// be read: a host whose sessions each load their own workspace's (`minicode acp`).
    Host,
}

/// Whether the log is on without `MINICODE_LOG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Log {
    /// Only with `MINICODE_LOG` or configured telemetry.
    OnRequest,
    /// At `info` by default (the full-screen session).
    ByDefault,
}

/// How an entry point starts.
pub(super) struct Setup<'a> {
    pub(crate) env: Env<'a>,
    pub(crate) launch: &'a Path,
    pub(crate) overrides: Overrides,
    pub(crate) refused: Refused,
    pub(crate) log: Log,
}

/// What the prelude leaves running; hold `log` until the command ends.
pub(super) struct Started<C> {
    pub(crate) config: C,
    pub(crate) log: Option<LogGuard>,
    pub(crate) runtime: tokio::runtime::Runtime,
}

/// Config, trust, key, log and runtime, for every entry point but `acp` (see [`start_host`]).
pub(super) fn start(setup: Setup<'_>) -> Result<Started<Config>, Failure> {
    let config = match load(&setup)? {
        Some(config) => config,
        // Only `Refused::Host` yields no configuration.
        None => return Err(usage("no configuration could be read")),
    };
    let (log, runtime) = begin(Some(&config), &setup)?;
    Ok(Started {
        config,
        log,
        runtime,
    })
}

/// [`start`] for a host, which may go on with no configuration of its own.
pub(super) fn start_host(setup: Setup<'_>) -> Result<Started<Option<Config>>, Failure> {
    let config = load(&setup)?;
    let (log, runtime) = begin(config.as_ref(), &setup)?;
    Ok(Started {
        config,
        log,
        runtime,
    })
}

/// The configuration, with [`Refused`] applied.
fn load(setup: &Setup<'_>) -> Result<Option<Config>, Failure> {
    let (env, launch, overrides) = (setup.env, setup.launch, &setup.overrides);
    match setup.refused {
        Refused::Ask => trust::load_config(env, launch, overrides, true).map(Some),
        Refused::Fail => trust::load_config(env, launch, overrides, false).map(Some),
        Refused::Skip | Refused::Host => match config::load(launch, env, overrides) {
            Err(
                e @ (ConfigError::UntrustedWorkspace { .. } | ConfigError::TrustChanged { .. }),
            ) => {
                if setup.refused == Refused::Skip {
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "minicode: the workspace's config file is not used: {}",
                        sanitize(&e.to_string())
                    );
                }
                let without = Overrides {
                    skip_workspace_file: true,
                    ..overrides.clone()
                };
                match config::load(launch, env, &without) {
                    Ok(config) => Ok(Some(config)),
                    // Which variable holds the key is the user's configuration's to say; a
                    // host whose own cannot be read still serves other workspaces.
                    Err(_) if setup.refused == Refused::Host => Ok(None),
                    Err(e) => Err(usage(e)),
                }
            }
            other => other.map(Some).map_err(usage),
        },
    }
}

/// Key, log and runtime, in that order.
fn begin(
    config: Option<&Config>,
    setup: &Setup<'_>,
) -> Result<(Option<LogGuard>, tokio::runtime::Runtime), Failure> {
    // SAFETY: still single-threaded: only argument parsing, config loading and the trust
    // question (crossterm, no threads) ran; the log's writer thread and the runtime start
    // below.
    #[allow(unsafe_code)]
    unsafe {
        super::forget_key(config)
    };
    let log = match config {
        Some(config) => super::start_logging(config, setup.launch, setup.log == Log::ByDefault)?,
        None => crate::logging::init(setup.launch, false, None)
            .ok()
            .flatten(),
    };
    Ok((log, super::runtime()?))
}

/// Whether spans carry contents (prompts, replies, tool arguments and results): the user's
/// `include_content`, for the CLI's sessions and the hosts' alike.
pub(super) fn trace_content(config: &Config) -> bool {
    config.telemetry.as_ref().is_some_and(|t| t.include_content)
}
