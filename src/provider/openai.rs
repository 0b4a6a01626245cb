//! The OpenAI-compatible client: builds `/chat/completions` requests, sends them over reqwest
//! (rustls, HTTP/1.1 keep-alive) and turns every HTTP answer into a `Reply` or a classified
//! [`ProviderError`]. Retries and stream decoding live in `retry` and `sse`; this file owns the
//! wire: request body, headers, and the one mapping from error responses to errors.
//!
//! The API key goes only into the `Authorization` header (marked sensitive); it is scrubbed
//! from any error text (before the text is cut) and never logged. Redirects are never followed:
//! the conversation and the key go to the configured host or nowhere.
//!
//! Parameters the server refuses (`compat`) are adapted once and remembered, in memory and in
//! the server cache; the probe at session start (`probe`) uses the same client and headers.

mod completion;
mod images;
mod request;

pub use request::Extras;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION,
};

use super::compat::{self, Quirks};
use super::http_error::{clean, error_from_response, redact_prefix, retry_after_ms, scrub};
use super::probe::cache::Cache;
use super::probe::{self, PROBE_TIMEOUT, Target};
use super::profiles::{self, ServerKind};
use super::retry::{self, ByteStream, Opened, Policy, StreamLimits};
use super::sse::{Decoder, ReplyLimits, reply_too_large};
use super::{
    ChatRequest, EventStream, ModelsFuture, ProbeFuture, Provider, ProviderError, ReplyFuture,
    ServerInfo,
};
use crate::defaults;
use crate::sync::lock;
use completion::parse_completion;
use request::{Body, EncodedMessages, Payload};

/// Sent with every request, so server operators can tell who is calling.
const USER_AGENT: &str = concat!("minicode/", env!("CARGO_PKG_VERSION"));

/// The most of an error body that is read (the rest is dropped with the connection).
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// How to reach one OpenAI-compatible server. `Debug` never shows the key.
#[derive(Clone)]
pub struct OpenAiOptions {
    /// E.g. `https://api.openai.com/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// The deadline of one model call, from sending the request to the end of the reply,
    /// retries and their waits included: a stream that never ends (heartbeats forever) fails
    /// here even though it is never silent.
    pub request_timeout: Duration,
    /// Longest silence (waiting for the response head included) before a streamed call fails.
    pub stream_idle_timeout: Duration,
    /// Bounds of one reply (size, number of tool calls).
    pub limits: ReplyLimits,
    /// Attempts in total for failures before any response byte (429, 5xx, connect).
    pub max_attempts: u32,
    /// The first backoff wait (doubled per retry, ±25 % jitter); tests make it small.
    pub retry_base_delay: Duration,
    /// The folder of the server cache (`$XDG_CACHE_HOME/minicode`); `None` remembers nothing
    /// between runs.
    pub cache_dir: Option<PathBuf>,
    /// Send the reasoning kept on assistant messages back to the server (`reasoning_content`).
    pub send_reasoning: bool,
    /// Added to an authentication failure when no key was sent: which variable or field to
    /// set. A missing key is an error only once the server asks for one.
    pub missing_key_hint: Option<String>,
}

impl Default for OpenAiOptions {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            api_key: None,
            model: String::new(),
            request_timeout: defaults::REQUEST_TIMEOUT,
            stream_idle_timeout: defaults::STREAM_IDLE_TIMEOUT,
            limits: ReplyLimits::default(),
            max_attempts: defaults::RETRY_ATTEMPTS,
            retry_base_delay: defaults::RETRY_BASE_DELAY,
            cache_dir: None,
            send_reasoning: false,
            missing_key_hint: None,
        }
    }
}

/// An OpenAI-compatible model server. `Debug` never shows the key.
#[derive(Clone)]
pub struct OpenAi {
    client: reqwest::Client,
    /// The base URL without a trailing `/`.
    base: String,
    url: String,
    model: String,
    /// The key, kept only to scrub it from error text.
    key: Option<Arc<str>>,
    headers: HeaderMap,
    limits: StreamLimits,
    /// Parameters this server is known to refuse; changed when it refuses another one.
    quirks: Arc<Mutex<Quirks>>,
    cache: Arc<Cache>,
    /// The previous streamed request's messages, encoded (see [`EncodedMessages`]).
    encoded: Arc<Mutex<EncodedMessages>>,
    send_reasoning: bool,
    /// Host and port of `url`, for telemetry.
    server: Option<(Arc<str>, u16)>,
    /// See [`OpenAiOptions::missing_key_hint`]; `None` when a key is sent.
    missing_key_hint: Option<Arc<str>>,
    /// The kind of server the probe recognised (shared with `with_model`: same server), which
    /// picks its row of the model profiles.
    server_kind: Arc<Mutex<Option<ServerKind>>>,
    /// Whether the model takes images, once the probe (or its cache) learnt it: a request
    /// with an image is refused here, unsent, when the server said no.
    images: Arc<Mutex<Option<bool>>>,
}

