//! The model client a configuration chooses: the offline demo, or the OpenAI-compatible client
//! with its limits, cache folder and the hint it gives when a key is missing. Every frontend
//! builds its provider here; nothing here reads a file or the environment beyond `env`.

use std::sync::Arc;

use super::{Failure, usage};
use crate::config::{Config, ProviderKind};
use crate::provider::Provider;
use crate::provider::demo::Demo;
use crate::provider::openai::{OpenAi, OpenAiOptions};
use crate::provider::sse::ReplyLimits;

/// The provider `config` chooses.
pub(super) fn build_provider(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, Failure> {
    Ok(match config.provider {
        ProviderKind::Demo => Arc::new(Demo::default()),
        ProviderKind::OpenAi => Arc::new(openai(config, env)?),
    })
}

/// The OpenAI-compatible client for `config`, remembering what it learns about the server in
/// the user's cache folder.
pub(super) fn openai(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<OpenAi, Failure> {
    OpenAi::new(OpenAiOptions {
        base_url: config.base_url.clone(),
        api_key: config.api_key.as_ref().map(|k| k.expose().to_string()),
        model: config.model.clone(),
        request_timeout: config.request_timeout,
        stream_idle_timeout: config.stream_idle_timeout,
        limits: ReplyLimits {
            max_tool_calls: usize::try_from(config.max_tool_calls).unwrap_or(usize::MAX),
            ..ReplyLimits::default()
        },
        cache_dir: crate::config::cache_dir(env),
        send_reasoning: config.send_reasoning,
        missing_key_hint: Some(missing_key_hint(config)),
        ..OpenAiOptions::default()
    })
    .map_err(usage)
}

/// What to set when the server asks for a key and none was sent.
fn missing_key_hint(config: &Config) -> String {
    match &config.api_key_env {
        Some(name) => format!(
            "no API key was sent: the environment variable {name} that `api_key_env` names is \
             not set; set it, or MINICODE_API_KEY"
        ),
        None => "no API key was sent: set MINICODE_API_KEY, or `api_key_env` (or `api_key`) \
                 in [model] of your config"
            .to_string(),
    }
}
