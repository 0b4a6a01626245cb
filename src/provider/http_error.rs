//! Error answers of OpenAI-compatible servers → [`ProviderError`]: the one place where status
//! codes, `Retry-After` and the many error-body shapes (OpenAI's nested object, flat bodies,
//! llama.cpp and vLLM wordings, HTML from a proxy) are interpreted. Pure: no I/O, no logging.
//!
//! Messages are cleaned (control characters removed, length capped) and scrubbed of the API
//! key, because they end up on screens, in logs and in session files.

use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

use super::ProviderError;

/// Replaces the key wherever a server echoed it back.
pub fn scrub(e: ProviderError, key: Option<&str>) -> ProviderError {
    let Some(key) = key.filter(|k| k.len() >= 4) else {
        return e;
    };
    let s = |m: String| {
        if m.contains(key) {
            m.replace(key, "[redacted]")
        } else {
            m
        }
    };
    use ProviderError as E;
    match e {
        E::Auth { status, message } => E::Auth {
            status,
            message: s(message),
        },
        E::RateLimited {
            message,
            retry_after_ms,
            quota_exhausted,
        } => E::RateLimited {
            message: s(message),
            retry_after_ms,
            quota_exhausted,
        },
        E::Server {
            status,
            message,
            retry_after_ms,
        } => E::Server {
            status,
            message: s(message),
            retry_after_ms,
        },
        E::ContextLength { message, window } => E::ContextLength {
            message: s(message),
            window,
        },
        E::Request { status, message } => E::Request {
            status,
            message: s(message),
        },
        E::Network(m) => E::Network(s(m)),
        E::Connect(m) => E::Connect(s(m)),
        E::Timeout(m) => E::Timeout(s(m)),
        E::Protocol(m) => E::Protocol(s(m)),
        E::Cancelled => E::Cancelled,
    }
}

/// `retry-after-ms` (OpenAI's precise form) or `Retry-After` in seconds or as an HTTP date.
pub fn retry_after_ms(headers: &HeaderMap) -> Option<u64> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| *v >= 0.0)
    {
        return Some(ms as u64);
    }
    parse_retry_after(get(RETRY_AFTER.as_str())?)
}

/// Parses a `Retry-After` value: delta seconds or an IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`).
pub fn parse_retry_after(value: &str) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0 && secs.is_finite()).then_some((secs * 1000.0) as u64);
    }
    let at = parse_http_date(value)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(at.saturating_sub(now) * 1000)
}

fn parse_http_date(v: &str) -> Option<u64> {
    let mut parts = v.split_once(", ")?.1.split_ascii_whitespace();
    let day: u64 = parts.next()?.parse().ok()?;
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let name = parts.next()?;
    let month = months
        .iter()
        .position(|m| *m == name)
        .map(|m| m as u64 + 1)?;
    let year: u64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if parts.next()? != "GMT"
        || !(1..=31).contains(&day)
        || year < 1970
        || h > 23
        || m > 59
        || s > 60
    {
        return None;
    }
    // Days since the epoch for a proleptic Gregorian date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

/// What an error body said, whatever its shape.
#[derive(Debug, Default)]
struct ErrorInfo {
    message: String,
    kind: String,
    code: String,
    /// A numeric `code` (some gateways put the HTTP status there).
    status_code: Option<u16>,
    /// llama.cpp's `n_ctx` beside a context overflow.
    n_ctx: Option<u64>,
}

impl ErrorInfo {
    /// From the value of an `error` field (object or string) or a flat error body.
    fn from_value(v: &Value) -> ErrorInfo {
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(clean)
                .unwrap_or_default()
        };
        if let Some(s) = v.as_str() {
            return ErrorInfo {
                message: clean(s),
                ..ErrorInfo::default()
            };
        }
        let mut info = ErrorInfo {
            message: text("message"),
            kind: text("type"),
            code: v
                .get("code")
                .map(|c| {
                    c.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| c.to_string())
                })
                .unwrap_or_default(),
            status_code: v
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok()),
            n_ctx: v.get("n_ctx").and_then(Value::as_u64),
        };
        if info.code == "null" {
            info.code.clear();
        }
        if info.message.is_empty() {
            info.message = text("detail");
        }
        if info.message.is_empty() {
            info.message = excerpt(v.to_string().as_bytes());
        }
        info
    }

    fn from_body(body: &[u8]) -> Option<ErrorInfo> {
        let v: Value = serde_json::from_slice(body).ok()?;
        match v.get("error") {
            Some(inner @ (Value::Object(_) | Value::String(_))) => {
                let mut info = ErrorInfo::from_value(inner);
                if inner.is_string() && info.kind.is_empty() {
                    info.kind = v
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                }
                Some(info)
            }
            _ => Some(ErrorInfo::from_value(&v)),
        }
    }

    fn says(&self, needle: &str) -> bool {
        self.code.eq_ignore_ascii_case(needle) || self.kind.eq_ignore_ascii_case(needle)
    }
}

