//! Whether the model takes images, where a server says so: llama.cpp's `/props`
//! (`modalities.vision`), a `/models` entry's `capabilities` (llama.cpp, Ollama-style lists:
//! `vision` or `multimodal`) or `architecture.input_modalities` (OpenRouter), and Ollama's
//! `/api/show` capabilities. `None` when no answer says: the request is then sent, and a
//! refusal is explained when it comes (`provider/openai.rs`).

use serde_json::Value;

/// llama.cpp's `/props`: `modalities.vision`.
pub(crate) fn from_props(v: &Value) -> Option<bool> {
    v.get("modalities")?.get("vision")?.as_bool()
}

/// The `/models` entry of `model` (or the only entry, as a one-model server answers for
/// whatever name it is sent), if it states its inputs.
pub(crate) fn from_models(v: &Value, model: &str) -> Option<bool> {
    let entries: Vec<&Value> = ["data", "models"]
        .iter()
        .filter_map(|key| v.get(*key)?.as_array())
        .flatten()
        .collect();
    let named = |e: &&&Value| {
        ["id", "name", "model"]
            .iter()
            .any(|k| e.get(*k).and_then(Value::as_str) == Some(model))
    };
    let entry = match entries.iter().find(named) {
        Some(entry) => *entry,
        None if entries.len() == 1 => entries[0],
        None => return None,
    };
    from_capabilities(entry).or_else(|| {
        let inputs = entry
            .get("architecture")?
            .get("input_modalities")?
            .as_array()?;
        Some(inputs.iter().any(|m| m.as_str() == Some("image")))
    })
}

/// A `capabilities` list (`/models` entries, Ollama's `/api/show`): `vision` or `multimodal`.
pub(crate) fn from_capabilities(v: &Value) -> Option<bool> {
    let caps = v.get("capabilities")?.as_array()?;
    Some(
        caps.iter()
            .any(|c| matches!(c.as_str(), Some("vision" | "multimodal"))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn props_modalities_say_yes_or_no() {
        assert_eq!(
            from_props(&json!({"modalities": {"vision": false}})),
            Some(false)
        );
        assert_eq!(
            from_props(&json!({"modalities": {"vision": true}})),
            Some(true)
        );
        assert_eq!(from_props(&json!({"n_ctx": 4096})), None);
    }

    #[test]
    fn model_lists_say_it_by_capabilities_or_input_modalities() {
        let llama = json!({"models": [{"model": "m", "capabilities": ["completion"]}]});
        assert_eq!(from_models(&llama, "other"), Some(false));
        let router = json!({"data": [
            {"id": "a", "architecture": {"input_modalities": ["text", "image"]}},
            {"id": "b", "architecture": {"input_modalities": ["text"]}}
        ]});
        assert_eq!(from_models(&router, "a"), Some(true));
        assert_eq!(from_models(&router, "b"), Some(false));
        assert_eq!(from_models(&router, "c"), None);
        assert_eq!(from_models(&json!({"data": [{"id": "m"}]}), "m"), None);
    }
}
