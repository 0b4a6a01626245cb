//! Diagnostics: installs the global `tracing` subscriber writing to
//! `<workspace>/.minicode/logs/minicode.log.YYYY-MM-DD` (rotated daily, the last 7 files kept) through a
//! non-blocking writer. It never writes to stdout or stderr (those belong to the frontends),
//! and it decides only where and how much is logged, not what.
//!
//! When telemetry is configured it also owns the OpenTelemetry exporter (`logging/otlp.rs`), a
//! second layer on the same spans; when it is not, the subscriber is the plain log file alone.
//!
//! What call sites may log: at `info` and above, only metadata (ids, tool names, sizes,
//! durations, token counts, status codes). Message contents, tool output and prompts are for
//! `debug`/`trace` only, which a user turns on explicitly. The API key is never logged at any
//! level (`config::Secret` prints `***` to make that the default).

pub(crate) mod otlp;

use std::path::Path;

use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// The environment variable holding the filter, e.g. `debug`, `minicode=trace` or `off`.
pub const ENV_LOG: &str = "MINICODE_LOG";

/// How many daily files are kept.
pub(crate) const KEEP_FILES: usize = 7;

/// Log lines queued for the writer thread before new ones are dropped. tracing-appender's
/// default of 128,000 preallocates (and touches) a 4 MB queue in every process, the largest
/// single allocation minicode made; a turn logs a handful of lines, and a burst beyond this
/// many at `trace` level loses lines rather than blocking the agent.
const LOG_QUEUE_LINES: usize = 8_192;

/// Keeps the background writer (and the span exporter, when telemetry is on) alive; dropping
/// it sends the last spans (waiting at most [`otlp::EXIT_FLUSH`]) and then flushes the log, so
/// a warning about that last export still reaches the file. Hold it until the program ends.
#[must_use = "dropping the guard stops logging and flushes at once"]
pub struct LogGuard {
    worker: Option<WorkerGuard>,
    export: Option<otlp::Exporter>,
}

impl std::fmt::Debug for LogGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogGuard")
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        if let Some(export) = self.export.take() {
            export.finish();
        }
        drop(self.worker.take());
    }
}

/// Starts logging under `<workspace>/.minicode/logs/` with the level from `MINICODE_LOG`; when
/// that is unset the level is `info` if `default_on`, else logging stays off. Returns `None`
/// when logging is off or cannot start (a bad filter, an unwritable folder, a `.minicode` or
/// `.minicode/logs` that links outside the workspace, a subscriber already installed):
/// diagnostics must never stop the program.
///
/// With `export` (telemetry on), spans also go to the OpenTelemetry exporter, and the log is
/// opened at least at `warn` even where it would be off (unless `MINICODE_LOG=off`): the
/// exporter reports its failures there and nowhere else. Only building the exporter can fail
/// (its settings are the user's explicit choice, so a bad one is reported, not ignored).
pub fn init(
    workspace: &Path,
    default_on: bool,
    export: Option<otlp::Settings>,
) -> Result<Option<LogGuard>, otlp::StartError> {
    let from_env = std::env::var(ENV_LOG).ok();
    let Some(settings) = export else {
        // Telemetry off: exactly the subscriber minicode always had, and no other layer.
        return Ok(init_log_only(workspace, from_env.as_deref(), default_on));
    };
    let exporter = otlp::Exporter::start(settings)?;
    let directive = match from_env.as_deref().map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("off") => None,
        other => filter_directive(other, default_on).or_else(|| Some("warn".to_string())),
    };
    let log = directive.and_then(|d| open_log(workspace, &d));
    let (fmt_layer, worker) = match log {
        Some((writer, filter, worker)) => (Some(fmt_layer(writer, filter)), Some(worker)),
        None => (None, None),
    };
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let installed = tracing_subscriber::registry()
        .with(fmt_layer)
        .with(exporter.layer())
        .try_init()
        .is_ok();
    if !installed {
        exporter.finish();
        return Ok(None);
    }
    Ok(Some(LogGuard {
        worker,
        export: Some(exporter),
    }))
}

/// The log file alone (telemetry off).
fn init_log_only(workspace: &Path, from_env: Option<&str>, default_on: bool) -> Option<LogGuard> {
    let directive = filter_directive(from_env, default_on)?;
    let (writer, filter, worker) = open_log(workspace, &directive)?;
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        // One line per finished turn, model call and tool call, with its duration: the spans
        // carry metadata only (ids, names, models), never message contents.
        .with_span_events(FmtSpan::CLOSE)
        .with_env_filter(filter)
        .try_init()
        .ok()?;
    Some(LogGuard {
        worker: Some(worker),
        export: None,
    })
}

/// The filter and the rotated, non-blocking file writer, or `None` when either cannot be had.
fn open_log(workspace: &Path, directive: &str) -> Option<(NonBlocking, EnvFilter, WorkerGuard)> {
    let filter = EnvFilter::try_new(directive).ok()?;
    let dir = crate::fsutil::private_dir(workspace, "logs").ok()?;
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix("minicode.log")
        .max_log_files(KEEP_FILES)
        .build(&dir)
        .ok()?;
    let (writer, worker) = NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .finish(appender);
    Some((writer, filter, worker))
}

/// The log file as one layer beside the exporter: the same format as [`init_log_only`], with
/// its filter applying to this layer only (the exporter chooses its own spans).
fn fmt_layer<S>(writer: NonBlocking, filter: EnvFilter) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer;
    tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE)
        .with_filter(filter)
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