impl std::fmt::Debug for OpenAiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiOptions")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("model", &self.model)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("limits", &self.limits)
            .field("max_attempts", &self.max_attempts)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("cache_dir", &self.cache_dir)
            .field("send_reasoning", &self.send_reasoning)
            .finish()
    }
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "***"))
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Whether talking to `base` may need the system's root certificates: an `https://` server,
/// or a proxy from the environment reached over TLS.
fn needs_tls(base: &str) -> bool {
    base.starts_with("https://")
        || ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
            .iter()
            .filter_map(std::env::var_os)
            .any(|proxy| {
                proxy
                    .to_string_lossy()
                    .trim_start()
                    .to_ascii_lowercase()
                    .starts_with("https://")
            })
}

impl OpenAi {
    pub fn new(opts: OpenAiOptions) -> Result<OpenAi, ProviderError> {
        let base = opts.base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://"))
            || reqwest::Url::parse(base).is_err()
        {
            return Err(config_error("base url must be an http:// or https:// url"));
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let key: Option<Arc<str>> = opts
            .api_key
            .filter(|k| !k.trim().is_empty())
            .map(|k| k.trim().into());
        if let Some(key) = &key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| config_error("api key contains characters not allowed in a header"))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let connect = opts.request_timeout.min(Duration::from_secs(30));
        let client = reqwest::Client::builder()
            .http1_only()
            // A redirect would re-send the conversation (and, for a same-host hop, the key) to
            // an address the user never configured; a 3xx is reported instead.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .connect_timeout(connect)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            // Reading the system's root certificates (hundreds of files) costs a plain-http
            // run (a local server) more than its whole first request; only TLS needs them.
            .tls_built_in_root_certs(needs_tls(base))
            .build()
            .map_err(|e| {
                config_error(&format!(
                    "could not build the http client: {}",
                    e.without_url()
                ))
            })?;
        let policy = Policy {
            max_attempts: opts.max_attempts.max(1),
            base_delay: opts.retry_base_delay,
            ..Policy::default()
        };
        let cache = Cache::new(opts.cache_dir.as_deref(), base, &opts.model);
        let quirks = cache.quirks().unwrap_or_default();
        let server = reqwest::Url::parse(base)
            .ok()
            .and_then(|url| Some((url.host_str()?.into(), url.port_or_known_default()?)));
        Ok(OpenAi {
            server,
            client,
            base: base.to_string(),
            url: format!("{base}/chat/completions"),
            model: opts.model,
            headers,
            limits: StreamLimits {
                policy,
                idle_timeout: opts.stream_idle_timeout,
                deadline: opts.request_timeout,
                reply: opts.limits,
            },
            quirks: Arc::new(Mutex::new(quirks)),
            server_kind: Arc::new(Mutex::new(cache.window().and_then(|w| w.server))),
            images: Arc::new(Mutex::new(cache.window().and_then(|w| w.images))),
            cache: Arc::new(cache),
            encoded: Arc::default(),
            send_reasoning: opts.send_reasoning,
            missing_key_hint: opts
                .missing_key_hint
                .filter(|_| key.is_none())
                .map(Into::into),
            key,
        })
    }

    /// The parameter adaptations in effect for this server (learned now or remembered).
    pub fn quirks(&self) -> Quirks {
        *lock(&self.quirks)
    }

    /// What this model's runs have counted (edit tiers, failures, stream fallbacks).
    pub fn tally(&self) -> super::tally::Tally {
        self.cache.tally()
    }

    fn target(&self) -> Target {
        Target {
            client: self.client.clone(),
            headers: self.headers.clone(),
            base: self.base.clone(),
            model: self.model.clone(),
            key: self.key.clone(),
        }
    }

    /// Probes the server now, ignoring the cache, within `limit`; the answer is cached.
    /// `None` when the limit passed first.
    pub async fn probe_now(&self, limit: Duration) -> Option<ServerInfo> {
        let target = self.target();
        let info = tokio::time::timeout(limit, target.probe()).await.ok()?;
        // An unreachable server said nothing about its window: nothing to remember.
        if info.unreachable.is_none() {
            let (window, via) = (info.context_window, info.via.as_deref());
            self.cache
                .store_window(window, via, info.server, info.supports_images);
            *lock(&self.server_kind) = info.server;
            *lock(&self.images) = info.supports_images;
        }
        Some(info)
    }

