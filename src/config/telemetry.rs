//! `[telemetry]` and the standard `OTEL_*` variables → [`Telemetry`], or `None` when export is
//! off. Precedence as everywhere: the files, then the environment. Telemetry is on exactly when
//! an endpoint is configured and `OTEL_SDK_DISABLED` is not `true`; nothing else turns it on.
//! Checks the endpoint, the protocol, the service name and the header names here, so a typo is
//! a usage error at start and not a silent lack of traces. A protocol we do not speak that comes
//! from the environment (often set for other programs, e.g. `grpc`) turns export off with a
//! notice instead: it must not stop the user's work. It must never put a header value into an
//! error: those carry credentials.

use super::layers::Layers;
use super::{
    ConfigError, ENV_OTEL_SDK_DISABLED, ENV_OTEL_SERVICE_NAME, ENV_OTLP_ENDPOINT,
    ENV_OTLP_PROTOCOL, ENV_OTLP_TRACES_ENDPOINT, ENV_OTLP_TRACES_PROTOCOL, OtlpProtocol, Telemetry,
};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The path a base endpoint gets for traces (what the OTLP/HTTP specification prescribes).
const TRACES_PATH: &str = "/v1/traces";

/// The service name exported when neither `OTEL_SERVICE_NAME` nor the file sets one.
const DEFAULT_SERVICE_NAME: &str = "minicode";

/// Resolves the telemetry settings; `Ok(None)` when export is off.
pub(super) fn resolve(
    layers: &Layers,
    env: Env<'_>,
    notices: &mut Vec<String>,
) -> Result<Option<Telemetry>, ConfigError> {
    let t = &layers.file.telemetry;
    if env(ENV_OTEL_SDK_DISABLED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let Some(traces_url) = endpoint(layers, env)? else {
        return Ok(None);
    };
    let Some(protocol) = protocol(layers, env, notices) else {
        return Ok(None);
    };
    Ok(Some(Telemetry {
        traces_url,
        protocol,
        service_name: service_name(layers, env)?,
        headers: headers(layers)?,
        include_content: t.include_content.unwrap_or(false),
    }))
}

fn invalid(origin: String, field: &'static str, reason: &str) -> ConfigError {
    ConfigError::Invalid {
        origin,
        field,
        reason: reason.to_string(),
    }
}

fn env_origin(name: &str) -> String {
    format!("environment variable {name}")
}

/// The URL spans are posted to, checked; `None` when no endpoint is configured (export off).
/// The signal-specific variable is a full URL; the others are base URLs.
fn endpoint(layers: &Layers, env: Env<'_>) -> Result<Option<String>, ConfigError> {
    let field = "telemetry.otlp_endpoint";
    let url = if let Some(url) = env(ENV_OTLP_TRACES_ENDPOINT) {
        let origin = env_origin(ENV_OTLP_TRACES_ENDPOINT);
        check_url(&url).ok_or_else(|| invalid(origin, field, URL_REASON))?
    } else if let Some(base) = env(ENV_OTLP_ENDPOINT) {
        let origin = env_origin(ENV_OTLP_ENDPOINT);
        traces_url(&base).ok_or_else(|| invalid(origin, field, URL_REASON))?
    } else if let Some(base) = &layers.file.telemetry.otlp_endpoint {
        let origin = layers.origin(field);
        traces_url(base).ok_or_else(|| invalid(origin, field, URL_REASON))?
    } else {
        return Ok(None);
    };
    Ok(Some(url))
}

/// The protocol: the environment's, else the file's. One the environment names that we do not
/// speak turns export off with a notice (`None`).
fn protocol(layers: &Layers, env: Env<'_>, notices: &mut Vec<String>) -> Option<OtlpProtocol> {
    let Some((name, value)) = [ENV_OTLP_TRACES_PROTOCOL, ENV_OTLP_PROTOCOL]
        .into_iter()
        .find_map(|name| env(name).map(|v| (name, v)))
    else {
        return Some(layers.file.telemetry.protocol.unwrap_or_default());
    };
    match value.trim() {
        "http/protobuf" => Some(OtlpProtocol::HttpProtobuf),
        "http/json" => Some(OtlpProtocol::HttpJson),
        other => {
            notices.push(format!(
                "{name}={} is not supported (minicode exports over http/protobuf or \
                 http/json only); OpenTelemetry export is off for this run",
                crate::sanitize::visible(other)
            ));
            None
        }
    }
}

/// `service.name`: the environment's, else the file's, else minicode; checked and trimmed.
fn service_name(layers: &Layers, env: Env<'_>) -> Result<String, ConfigError> {
    let (name, origin) = match env(ENV_OTEL_SERVICE_NAME) {
        Some(name) => (name, env_origin(ENV_OTEL_SERVICE_NAME)),
        None => match &layers.file.telemetry.service_name {
            Some(name) => (name.clone(), layers.origin("telemetry.service_name")),
            None => (DEFAULT_SERVICE_NAME.to_string(), String::new()),
        },
    };
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(invalid(
            origin,
            "telemetry.service_name",
            "must be a non-empty name without control characters",
        ));
    }
    Ok(name.trim().to_string())
}

/// The file's headers, each name a valid token and each value printable ASCII (no line breaks
/// that could split the request). A value is never shown.
fn headers(layers: &Layers) -> Result<Vec<(String, super::Secret)>, ConfigError> {
    let mut headers = Vec::new();
    for (name, value) in layers.file.telemetry.headers.iter().flatten() {
        let bad_name = name.is_empty() || !name.bytes().all(is_token_byte);
        let bad_value = !value
            .expose()
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if bad_name || bad_value {
            return Err(ConfigError::Invalid {
                origin: layers.origin("telemetry.headers"),
                field: "telemetry.headers",
                reason: format!(
                    "header {:?}: {}",
                    crate::sanitize::visible(name),
                    if bad_name {
                        "is not a valid header name"
                    } else {
                        "its value may hold only printable ASCII characters"
                    }
                ),
            });
        }
        headers.push((name.clone(), value.clone()));
    }
    Ok(headers)
}

const URL_REASON: &str = "must be an http:// or https:// URL";

/// `<base>/v1/traces` for a base endpoint (trailing slashes dropped first).
fn traces_url(base: &str) -> Option<String> {
    let base = check_url(base)?;
    Some(format!("{}{TRACES_PATH}", base.trim_end_matches('/')))
}

/// The URL trimmed, if it is http(s) with a host and nothing that could not go in a request
/// line.
fn check_url(url: &str) -> Option<String> {
    let url = url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let host_ok = !rest.is_empty() && !rest.starts_with('/');
    let chars_ok = url.bytes().all(|b| (b'!'..=b'~').contains(&b));
    (host_ok && chars_ok).then(|| url.to_string())
}

/// RFC 9110 `tchar`: what a header name may contain.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
