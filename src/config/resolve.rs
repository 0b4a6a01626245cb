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
    let fetch = fetch_limits(&Bounded(&layers))?;
    let mut layers = layers;
    let (mcp_servers, mcp_approvals) = mcp(&mut layers)?;
    let permissions = super::permissions::rules(&layers.permissions)?;
    let hooks = super::hooks::from_tables(std::mem::take(&mut layers.hooks))?;
    // An eval run measures the model on the task as written: the user's hooks stay out.
    let hooks = if overrides.no_hooks {
        Vec::new()
    } else {
        hooks
    };
    let lsp = std::mem::take(&mut layers.lsp).resolve()?;
    let hook_approvals = super::hooks::approvals(std::mem::take(&mut layers.hook_approvals));
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
    let sandbox = super::sandbox::resolve(tables, flags, env, &mut notices)?;
    notices.append(&mut layers.notices);
    let mut config = Config {
        provider,
        base_url: String::new(),
        model: DEMO_MODEL.to_string(),
        api_key: None,
        api_key_env: None,
        context_window: limits.model.context_window,
        context_window_configured: layers.file.model.context_window.is_some(),
        max_tokens: limits.model.max_tokens,
        request_timeout: limits.model.request_timeout,
        stream_idle_timeout: limits.model.stream_idle_timeout,
        max_tool_calls: limits.model.max_tool_calls,
        send_reasoning: layers.file.model.send_reasoning.unwrap_or(false),
        small: small_model(&layers),
        model_profile: model_profile(&layers)?,
        bash_timeout: limits.bash_timeout,
        max_rounds: limits.max_rounds,
        outputs_max_file_bytes: limits.outputs_max_file_bytes,
        outputs_max_bytes: limits.outputs_max_bytes,
        outputs_max_age: limits.outputs_max_age,
        max_background: limits.max_background,
        subagents_max_concurrent: limits.subagents_max_concurrent,
        subagents_timeout: limits.subagents_timeout,
        fetch,
        goal: limits.goal,
        checkpoints: limits.checkpoints,
        lsp,
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
        ignored_sources: std::mem::take(&mut layers.ignored),
        trust: layers.trust,
        mcp_servers,
        mcp_approvals,
        telemetry,
        permissions,
        hooks,
        hook_approvals,
        sandbox,
        plan: overrides.plan,
        notices,
    };
    server_and_key(&mut config, &layers, env, overrides)?;
    config.sources = layers.sources;
    Ok(config)
}

/// The configured MCP servers, checked, and the user's approvals of `.mcp.json` servers.
fn mcp(
    layers: &mut Layers,
) -> Result<(Vec<super::McpServer>, Vec<super::McpApproval>), ConfigError> {
    let servers = super::mcp::from_tables(std::mem::take(&mut layers.mcp_servers))?;
    let approvals = std::mem::take(&mut layers.approvals)
        .into_iter()
        .map(|a| super::McpApproval {
            workspace: a.workspace,
            server: a.server,
            sha256: a.sha256,
        })
        .collect();
    Ok((servers, approvals))
}

/// The server, the model and the key, with where each came from.
fn server_and_key(
    config: &mut Config,
    layers: &Layers,
    env: Env<'_>,
    overrides: &Overrides,
) -> Result<(), ConfigError> {
    if config.provider == ProviderKind::Demo {
        // The demo model needs no server, name or key; anything configured for them is unused.
        // The key and its variable are still known, so that children never inherit the
        // variable and tool output never shows the key.
        (config.api_key, config.api_key_env) =
            key(layers, env, "").unwrap_or_else(|_| (None, layers.file.model.api_key_env.clone()));
        return Ok(());
    }
    let (base_url, model, base_origin, model_origin) = endpoint(layers, env, overrides)?;
    config.base_url = base_url;
    config.model = model;
    config.origins.base_url = base_origin;
    config.origins.model = model_origin;
    (config.api_key, config.api_key_env) = key(layers, env, &config.base_url)?;
    Ok(())
}

/// The numeric settings, which only files set.
struct Limits {
    model: ModelLimits,
    bash_timeout: Duration,
    max_rounds: u32,
    outputs_max_file_bytes: u64,
    outputs_max_bytes: u64,
    outputs_max_age: Duration,
    max_background: usize,
    subagents_max_concurrent: usize,
    subagents_timeout: Duration,
    goal: crate::agent::goal::Settings,
    checkpoints: crate::checkpoints::Settings,
}

/// The numbers of `[model]`.
struct ModelLimits {
    context_window: u64,
    max_tokens: u32,
    request_timeout: Duration,
    stream_idle_timeout: Duration,
    max_tool_calls: u32,
}

/// One number of a file checked against its floor of 1 and its documented ceiling: the error
/// names both, and where the value came from.
struct Bounded<'a>(&'a Layers);

