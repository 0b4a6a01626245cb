//! The answers of each server family's self-description endpoints → a context window (and
//! what else `doctor` shows). Pure functions of parsed JSON; every field is optional and
//! anything unexpected is simply not found.
//!
//! | family | endpoint | field |
//! | --- | --- | --- |
//! | vLLM | `GET {base}/models` | `data[].max_model_len` |
//! | OpenRouter, Together, others | `GET {base}/models` | `data[].context_length` (or `top_provider.context_length`), `context_window` |
//! | llama.cpp | `GET {base}/models` | `data[].meta.n_ctx` |
//! | llama.cpp | `GET {root}/props` | `n_ctx`, or `default_generation_settings.n_ctx` |
//! | LM Studio | `GET {root}/api/v0/models` | `data[].loaded_context_length` |
//! | Ollama | `POST {root}/api/show` | `num_ctx` in `parameters`, else `model_info["<arch>.context_length"]` |

use serde_json::Value;

use crate::provider::profiles::ServerKind;

/// A window and where it was read.
pub(crate) type Found = (u64, &'static str);

/// The ids `/models` lists (`data[].id`), at most `max`.
pub(crate) fn listed_ids(v: &Value, max: usize) -> Vec<String> {
    v.get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .take(max)
        .map(str::to_string)
        .collect()
}

/// The window `/models` states for `model`. A single-model llama.cpp server answers for the
/// model it has loaded whatever name the client sends, so its one entry counts even when the
/// names differ.
pub(crate) fn window_from_models(v: &Value, model: &str) -> Option<Found> {
    let data = v.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model));
    if let Some(entry) = entry {
        let fields: [(&[&str], &'static str); 6] = [
            (&["max_model_len"], "vLLM /v1/models (max_model_len)"),
            (&["meta", "n_ctx"], "llama.cpp /v1/models (meta.n_ctx)"),
            (
                &["loaded_context_length"],
                "/models (loaded_context_length)",
            ),
            (&["context_length"], "/models (context_length)"),
            (
                &["top_provider", "context_length"],
                "/models (top_provider.context_length)",
            ),
            (&["context_window"], "/models (context_window)"),
        ];
        return fields
            .iter()
            .find_map(|(path, via)| number_at(entry, path).map(|n| (n, *via)));
    }
    match data.as_slice() {
        [only] => {
            number_at(only, &["meta", "n_ctx"]).map(|n| (n, "llama.cpp /v1/models (meta.n_ctx)"))
        }
        _ => None,
    }
}

/// llama.cpp's `/props`: `n_ctx` at the top (older builds) or in
/// `default_generation_settings` (newer ones); per slot, which is what one request gets.
pub(crate) fn window_from_props(v: &Value) -> Option<Found> {
    number_at(v, &["default_generation_settings", "n_ctx"])
        .or_else(|| number_at(v, &["n_ctx"]))
        .map(|n| (n, "llama.cpp /props (n_ctx)"))
}

/// The kind of server, by the self-description endpoints that answered in their own shape:
/// llama.cpp's `/props` (its generation settings or chat template), LM Studio's
/// `/api/v0/models` (a `data` list), Ollama's `/api/show` (model details).
pub(crate) fn server_kind(
    props: Option<&Value>,
    lmstudio: Option<&Value>,
    ollama: Option<&Value>,
) -> Option<ServerKind> {
    let has = |v: Option<&Value>, keys: &[&str]| {
        v.is_some_and(|v| keys.iter().any(|k| v.get(k).is_some()))
    };
    if has(props, &["default_generation_settings", "chat_template"]) {
        Some(ServerKind::LlamaCpp)
    } else if has(ollama, &["model_info", "details", "modelfile"]) {
        Some(ServerKind::Ollama)
    } else if lmstudio
        .and_then(|v| v.get("data"))
        .is_some_and(Value::is_array)
    {
        Some(ServerKind::LmStudio)
    } else {
        None
    }
}

/// Whether llama.cpp's chat template can render tools (`chat_template_caps.supports_tools`).
pub(crate) fn tools_from_props(v: &Value) -> Option<bool> {
    v.get("chat_template_caps")?
        .get("supports_tools")?
        .as_bool()
}

/// LM Studio's `/api/v0/models`: the loaded context of `model`, or of the only loaded model.
pub(crate) fn window_from_lmstudio(v: &Value, model: &str) -> Option<Found> {
    let data = v.get("data")?.as_array()?;
    let loaded = |m: &&Value| number_at(m, &["loaded_context_length"]).is_some();
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .filter(loaded)
        .or_else(|| {
            let mut all = data.iter().filter(loaded);
            match (all.next(), all.next()) {
                (Some(one), None) => Some(one),
                _ => None,
            }
        })?;
    number_at(entry, &["loaded_context_length"])
        .map(|n| (n, "LM Studio /api/v0/models (loaded_context_length)"))
}

/// Ollama's `/api/show`: `num_ctx` from the model's parameters (what the server runs it with)
/// when set, else the architecture's `<arch>.context_length`.
pub(crate) fn window_from_ollama(v: &Value) -> Option<Found> {
    let num_ctx = v
        .get("parameters")
        .and_then(Value::as_str)
        .into_iter()
        .flat_map(str::lines)
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse::<u64>().ok())
                .flatten()
        })
        .filter(|n| *n > 0);
    if let Some(n) = num_ctx {
        return Some((n, "Ollama /api/show (num_ctx)"));
    }
    let info = v.get("model_info")?.as_object()?;
    let arch = info.get("general.architecture").and_then(Value::as_str);
    let by_arch = arch.and_then(|a| info.get(&format!("{a}.context_length")));
    by_arch
        .or_else(|| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .map(|(_, v)| v)
        })
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .map(|n| (n, "Ollama /api/show (context_length)"))
}

/// Whether Ollama lists `tools` among the model's capabilities.
pub(crate) fn tools_from_ollama(v: &Value) -> Option<bool> {
    let caps = v.get("capabilities")?.as_array()?;
    Some(caps.iter().any(|c| c.as_str() == Some("tools")))
}

/// Windows of hosted models whose `/models` does not state them (OpenAI, DeepSeek), by model
/// name prefix; the longest prefix wins. A wrong entry is corrected by the server's first
/// context-length error, which names the real window.
pub(crate) fn known_window(host: &str, model: &str) -> Option<Found> {
    const OPENAI: &[(&str, u64)] = &[
        ("gpt-3.5-turbo", 16_385),
        ("gpt-4", 8_192),
        ("gpt-4-turbo", 128_000),
        ("gpt-4o", 128_000),
        ("chatgpt-4o", 128_000),
        ("gpt-4.1", 1_047_576),
        // 400k in all, of which at most 272k input.
        ("gpt-5", 272_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
    ];
    const DEEPSEEK: &[(&str, u64)] = &[("deepseek-chat", 128_000), ("deepseek-reasoner", 128_000)];
    let table = match host {
        "api.openai.com" => OPENAI,
        "api.deepseek.com" => DEEPSEEK,
        _ => return None,
    };
    table
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, n)| (*n, "known model (no endpoint states it)"))
}

fn number_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut at = v;
    for key in path {
        at = at.get(key)?;
    }
    at.as_u64().filter(|n| *n > 0)
}