    /// `GET {base}{path}` on the configured server with the usual headers: the status and at
    /// most 4 MiB of the body (for `doctor`). Only a failure to get any answer is an error.
    pub async fn get(&self, path: &str, limit: Duration) -> Result<(u16, Vec<u8>), ProviderError> {
        let target = self.target();
        let url = target.at_base(path);
        target
            .fetch(reqwest::Method::GET, &url, None, limit)
            .await
            .map_err(|e| scrub(e, self.key.as_deref()))
    }

    /// The request parameters the model profiles table asks for this model and server.
    fn profile_extras(&self) -> Extras {
        let knobs = profiles::knobs(&self.model, *lock(&self.server_kind));
        Extras {
            tool_choice: None,
            auto_tool_choice: knobs.tool_choice == Some(profiles::ToolChoice::Auto),
            parallel_tool_calls: knobs.parallel_tool_calls,
        }
    }

    /// A current copy of the quirks, to write one attempt with.
    fn current_quirks(&self) -> Quirks {
        self.quirks()
    }

    /// After `error`: if the server refused a parameter `payload` sent with `used`, learns it
    /// (and remembers it in the cache) and says what changes; `None` means report the error.
    fn adapt(&self, error: &ProviderError, payload: &Payload, used: &Quirks) -> Option<String> {
        let param = compat::refused_param(error, &payload.refusable(used))?;
        let (reason, quirks) = {
            let mut quirks = lock(&self.quirks);
            let reason = quirks.learn(param)?;
            (reason, *quirks)
        };
        tracing::info!(
            param = param.name(),
            "the server refused a parameter; adapting"
        );
        self.cache.store_quirks(quirks);
        Some(reason)
    }

    /// Streams a reply with parameters beyond [`ChatRequest`] (a forced tool call).
    pub fn stream_with(&self, request: &ChatRequest<'_>, extras: Extras) -> EventStream {
        let span = tracing::debug_span!("http_request", model = %self.model, stream = true);
        let with_images = images::any(request.messages);
        if let Some(refused) = images::refuse(with_images, *lock(&self.images), &self.model) {
            return Box::pin(futures_util::stream::once(async move { Err(refused) }));
        }
        let payload = {
            let mut encoded = lock(&self.encoded);
            Payload::new(
                request,
                true,
                extras,
                self.send_reasoning,
                Some(&mut encoded),
            )
        };
        let payload = match payload {
            Ok(p) => Arc::new(p),
            Err(e) => return Box::pin(futures_util::stream::once(async move { Err(e) })),
        };
        tracing::debug!(parent: &span, messages = request.messages.len(), "sending request");
        let this = self.clone();
        let resend = Resend::default();
        let open = move || {
            let used = this.current_quirks();
            let body = payload.body(&this.model, &used);
            let this = this.clone();
            let payload = payload.clone();
            let resend = resend.clone();
            async move {
                let limit = this.limits.idle_timeout;
                let sent = this.send(body?, "text/event-stream", limit, &resend);
                let response = match sent.await {
                    Ok(r) => r,
                    Err(e) => {
                        return match this.adapt(&e, &payload, &used) {
                            Some(reason) => Ok(Opened::Adapted { reason }),
                            None => Err(images::explain(e, with_images)),
                        };
                    }
                };
                let key = this.key.clone();
                let bytes = response.bytes_stream().map(move |r| {
                    r.map_err(|e| {
                        scrub(
                            ProviderError::Network(format!("stream broken: {}", e.without_url())),
                            key.as_deref(),
                        )
                    })
                });
                Ok(Opened::Body(Box::pin(bytes) as ByteStream))
            }
        };
        let key = self.key.clone();
        let decoder = Decoder::with(self.limits.reply, self.key.clone());
        Box::pin(
            retry::drive(self.limits, decoder, open, span)
                .map(move |r| r.map_err(|e| scrub(e, key.as_deref()))),
        )
    }

