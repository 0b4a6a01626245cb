//! Precedence and value checks: turns the merged files, the environment and the flags into a
//! [`Config`]. Three seams: the limits (numbers that only files set), the endpoint (server and
//! model: flag, else environment, else file) and the key. Every error names where the bad
//! value came from. It reads no files and must never put a key into an error.

use std::time::Duration;

use super::layers::Layers;
use crate::defaults::{self, bounds};

use super::{
    Config, ConfigError, DEMO_MODEL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, Overrides, ProviderKind,
    Secret,
};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Applies precedence and checks every value.
pub(super) fn resolve(
    layers: Layers,
    env: Env<'_>,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    let provider = if overrides.demo {
        ProviderKind::Demo
    } else {
        layers.file.model.provider.unwrap_or_default()
    };
    let limits = limits(&layers)?;
    let mut layers = layers;
    let mcp_servers = super::mcp::from_tables(std::mem::take(&mut layers.mcp_servers))?;
    let mcp_approvals = std::mem::take(&mut layers.approvals)
        .into_iter()
        .map(|a| super::McpApproval {
            workspace: a.workspace,
            server: a.server,
            sha256: a.sha256,
        })
        .collect();
    let mut notices = Vec::new();
    let telemetry = super::telemetry::resolve(&layers, env, &mut notices)?;
    let flags = super::sandbox::Flags {
        mode: overrides.sandbox,
        network: overrides.network,
    };
    let tables = std::mem::replace(
        &mut layers.sandbox,
        super::sandbox::Tables {
            user: None,
            workspace: None,
        },
    );
    let sandbox = super::sandbox::resolve(tables, flags, &mut notices)?;
    notices.append(&mut layers.notices);
    let mut config = Config {
        provider,
        base_url: String::new(),
        model: DEMO_MODEL.to_string(),
        api_key: None,
        api_key_env: None,
        context_window: limits.context_window,
        context_window_configured: layers.file.model.context_window.is_some(),
        max_tokens: limits.max_tokens,
        request_timeout: limits.request_timeout,
        stream_idle_timeout: limits.stream_idle_timeout,
        max_tool_calls: limits.max_tool_calls,
        send_reasoning: layers.file.model.send_reasoning.unwrap_or(false),
        bash_timeout: limits.bash_timeout,
        max_rounds: limits.max_rounds,
        outputs_max_file_bytes: limits.outputs_max_file_bytes,
        outputs_max_bytes: limits.outputs_max_bytes,
        outputs_max_age: limits.outputs_max_age,
        subagents_max_concurrent: limits.subagents_max_concurrent,
        subagents_timeout: limits.subagents_timeout,
        goal_max_rounds: limits.goal_max_rounds,
        reserve_tokens: layers.file.context.reserve_tokens,
        keep_recent_tokens: layers.file.context.keep_recent_tokens,
        exit_transcript_turns: layers.file.ui.exit_transcript_turns,
        syntax_highlighting: layers.file.ui.syntax_highlighting.unwrap_or(true),
        origins: super::Origins {
            model: "the demo provider".to_string(),
            base_url: "the demo provider (no server)".to_string(),
            context_window: if layers.file.model.context_window.is_some() {
                layers.origin("model.context_window")
            } else {
                "the built-in default".to_string()
            },
        },
        sources: Vec::new(),
        trust: layers.trust,
        mcp_servers,
        mcp_approvals,
        telemetry,
        sandbox,
        plan: overrides.plan,
        notices,
    };
    if provider == ProviderKind::Demo {
        // The demo model needs no server, name or key; anything configured for them is unused.
        // The key and its variable are still known, so that children never inherit the
        // variable and tool output never shows the key.
        (config.api_key, config.api_key_env) =
            key(&layers, env).unwrap_or_else(|_| (None, layers.file.model.api_key_env.clone()));
        config.sources = layers.sources;
        return Ok(config);
    }
    let (base_url, model, base_origin, model_origin) = endpoint(&layers, env, overrides)?;
    config.base_url = base_url;
    config.model = model;
    config.origins.base_url = base_origin;
    config.origins.model = model_origin;
    (config.api_key, config.api_key_env) = key(&layers, env)?;
    config.sources = layers.sources;
    Ok(config)
}

/// The numeric settings, which only files set.
struct Limits {
    context_window: u64,
    max_tokens: u32,
    request_timeout: Duration,
    stream_idle_timeout: Duration,
    max_tool_calls: u32,
    bash_timeout: Duration,
    max_rounds: u32,
    outputs_max_file_bytes: u64,
    outputs_max_bytes: u64,
    outputs_max_age: Duration,
    subagents_max_concurrent: usize,
    subagents_timeout: Duration,
    goal_max_rounds: u32,
}

