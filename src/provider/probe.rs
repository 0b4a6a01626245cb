//! Asking a server what it is: its context window from whichever self-description endpoint
//! its family offers (`probe/parse.rs` has the table), the models it lists, whether its
//! template can render tools. Run once at session start in the background, bounded by
//! [`PROBE_TIMEOUT`], and cached per base URL and model (`probe/cache.rs`).
//!
//! Every request goes to the configured server only: the endpoints hang off the base URL or
//! its root (the base URL without a trailing `/v1`), on the same scheme, host and port, with
//! the hardened client (no redirects) and the same headers as chat requests. A failing
//! endpoint is logged at debug level and skipped; nothing here fails a session.

pub mod cache;
pub(crate) mod parse;
pub(crate) mod vision;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use reqwest::{Method, Url};
use serde_json::Value;

use super::ProviderError;
use super::ServerInfo;
use super::http_error::{clean, redact};

/// How long the probe at session start may take in all: the first request waits at most this
/// long for it.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// The most model ids kept from `/models` (OpenRouter lists hundreds).
pub(crate) const MAX_LISTED: usize = 1000;
/// The most bytes read from one probe answer (OpenRouter's model list is about 1 MB).
const MAX_PROBE_BYTES: usize = 4 * 1024 * 1024;

/// Where and how to ask.
#[derive(Clone)]
pub(crate) struct Target {
    pub client: reqwest::Client,
    /// The chat requests' headers (`Authorization` among them).
    pub headers: HeaderMap,
    /// The base URL, without a trailing `/`.
    pub base: String,
    pub model: String,
    /// Kept only to scrub it from error text.
    pub key: Option<Arc<str>>,
}

/// The root the non-OpenAI endpoints hang off: `http://h:8080/v1` → `http://h:8080`.
pub fn server_root(base: &str) -> String {
    let base = base.trim_end_matches('/');
    match base.strip_suffix("/v1") {
        Some(root)
            if root.contains("://") && !root.ends_with('/') && root.len() > "http://".len() =>
        {
            root.to_string()
        }
        _ => base.to_string(),
    }
}

/// Whether `url` is on the configured server (same scheme, host and port as `base`).
fn same_origin(base: &Url, url: &Url) -> bool {
    base.scheme() == url.scheme()
        && base.host_str() == url.host_str()
        && base.port_or_known_default() == url.port_or_known_default()
}

