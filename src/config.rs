//! The configuration: built once at start-up from a TOML file, the `MINICODE_*` environment and
//! command-line overrides, validated, and immutable afterwards. It owns where the file is looked
//! for and the precedence file < environment < flags; it must not touch the network or the
//! process environment (the environment is read through a closure so tests never mutate it),
//! and no error or `Debug` output may ever contain the API key.

mod file;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub const DEFAULT_CONTEXT_WINDOW: u64 = 262_144;
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
pub const DEFAULT_STREAM_IDLE_TIMEOUT_SECS: u64 = 300;
pub const DEFAULT_BASH_TIMEOUT_SECS: u64 = 120;
/// The hard ceiling for one bash call, also for `timeout_secs` the model asks for.
pub const MAX_BASH_TIMEOUT_SECS: u64 = 600;
pub const DEFAULT_MAX_ROUNDS: u32 = 500;
/// Defaults of the saved bash outputs (`.minicode/outputs/`): bytes saved per call, bytes all
/// saved outputs may take, and days one is kept.
pub const DEFAULT_OUTPUTS_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
pub const DEFAULT_OUTPUTS_MAX_BYTES: u64 = 256 * 1024 * 1024;
pub const DEFAULT_OUTPUTS_MAX_AGE_DAYS: u64 = 7;
/// The model name reported by the built-in demo provider.
pub const DEMO_MODEL: &str = "demo";

/// Environment variables that override the file.
pub const ENV_BASE_URL: &str = "MINICODE_BASE_URL";
pub const ENV_MODEL: &str = "MINICODE_MODEL";
pub const ENV_API_KEY: &str = "MINICODE_API_KEY";

/// Which provider implementation to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Any OpenAI-compatible `/chat/completions` server.
    #[default]
    OpenAi,
    /// The offline, deterministic demo model.
    Demo,
}

/// A value that must never be shown: `Debug` and `Display` print `***`, so a `Config` can be
/// logged or put in an error without leaking the key. Use [`Secret::expose`] only where the
/// value is actually sent.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the `Authorization` header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The effective configuration. See `docs/configuration.md` for every field.
#[derive(Debug, Clone)]
pub struct Config {
    pub provider: ProviderKind,
    /// Without a trailing `/`; empty for the demo provider.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    /// The environment variable the key was read from (the configured `api_key_env`, or
    /// `MINICODE_API_KEY`), so tools can remove it from child processes.
    pub api_key_env: Option<String>,
    pub context_window: u64,
    pub max_tokens: u32,
    /// Overall limit for one request; `None` leaves only the idle timeout.
    pub request_timeout: Option<Duration>,
    pub stream_idle_timeout: Duration,
    pub bash_timeout: Duration,
    pub max_rounds: u32,
    /// Saved bash outputs: bytes per call, bytes in all, how long one is kept.
    pub outputs_max_file_bytes: u64,
    pub outputs_max_bytes: u64,
    pub outputs_max_age: Duration,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
    /// How many of the last turns the full-screen UI prints to the normal screen on exit:
    /// `None` = all, `Some(0)` = none.
    pub exit_transcript_turns: Option<u32>,
    /// The configuration file that was used, if any.
    pub source: Option<PathBuf>,
}

/// Command-line flags that take part in configuration.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--config PATH`: this file and no other; it must exist.
    pub config_path: Option<PathBuf>,
    /// `--model`
    pub model: Option<String>,
    /// `--base-url`
    pub base_url: Option<String>,
    /// `--demo`
    pub demo: bool,
}

const HOWTO: &str = "no model is configured. To set one up, either:
  - copy config/config.example.toml to config/config.toml (in this folder) or to
    ~/.config/minicode/config.toml and fill in [model] base_url and name, or
  - set MINICODE_BASE_URL and MINICODE_MODEL (and MINICODE_API_KEY if the server needs a key);
or try the built-in offline model with `minicode --demo`.";

/// Why no configuration could be built. Every variant is a usage error (exit status 2).
/// Messages name the file, line and field, never a value from the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{HOWTO}")]
    Missing,
    #[error("config file {} does not exist", .path.display())]
    NotFound { path: PathBuf },
    #[error("cannot read config file {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {}, line {line}, column {column}: syntax error: {message}", .path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("config file {}, line {line}, column {column}: field `{field}`: {reason}", .path.display())]
    Field {
        path: PathBuf,
        line: usize,
        column: usize,
        field: String,
        reason: String,
    },
    /// A required field is absent from every source. `origin` is the file or "the environment".
    #[error("{origin}: missing required field `{field}` (or set {env})")]
    Required {
        origin: String,
        field: &'static str,
        env: &'static str,
    },
    /// A value of the right type that is not acceptable (zero, empty, out of range).
    #[error("{origin}: field `{field}`: {reason}")]
    Invalid {
        origin: String,
        field: &'static str,
        reason: String,
    },
}