/// Maps an HTTP error response to the error a caller can act on. This is the one place where
/// status codes and body shapes are interpreted.
pub fn error_from_response(status: u16, retry_after_ms: Option<u64>, body: &[u8]) -> ProviderError {
    let info = ErrorInfo::from_body(body).unwrap_or_else(|| {
        let message = excerpt(body);
        let message = if message.is_empty() {
            "empty response body".to_string()
        } else {
            message
        };
        ErrorInfo {
            message,
            ..ErrorInfo::default()
        }
    });
    classify(status, retry_after_ms, info)
}

/// Maps an `error` value found inside a 200 response (a stream event or a completion body).
pub fn error_from_payload(status: Option<u16>, error: &Value) -> ProviderError {
    let info = ErrorInfo::from_value(error);
    let status = status
        .or(info.status_code.filter(|c| (400..600).contains(c)))
        .unwrap_or_else(|| {
            let k = format!("{} {}", info.kind, info.code).to_ascii_lowercase();
            if k.contains("auth") || k.contains("permission") {
                401
            } else if k.contains("rate_limit") || k.contains("quota") {
                429
            } else if k.contains("invalid_request") || k.contains("context") {
                400
            } else {
                500
            }
        });
    classify(status, None, info)
}

fn classify(status: u16, retry_after_ms: Option<u64>, info: ErrorInfo) -> ProviderError {
    let message = info.message.clone();
    if !matches!(status, 401 | 403 | 429) && is_context_overflow(&info) {
        let window = info.n_ctx.or_else(|| context_window_in(&info.message));
        return ProviderError::ContextLength { message, window };
    }
    match status {
        401 | 403 => ProviderError::Auth { status, message },
        429 => {
            let lower = info.message.to_ascii_lowercase();
            let quota_exhausted = info.says("insufficient_quota")
                || lower.contains("insufficient_quota")
                || lower.contains("exceeded your current quota")
                || lower.contains("quota exhausted")
                || lower.contains("quota exceeded");
            ProviderError::RateLimited {
                message,
                retry_after_ms,
                quota_exhausted,
            }
        }
        500..=599 => ProviderError::Server {
            status,
            message,
            retry_after_ms,
        },
        _ => ProviderError::Request { status, message },
    }
}

fn is_context_overflow(info: &ErrorInfo) -> bool {
    let lower = info.message.to_ascii_lowercase();
    info.says("context_length_exceeded")
        || info.says("exceed_context_size_error")
        || lower.contains("maximum context length")
        || lower.contains("context length exceeded")
        || lower.contains("exceeds the available context size")
        || lower.contains("context window")
}

/// Finds the window size in the usual wordings ("maximum context length is 4096 tokens",
/// "context size (4096 tokens)", "n_ctx = 4096", "context window of 4096").
fn context_window_in(message: &str) -> Option<u64> {
    let lower = message.to_ascii_lowercase();
    let markers = [
        "maximum context length is",
        "context length of",
        "n_ctx",
        "context size",
        "context window of",
        "context window is",
    ];
    markers.iter().find_map(|m| {
        let at = lower.find(m)? + m.len();
        let rest = lower[at..].trim_start_matches([' ', '=', ':', '(']);
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok().filter(|n| *n > 0)
    })
}

/// Text fit for an error message: control characters become spaces, runs collapse, ≤ 1000 chars.
pub(crate) fn clean(s: &str) -> String {
    shorten(s, 1000)
}

/// A short excerpt of a non-JSON body (≤ 200 characters, control characters stripped).
fn excerpt(body: &[u8]) -> String {
    shorten(&String::from_utf8_lossy(body), 200)
}

fn shorten(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut space = false;
    for c in s.chars() {
        if c.is_control() || c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if count + usize::from(space) >= max {
            out.push('…');
            break;
        }
        if space {
            out.push(' ');
            count += 1;
            space = false;
        }
        out.push(c);
        count += 1;
    }
    out
}