fn limits(layers: &Layers) -> Result<Limits, ConfigError> {
    let f = &layers.file;
    let invalid = |field: &'static str, reason: String| ConfigError::Invalid {
        origin: layers.origin(field),
        field,
        reason,
    };
    // Every number has a floor of 1 and a documented ceiling; the error names both.
    let bounded = |value: Option<u64>, default: u64, field: &'static str, max: u64| match value {
        Some(v) if v == 0 || v > max => Err(invalid(field, format!("must be between 1 and {max}"))),
        Some(v) => Ok(v),
        None => Ok(default),
    };
    let context_window = bounded(
        f.model.context_window,
        defaults::CONTEXT_WINDOW,
        "model.context_window",
        bounds::CONTEXT_WINDOW,
    )?;
    let max_tokens = bounded(
        f.model.max_tokens.map(u64::from),
        u64::from(defaults::MAX_TOKENS),
        "model.max_tokens",
        bounds::MAX_TOKENS,
    )?;
    let request_timeout = bounded(
        f.model.request_timeout_secs,
        defaults::REQUEST_TIMEOUT.as_secs(),
        "model.request_timeout_secs",
        bounds::TIMEOUT_SECS,
    )?;
    let max_tool_calls = bounded(
        f.model.max_tool_calls.map(u64::from),
        defaults::MAX_TOOL_CALLS as u64,
        "model.max_tool_calls",
        bounds::MAX_TOOL_CALLS,
    )?;
    let stream_idle = bounded(
        f.model.stream_idle_timeout_secs,
        defaults::STREAM_IDLE_TIMEOUT.as_secs(),
        "model.stream_idle_timeout_secs",
        bounds::TIMEOUT_SECS,
    )?;
    let bash_secs = bounded(
        f.tools.bash_timeout_secs,
        defaults::BASH_TIMEOUT.as_secs(),
        "tools.bash_timeout_secs",
        defaults::BASH_TIMEOUT_CEILING.as_secs(),
    )?;
    let max_rounds = bounded(
        f.tools.max_rounds.map(u64::from),
        u64::from(defaults::MAX_ROUNDS),
        "tools.max_rounds",
        bounds::ROUNDS,
    )?;
    let outputs_max_file_bytes = bounded(
        f.tools.outputs_max_file_bytes,
        defaults::OUTPUTS_MAX_FILE_BYTES,
        "tools.outputs_max_file_bytes",
        bounds::OUTPUTS_MAX_FILE_BYTES,
    )?;
    let outputs_max_bytes = bounded(
        f.tools.outputs_max_bytes,
        defaults::OUTPUTS_MAX_BYTES,
        "tools.outputs_max_bytes",
        bounds::OUTPUTS_MAX_BYTES,
    )?;
    let outputs_max_age_days = bounded(
        f.tools.outputs_max_age_days,
        defaults::OUTPUTS_MAX_AGE_DAYS,
        "tools.outputs_max_age_days",
        bounds::OUTPUTS_MAX_AGE_DAYS,
    )?;
    let subagents_max_concurrent = bounded(
        f.subagents.max_concurrent.map(u64::from),
        defaults::SUBAGENTS_MAX_CONCURRENT as u64,
        "subagents.max_concurrent",
        defaults::SUBAGENTS_MAX_CONCURRENT_CEILING as u64,
    )?;
    let subagents_timeout = bounded(
        f.subagents.timeout_secs,
        defaults::SUBAGENTS_TIMEOUT.as_secs(),
        "subagents.timeout_secs",
        bounds::TIMEOUT_SECS,
    )?;
    let goal_max_rounds = bounded(
        f.goal.max_rounds.map(u64::from),
        u64::from(defaults::GOAL_MAX_ROUNDS),
        "goal.max_rounds",
        bounds::ROUNDS,
    )?;
    if let Some(turns) = f.ui.exit_transcript_turns
        && turns > bounds::EXIT_TRANSCRIPT_TURNS
    {
        return Err(invalid(
            "ui.exit_transcript_turns",
            format!("must be between 0 and {}", bounds::EXIT_TRANSCRIPT_TURNS),
        ));
    }
    for (value, field) in [
        (f.context.reserve_tokens, "context.reserve_tokens"),
        (f.context.keep_recent_tokens, "context.keep_recent_tokens"),
    ] {
        if value.is_some_and(|v| v >= context_window) {
            return Err(invalid(
                field,
                "must be smaller than model.context_window".to_string(),
            ));
        }
    }
    Ok(Limits {
        context_window,
        // These came from a u32, so the conversions cannot saturate.
        max_tokens: u32::try_from(max_tokens).unwrap_or(u32::MAX),
        request_timeout: Duration::from_secs(request_timeout),
        stream_idle_timeout: Duration::from_secs(stream_idle),
        max_tool_calls: u32::try_from(max_tool_calls).unwrap_or(u32::MAX),
        bash_timeout: Duration::from_secs(bash_secs),
        max_rounds: u32::try_from(max_rounds).unwrap_or(u32::MAX),
        outputs_max_file_bytes,
        outputs_max_bytes,
        outputs_max_age: Duration::from_secs(outputs_max_age_days.saturating_mul(24 * 60 * 60)),
        // Checked against its ceiling above.
        subagents_max_concurrent: usize::try_from(subagents_max_concurrent).unwrap_or(1),
        subagents_timeout: Duration::from_secs(subagents_timeout),
        // It came from a u32.
        goal_max_rounds: u32::try_from(goal_max_rounds).unwrap_or(u32::MAX),
    })
}

