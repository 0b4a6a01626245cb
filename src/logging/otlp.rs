//! OpenTelemetry export of our spans over OTLP/HTTP: its settings, its start error, and the
//! exporter itself (`otlp/exporter.rs`) when the `otlp` cargo feature (on by default) is built
//! in. A build without it has a stand-in (`otlp/absent.rs`) whose start fails with a clear
//! error, so configured telemetry is reported off instead of silently doing nothing.
//!
//! It decides nothing about what a span carries (the agent and the provider record their
//! attributes); it forwards spans only, never log events, so nothing logged reaches the
//! collector by accident.

#[cfg(not(feature = "otlp"))]
mod absent;
#[cfg(feature = "otlp")]
mod exporter;

use std::time::Duration;

#[cfg(not(feature = "otlp"))]
pub(crate) use absent::Exporter;
#[cfg(feature = "otlp")]
pub(crate) use exporter::Exporter;

/// The longest exit waits for the last spans to be sent.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
pub(crate) const EXIT_FLUSH: Duration = Duration::from_secs(2);

/// The most of an exporter error kept in the log line (a collector's answer can be long).
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
const ERROR_CHARS: usize = 300;

/// Where and how to export, as plain values (the CLI maps the configuration onto it).
#[derive(Clone)]
pub struct Settings {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub(crate) traces_url: String,
    /// Extra headers, e.g. `Authorization` for Langfuse; values are credentials.
    pub(crate) headers: Vec<(String, String)>,
    /// `http/json` instead of `http/protobuf`.
    pub(crate) json: bool,
    /// `service.name` of the resource.
    pub(crate) service_name: String,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Settings")
            .field("traces_url", &self.traces_url)
            .field("headers", &names)
            .field("json", &self.json)
            .field("service_name", &self.service_name)
            .finish()
    }
}

/// The exporter could not be built (an endpoint the HTTP stack refuses, an unsupported
/// `OTEL_EXPORTER_OTLP_COMPRESSION`).
#[derive(Debug, thiserror::Error)]
#[error("cannot start the OpenTelemetry export: {0}")]
pub struct StartError(pub(super) String);

/// An error cut to [`ERROR_CHARS`] characters for the log.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
fn short(error: &str) -> String {
    let mut cut: String = error.chars().take(ERROR_CHARS).collect();
    if cut.len() < error.len() {
        cut.push('…');
    }
    cut
}