    /// Sends one attempt and waits up to `head_timeout` for the response head; non-2xx
    /// answers become errors.
    fn send(
        &self,
        body: Body,
        accept: &'static str,
        head_timeout: Duration,
        resend: &Resend,
    ) -> impl Future<Output = Result<reqwest::Response, ProviderError>> + Send + 'static + use<>
    {
        let (client, url, headers) = (self.client.clone(), self.url.clone(), self.headers.clone());
        let request = move || {
            client
                .post(&url)
                .headers(headers.clone())
                .header(ACCEPT, accept)
                // The pieces are streamed without joining them; the explicit length keeps the
                // request out of chunked encoding.
                .header(CONTENT_LENGTH, body.len())
                .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                    body.parts.clone().map(Ok::<_, std::convert::Infallible>),
                )))
                .send()
        };
        let key = self.key.clone();
        let hint = self.missing_key_hint.clone();
        let resend = resend.clone();
        async move {
            // A server may close a keep-alive connection after a streamed answer (llama.cpp's
            // server does, while announcing keep-alive); the pool can hand that connection out
            // before its close is seen, and the request then meets a closed connection with
            // no answer. Like curl, send it once more at once on a new connection, instead of
            // an announced retry after a backoff on every other turn.
            let send = async {
                match request().await {
                    Err(e) if closed_without_answer(&e) && resend.take() => {
                        tracing::debug!("connection closed before an answer; sending again");
                        request().await
                    }
                    other => other,
                }
            };
            let response = match tokio::time::timeout(head_timeout, send).await {
                Err(_) => {
                    return Err(ProviderError::Timeout(format!(
                        "no response within {:.1} s",
                        head_timeout.as_secs_f64()
                    )));
                }
                Ok(Err(e)) => return Err(scrub(send_error(&e), key.as_deref())),
                Ok(Ok(r)) => r,
            };
            let status = response.status().as_u16();
            tracing::debug!(status, "model server answered");
            if (200..300).contains(&status) {
                return Ok(response);
            }
            if (300..400).contains(&status) {
                return Err(redirect_error(status, &response));
            }
            let retry_after = retry_after_ms(response.headers());
            let body = read_capped(response, head_timeout, key.as_deref()).await;
            let error = scrub(
                error_from_response(status, retry_after, &body, key.as_deref()),
                key.as_deref(),
            );
            Err(match (error, hint) {
                (ProviderError::Auth { status, message }, Some(hint)) => ProviderError::Auth {
                    status,
                    message: format!("{message} ({hint})"),
                },
                (error, _) => error,
            })
        }
    }
}

impl Provider for OpenAi {
    fn stream(&self, request: &ChatRequest<'_>) -> EventStream {
        self.stream_with(request, self.profile_extras())
    }

    fn server_kind(&self) -> Option<ServerKind> {
        *lock(&self.server_kind)
    }

    fn chat(&self, request: &ChatRequest<'_>) -> ReplyFuture {
        let span = tracing::debug_span!("http_request", model = %self.model, stream = false);
        let payload = Payload::new(request, false, Extras::default(), self.send_reasoning, None);
        let this = self.clone();
        Box::pin(tracing::Instrument::instrument(
            async move {
                let payload = payload?;
                // A non-streamed answer is silent until it is complete: only the deadline
                // bounds it.
                let limit = this.limits.deadline;
                let max_bytes = this.limits.reply.max_bytes;
                let resend = Resend::default();
                let whole = async {
                    retry::call_with_retry(this.limits.policy, || async {
                        loop {
                            let used = this.current_quirks();
                            let body = payload.body(&this.model, &used)?;
                            let sent = this.send(body, "application/json", limit, &resend);
                            match sent.await {
                                Ok(response) => return read_limited(response, max_bytes).await,
                                // No one watches a summary arrive: an adapted resend is silent.
                                Err(e) if this.adapt(&e, &payload, &used).is_some() => {}
                                Err(e) => return Err(e),
                            }
                        }
                    })
                    .await
                };
                let bytes = tokio::time::timeout(limit, whole)
                    .await
                    .map_err(|_| retry::deadline_error(limit))??;
                let key = this.key.as_deref();
                parse_completion(&bytes, this.limits.reply, key).map_err(|e| scrub(e, key))
            },
            span,
        ))
    }