impl Bounded<'_> {
    fn invalid(&self, field: &'static str, reason: String) -> ConfigError {
        ConfigError::Invalid {
            origin: self.0.origin(field),
            field,
            reason,
        }
    }

    fn check(
        &self,
        value: Option<u64>,
        default: u64,
        field: &'static str,
        max: u64,
    ) -> Result<u64, ConfigError> {
        match value {
            Some(v) if v == 0 || v > max => {
                Err(self.invalid(field, format!("must be between 1 and {max}")))
            }
            Some(v) => Ok(v),
            None => Ok(default),
        }
    }

    /// A part's number, its default already filled in: checked only against its bounds.
    fn within(&self, value: u64, field: &'static str, max: u64) -> Result<u64, ConfigError> {
        self.check(Some(value), value, field, max)
    }

    /// A count the file gives as a u32: the value came from a u32, so it cannot saturate.
    fn count(
        &self,
        value: Option<u32>,
        default: u32,
        field: &'static str,
        max: u64,
    ) -> Result<u32, ConfigError> {
        let checked = self.check(value.map(u64::from), u64::from(default), field, max)?;
        Ok(u32::try_from(checked).unwrap_or(u32::MAX))
    }

    fn secs(
        &self,
        value: Option<u64>,
        default: Duration,
        field: &'static str,
        max: u64,
    ) -> Result<Duration, ConfigError> {
        self.check(value, default.as_secs(), field, max)
            .map(Duration::from_secs)
    }
}

/// Every number, checked in the order the fields are documented (the first bad one is named).
fn limits(layers: &Layers) -> Result<Limits, ConfigError> {
    let f = &layers.file;
    let b = Bounded(layers);
    let model = model_limits(&b)?;
    let context_window = model.context_window;
    let limits = Limits {
        model,
        bash_timeout: b.secs(
            f.tools.bash_timeout_secs,
            defaults::BASH_TIMEOUT,
            "tools.bash_timeout_secs",
            defaults::BASH_TIMEOUT_CEILING.as_secs(),
        )?,
        max_rounds: b.count(
            f.tools.max_rounds,
            defaults::MAX_ROUNDS,
            "tools.max_rounds",
            bounds::ROUNDS,
        )?,
        outputs_max_file_bytes: b.check(
            f.tools.outputs_max_file_bytes,
            defaults::OUTPUTS_MAX_FILE_BYTES,
            "tools.outputs_max_file_bytes",
            bounds::OUTPUTS_MAX_FILE_BYTES,
        )?,
        outputs_max_bytes: b.check(
            f.tools.outputs_max_bytes,
            defaults::OUTPUTS_MAX_BYTES,
            "tools.outputs_max_bytes",
            bounds::OUTPUTS_MAX_BYTES,
        )?,
        outputs_max_age: b
            .check(
                f.tools.outputs_max_age_days,
                defaults::OUTPUTS_MAX_AGE_DAYS,
                "tools.outputs_max_age_days",
                bounds::OUTPUTS_MAX_AGE_DAYS,
            )
            .map(|days| Duration::from_secs(days.saturating_mul(24 * 60 * 60)))?,
        // Checked against its ceiling, so it fits.
        max_background: b
            .check(
                f.tools.max_background,
                defaults::MAX_BACKGROUND as u64,
                "tools.max_background",
                defaults::MAX_BACKGROUND_CEILING as u64,
            )
            .map(|n| usize::try_from(n).unwrap_or(1))?,
        subagents_max_concurrent: b
            .check(
                f.subagents.max_concurrent.map(u64::from),
                defaults::SUBAGENTS_MAX_CONCURRENT as u64,
                "subagents.max_concurrent",
                defaults::SUBAGENTS_MAX_CONCURRENT_CEILING as u64,
            )
            .map(|n| usize::try_from(n).unwrap_or(1))?,
        subagents_timeout: b.secs(
            f.subagents.timeout_secs,
            defaults::SUBAGENTS_TIMEOUT,
            "subagents.timeout_secs",
            bounds::TIMEOUT_SECS,
        )?,
        goal: goal(&b)?,
        checkpoints: checkpoints(&b)?,
    };
    relative_limits(&b, context_window)?;
    Ok(limits)
}

/// `[goal]`, with its round limits checked.
fn goal(b: &Bounded<'_>) -> Result<crate::agent::goal::Settings, ConfigError> {
    let settings: crate::agent::goal::Settings = b.0.part("goal")?;
    b.within(
        settings.max_rounds.into(),
        "goal.max_rounds",
        bounds::ROUNDS,
    )?;
    b.within(
        settings.stall_rounds.into(),
        "goal.stall_rounds",
        bounds::ROUNDS,
    )?;
    Ok(settings)
}

/// `[checkpoints]`, with its sizes checked.
fn checkpoints(b: &Bounded<'_>) -> Result<crate::checkpoints::Settings, ConfigError> {
    let settings: crate::checkpoints::Settings = b.0.part("checkpoints")?;
    b.within(
        settings.max_file_bytes,
        "checkpoints.max_file_bytes",
        bounds::CHECKPOINT_MAX_FILE_BYTES,
    )?;
    b.within(
        settings.max_bytes,
        "checkpoints.max_bytes",
        bounds::CHECKPOINT_MAX_BYTES,
    )?;
    Ok(settings)
}

