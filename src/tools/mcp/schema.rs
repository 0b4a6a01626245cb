//! The argument check before an MCP call: the schema's required fields are present, each
//! top-level argument has one of its declared JSON types, and no unknown argument is passed
//! when the schema forbids extra ones. Deliberately shallow (no nested schemas, formats or
//! ranges): the server validates fully; this only stops the obviously wrong call before the
//! user is asked to approve it and before anything reaches the server.

use serde_json::{Map, Value};

/// Checks `args` against `schema`; the error is a message for the model.
pub(crate) fn check(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(args) = args.as_object() else {
        return Err("the arguments must be a JSON object".to_string());
    };
    let missing: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|field| !args.contains_key(*field))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing required argument{} {}",
            if missing.len() == 1 { "" } else { "s" },
            quoted(&missing)
        ));
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in args {
        match properties.and_then(|p| p.get(key)) {
            Some(property) => {
                let types = declared_types(property);
                if !types.is_empty() && !types.iter().any(|t| has_type(value, t)) {
                    return Err(format!(
                        "argument `{key}` must be {}, not {}",
                        types.join(" or "),
                        kind(value)
                    ));
                }
            }
            None if closed => {
                let known = properties.map(Map::keys).into_iter().flatten();
                let known: Vec<&str> = known.map(String::as_str).collect();
                return Err(format!(
                    "unknown argument `{key}` (the tool takes {})",
                    if known.is_empty() {
                        "no arguments".to_string()
                    } else {
                        quoted(&known)
                    }
                ));
            }
            None => {}
        }
    }
    Ok(())
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The JSON types a property schema allows (`"type": "string"` or `["string", "null"]`);
/// empty when it does not say.
fn declared_types(property: &Value) -> Vec<&str> {
    match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        }
        // A type we do not know: let the server judge.
        _ => true,
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
