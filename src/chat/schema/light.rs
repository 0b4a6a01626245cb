//! The fallback JSON Schema check of a build without the `schema` feature: `type` (one name or
//! a list), `required`, `properties`, `additionalProperties`, `items` (one schema) and `enum`,
//! recursively, and the boolean schemas. Every other keyword is ignored, so it accepts more than the full
//! validator, never less of what a schema allows.

use serde_json::Value;

/// The most errors reported for one value.
const MAX_ERRORS: usize = 20;

/// `Ok` when `value` fits what this check understands of `schema`, else its errors.
pub(super) fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    let mut errors = Vec::new();
    check(schema, value, "", &mut errors);
    if errors.is_empty() {
        return Ok(());
    }
    errors.truncate(MAX_ERRORS);
    Err(errors.join("\n"))
}

fn check(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let rules = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return errors.push(format!("at '{at}': no value is allowed")),
        Value::Object(rules) => rules,
        _ => return,
    };
    if let Some(expected) = rules.get("type")
        && !type_fits(expected, value)
    {
        return errors.push(format!("at '{at}': want {expected}, got {}", kind(value)));
    }
    if let Some(Value::Array(allowed)) = rules.get("enum")
        && !allowed.contains(value)
    {
        errors.push(format!(
            "at '{at}': {value} is not one of {}",
            Value::from(allowed.clone())
        ));
    }
    if let Value::Object(map) = value {
        for key in rules
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(key) = key.as_str()
                && !map.contains_key(key)
            {
                errors.push(format!("at '{at}': missing property '{key}'"));
            }
        }
        let properties = match rules.get("properties") {
            Some(Value::Object(properties)) => Some(properties),
            _ => None,
        };
        for (key, v) in map {
            let at = format!("{at}/{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => check(sub, v, &at, errors),
                // Tool schemas close their objects: an undeclared key is the model's invention.
                None => match rules.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        errors.push(format!("at '{at}': property '{key}' is not allowed"));
                    }
                    Some(sub @ Value::Object(_)) => check(sub, v, &at, errors),
                    _ => {}
                },
            }
        }
    }
    if let (Value::Array(items), Some(sub @ Value::Object(_))) = (value, rules.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(sub, item, &format!("{at}/{i}"), errors);
        }
    }
}

/// Whether `value` is of the type (or one of the types) `expected` names.
fn type_fits(expected: &Value, value: &Value) -> bool {
    match expected {
        Value::String(name) => is(name, value),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(|n| is(n, value)),
        _ => true,
    }
}

fn is(name: &str, value: &Value) -> bool {
    match name {
        "integer" => {
            value.as_i64().is_some()
                || value.as_u64().is_some()
                || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => value.is_number(),
        other => other == kind(value),
    }
}

/// The JSON type name of `value`.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