impl Target {
    /// `{base}{path}` (`path` starts with `/`).
    pub(crate) fn at_base(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `{root}{path}`.
    pub(crate) fn at_root(&self, path: &str) -> String {
        format!("{}{path}", server_root(&self.base))
    }

    /// One request to the configured server: the status and at most 4 MiB of the body (the
    /// key removed from it). Connection failures are errors; any HTTP answer is not.
    pub(crate) async fn fetch(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
        limit: Duration,
    ) -> Result<(u16, Vec<u8>), ProviderError> {
        let key = self.key.as_deref();
        let parsed = Url::parse(url).map_err(|_| ProviderError::Request {
            status: 0,
            message: "not a valid url".into(),
        })?;
        let base = Url::parse(&self.base).map_err(|_| ProviderError::Request {
            status: 0,
            message: "base url is not a valid url".into(),
        })?;
        if !same_origin(&base, &parsed) {
            // Never happens by construction; the key must not leave the configured server.
            return Err(ProviderError::Request {
                status: 0,
                message: "refusing to ask another server".into(),
            });
        }
        let mut request = self
            .client
            .request(method, parsed)
            .headers(self.headers.clone())
            .header(ACCEPT, "application/json");
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        let exchange = async {
            let mut response = request.send().await.map_err(|e| {
                let message = clean(&redact(&describe(&e), key));
                if e.is_timeout() {
                    ProviderError::Timeout(message)
                } else {
                    ProviderError::Connect(message)
                }
            })?;
            let status = response.status().as_u16();
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                let room = MAX_PROBE_BYTES.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= MAX_PROBE_BYTES {
                    break;
                }
            }
            let body = super::http_error::redact_prefix(&body, key, body.len());
            Ok((status, body))
        };
        tokio::time::timeout(limit, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(ProviderError::Timeout(format!(
                    "no answer within {:.1} s",
                    limit.as_secs_f64()
                )))
            })
    }

    /// The JSON of a successful answer, or `None` (logged).
    async fn json(&self, method: Method, url: &str, body: Option<Vec<u8>>) -> Option<Value> {
        json_answer(url, self.fetch(method, url, body, PROBE_TIMEOUT).await)
    }

    /// Asks every endpoint that may know: `/models` first (every family has it), then
    /// llama.cpp's `/props`, and LM Studio's and Ollama's own endpoints when `/models` did not
    /// say, together. Unbounded here: the caller puts the time limit.
    pub(crate) async fn probe(&self) -> ServerInfo {
        let mut info = ServerInfo::default();
        let mut found = None;
        let models_url = self.at_base("/models");
        let models = match self
            .fetch(Method::GET, &models_url, None, PROBE_TIMEOUT)
            .await
        {
            // Nothing listens there: the other endpoints are on the same server.
            Err(ProviderError::Connect(why)) => {
                info.unreachable = Some(why);
                return info;
            }
            answer => json_answer(&models_url, answer),
        };
        if let Some(models) = models {
            info.models = Some(parse::listed_ids(&models, MAX_LISTED));
            found = parse::window_from_models(&models, &self.model);
            info.supports_images = vision::from_models(&models, &self.model);
        }
        let show = serde_json::to_vec(&serde_json::json!({"model": self.model})).ok();
        let (props_url, lmstudio_url, show_url) = (
            self.at_root("/props"),
            self.at_root("/api/v0/models"),
            self.at_root("/api/show"),
        );
        let unknown = found.is_none();
        let (props, lmstudio, ollama) = futures_util::join!(
            self.json(Method::GET, &props_url, None),
            async {
                if unknown {
                    self.json(Method::GET, &lmstudio_url, None).await
                } else {
                    None
                }
            },
            async {
                if unknown {
                    self.json(Method::POST, &show_url, show).await
                } else {
                    None
                }
            },
        );
        info.server = parse::server_kind(props.as_ref(), lmstudio.as_ref(), ollama.as_ref());
        if let Some(props) = &props {
            info.supports_tools = parse::tools_from_props(props);
            info.supports_images = vision::from_props(props).or(info.supports_images);
            // llama.cpp's per-slot context (what one request gets) wins over its model list,
            // whose n_ctx may be the total of all slots.
            found = parse::window_from_props(props).or(found);
        }
        if let Some(v) = &lmstudio {
            found = found.or_else(|| parse::window_from_lmstudio(v, &self.model));
        }
        if let Some(v) = &ollama {
            info.supports_tools = info.supports_tools.or_else(|| parse::tools_from_ollama(v));
            info.supports_images = info
                .supports_images
                .or_else(|| vision::from_capabilities(v));
            found = found.or_else(|| parse::window_from_ollama(v));
        }
        if found.is_none()
            && let Some(host) = Url::parse(&self.base)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
        {
            found = parse::known_window(&host, &self.model);
        }
        if let Some((tokens, via)) = found {
            tracing::debug!(tokens, via, "probed the context window");
            info.context_window = Some(tokens);
            info.via = Some(via.to_string());
        } else {
            tracing::debug!("no endpoint stated the context window");
        }
        info
    }
}

/// A probe endpoint's JSON answer, or `None` (logged) when it gave none.
fn json_answer(url: &str, answer: Result<(u16, Vec<u8>), ProviderError>) -> Option<Value> {
    match answer {
        Ok((status, bytes)) if (200..300).contains(&status) => {
            match serde_json::from_slice(&bytes) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::debug!(url, error = %e, "probe answer is not JSON");
                    None
                }
            }
        }
        Ok((status, _)) => {
            tracing::debug!(url, status, "probe endpoint not available");
            None
        }
        Err(e) => {
            tracing::debug!(url, error = %e, "probe request failed");
            None
        }
    }
}

/// reqwest's error without the URL, with its root cause (refused, reset, certificate…).
fn describe(e: &reqwest::Error) -> String {
    let mut root: &dyn std::error::Error = e;
    while let Some(next) = root.source() {
        root = next;
    }
    format!(
        "{}: {root}",
        e.to_string().split(" for url").next().unwrap_or("")
    )
}
