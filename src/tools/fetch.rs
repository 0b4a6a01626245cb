//! The `fetch` tool: one web page (http or https) as Markdown for the model. It runs in
//! minicode, not in the `bash` sandbox, so it needs no `--network`; what keeps it in bounds is
//! here: it is asked like any tool (rules by host: `fetch(domain:docs.rs)`), it refuses
//! private, loopback and link-local addresses unless a rule names the host (checked after
//! name resolution, on the very addresses it connects to: see `request`), it follows at most
//! a few redirects on the same host, and it caps time and size. It never sends the model's
//! key, cookies or credentials, and never runs what it fetched.

mod address;
mod page;
mod request;

use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::bash::Sink;
use super::{Aim, Prepared, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{ApprovalRequest, ToolKind, ToolSpec};

/// How far one `fetch` may go: `[fetch]` in the configuration deserialises straight into it
/// (unknown keys refused; a missing key takes its value from [`Default`], the one place the
/// defaults are written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// The whole fetch, redirects and reading included (`timeout_secs`).
    #[serde(rename = "timeout_secs", deserialize_with = "crate::defaults::secs")]
    pub timeout: Duration,
    /// Bytes of body read; the rest is not downloaded.
    pub max_bytes: u64,
    /// Redirects followed (on the same host) before the fetch is refused: not a setting.
    #[serde(skip)]
    pub(crate) max_redirects: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: crate::defaults::FETCH_TIMEOUT,
            max_bytes: crate::defaults::FETCH_MAX_BYTES,
            max_redirects: 5,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    url: String,
}

/// The tool.
pub(crate) struct Fetch;

/// The URL of a call, checked (scheme, host, no credentials), and its host.
fn checked(args: &Args) -> Result<(Url, String), String> {
    let mut url =
        Url::parse(args.url.trim()).map_err(|e| format!("invalid arguments: url: {e}"))?;
    url.set_fragment(None);
    let host = request::check_url(&url)?;
    Ok((url, host))
}

impl Typed for Fetch {
    type Args = Args;
    type Checked = Url;

    fn aim(args: &Args) -> Aim {
        checked(args).map_or(Aim::Call, |(_, host)| Aim::Host(host))
    }

    fn check(&self, args: &Args, _ctx: &ToolCtx) -> Result<Url, String> {
        checked(args).map(|(url, _)| url)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::Fetch.name().into(),
            description: "Fetch one web page (http or https) and return it as Markdown (text \
                          and JSON as they are). Use it to read documentation, an issue or an \
                          API reference the user points to. Private and local addresses are \
                          refused unless the user allowed them; redirects to another host are \
                          not followed but returned, so you can fetch that URL; images and \
                          other binary files are refused. Long pages are cut; the full text is \
                          saved to a file you can read."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The page's http:// or https:// URL."}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        }
    }

    fn brief(&self) -> Option<&'static str> {
        Some("Fetch a web page (http/https) as Markdown.")
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Fetch
    }

    fn describe(&self, url: Url, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let url = request::shown(&url);
        Ok(Prepared {
            summary: url.clone(),
            approval: Some(ApprovalRequest::Fetch { url }),
            protected: None,
        })
    }

    fn run<'a>(&'a self, url: Url, ctx: &'a ToolCtx, cancel: CancellationToken) -> ToolFuture<'a> {
        Box::pin(async move {
            let limits = ctx.fetch;
            let rules = ctx.permissions.as_deref();
            let got = tokio::select! {
                biased;
                _ = cancel.cancelled() => return ToolOutput::interrupted("interrupted by the user"),
                got = tokio::time::timeout(limits.timeout, request::get(url, &limits, rules)) => got,
            };
            match got {
                Err(_) => ToolOutput::failed(format!(
                    "not fetched: the page took longer than {} s (the fetch time limit)",
                    limits.timeout.as_secs_f64()
                )),
                Ok(Err(request::Stop::Failed(why))) => ToolOutput::failed(why),
                Ok(Err(request::Stop::Elsewhere(next))) => ToolOutput::failed(format!(
                    "not followed: the page redirects to another host, {}. Call fetch with \
                     that URL to read it (it is asked for like any fetch)",
                    request::shown(&next)
                )),
                Ok(Ok(fetched)) => shown(fetched, ctx, &cancel).await,
            }
        })
    }
}

/// The fetched page as the model reads it: a header line (where it came from, its type and
/// size), then the text, cut to the output limit with the whole saved to a file.
async fn shown(fetched: request::Fetched, ctx: &ToolCtx, cancel: &CancellationToken) -> ToolOutput {
    let request::Fetched {
        url,
        status,
        content_type,
        body,
        capped,
    } = fetched;
    let size = body.len();
    let kind = content_type.clone();
    let text = match super::off_runtime(cancel, "fetch", move || page::text(&kind, &body)).await {
        Ok(text) => text,
        Err(out) => return out,
    };
    let cut = if capped {
        format!(", cut at the {size}-byte download limit")
    } else {
        String::new()
    };
    let mut header = format!("{} ({status}", request::shown(&url));
    if !content_type.is_empty() {
        header.push_str(&format!(", {content_type}"));
    }
    header.push_str(&format!(", {size} bytes{cut})\n\n"));
    let mut sink = Sink::new(ctx, ctx.output_limit());
    sink.push(header.as_bytes());
    sink.push(text.as_bytes());
    let content = sink.finish(&ctx.workspace);
    if (200..300).contains(&status) {
        ToolOutput::ok(content)
    } else {
        ToolOutput::failed(format!("the server answered {status}:\n{content}"))
    }
}
