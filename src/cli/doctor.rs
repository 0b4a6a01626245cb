//! `minicode doctor`: checks the configured model server step by step — reachable (and TLS),
//! key accepted, model listed, streaming, usage in the stream, a forced tool call and its
//! result sent back, the context window and where it came from, the reasoning format, the
//! parameters it refuses, latency to the first token and speed — and says for each failing
//! step what to change. Exit 0 when the server can run the agent, 1 when it cannot, 2 for a
//! configuration error. The checks are here; the table and the JSON are in `doctor/report.rs`.
//!
//! It talks only to the configured server, through the same hardened client as a session
//! (no redirects, the key only in the header and scrubbed from every message, the report
//! redacted once more as a whole), and starts no session or tool. Its sandbox section
//! (`doctor/sandbox.rs`) tries the `bash` helper once, confined, running `true`; it and the
//! config files looked at (`doctor/files.rs`) are shown even when no model is configured, and
//! so is the language-server section (`doctor/lsp.rs`), which only looks servers up.

mod files;
mod findings;
mod lsp;
mod report;
mod sandbox;
mod tally;
mod text_calls;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::{Failure, usage};
use crate::chat::{Message, ToolCall, ToolSpec};
use crate::config::{Config, ProviderKind};
use crate::print::OutputFormat;
use crate::provider::openai::{Extras, OpenAi};
use crate::provider::{
    ChatRequest, ProviderError, ReasoningFormat, Reply, ServerInfo, StreamEvent,
};
use findings::{Check, Findings, Status};

/// The most one doctor request may take (a slow local model still answers within it).
const REQUEST_LIMIT: Duration = Duration::from_secs(120);
/// The most the `/models` and probe requests may take.
const PROBE_LIMIT: Duration = Duration::from_secs(10);
/// The trivial tool the round trip forces.
const TOOL: &str = "ping";
/// Reply limits of the checks: enough for a word (or a short think) and for a call with empty
/// arguments, small enough that a slow CPU model that rambles instead still ends soon.
const STREAM_TOKENS: u32 = 64;
const TOOL_TOKENS: u32 = 128;
/// What to do about a server that cannot call tools.
const NO_TOOLS_FIX: &str = "use a model (and server setup) that supports tool calls — \
llama.cpp: --jinja and a tool-capable template; vLLM: --enable-auto-tool-choice \
--tool-call-parser …; Ollama: a model tagged 'tools' — or run minicode with --no-tools for \
plain chat";