    fn server(&self) -> Option<(&str, u16)> {
        self.server.as_ref().map(|(host, port)| (&**host, *port))
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn with_model(&self, model: &str) -> Option<Arc<dyn Provider>> {
        let mut next = self.clone();
        next.model = model.to_string();
        let cache = self.cache.for_model(&self.base, model);
        next.quirks = Arc::new(Mutex::new(cache.quirks().unwrap_or_default()));
        next.images = Arc::new(Mutex::new(cache.window().and_then(|w| w.images)));
        next.cache = Arc::new(cache);
        next.encoded = Arc::default();
        Some(Arc::new(next))
    }

    fn models(&self) -> ModelsFuture {
        let this = self.clone();
        Box::pin(async move {
            let (status, body) = this.get("/models", PROBE_TIMEOUT * 4).await?;
            if status != 200 {
                return Err(ProviderError::Request {
                    status,
                    message: "the server did not list its models".to_string(),
                });
            }
            let listed: serde_json::Value = serde_json::from_slice(&body)
                .map_err(|e| ProviderError::Protocol(format!("the model list is not json: {e}")))?;
            Ok(probe::parse::listed_ids(&listed, probe::MAX_LISTED))
        })
    }

    fn probe(&self) -> ProbeFuture {
        let this = self.clone();
        Box::pin(async move {
            if let Some(hit) = this.cache.window() {
                tracing::debug!(tokens = ?hit.tokens, "context window from the server cache");
                *lock(&this.server_kind) = hit.server;
                *lock(&this.images) = hit.images;
                return Some(ServerInfo {
                    context_window: hit.tokens,
                    via: hit.via,
                    server: hit.server,
                    supports_images: hit.images,
                    cached: true,
                    ..ServerInfo::default()
                });
            }
            let info = this.probe_now(PROBE_TIMEOUT).await;
            if info.is_none() {
                tracing::debug!("the probe did not finish in time");
            }
            info
        })
    }

    fn count(&self, what: super::tally::Count) {
        self.cache.count(what);
    }
}

fn config_error(message: &str) -> ProviderError {
    ProviderError::Request {
        status: 0,
        message: message.to_string(),
    }
}

/// The one unannounced resend a call may make after a connection closed without an answer
/// (see `OpenAi::send`): shared by all its attempts, so a server that closes every connection
/// costs one request more than the attempts, not twice as many.
#[derive(Clone, Default)]
struct Resend(Arc<AtomicBool>);

impl Resend {
    /// True the first time only.
    fn take(&self) -> bool {
        !self.0.swap(true, Ordering::Relaxed)
    }
}

/// Whether the server closed the connection after the request without a byte of answer
/// (hyper's "connection closed before message completed"), as opposed to refusing or
/// resetting it, or timing out.
fn closed_without_answer(e: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message();
        }
        cause = c.source();
    }
    false
}

/// A failure of `send()`: nothing of the response arrived, so it is safe to send again.
fn send_error(e: &reqwest::Error) -> ProviderError {
    // reqwest's own text names only the url; the useful part (refused, reset…) is the root cause.
    let mut root: &dyn std::error::Error = e;
    while let Some(next) = root.source() {
        root = next;
    }
    if closed_without_answer(e) {
        return ProviderError::Closed;
    }
    let message = clean(&format!(
        "{}: {root}",
        e.to_string().split(" for url").next().unwrap_or("")
    ));
    if e.is_timeout() {
        ProviderError::Timeout(message)
    } else {
        ProviderError::Connect(message)
    }
}

/// Reads at most 64 KiB of an error body (the rest is dropped with the connection), with the
/// key already removed: a key straddling the cut is read whole and replaced, never cut.
async fn read_capped(response: reqwest::Response, limit: Duration, key: Option<&str>) -> Vec<u8> {
    let want = ERROR_BODY_BYTES + key.map_or(0, str::len);
    let mut out = Vec::new();
    let mut body = response.bytes_stream();
    let read = async {
        while let Some(Ok(chunk)) = body.next().await {
            let room = want - out.len();
            out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if out.len() >= want {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(limit, read).await;
    redact_prefix(&out, key, ERROR_BODY_BYTES)
}

/// A 3xx answer: named with its status and the host it points to. The rest of the location is
/// left out because it may carry a token.
fn redirect_error(status: u16, response: &reqwest::Response) -> ProviderError {
    let target = response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|l| response.url().join(l).ok())
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        });
    let message = match target {
        Some(host) => format!(
            "the server redirects to {}; redirects are not followed (set base_url to the address that answers)",
            clean(&host)
        ),
        None => "the server answered with a redirect without a usable location; redirects are not followed".to_string(),
    };
    ProviderError::Request { status, message }
}

/// Reads a whole (non-streaming) response body, refusing one larger than `max` so a broken or
/// hostile server cannot make us buffer without bound.
async fn read_limited(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| ProviderError::Network(format!("response broken: {}", e.without_url())))?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if body.len() + chunk.len() > max {
            return Err(reply_too_large(max));
        }
        body.extend_from_slice(&chunk);
    }
}