/// Builds the configuration. `launch_dir` is where `config/config.toml` is looked for; `env`
/// reads an environment variable (an empty value counts as unset).
pub fn load(
    launch_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let source = locate(launch_dir, &env, overrides)?;
    let parsed = match &source {
        Some(path) => file::read(path)?,
        None => file::FileConfig::default(),
    };
    resolve(parsed, source, &env, overrides)
}

/// The file to use: `--config`, then `<launch_dir>/config/config.toml`, then the XDG location.
/// A candidate that exists in any form (even as a directory or a dangling link) is chosen, so
/// a broken file is reported instead of silently skipped.
fn locate(
    launch_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(explicit) = &overrides.config_path {
        let path = launch_dir.join(explicit);
        return match std::fs::symlink_metadata(&path) {
            Ok(_) => Ok(Some(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(ConfigError::NotFound { path })
            }
            Err(source) => Err(ConfigError::Unreadable { path, source }),
        };
    }
    let mut candidates = vec![launch_dir.join("config").join("config.toml")];
    let xdg = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let user_dir = xdg.or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".config")));
    if let Some(dir) = user_dir {
        candidates.push(dir.join("minicode").join("config.toml"));
    }
    for path in candidates {
        match std::fs::symlink_metadata(&path) {
            Ok(_) => return Ok(Some(path)),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) => {}
            Err(source) => return Err(ConfigError::Unreadable { path, source }),
        }
    }
    Ok(None)
}

