//! Error answers of OpenAI-compatible servers → [`ProviderError`]: the one place where status
//! codes, `Retry-After` and the many error-body shapes (OpenAI's nested object, flat bodies,
//! llama.cpp and vLLM wordings, HTML from a proxy) are interpreted. Pure: no I/O, no logging.
//!
//! Messages are scrubbed of the API key and then cleaned (control characters removed, length
//! capped), in that order, because they end up on screens, in logs and in session files: a
//! cut made before the key is removed could leave a piece of it that no later scrub matches.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

use super::ProviderError;

/// What replaces the key in any text that came from a server.
const REDACTED: &str = "[redacted]";

/// A key this short is not scrubbed: it would match ordinary text.
fn scrubbable(key: Option<&str>) -> Option<&str> {
    key.filter(|k| k.len() >= 4)
}

/// `text` with every occurrence of the key replaced.
pub(crate) fn redact<'a>(text: &'a str, key: Option<&str>) -> Cow<'a, str> {
    match scrubbable(key) {
        Some(key) if text.contains(key) => Cow::Owned(text.replace(key, REDACTED)),
        _ => Cow::Borrowed(text),
    }
}

/// The first `keep` bytes of `body` with every occurrence of the key replaced, including one
/// that starts before `keep` and ends after it (it is replaced whole, never cut). The caller
/// reads at least `keep + key.len()` bytes when it has them, so that such a key is complete.
pub fn redact_prefix(body: &[u8], key: Option<&str>, keep: usize) -> Vec<u8> {
    let keep = keep.min(body.len());
    let Some(key) = scrubbable(key).map(str::as_bytes) else {
        return body[..keep].to_vec();
    };
    let mut out = Vec::with_capacity(keep);
    let mut at = 0;
    while at < keep {
        match body[at..].windows(key.len()).position(|w| w == key) {
            Some(found) if at + found < keep => {
                out.extend_from_slice(&body[at..at + found]);
                out.extend_from_slice(REDACTED.as_bytes());
                at += found + key.len();
            }
            _ => {
                out.extend_from_slice(&body[at..keep]);
                break;
            }
        }
    }
    out
}

/// Server text fit for a message: the key removed first, then cleaned and cut to `max` chars.
pub(crate) fn quote(text: &str, key: Option<&str>, max: usize) -> String {
    shorten(&redact(text, key), max)
}

