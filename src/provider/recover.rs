//! Tool calls a model wrote as text instead of making them: small local models (and servers
//! whose template parser missed them) often answer with `{"name": …, "arguments": {…}}` in a
//! code fence or bare, Qwen's `<tool_call>…</tool_call>`, `<function=name>…</function>`
//! blocks, or a family's own marker (`[TOOL_CALLS]`, `<|python_tag|>`). This finds them.
//!
//! A pure function of the reply's text and the tools that request offered: a candidate
//! becomes a call only when it names an offered tool and its arguments pass that tool's JSON
//! schema (once undeclared properties are dropped, if that is what it takes); anything else
//! (a config snippet, an unknown name, bad arguments) stays text. It
//! never runs, approves or records anything: the agent treats what it returns like native
//! calls. Common malformations are repaired first (`recover/repair.rs`).

mod repair;
mod scan;

use serde_json::Value;

use crate::chat::ToolSpec;

/// One call found in the text: an offered tool's name and its arguments as compact JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub name: String,
    pub arguments: String,
}

/// What the text held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Recovery {
    /// The calls, in the order they were written.
    pub calls: Vec<Found>,
    /// The text without the calls (unchanged when none was found).
    pub text: String,
    /// Names of call-shaped text that named no offered tool, for the nudge.
    pub unknown: Vec<String>,
}

/// The calls written as text in `text`, checked against `tools` (the tools the request that
/// produced it offered).
pub(crate) fn recover(text: &str, tools: &[ToolSpec]) -> Recovery {
    let mut recovery = Recovery::default();
    let mut kept = String::new();
    let mut last = 0;
    for candidate in scan::candidates(text) {
        let calls: Vec<(String, Value)> = candidate.values.iter().filter_map(call_shape).collect();
        if calls.is_empty() {
            continue;
        }
        let mut accepted = Vec::new();
        for (name, arguments) in calls {
            match tools.iter().find(|t| t.name == name) {
                Some(spec) => {
                    if let Some(arguments) = fitted(spec, arguments) {
                        accepted.push(Found {
                            name,
                            arguments: arguments.to_string(),
                        });
                    }
                }
                None => recovery.unknown.push(name),
            }
        }
        // A block is taken out of the text only when everything in it became a call.
        if accepted.len() == candidate.values.len() {
            kept.push_str(&text[last..candidate.start]);
            last = candidate.end;
            recovery.calls.extend(accepted);
        }
    }
    if recovery.calls.is_empty() {
        recovery.text = text.to_string();
    } else {
        kept.push_str(&text[last..]);
        recovery.text = kept.trim().to_string();
    }
    recovery
}

/// `(name, arguments)` of a value shaped like a call: `{"name", "arguments"}` (or Llama's
/// `"parameters"`, or the name under `"function"`), or the wire's `{"function": {"name", "arguments"}}`. Arguments may be an
/// object or a string holding one; missing arguments are `{}`.
fn call_shape(value: &Value) -> Option<(String, Value)> {
    let object = value.as_object()?;
    if let Some(function) = object.get("function").filter(|f| f.is_object()) {
        return call_shape(function);
    }
    // Qwen2.5-Coder also writes `{"function": "list", "arguments": {…}}`, the name under the
    // key the wire uses for the call's object.
    let name = object
        .get("name")
        .or_else(|| object.get("function"))?
        .as_str()?
        .trim();
    if name.is_empty() || name.len() > 128 {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => return None,
        },
        // `{"name": "x"}` alone is too common in ordinary JSON to be a call; only an explicit
        // (possibly empty) arguments object makes one.
        _ => return None,
    };
    // Anything beyond the call's own fields means it is some other JSON that happens to
    // have a "name"; but a small model often writes the call with the result it imagines
    // (`"result": [...]`), which is the call all the same (the made-up result is dropped).
    let extra = object.keys().any(|k| {
        !matches!(
            k.as_str(),
            "name" | "function" | "arguments" | "parameters" | "type" | "id" | "result" | "output"
        )
    });
    (!extra).then(|| (name.to_string(), arguments))
}

/// `arguments` when they pass `spec`'s schema, else without the properties the schema does
/// not declare (a small model adds options it imagines, such as `"glob"` to `list`) when
/// that makes them pass; `None` when neither does.
fn fitted(spec: &ToolSpec, arguments: Value) -> Option<Value> {
    if fits(spec, &arguments) {
        return Some(arguments);
    }
    let declared = spec.parameters.get("properties")?.as_object()?;
    let Value::Object(mut map) = arguments else {
        return None;
    };
    let before = map.len();
    map.retain(|key, _| declared.contains_key(key));
    let trimmed = Value::Object(map);
    (trimmed.as_object().map_or(0, serde_json::Map::len) < before && fits(spec, &trimmed))
        .then_some(trimmed)
}

/// Whether `arguments` pass the JSON schema `spec` declares. A schema that does not compile
/// (an MCP server's odd one) only requires an object.
fn fits(spec: &ToolSpec, arguments: &Value) -> bool {
    if !arguments.is_object() {
        return false;
    }
    match crate::chat::schema::Schema::compile("urn:minicode:tool", spec.parameters.clone()) {
        Ok(schema) => schema.validate(arguments).is_ok(),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests;