/// Applies precedence and checks every value.
fn resolve(
    parsed: file::FileConfig,
    source: Option<PathBuf>,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    let origin = match &source {
        Some(p) => format!("config file {}", p.display()),
        None => "the environment".to_string(),
    };
    let file_origin = || origin.clone();
    let m = parsed.model;
    let provider = if overrides.demo {
        ProviderKind::Demo
    } else {
        m.provider.unwrap_or_default()
    };

    let positive = |value: Option<u64>, default: u64, field: &'static str| match value {
        Some(0) => Err(ConfigError::Invalid {
            origin: file_origin(),
            field,
            reason: "must be greater than 0".to_string(),
        }),
        Some(v) => Ok(v),
        None => Ok(default),
    };
    let context_window = positive(
        m.context_window,
        DEFAULT_CONTEXT_WINDOW,
        "model.context_window",
    )?;
    let max_tokens = positive(
        m.max_tokens.map(u64::from),
        u64::from(DEFAULT_MAX_TOKENS),
        "model.max_tokens",
    )?;
    let max_tokens = u32::try_from(max_tokens).unwrap_or(u32::MAX); // came from a u32
    let request_timeout = match m.request_timeout_secs {
        Some(secs) => Some(Duration::from_secs(positive(
            Some(secs),
            0,
            "model.request_timeout_secs",
        )?)),
        None => None,
    };
    let stream_idle = positive(
        m.stream_idle_timeout_secs,
        DEFAULT_STREAM_IDLE_TIMEOUT_SECS,
        "model.stream_idle_timeout_secs",
    )?;
    let bash_secs = positive(
        parsed.tools.bash_timeout_secs,
        DEFAULT_BASH_TIMEOUT_SECS,
        "tools.bash_timeout_secs",
    )?;
    if bash_secs > MAX_BASH_TIMEOUT_SECS {
        return Err(ConfigError::Invalid {
            origin: file_origin(),
            field: "tools.bash_timeout_secs",
            reason: format!("must be at most {MAX_BASH_TIMEOUT_SECS}"),
        });
    }
    let max_rounds = positive(
        parsed.tools.max_rounds.map(u64::from),
        u64::from(DEFAULT_MAX_ROUNDS),
        "tools.max_rounds",
    )?;
    let max_rounds = u32::try_from(max_rounds).unwrap_or(u32::MAX); // came from a u32
    let outputs_max_file_bytes = positive(
        parsed.tools.outputs_max_file_bytes,
        DEFAULT_OUTPUTS_MAX_FILE_BYTES,
        "tools.outputs_max_file_bytes",
    )?;
    let outputs_max_bytes = positive(
        parsed.tools.outputs_max_bytes,
        DEFAULT_OUTPUTS_MAX_BYTES,
        "tools.outputs_max_bytes",
    )?;
    let outputs_max_age_days = positive(
        parsed.tools.outputs_max_age_days,
        DEFAULT_OUTPUTS_MAX_AGE_DAYS,
        "tools.outputs_max_age_days",
    )?;
    for (value, field) in [
        (parsed.context.reserve_tokens, "context.reserve_tokens"),
        (
            parsed.context.keep_recent_tokens,
            "context.keep_recent_tokens",
        ),
    ] {
        if value.is_some_and(|v| v >= context_window) {
            return Err(ConfigError::Invalid {
                origin: file_origin(),
                field,
                reason: "must be smaller than model.context_window".to_string(),
            });
        }
    }

    let mut config = Config {
        provider,
        base_url: String::new(),
        model: DEMO_MODEL.to_string(),
        api_key: None,
        api_key_env: None,
        context_window,
        max_tokens,
        request_timeout,
        stream_idle_timeout: Duration::from_secs(stream_idle),
        bash_timeout: Duration::from_secs(bash_secs),
        max_rounds,
        outputs_max_file_bytes,
        outputs_max_bytes,
        outputs_max_age: Duration::from_secs(outputs_max_age_days.saturating_mul(24 * 60 * 60)),
        reserve_tokens: parsed.context.reserve_tokens,
        keep_recent_tokens: parsed.context.keep_recent_tokens,
        exit_transcript_turns: parsed.ui.exit_transcript_turns,
        source,
    };
    if provider == ProviderKind::Demo {
        // The demo model needs no server, name or key; anything configured for them is unused.
        return Ok(config);
    }

    // Each value: the flag if given, else the environment, else the file; remember which.
    let pick = |flag: &Option<String>,
                flag_name: &'static str,
                env_name: &'static str,
                from_file: Option<String>| {
        if let Some(v) = flag {
            Some((v.clone(), flag_name.to_string()))
        } else if let Some(v) = env(env_name) {
            Some((v, format!("environment variable {env_name}")))
        } else {
            from_file.map(|v| (v, file_origin()))
        }
    };
    let base_url = pick(&overrides.base_url, "--base-url", ENV_BASE_URL, m.base_url);
    let model = pick(&overrides.model, "--model", ENV_MODEL, m.name);
    if config.source.is_none() && base_url.is_none() && model.is_none() {
        return Err(ConfigError::Missing);
    }
    let (base_url, base_origin) = base_url.ok_or_else(|| ConfigError::Required {
        origin: file_origin(),
        field: "model.base_url",
        env: ENV_BASE_URL,
    })?;
    let (model, model_origin) = model.ok_or_else(|| ConfigError::Required {
        origin: file_origin(),
        field: "model.name",
        env: ENV_MODEL,
    })?;
    config.base_url = check_base_url(base_url, base_origin)?;
    if model.trim().is_empty() {
        return Err(ConfigError::Invalid {
            origin: model_origin,
            field: "model.name",
            reason: "must not be empty".to_string(),
        });
    }
    config.model = model;

    // The key: MINICODE_API_KEY, else `api_key`, else the variable `api_key_env` names.
    let configured_env = match (&m.api_key, m.api_key_env) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::Invalid {
                origin: file_origin(),
                field: "model.api_key_env",
                reason: "set either api_key or api_key_env, not both".to_string(),
            });
        }
        (_, Some(name)) if name.is_empty() || name.contains(['=', '\0']) => {
            return Err(ConfigError::Invalid {
                origin: file_origin(),
                field: "model.api_key_env",
                reason: "must be the name of an environment variable".to_string(),
            });
        }
        (_, name) => name,
    };
    if m.api_key.as_ref().is_some_and(|k| k.expose().is_empty()) {
        return Err(ConfigError::Invalid {
            origin: file_origin(),
            field: "model.api_key",
            reason: "must not be empty (leave it out if the server needs no key)".to_string(),
        });
    }
    if let Some(key) = env(ENV_API_KEY) {
        config.api_key = Some(Secret(key));
        config.api_key_env = Some(configured_env.unwrap_or_else(|| ENV_API_KEY.to_string()));
    } else if let Some(key) = m.api_key {
        config.api_key = Some(key);
    } else if let Some(name) = configured_env {
        let key = env(&name).ok_or_else(|| ConfigError::Invalid {
            origin: file_origin(),
            field: "model.api_key_env",
            reason: format!("environment variable {name} is not set"),
        })?;
        config.api_key = Some(Secret(key));
        config.api_key_env = Some(name);
    }
    Ok(config)
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