/// Replaces the key wherever a server echoed it back: the last guard on every error that
/// leaves the provider. Text from error bodies was already redacted before it was cut.
pub(crate) fn scrub(e: ProviderError, key: Option<&str>) -> ProviderError {
    let Some(key) = scrubbable(key) else {
        return e;
    };
    let s = |m: String| {
        if m.contains(key) {
            m.replace(key, REDACTED)
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
        E::NoTools { status, message } => E::NoTools {
            status,
            message: s(message),
        },
        E::NoImages { status, message } => E::NoImages {
            status,
            message: s(message),
        },
        E::Network(m) => E::Network(s(m)),
        E::Connect(m) => E::Connect(s(m)),
        E::Timeout(m) => E::Timeout(s(m)),
        E::Protocol(m) => E::Protocol(s(m)),
        E::Cancelled => E::Cancelled,
        E::Closed => E::Closed,
    }
}

/// `retry-after-ms` (OpenAI's precise form) or `Retry-After` in seconds or as an HTTP date.
pub(crate) fn retry_after_ms(headers: &HeaderMap) -> Option<u64> {
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
    /// From the value of an `error` field (object or string) or a flat error body. Every text
    /// is scrubbed of `key` before it is shortened.
    fn from_value(v: &Value, key: Option<&str>) -> ErrorInfo {
        let clean = |s: &str| quote(s, key, MESSAGE_CHARS);
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
                .map(|c| match c.as_str() {
                    Some(s) => clean(s),
                    None => clean(&c.to_string()),
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
            info.message = excerpt(v.to_string().as_bytes(), key);
        }
        info
    }

    fn from_body(body: &[u8], key: Option<&str>) -> Option<ErrorInfo> {
        let v: Value = serde_json::from_slice(body).ok()?;
        match v.get("error") {
            Some(inner @ (Value::Object(_) | Value::String(_))) => {
                let mut info = ErrorInfo::from_value(inner, key);
                if inner.is_string() && info.kind.is_empty() {
                    info.kind = v
                        .get("type")
                        .and_then(Value::as_str)
                        .map(|k| quote(k, key, MESSAGE_CHARS))
                        .unwrap_or_default();
                }
                Some(info)
            }
            _ => Some(ErrorInfo::from_value(&v, key)),
        }
    }

    fn says(&self, needle: &str) -> bool {
        self.code.eq_ignore_ascii_case(needle) || self.kind.eq_ignore_ascii_case(needle)
    }
}

/// Maps an HTTP error response to the error a caller can act on. This is the one place where
/// status codes and body shapes are interpreted. `key` is removed from the body before it is
/// parsed or cut.
pub fn error_from_response(
    status: u16,
    retry_after_ms: Option<u64>,
    body: &[u8],
    key: Option<&str>,
) -> ProviderError {
    let body = redact_prefix(body, key, body.len());
    let info = ErrorInfo::from_body(&body, key).unwrap_or_else(|| {
        let message = excerpt(&body, key);
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

/// Maps an `error` value found inside a 200 response (a stream event or a completion body):
/// a numeric `code` in the HTTP range is taken as the status, otherwise the status is inferred
/// from `type` and `code` (OpenAI's `rate_limit_exceeded`, vLLM's `BadRequestError`, …) so the
/// error is classified and retried exactly as the same answer with an HTTP status would be.
pub(crate) fn error_from_payload(
    status: Option<u16>,
    error: &Value,
    key: Option<&str>,
) -> ProviderError {
    let info = ErrorInfo::from_value(error, key);
    let status = status
        .or(info.status_code.filter(|c| (400..600).contains(c)))
        .unwrap_or_else(|| status_for_kind(&info));
    classify(status, None, info)
}

/// The HTTP status an error `type`/`code` without one stands for.
fn status_for_kind(info: &ErrorInfo) -> u16 {
    let k: String = format!("{} {}", info.kind, info.code)
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    let has = |words: &[&str]| words.iter().any(|w| k.contains(w));
    if has(&["auth", "permission", "apikey"]) {
        401
    } else if has(&["ratelimit", "quota", "toomanyrequests"]) {
        429
    } else if has(&["context", "invalidrequest", "badrequest", "validation"]) {
        400
    } else if has(&["notfound"]) {
        404
    } else if has(&["overloaded", "unavailable"]) {
        503
    } else {
        500
    }
}

fn classify(status: u16, retry_after_ms: Option<u64>, info: ErrorInfo) -> ProviderError {
    let message = info.message.clone();
    if !matches!(status, 401 | 403 | 429) && is_context_overflow(&info) {
        let window = info.n_ctx.or_else(|| context_window_in(&info.message));
        return ProviderError::ContextLength { message, window };
    }
    if matches!(status, 400 | 404 | 422 | 500) && super::compat::says_no_tools(&info.message) {
        return ProviderError::NoTools { status, message };
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

/// The longest message kept from a server's error text.
const MESSAGE_CHARS: usize = 1000;

/// Text fit for an error message: control characters become spaces, runs collapse, ≤ 1000 chars.
/// Only for text that cannot hold the key (our own, or a library's); server text goes through
/// [`quote`].
pub(crate) fn clean(s: &str) -> String {
    shorten(s, MESSAGE_CHARS)
}

/// A short excerpt of a non-JSON body (≤ 200 characters, control characters stripped), taken
/// after the key is removed.
fn excerpt(body: &[u8], key: Option<&str>) -> String {
    quote(&String::from_utf8_lossy(body), key, 200)
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