/// `[fetch]`: the time and size caps of one `fetch`, checked.
fn fetch_limits(b: &Bounded<'_>) -> Result<crate::tools::fetch::Limits, ConfigError> {
    let limits: crate::tools::fetch::Limits = b.0.part("fetch")?;
    b.within(
        limits.timeout.as_secs(),
        "fetch.timeout_secs",
        bounds::TIMEOUT_SECS,
    )?;
    b.within(limits.max_bytes, "fetch.max_bytes", bounds::FETCH_MAX_BYTES)?;
    Ok(limits)
}

/// The numbers of `[model]`, checked first.
fn model_limits(b: &Bounded<'_>) -> Result<ModelLimits, ConfigError> {
    let m = &b.0.file.model;
    Ok(ModelLimits {
        context_window: b.check(
            m.context_window,
            defaults::CONTEXT_WINDOW,
            "model.context_window",
            bounds::CONTEXT_WINDOW,
        )?,
        max_tokens: b.count(
            m.max_tokens,
            defaults::MAX_TOKENS,
            "model.max_tokens",
            bounds::MAX_TOKENS,
        )?,
        request_timeout: b.secs(
            m.request_timeout_secs,
            defaults::REQUEST_TIMEOUT,
            "model.request_timeout_secs",
            bounds::TIMEOUT_SECS,
        )?,
        max_tool_calls: b.count(
            m.max_tool_calls,
            u32::try_from(defaults::MAX_TOOL_CALLS).unwrap_or(u32::MAX),
            "model.max_tool_calls",
            bounds::MAX_TOOL_CALLS,
        )?,
        stream_idle_timeout: b.secs(
            m.stream_idle_timeout_secs,
            defaults::STREAM_IDLE_TIMEOUT,
            "model.stream_idle_timeout_secs",
            bounds::TIMEOUT_SECS,
        )?,
    })
}

/// The settings bounded by something else: the exit transcript's turns (0 allowed), and the
/// context's reserve and recent share, each smaller than the window.
fn relative_limits(b: &Bounded<'_>, context_window: u64) -> Result<(), ConfigError> {
    let f = &b.0.file;
    if let Some(turns) = f.ui.exit_transcript_turns
        && turns > bounds::EXIT_TRANSCRIPT_TURNS
    {
        return Err(b.invalid(
            "ui.exit_transcript_turns",
            format!("must be between 0 and {}", bounds::EXIT_TRANSCRIPT_TURNS),
        ));
    }
    for (value, field) in [
        (f.context.reserve_tokens, "context.reserve_tokens"),
        (f.context.keep_recent_tokens, "context.keep_recent_tokens"),
    ] {
        if value.is_some_and(|v| v >= context_window) {
            return Err(b.invalid(
                field,
                "must be smaller than model.context_window".to_string(),
            ));
        }
    }
    Ok(())
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
        return Err(ConfigError::Missing {
            user_file: super::trust::user_config_path(env),
        });
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
/// The variable OpenAI's own service's key is read from when nothing else names one: what
/// every other tool reads, so pointing minicode at OpenAI needs no `api_key_env`.
const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";

/// Whether `base_url` is OpenAI's own API (`https://api.openai.com/...`).
fn is_openai_service(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

/// The key and the variable it is (or would be) read from. `base_url` is the server's, for
/// the OpenAI default (empty when there is none).
fn key(
    layers: &Layers,
    env: Env<'_>,
    base_url: &str,
) -> Result<(Option<Secret>, Option<String>), ConfigError> {
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
    let configured_env =
        configured_env.or_else(|| is_openai_service(base_url).then(|| OPENAI_KEY_ENV.to_string()));
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

/// The small-model knobs of `[model]`: what a file leaves out keeps the part's default.
fn small_model(layers: &Layers) -> crate::agent::small::Settings {
    let m = &layers.file.model;
    let default = crate::agent::small::Settings::default();
    crate::agent::small::Settings {
        recover_tool_calls: m.recover_tool_calls.unwrap_or(default.recover_tool_calls),
        first_look: m.first_look.unwrap_or(default.first_look),
        // The user's own `max_tokens` stands: replies are bounded only without one.
        bound_replies: m.max_tokens.is_none() && default.bound_replies,
    }
}

/// `[model] profile` and `[model] tools`: `tools` may name only the tools the small profile
/// leaves out (the others are always offered, or come with their feature).
fn model_profile(layers: &Layers) -> Result<crate::provider::profiles::Settings, ConfigError> {
    use crate::provider::profiles::Profile;
    let profile = layers.file.model.profile.map(|p| match p {
        super::ModelProfile::Small => Profile::Small,
        super::ModelProfile::Full => Profile::Full,
    });
    use crate::defaults::SMALL_PROFILE_OPTIONAL_TOOLS as OPTIONAL;
    let tools = layers.file.model.tools.clone().unwrap_or_default();
    if let Some(name) = tools.iter().find(|t| !OPTIONAL.contains(&t.as_str())) {
        return Err(ConfigError::Invalid {
            origin: layers.origin("model.tools"),
            field: "model.tools",
            reason: format!(
                "{name:?} is not a tool the small profile leaves out (it can add: {})",
                OPTIONAL.join(", ")
            ),
        });
    }
    Ok(crate::provider::profiles::Settings { profile, tools })
}
