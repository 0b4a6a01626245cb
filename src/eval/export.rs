//! A session file turned into other formats, without the session's own types (it reads the
//! file's JSON, so a file from an eval run or another machine exports the same): ATIF, the
//! Agent Trajectory Interchange Format of Harbor (RFC 0001, v1.4 fields), and our own events
//! as JSON lines. Pure functions of the JSON: the CLI reads the file and prints.

use serde_json::{Map, Value, json};

/// The ATIF version whose fields this writes.
pub(crate) const ATIF_VERSION: &str = "ATIF-v1.4";

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A tool call's arguments as the object ATIF requires (text that is not a JSON object is
/// kept under `raw`).
fn arguments(call: &Value) -> Value {
    let raw = call
        .pointer("/function/arguments")
        .and_then(Value::as_str)
        .unwrap_or("");
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ if raw.trim().is_empty() => json!({}),
        _ => json!({ "raw": raw }),
    }
}

/// The session as one ATIF trajectory. `Err` when the file is not a minicode session.
pub(crate) fn atif(session: &Value, agent_version: &str) -> Result<Value, String> {
    let id = text(session, "id").ok_or("not a minicode session file (no id)")?;
    let messages = session
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("not a minicode session file (no messages)")?;
    let mut steps: Vec<Value> = Vec::new();
    for message in messages {
        let content = text(message, "content").unwrap_or_default();
        match message.get("role").and_then(Value::as_str).unwrap_or("") {
            "system" => steps.push(step(steps.len(), "system", content)),
            "user" => steps.push(step(steps.len(), "user", content)),
            "assistant" => steps.push(agent_step(steps.len(), message, content)),
            "tool" => observe(&mut steps, message, content),
            _ => {}
        }
    }
    let totals = session.get("totals").cloned().unwrap_or(Value::Null);
    let count = |key: &str| totals.get(key).and_then(Value::as_u64).unwrap_or(0);
    let mut root = json!({
        "schema_version": ATIF_VERSION,
        "session_id": id,
        "agent": { "name": "minicode", "version": agent_version },
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": count("input_tokens"),
            "total_completion_tokens": count("output_tokens"),
            "total_steps": steps.len(),
            "extra": {
                "turns": count("turns"),
                "model_calls": count("model_calls"),
                "tool_calls": count("tool_calls"),
            },
        },
    });
    let mut extra = Map::new();
    for key in [
        "created",
        "updated",
        "workspace",
        "forked_from",
        "parent",
        "checkpoint",
    ] {
        if let Some(v) = session.get(key).filter(|v| !v.is_null()) {
            extra.insert(key.to_string(), v.clone());
        }
    }
    root["extra"] = Value::Object(extra);
    if session.get("checkpoint").is_some_and(|c| !c.is_null()) {
        root["notes"] = json!(
            "the conversation was compacted: from extra.checkpoint.first_kept_index on, the \
             model saw extra.checkpoint.summary in place of the earlier messages, which are \
             all kept here"
        );
    }
    Ok(root)
}

fn step(index: usize, source: &str, message: String) -> Value {
    json!({ "step_id": index + 1, "source": source, "message": message })
}

fn agent_step(index: usize, message: &Value, content: String) -> Value {
    let mut s = step(index, "agent", content);
    if let Some(reasoning) = text(message, "reasoning_content") {
        s["reasoning_content"] = json!(reasoning);
    }
    let calls: Vec<Value> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    json!({
                        "tool_call_id": text(c, "id").unwrap_or_default(),
                        "function_name": c.pointer("/function/name").and_then(Value::as_str).unwrap_or(""),
                        "arguments": arguments(c),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if !calls.is_empty() {
        s["tool_calls"] = json!(calls);
        s["observation"] = json!({ "results": [] });
    }
    s
}

/// A tool result joins the observation of the agent step that made the call; its status
/// (succeeded, failed, denied, …) goes to that step's `extra.tool_status`.
fn observe(steps: &mut [Value], message: &Value, content: String) {
    let call = text(message, "tool_call_id");
    let Some(step) = steps.iter_mut().rev().find(|s| {
        s.get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|calls| {
                calls
                    .iter()
                    .any(|c| c["tool_call_id"].as_str() == call.as_deref())
            })
    }) else {
        return;
    };
    if let Some(results) = step
        .pointer_mut("/observation/results")
        .and_then(Value::as_array_mut)
    {
        results.push(json!({ "source_call_id": call, "content": content }));
    }
    if let (Some(call), Some(status)) = (call, text(message, "status")) {
        if step.get("extra").is_none() {
            step["extra"] = json!({ "tool_status": {} });
        }
        step["extra"]["tool_status"][call] = json!(status);
    }
}

/// The session as our own event lines (the stream-json vocabulary): the prompts, answers,
/// tool calls and their ends, in order.
pub(crate) fn events(session: &Value) -> Result<Vec<Value>, String> {
    let id = text(session, "id").ok_or("not a minicode session file (no id)")?;
    let messages = session
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("not a minicode session file (no messages)")?;
    let mut out = vec![json!({ "type": "session", "session_id": id })];
    for message in messages {
        let content = text(message, "content").unwrap_or_default();
        match message.get("role").and_then(Value::as_str).unwrap_or("") {
            "system" => out.push(json!({ "type": "system_message", "text": content })),
            "user" => out.push(json!({ "type": "user_message", "text": content })),
            "assistant" => {
                if let Some(reasoning) = text(message, "reasoning_content") {
                    out.push(json!({ "type": "reasoning", "text": reasoning }));
                }
                out.push(json!({ "type": "assistant_message", "text": content }));
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push(json!({
                        "type": "tool_call_began",
                        "call": text(call, "id"),
                        "tool": call.pointer("/function/name").and_then(Value::as_str),
                        "arguments": arguments(call),
                    }));
                }
            }
            "tool" => out.push(json!({
                "type": "tool_call_ended",
                "call": text(message, "tool_call_id"),
                "status": text(message, "status"),
                "output": content,
            })),
            _ => {}
        }
    }
    Ok(out)
}
