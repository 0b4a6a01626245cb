//! Where a reply's text may hold a call: `<tool_call>` and `<function=…>` blocks, code fences
//! whose body is JSON, a family's marker followed by JSON, and bare JSON objects. Each is
//! returned with its byte range and the JSON values found in it (repaired where needed);
//! deciding which are calls is `recover.rs`'s job.

use serde_json::{Map, Value};

use super::repair;

/// One place in the text and what it held.
#[derive(Debug)]
pub(super) struct Candidate {
    pub start: usize,
    pub end: usize,
    pub values: Vec<Value>,
}

/// Markers some model families put before their calls, when the server did not parse them.
const MARKERS: [&str; 3] = ["[TOOL_CALLS]", "<|python_tag|>", "<|tool_call|>"];

/// Every candidate in `text`, left to right, never overlapping.
pub(super) fn candidates(text: &str) -> Vec<Candidate> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find(['<', '`', '{', '[']) {
        let start = at + offset;
        let rest = &text[start..];
        let (end, values) = if rest.starts_with("<tool_call>") {
            tool_call(text, start)
        } else if rest.starts_with("<function=") {
            let (end, value) = function_block(text, start);
            (end, value.into_iter().collect())
        } else if rest.starts_with("<tools>") {
            tools_block(text, start)
        } else if rest.starts_with("<function>") {
            let (end, value) = element_block(text, start);
            (end, value.into_iter().collect())
        } else if rest.starts_with("<function ") {
            let (end, value) = attribute_block(text, start);
            (end, value.into_iter().collect())
        } else if rest.starts_with("```") {
            fence(text, start)
        } else if let Some(marker) = MARKERS.iter().find(|m| rest.starts_with(**m)) {
            marked(text, start, marker.len())
        } else if rest.starts_with('{') {
            bare(text, start)
        } else {
            (start + 1, Vec::new())
        };
        if !values.is_empty() {
            found.push(Candidate { start, end, values });
        }
        at = end.max(start + 1);
        while !text.is_char_boundary(at) {
            at += 1;
        }
    }
    found
}

/// `<tool_call>…</tool_call>` (Qwen, Hermes), its body one JSON object, or a `<function=…>`
/// block (Qwen3-Coder). An unclosed block runs to the end of the text.
fn tool_call(text: &str, start: usize) -> (usize, Vec<Value>) {
    let open = start + "<tool_call>".len();
    let (body_end, end) = closing(text, open, "</tool_call>");
    let body = text[open..body_end].trim();
    if body.starts_with("<function=") {
        let base = open + (text[open..].len() - text[open..].trim_start().len());
        return (end, function_block(text, base).1.into_iter().collect());
    }
    (end, repair::values(body))
}

/// `<function=name>` then either a JSON object of arguments or `<parameter=key>value
/// </parameter>` pairs, up to `</function>` (or the end of the text).
fn function_block(text: &str, start: usize) -> (usize, Option<Value>) {
    let head = start + "<function=".len();
    let Some(close) = text[head..].find('>') else {
        return (text.len(), None);
    };
    let name = text[head..head + close].trim();
    let open = head + close + 1;
    let (body_end, mut end) = closing(text, open, "</function>");
    // A `</tool_call>` right after belongs to the same call.
    let after = text[end..].trim_start();
    if after.starts_with("</tool_call>") {
        end = text.len() - after.len() + "</tool_call>".len();
    }
    let body = text[open..body_end].trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return (end, None);
    }
    let arguments = if body.starts_with('{') {
        repair::values(body).into_iter().next()
    } else {
        parameters(body)
    };
    let value = arguments.map(|a| serde_json::json!({ "name": name, "arguments": a }));
    (end, value)
}

/// `<parameter=key>value</parameter>` pairs as an object; a value that parses as JSON (a
/// number, a list) is taken as such, anything else as a string.
fn parameters(body: &str) -> Option<Value> {
    let mut map = Map::new();
    let mut rest = body;
    while let Some(at) = rest.find("<parameter=") {
        let head = &rest[at + "<parameter=".len()..];
        let close = head.find('>')?;
        let key = head[..close].trim().to_string();
        let value_start = &head[close + 1..];
        let (value, next) = match value_start.find("</parameter>") {
            Some(end) => (
                &value_start[..end],
                &value_start[end + "</parameter>".len()..],
            ),
            None => (value_start, ""),
        };
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        let parsed = match serde_json::from_str::<Value>(value) {
            Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_))) => v,
            _ => Value::String(value.to_string()),
        };
        map.insert(key, parsed);
        rest = next;
    }
    (rest.trim().is_empty() || !map.is_empty()).then_some(Value::Object(map))
}

/// `<tools>…</tools>` around calls in any form: the calls inside, the wrapper with them.
fn tools_block(text: &str, start: usize) -> (usize, Vec<Value>) {
    let open = start + "<tools>".len();
    let (body_end, end) = closing(text, open, "</tools>");
    let inside = candidates(&text[open..body_end]);
    (end, inside.into_iter().flat_map(|c| c.values).collect())
}

