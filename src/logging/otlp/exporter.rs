//! The OTLP/HTTP exporter (reqwest's blocking client on the SDK's own batch thread, so a slow
//! collector never touches a turn), the `tracing-opentelemetry` layer that turns `minicode`
//! spans into OpenTelemetry spans, and the bounded flush at exit. Export failures are reported
//! once, as a warning in the log: never on stdout or stderr, which belong to the frontends.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

use super::{EXIT_FLUSH, Settings, StartError, short};

/// The longest one export request may take (on the exporter's own thread: a turn never waits
/// for it).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The running export: the tracer provider and whether a failure was already reported.
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
    reported: Arc<AtomicBool>,
}

impl Exporter {
    /// Builds the OTLP/HTTP exporter and the batch processor (whose thread starts here).
    pub(crate) fn start(settings: Settings) -> Result<Exporter, StartError> {
        let protocol = if settings.json {
            Protocol::HttpJson
        } else {
            Protocol::HttpBinary
        };
        let otlp = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(settings.traces_url.clone())
            .with_protocol(protocol)
            .with_timeout(EXPORT_TIMEOUT)
            .with_headers(settings.headers.into_iter().collect::<HashMap<_, _>>())
            .build()
            .map_err(|e| StartError(e.to_string()))?;
        let reported = Arc::new(AtomicBool::new(false));
        let exporter = Reporting {
            inner: otlp,
            reported: reported.clone(),
            url: settings.traces_url,
        };
        let resource = Resource::builder()
            .with_service_name(settings.service_name)
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        Ok(Exporter { provider, reported })
    }

    /// The layer that hands our spans to the exporter: spans of `minicode` only (no log
    /// events, nothing of other crates), their fields as attributes, and none of the layer's
    /// extras (source locations, thread names, busy/idle times, levels, targets).
    pub(crate) fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::Layer;
        let tracer = self.provider.tracer("minicode");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_level(false)
            .with_target(false)
            .with_error_events_to_status(false)
            .with_error_events_to_exceptions(false)
            .with_error_fields_to_exceptions(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.is_span() && meta.target().starts_with("minicode")
            }))
    }

    /// Sends what is still buffered, waiting at most [`EXIT_FLUSH`]; a collector that does not
    /// answer in time loses those spans and is reported (once) in the log.
    pub(crate) fn finish(self) {
        if let Err(e) = self.provider.shutdown_with_timeout(EXIT_FLUSH)
            && !self.reported.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(
                "telemetry: the last spans were not sent within {} s and are lost: {}",
                EXIT_FLUSH.as_secs(),
                short(&e.to_string())
            );
        }
    }
}

/// The OTLP exporter with its failures reported: the first one as a warning in the log, the
/// rest at `debug`, so an unreachable collector leaves one line, not one per batch.
struct Reporting {
    inner: opentelemetry_otlp::SpanExporter,
    reported: Arc<AtomicBool>,
    url: String,
}

impl std::fmt::Debug for Reporting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporting").field("url", &self.url).finish()
    }
}

impl SpanExporter for Reporting {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            let error = short(&e.to_string());
            if self.reported.swap(true, Ordering::Relaxed) {
                tracing::debug!(spans, "telemetry export failed again: {error}");
            } else {
                tracing::warn!(
                    spans,
                    "telemetry: exporting spans to {} failed (later failures are logged at \
                     debug level only): {error}",
                    self.url
                );
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
