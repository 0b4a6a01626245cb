//! Getting one web page for `fetch`: each hop of the redirect chain is checked before anything
//! is sent (scheme, the permission rules for its host, every address its name resolves to),
//! and the connection goes to exactly the addresses that were checked, so a name that
//! answers differently the second time (DNS rebinding) cannot lead it to a private address.
//! Redirects to another host are not followed: the model fetches that URL itself, and it is
//! asked and ruled on anew. No proxy, no cookies, no credentials, a fixed User-Agent.
//!
//! It reads the body up to a size cap and never interprets it; turning it into text is
//! `page`'s work.

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;

use super::{Limits, address};
use crate::permissions::{Rules, Target, Verdict};

/// The `User-Agent` of every request: minicode and its version, nothing about the user.
const USER_AGENT: &str = concat!("minicode/", env!("CARGO_PKG_VERSION"));

/// What came back from the last hop.
#[derive(Debug)]
pub(crate) struct Fetched {
    /// The URL the body came from (after same-host redirects).
    pub(crate) url: Url,
    pub(crate) status: u16,
    /// The `Content-Type` header, as sent (empty when missing).
    pub(crate) content_type: String,
    pub(crate) body: Vec<u8>,
    /// Whether the body was cut at the size cap.
    pub(crate) capped: bool,
}

/// How a fetch ended without a page.
#[derive(Debug)]
pub(crate) enum Stop {
    /// Refused or failed: the message for the model.
    Failed(String),
    /// Redirected to another host, not followed: the URL the model may fetch next.
    Elsewhere(Url),
}

/// The host of `url` as permission rules see it: lowercase, an IPv6 address without brackets.
pub(crate) fn host(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Checks what `fetch` accepts of a URL before anything is sent: http or https, a host, no
/// user name or password (they would be sent, and shown).
pub(crate) fn check_url(url: &Url) -> Result<String, String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "fetch reads only http:// and https:// URLs, not {}:",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "a URL with a user name or password is not fetched: credentials are never \
                    sent; use a URL without them"
                .to_string(),
        );
    }
    host(url).ok_or_else(|| "the URL names no host".to_string())
}

/// Follows `url` through at most `limits.max_redirects` same-host redirects and reads the
/// last answer's body (up to `limits.max_bytes`).
pub(crate) async fn get(
    mut url: Url,
    limits: &Limits,
    rules: Option<&Rules>,
) -> Result<Fetched, Stop> {
    let first = check_url(&url).map_err(Stop::Failed)?;
    let mut hops = 0;
    loop {
        let host = check_url(&url).map_err(Stop::Failed)?;
        if let Some(rule) = denial(rules, &host) {
            return Err(Stop::Failed(format!(
                "not fetched: {host} is denied by the permission rule {rule}"
            )));
        }
        let addrs = addresses(&url, &host, rules).await.map_err(Stop::Failed)?;
        let response = send(&url, &host, &addrs, limits).await?;
        let status = response.status();
        if !status.is_redirection() {
            return read(url, response, limits).await;
        }
        let next = location(&url, &response).map_err(Stop::Failed)?;
        hops += 1;
        if hops > limits.max_redirects {
            return Err(Stop::Failed(format!(
                "not fetched: more than {} redirects (the last led to {})",
                limits.max_redirects,
                shown(&next)
            )));
        }
        check_url(&next).map_err(|e| Stop::Failed(format!("redirect refused: {e}")))?;
        if self::host(&next).as_deref() != Some(first.as_str()) && !allowed(rules, &next) {
            return Err(Stop::Elsewhere(next));
        }
        url = next;
    }
}

/// A URL as it may be shown: without user name, password or fragment.
pub(crate) fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_fragment(None);
    url.to_string()
}

/// The deny rule that covers `host`, as shown to the model.
fn denial(rules: Option<&Rules>, host: &str) -> Option<String> {
    match rules?.check(
        crate::chat::Builtin::Fetch.name(),
        Target::Domain(host),
        &|_| false,
    ) {
        Verdict::Deny(rule) => Some(format!("`{}` (from {})", rule.text, rule.origin)),
        _ => None,
    }
}

/// Whether an allow rule lets `url`'s host be fetched without asking (so a redirect there may
/// be followed).
fn allowed(rules: Option<&Rules>, url: &Url) -> bool {
    let (Some(rules), Some(host)) = (rules, host(url)) else {
        return false;
    };
    rules.check(
        crate::chat::Builtin::Fetch.name(),
        Target::Domain(&host),
        &|_| false,
    ) == Verdict::Allow
}

/// The addresses `url`'s host stands for, every one checked: a private, loopback or
/// link-local one (or any other that is not the public internet) refuses the whole fetch
/// unless a rule names the host.
async fn addresses(
    url: &Url,
    host: &str,
    rules: Option<&Rules>,
) -> Result<Vec<SocketAddr>, String> {
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("could not resolve {host}: {e}"))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    if rules.is_some_and(|r| r.names_host(host)) {
        return Ok(addrs);
    }
    for addr in &addrs {
        if let Some(why) = address::refused(addr.ip()) {
            let via = if host.parse::<IpAddr>().is_ok() {
                String::new()
            } else {
                format!(" resolves to {}, which", addr.ip())
            };
            return Err(format!(
                "not fetched: {host}{via} is {why}. fetch reaches only public addresses unless \
                 a permission rule names the host: add `fetch(domain:{host})` to the allow \
                 list of [permissions] if the user wants it reached"
            ));
        }
    }
    Ok(addrs)
}

/// Sends one GET to `url`, connecting only to `addrs`.
async fn send(
    url: &Url,
    host: &str,
    addrs: &[SocketAddr],
    limits: &Limits,
) -> Result<reqwest::Response, Stop> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(USER_AGENT)
        .connect_timeout(limits.timeout)
        .http1_only();
    if host.parse::<IpAddr>().is_err() {
        builder = builder.resolve_to_addrs(host, addrs);
    }
    let client = builder
        .build()
        .map_err(|e| Stop::Failed(format!("could not set up the request: {e}")))?;
    client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| Stop::Failed(format!("could not fetch {}: {}", shown(url), chain(&e))))
}

/// An error with its causes, which say what went wrong (refused, reset, certificate).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Where a redirect leads, resolved against the URL that answered.
fn location(url: &Url, response: &reqwest::Response) -> Result<Url, String> {
    let value = response
        .headers()
        .get(reqwest::header::LOCATION)
        .ok_or_else(|| format!("{} redirected without a Location", response.status()))?;
    let text = value
        .to_str()
        .map_err(|_| "a redirect's Location is not text".to_string())?;
    url.join(text)
        .map_err(|e| format!("a redirect's Location is not a URL: {e}"))
}

/// Reads the body, keeping at most `limits.max_bytes`.
async fn read(url: Url, mut response: reqwest::Response, limits: &Limits) -> Result<Fetched, Stop> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let max = usize::try_from(limits.max_bytes).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    let mut capped = false;
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| Stop::Failed(format!("reading {} failed: {}", shown(&url), chain(&e))))?;
        let Some(chunk) = chunk else { break };
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            capped = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        url,
        status,
        content_type,
        body,
        capped,
    })
}