/// `<function><name>list</name><arguments><path>data</path></arguments></function>`, the
/// element form small Qwen models write (often inside `<tools>`): the arguments are child
/// elements, or one JSON object. Up to `</function>` (or the end of the text).
fn element_block(text: &str, start: usize) -> (usize, Option<Value>) {
    let open = start + "<function>".len();
    let (body_end, end) = closing(text, open, "</function>");
    let body = &text[open..body_end];
    let Some(name) = element(body, "name").map(str::trim) else {
        return (end, None);
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return (end, None);
    }
    let arguments = element(body, "arguments").unwrap_or("").trim();
    let arguments = if arguments.starts_with('{') {
        repair::values(arguments).into_iter().next()
    } else {
        children(arguments)
    };
    let value = arguments.map(|a| serde_json::json!({ "name": name, "arguments": a }));
    (end, value)
}

/// `<function name="edit" arguments='{"path": …}' />`: the name and the arguments (one JSON
/// object) as attributes, the element closed by `/>` or `</function>`.
fn attribute_block(text: &str, start: usize) -> (usize, Option<Value>) {
    let open = start + "<function ".len();
    let (head_end, mut end) = closing(text, open, ">");
    let head = text[open..head_end].trim_end_matches('/');
    if !text[..head_end].ends_with('/') {
        end = closing(text, end, "</function>").1;
    }
    let (Some(name), Some(arguments)) = (attribute(head, "name"), attribute(head, "arguments"))
    else {
        return (end, None);
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return (end, None);
    }
    let value = repair::values(arguments)
        .into_iter()
        .next()
        .map(|a| serde_json::json!({ "name": name, "arguments": a }));
    (end, value)
}

/// The value of `key="…"` or `key='…'` in an element's head.
fn attribute<'a>(head: &'a str, key: &str) -> Option<&'a str> {
    let at = head.find(&format!("{key}="))? + key.len() + 1;
    let quote = head[at..]
        .chars()
        .next()
        .filter(|c| matches!(c, '"' | '\''))?;
    let body = &head[at + 1..];
    Some(&body[..body.find(quote)?])
}

/// The text inside the first `<tag>…</tag>` of `body`.
fn element<'a>(body: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let at = body.find(&open)? + open.len();
    let len = body[at..].find(&format!("</{tag}>"))?;
    Some(&body[at..at + len])
}

/// `<key>value</key>` elements one after another as an object (values as in [`parameters`]);
/// `None` when anything else is there.
fn children(body: &str) -> Option<Value> {
    let mut map = Map::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let head = rest.strip_prefix('<')?;
        let key = &head[..head.find('>')?];
        if key.is_empty() || key.contains(['/', ' ', '<']) {
            return None;
        }
        let value = element(rest, key)?;
        let parsed = match serde_json::from_str::<Value>(value.trim()) {
            Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_))) => v,
            _ => Value::String(value.to_string()),
        };
        map.insert(key.to_string(), parsed);
        let consumed = format!("<{key}>").len() + value.len() + format!("</{key}>").len();
        rest = rest[consumed..].trim_start();
    }
    Some(Value::Object(map))
}

/// A fenced code block: its body when it is JSON or a tagged call. Other code blocks (and
/// their contents) are skipped whole: a dict in Python is not a call.
fn fence(text: &str, start: usize) -> (usize, Vec<Value>) {
    let after = start + 3;
    let line_end = text[after..].find('\n').map_or(text.len(), |i| after + i);
    let lang = text[after..line_end].trim().to_ascii_lowercase();
    let open = (line_end + 1).min(text.len());
    let (body_end, end) = closing(text, open, "```");
    if !matches!(lang.as_str(), "" | "json" | "json5" | "tool_call" | "xml") {
        return (end, Vec::new());
    }
    let body = text[open..body_end].trim();
    if body.starts_with("<tool_call>") {
        return (end, tool_call(body, 0).1);
    }
    if body.starts_with("<function=") {
        return (end, function_block(body, 0).1.into_iter().collect());
    }
    if let Some(at) = body.find("<function>") {
        return (end, element_block(body, at).1.into_iter().collect());
    }
    if !body.starts_with(['{', '[']) {
        return (end, Vec::new());
    }
    (end, repair::values(body))
}

/// A family's marker followed by one JSON object or a list of them.
fn marked(text: &str, start: usize, marker: usize) -> (usize, Vec<Value>) {
    let open = start + marker;
    let body = text[open..].trim_start();
    let body_start = text.len() - body.len();
    let end = body_start + repair::extent(body);
    (end, repair::values(&text[body_start..end]))
}

/// A bare JSON object starting at `start`: only `{"` or `{{` can open a call.
fn bare(text: &str, start: usize) -> (usize, Vec<Value>) {
    let rest = &text[start + 1..];
    if !rest.trim_start().starts_with(['"', '{', '\'']) {
        return (start + 1, Vec::new());
    }
    let end = start + repair::extent(&text[start..]);
    let values = repair::values(&text[start..end]);
    // Only an object with a name can be a call; anything else is skipped one byte at a
    // time so objects nested in it are still looked at.
    if values
        .iter()
        .any(|v| v.get("name").is_some() || v.get("function").is_some())
    {
        (end, values)
    } else {
        (start + 1, Vec::new())
    }
}

/// Where the body that starts at `open` ends and where its block ends: before and after the
/// first `close`, or both at the end of the text when it never comes.
fn closing(text: &str, open: usize, close: &str) -> (usize, usize) {
    match text[open..].find(close) {
        Some(i) => (open + i, open + i + close.len()),
        None => (text.len(), text.len()),
    }
}
