//! Diagnostics: installs the global `tracing` subscriber writing to
//! `<workspace>/.minicode/logs/minicode.log.YYYY-MM-DD` (rotated daily, the last 7 files kept) through a
//! non-blocking writer. It never writes to stdout or stderr (those belong to the frontends),
//! and it decides only where and how much is logged, not what.
//!
//! What call sites may log: at `info` and above, only metadata (ids, tool names, sizes,
//! durations, token counts, status codes). Message contents, tool output and prompts are for
//! `debug`/`trace` only, which a user turns on explicitly. The API key is never logged at any
//! level (`config::Secret` prints `***` to make that the default).

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;

/// The environment variable holding the filter, e.g. `debug`, `minicode=trace` or `off`.
pub const ENV_LOG: &str = "MINICODE_LOG";

/// How many daily files are kept.
pub(crate) const KEEP_FILES: usize = 7;

/// Keeps the background writer alive; dropping it flushes what is buffered. Hold it until
/// the program ends.
#[must_use = "dropping the guard stops logging and flushes at once"]
pub struct LogGuard {
    _worker: WorkerGuard,
}

impl std::fmt::Debug for LogGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogGuard")
    }
}

/// Starts logging under `<workspace>/.minicode/logs/` with the level from `MINICODE_LOG`; when
/// that is unset the level is `info` if `default_on`, else logging stays off. Returns `None`
/// when logging is off or cannot start (a bad filter, an unwritable folder, a `.minicode` or
/// `.minicode/logs` that links outside the workspace, a subscriber already installed):
/// diagnostics must never stop the program.
pub fn init(workspace: &Path, default_on: bool) -> Option<LogGuard> {
    let from_env = std::env::var(ENV_LOG).ok();
    let directive = filter_directive(from_env.as_deref(), default_on)?;
    let filter = EnvFilter::try_new(&directive).ok()?;
    let dir = crate::fsutil::private_dir(workspace, "logs").ok()?;
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix("minicode.log")
        .max_log_files(KEEP_FILES)
        .build(&dir)
        .ok()?;
    let (writer, worker) = tracing_appender::non_blocking(appender);
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        // One line per finished turn, model call and tool call, with its duration: the spans
        // carry metadata only (ids, names, models), never message contents.
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_env_filter(filter)
        .try_init()
        .ok()?;
    Some(LogGuard { _worker: worker })
}

/// The filter to use, or `None` for no logging: the `MINICODE_LOG` value when set and not
/// `off`, else `info` when logging is on by default.
pub fn filter_directive(env_value: Option<&str>, default_on: bool) -> Option<String> {
    match env_value.map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("off") => None,
        Some(v) if !v.is_empty() => Some(v.to_string()),
        _ => default_on.then(|| "info".to_string()),
    }
}
