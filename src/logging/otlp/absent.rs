//! The exporter of a build without the `otlp` feature: it cannot start, and says why, so the
//! CLI reports telemetry off for the run (the settings are the user's explicit choice).

use super::{Settings, StartError};

/// Never built: [`Exporter::start`] always fails.
pub(crate) struct Exporter;

impl Exporter {
    /// Fails: this build carries no OTLP exporter.
    pub(crate) fn start(_settings: Settings) -> Result<Exporter, StartError> {
        Err(StartError(
            "this build of minicode has no OTLP export (built without the `otlp` feature)"
                .to_string(),
        ))
    }

    /// No layer: there is nothing to export to.
    pub(crate) fn layer(&self) -> tracing_subscriber::layer::Identity {
        tracing_subscriber::layer::Identity::new()
    }

    /// Nothing to send.
    pub(crate) fn finish(self) {}
}