/// The server and the model name: each the flag if given, else the environment, else the files.
fn endpoint(
    layers: &Layers,
    env: Env<'_>,
    overrides: &Overrides,
) -> Result<(String, String, String, String), ConfigError> {
    let m = &layers.file.model;
    let pick = |flag: &Option<String>,
                flag_name: &'static str,
                env_name: &'static str,
                field: &'static str,
                from_file: &Option<String>| {
        if let Some(v) = flag {
            Some((v.clone(), flag_name.to_string()))
        } else if let Some(v) = env(env_name) {
            Some((v, format!("environment variable {env_name}")))
        } else {
            from_file.clone().map(|v| (v, layers.origin(field)))
        }
    };
    let base_url = pick(
        &overrides.base_url,
        "--base-url",
        ENV_BASE_URL,
        "model.base_url",
        &m.base_url,
    );
    let model = pick(
        &overrides.model,
        "--model",
        ENV_MODEL,
        "model.name",
        &m.name,
    );
    // Nothing anywhere names a server or a model (a user file may exist and only hold the
    // trust list): the how-to helps more than "missing field".
    if base_url.is_none() && model.is_none() {
        return Err(ConfigError::Missing);
    }
    let (base_url, base_origin) = base_url.ok_or_else(|| ConfigError::Required {
        origin: layers.origin("model.base_url"),
        field: "model.base_url",
        env: ENV_BASE_URL,
    })?;
    let (model, model_origin) = model.ok_or_else(|| ConfigError::Required {
        origin: layers.origin("model.name"),
        field: "model.name",
        env: ENV_MODEL,
    })?;
    let base_url = check_base_url(base_url, base_origin.clone())?;
    if model.trim().is_empty() {
        return Err(ConfigError::Invalid {
            origin: model_origin,
            field: "model.name",
            reason: "must not be empty".to_string(),
        });
    }
    Ok((base_url, model, base_origin, model_origin))
}

/// The key: `MINICODE_API_KEY`, else `api_key`, else the variable `api_key_env` names (none
/// when it is unset); and the variable it came from or would come from, so tools can remove
/// it from child processes and an authentication failure can name it.
fn key(layers: &Layers, env: Env<'_>) -> Result<(Option<Secret>, Option<String>), ConfigError> {
    let m = &layers.file.model;
    let invalid = |field: &'static str, reason: &str| ConfigError::Invalid {
        origin: layers.origin(field),
        field,
        reason: reason.to_string(),
    };
    let configured_env = match (&m.api_key, &m.api_key_env) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "model.api_key_env",
                "set either api_key or api_key_env, not both",
            ));
        }
        (_, Some(name)) if name.is_empty() || name.contains(['=', '\0']) => {
            return Err(invalid(
                "model.api_key_env",
                "must be the name of an environment variable",
            ));
        }
        (_, name) => name.clone(),
    };
    if m.api_key.as_ref().is_some_and(|k| k.expose().is_empty()) {
        return Err(invalid(
            "model.api_key",
            "must not be empty (leave it out if the server needs no key)",
        ));
    }
    if let Some(key) = env(ENV_API_KEY) {
        let from = configured_env.unwrap_or_else(|| ENV_API_KEY.to_string());
        return Ok((Some(Secret::new(key)), Some(from)));
    }
    if let Some(key) = &m.api_key {
        return Ok((Some(key.clone()), None));
    }
    // A variable that is unset means no key: many servers need none, and one that does says
    // so (401), when the provider names the variable to set.
    Ok((
        configured_env.as_deref().and_then(env).map(Secret::new),
        configured_env,
    ))
}

/// Accepts an `http://` or `https://` URL and drops trailing slashes, so the provider can
/// append `/chat/completions` without doubling them.
fn check_base_url(url: String, origin: String) -> Result<String, ConfigError> {
    let trimmed = url.trim().trim_end_matches('/');
    let scheme_ok = trimmed.starts_with("http://") || trimmed.starts_with("https://");
    let has_host = trimmed
        .split_once("://")
        .is_some_and(|(_, rest)| !rest.is_empty());
    if !scheme_ok || !has_host {
        return Err(ConfigError::Invalid {
            origin,
            field: "model.base_url",
            reason: "must be an http:// or https:// URL".to_string(),
        });
    }
    Ok(trimmed.to_string())
}