/// `minicode doctor`.
pub(super) fn run(
    env: &dyn Fn(&str) -> Option<String>,
    launch: &Path,
    flags: &super::ServerFlags,
    format: OutputFormat,
) -> Result<ExitCode, Failure> {
    let overrides = flags.overrides(false);
    let config_files = files::looked_at(env, launch, overrides.config_path.as_deref());
    if let Err(missing @ crate::config::ConfigError::Missing { .. }) =
        crate::config::load(launch, env, &overrides)
    {
        return Err(unconfigured(
            missing.to_string(),
            config_files,
            env,
            launch,
            format,
        ));
    }
    let super::prelude::Started {
        mut config,
        log: _log,
        runtime,
    } = super::prelude::start(super::prelude::Setup {
        env,
        launch,
        overrides,
        refused: super::prelude::Refused::Fail,
        log: super::prelude::Log::OnRequest,
    })?;
    if config.provider == ProviderKind::Demo {
        return Err(usage(
            "the configured provider is the built-in demo model: there is no server to check",
        ));
    }
    config.request_timeout = config.request_timeout.min(REQUEST_LIMIT);
    let provider = super::provider::openai(&config, env)?;
    let mut findings = runtime.block_on(examine(&provider, &config));
    findings.sandbox = sandbox::checks(&config.sandbox.hidden);
    findings.lsp = language_servers(&config.lsp, launch, env);
    findings.config_files = config_files;
    files::mark_read(&mut findings.config_files, &config);
    // Server text reaches the details (a model id, a streamed reply, an error message): a
    // server that echoes the key must not get it printed.
    findings.redact(&crate::tools::Secrets::new(
        config.api_key.iter().map(|k| k.expose().to_string()),
    ));
    report::print(&findings, format);
    Ok(if findings.usable() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The language-server rows, looked up on the `PATH` a session would search.
fn language_servers(
    settings: &crate::lsp::Settings,
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<findings::Check> {
    let path_var = env("PATH").map(std::ffi::OsString::from);
    lsp::checks(settings, workspace, path_var.as_deref())
}

/// No model is configured: the config files looked at and the sandbox section are printed
/// all the same (a new user may check the sandbox first), then the set-up message, exit 2.
fn unconfigured(
    setup: String,
    config_files: Vec<files::ConfigFile>,
    env: &dyn Fn(&str) -> Option<String>,
    launch: &Path,
    format: OutputFormat,
) -> Failure {
    let findings = Findings {
        sandbox: sandbox::checks(&crate::sandbox::hidden::list(
            env,
            crate::config::user_config_path(env).as_deref(),
            &[],
        )),
        lsp: language_servers(&crate::lsp::Settings::default(), launch, env),
        config_files,
        setup: Some(setup.clone()),
        ..Findings::default()
    };
    report::print(&findings, format);
    usage(setup)
}

/// Runs every check in order; a step that makes the rest pointless marks them skipped.
async fn examine(provider: &OpenAi, config: &Config) -> Findings {
    let mut f = Findings {
        server: shown_url(&config.base_url),
        model: config.model.clone(),
        ..Findings::default()
    };
    let listed = match connect(provider, config, &mut f).await {
        Some(listed) => listed,
        None => {
            for name in ["streaming", "usage", "tools", "context window"] {
                f.add(name, Status::Skip, "not checked: the server cannot be used");
            }
            return f;
        }
    };
    check_model(config, listed.as_deref(), &mut f);
    let probed = provider.probe_now(PROBE_LIMIT).await;
    let streamed = check_streaming(provider, &mut f).await;
    let mut formats: Vec<ReasoningFormat> = Vec::new();
    match &streamed {
        Some(reply) => {
            check_usage(reply, &mut f);
            formats.extend(reply.reasoning_format);
            let recover = config.small.recover_tool_calls;
            let tooled = check_tools(provider, probed.as_ref(), recover, &mut f).await;
            formats.extend(tooled.and_then(|r| r.reasoning_format));
        }
        None => {
            for name in ["usage", "tools"] {
                f.add(name, Status::Skip, "not checked: streaming failed");
            }
        }
    }
    check_window(probed.as_ref(), config, &mut f);
    match formats.first() {
        Some(format) => f.add("reasoning", Status::Ok, format!("seen: {}", format.label())),
        None => f.add(
            "reasoning",
            Status::Ok,
            "none seen (not a reasoning model, or it did not think)",
        ),
    }
    let quirks = provider.quirks().describe();
    if quirks.is_empty() {
        f.add("quirks", Status::Ok, "none: every parameter was accepted");
    } else {
        f.add(
            "quirks",
            Status::Ok,
            format!("adapted: {}", quirks.join(", ")),
        );
    }
    tally::check(provider, &mut f);
    match f.first_token {
        Some(t) => f.add(
            "latency",
            Status::Ok,
            format!("{:.2} s to the first token", t.as_secs_f64()),
        ),
        None => f.add("latency", Status::Skip, "no token streamed"),
    }
    match f.tokens_per_second {
        Some(tps) => f.add("speed", Status::Ok, format!("{tps:.1} tokens/s")),
        None => f.add(
            "speed",
            Status::Skip,
            "not measurable (no usage and no text)",
        ),
    }
    f
}

/// Reachable, TLS and key, through `GET {base}/models`. Returns the listed model ids (`None`
/// when the server has no such list), or `None` outright when nothing else can work.
async fn connect(
    provider: &OpenAi,
    config: &Config,
    f: &mut Findings,
) -> Option<Option<Vec<String>>> {
    let tls = config.base_url.starts_with("https://");
    let (status, body) = match provider.get("/models", PROBE_LIMIT).await {
        Ok(answer) => answer,
        Err(e) => {
            let message = e.to_string();
            let lower = message.to_ascii_lowercase();
            let fix = if tls && (lower.contains("certificate") || lower.contains("tls")) {
                "the TLS handshake failed: check the server's certificate, or use http:// for a \
                 local server without TLS"
            } else {
                "is the server running and listening there? Check [model] base_url (or \
                 MINICODE_BASE_URL / --base-url), including the port and the /v1 suffix"
            };
            f.fail("reachable", message, fix);
            f.add(
                "auth",
                Status::Skip,
                "not checked: the server cannot be reached",
            );
            return None;
        }
    };
    let how = if tls { "HTTPS (TLS ok)" } else { "HTTP" };
    f.add("reachable", Status::Ok, format!("{how}, answered {status}"));
    let keyed = config.api_key.is_some();
    match status {
        200..=299 => {
            let detail = if keyed {
                "key accepted"
            } else {
                "no key sent, none needed"
            };
            f.add("auth", Status::Ok, detail);
            let v: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
            Some(v.map(|v| crate::provider::probe::parse::listed_ids(&v, 1000)))
        }
        401 | 403 => {
            let fix = if keyed {
                "the server refused the key: check api_key / api_key_env in your config or \
                 MINICODE_API_KEY"
            } else {
                "the server wants a key: set api_key_env (or api_key) in [model], or \
                 MINICODE_API_KEY"
            };
            f.fail("auth", format!("refused ({status})"), fix);
            None
        }
        300..=399 => {
            f.fail(
                "auth",
                format!("the server redirects ({status}); redirects are not followed"),
                "set base_url to the address that answers",
            );
            None
        }
        _ => {
            f.add(
                "auth",
                Status::Skip,
                format!("/models answered {status}; the key is checked by the chat request"),
            );
            Some(None)
        }
    }
}

fn check_model(config: &Config, listed: Option<&[String]>, f: &mut Findings) {
    match listed {
        Some(ids) if ids.contains(&config.model) => {
            f.add("model", Status::Ok, format!("{} is listed", config.model));
        }
        Some([only]) => f.warn(
            "model",
            format!(
                "{} is not listed; the server lists only {only}",
                config.model
            ),
            format!(
                "single-model servers (llama.cpp) answer with their loaded model whatever the \
                 name; elsewhere set [model] name = \"{only}\""
            ),
        ),
        Some(ids) if !ids.is_empty() => {
            let some: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
            f.warn(
                "model",
                format!(
                    "{} is not among the {} listed ({}…)",
                    config.model,
                    ids.len(),
                    some.join(", ")
                ),
                "set [model] name (or --model) to one of the listed ids",
            );
        }
        _ => f.add("model", Status::Skip, "the server lists no models"),
    }
}

/// What one streamed request gave.
struct Streamed {
    reply: Result<Reply, ProviderError>,
    first_token: Option<Duration>,
    elapsed: Duration,
}

async fn stream(provider: &OpenAi, request: &ChatRequest<'_>, extras: Extras) -> Streamed {
    let started = Instant::now();
    let mut first_token = None;
    let mut events = provider.stream_with(request, extras);
    let mut reply = Err(ProviderError::Protocol(
        "the stream ended without a reply".into(),
    ));
    while let Some(event) = events.next().await {
        match event {
            Ok(StreamEvent::Text(_) | StreamEvent::Reasoning(_)) => {
                first_token.get_or_insert_with(|| started.elapsed());
            }
            Ok(StreamEvent::Retrying { .. }) => {}
            Ok(StreamEvent::Done(r)) => reply = Ok(*r),
            Err(e) => reply = Err(e),
        }
    }
    Streamed {
        reply,
        first_token,
        elapsed: started.elapsed(),
    }
}

/// The fix for an error a chat request got.
fn fix_for(e: &ProviderError) -> String {
    match e {
        ProviderError::Auth { .. } => {
            "the server refused the key: check api_key / api_key_env or MINICODE_API_KEY".into()
        }
        ProviderError::NoTools { .. } => {
            "use a model that supports tool calls, or run minicode with --no-tools for plain chat"
                .into()
        }
        ProviderError::Request { status: 404, .. } => {
            "the server does not know this model or path: check [model] name and base_url".into()
        }
        ProviderError::ContextLength { .. } => {
            "the server's context is too small even for a short request: give it a larger \
             context (llama.cpp -c, vLLM --max-model-len, Ollama num_ctx)"
                .into()
        }
        ProviderError::Timeout(_) => {
            "the server is too slow or stalled: check its load, or raise request_timeout_secs"
                .into()
        }
        _ => "see the server's message; check its logs".into(),
    }
}

async fn check_streaming(provider: &OpenAi, f: &mut Findings) -> Option<Reply> {
    let user = Message::user("Reply with the single word: ok");
    let messages = [&user];
    let request = ChatRequest {
        messages: &messages,
        tools: &[],
        max_tokens: STREAM_TOKENS,
        statuses: &[],
    };
    let s = stream(provider, &request, Extras::default()).await;
    match s.reply {
        Ok(reply) => {
            let shown: String = reply.text.trim().chars().take(40).collect();
            let detail = if shown.is_empty() && !reply.reasoning.is_empty() {
                "streamed reasoning only (the token limit was spent thinking)".to_string()
            } else {
                format!("streamed a reply: {shown:?}")
            };
            f.add("streaming", Status::Ok, detail);
            f.first_token = s.first_token;
            f.tokens_per_second = speed(&reply, s.first_token, s.elapsed);
            Some(reply)
        }
        Err(e) => {
            let fix = fix_for(&e);
            f.fail("streaming", e.to_string(), fix);
            None
        }
    }
}

/// Completion tokens per second after the first token (usage when reported, else ~4 bytes a
/// token).
fn speed(reply: &Reply, first: Option<Duration>, elapsed: Duration) -> Option<f64> {
    let tokens = match reply.usage {
        Some(u) if u.output_tokens > 0 => u.output_tokens as f64,
        _ => ((reply.text.len() + reply.reasoning.len()) / 4) as f64,
    };
    let generating = elapsed.checked_sub(first?)?.as_secs_f64();
    (tokens > 1.0 && generating > 0.0).then(|| (tokens - 1.0) / generating)
}

fn check_usage(reply: &Reply, f: &mut Findings) {
    match reply.usage {
        Some(u) => f.add(
            "usage",
            Status::Ok,
            format!("reported: {} in / {} out", u.input_tokens, u.output_tokens),
        ),
        None => f.warn(
            "usage",
            "the stream carried no token usage",
            "statistics will say 'tokens unavailable' and the context size is only estimated; \
             a server that supports stream_options.include_usage fixes this",
        ),
    }
}

/// Forces a call of a trivial tool, then sends its result back and asks for the answer.
async fn check_tools(
    provider: &OpenAi,
    probed: Option<&ServerInfo>,
    recover: bool,
    f: &mut Findings,
) -> Option<Reply> {
    let spec = ToolSpec {
        name: TOOL.into(),
        description: "Answers pong. Call it when asked to ping.".into(),
        parameters: serde_json::json!({"type": "object", "properties": {}}),
    };
    let tools = [spec];
    let user = Message::user("Call the ping tool now.");
    let messages = [&user];
    let request = ChatRequest {
        messages: &messages,
        tools: &tools,
        max_tokens: TOOL_TOKENS,
        statuses: &[],
    };
    let extras = Extras {
        tool_choice: Some(TOOL.to_string()),
        parallel_tool_calls: Some(false),
        ..Extras::default()
    };
    let first = match stream(provider, &request, extras).await.reply {
        Ok(reply) => reply,
        Err(e) if probed.and_then(|i| i.supports_tools) == Some(false) => {
            f.fail(
                "tools",
                format!("the server's chat template cannot render tools (it says so); the forced call failed: {e}"),
                NO_TOOLS_FIX,
            );
            return None;
        }
        Err(e) => {
            let fix = fix_for(&e);
            f.fail("tools", e.to_string(), fix);
            return None;
        }
    };
    let Some(call) = first.tool_calls.iter().find(|c| c.name == TOOL).cloned() else {
        if first.tool_calls.is_empty() && text_calls::judged(&first, &tools, recover, f) {
            return Some(first);
        }
        let forced = !provider.quirks().no_tool_choice;
        let caps = probed.and_then(|i| i.supports_tools);
        let why = match (forced, caps) {
            (_, Some(false)) => "the server's chat template cannot render tools (it says so)",
            (true, _) => {
                "the server ignored a forced tool call: its template likely cannot render tools"
            }
            (false, _) => {
                "the model did not call the tool (the server refuses tool_choice, so it could not be forced)"
            }
        };
        text_calls::never(f, why);
        return Some(first);
    };
    // The result goes back like in a session: the call, its result, then the answer.
    let asked = Message::assistant(
        None,
        vec![ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: "{}".into(),
        }],
    );
    let result = Message::tool_result(call.id.clone(), "pong");
    let messages = [&user, &asked, &result];
    let request = ChatRequest {
        messages: &messages,
        tools: &tools,
        max_tokens: TOOL_TOKENS,
        statuses: &[],
    };
    match stream(provider, &request, Extras::default()).await.reply {
        Ok(_) => f.add(
            "tools",
            Status::Ok,
            "calls natively: a forced call and its result round-tripped",
        ),
        Err(e) => f.fail(
            "tools",
            format!("the call came, but sending its result back failed: {e}"),
            "the server's template cannot render tool results; use another model or template, \
             or --no-tools",
        ),
    }
    Some(first)
}

fn check_window(probed: Option<&ServerInfo>, config: &Config, f: &mut Findings) {
    let stated = probed.and_then(|i| i.context_window.zip(i.via.clone()));
    if config.context_window_configured {
        f.window = Some((config.context_window, "config"));
        match stated {
            Some((n, via)) if n < config.context_window => f.warn(
                "context window",
                format!("{} (config), but the server says {n} ({via})", config.context_window),
                format!("requests beyond {n} tokens will fail: set [model] context_window = {n} or remove it"),
            ),
            _ => f.add("context window", Status::Ok, format!("{} (config)", config.context_window)),
        }
        return;
    }
    match stated {
        Some((n, via)) => {
            f.window = Some((n, "probe"));
            f.add("context window", Status::Ok, format!("{n} (probe: {via})"));
        }
        None => {
            f.window = Some((config.context_window, "default"));
            f.warn(
                "context window",
                format!(
                    "{} (default): the server does not say",
                    config.context_window
                ),
                "set [model] context_window to the server's real window; until then the first \
                 context-length error that names it corrects the window",
            );
        }
    }
}

/// The base URL as shown: without user name, password or query (they may hold a token).
fn shown_url(base: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => "(invalid url)".to_string(),
    }
}
