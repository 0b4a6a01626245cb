//! A saved session, as the session module read and migrated it, turned into other formats:
//! ATIF, the Agent Trajectory Interchange Format of Harbor (RFC 0001, v1.4 fields; an external
//! spec, so its shape is written here), and the protocol's own `Event`s, one per line, which
//! read back as `protocol::Event`. Pure functions of the typed session: the CLI reads the
//! file and prints.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::chat::{Message, Role, ToolCall, ToolKind, ToolStatus};
use crate::protocol::{Event, HistoryEntry};
use crate::session::Saved;

/// The ATIF version whose fields this writes.
pub(crate) const ATIF_VERSION: &str = "ATIF-v1.4";

/// A tool call's arguments as the object ATIF requires (text that is not a JSON object is
/// kept under `raw`).
fn arguments(call: &ToolCall) -> Value {
    let raw = call.arguments.as_str();
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ if raw.trim().is_empty() => json!({}),
        _ => json!({ "raw": raw }),
    }
}

fn content(message: &Message) -> String {
    message.content.clone().unwrap_or_default()
}

/// The session as one ATIF trajectory.
pub(crate) fn atif(session: &Saved, agent_version: &str) -> Value {
    let mut steps: Vec<Value> = Vec::new();
    for (index, message) in session.messages.iter().enumerate() {
        let text = content(message);
        match message.role {
            Role::System => steps.push(step(steps.len(), "system", text)),
            Role::User => steps.push(step(steps.len(), "user", text)),
            Role::Assistant => steps.push(agent_step(steps.len(), message, text)),
            Role::Tool => {
                let status = session.result(index).and_then(|r| r.status);
                observe(&mut steps, message, text, status);
            }
        }
    }
    let totals = &session.totals;
    let mut root = json!({
        "schema_version": ATIF_VERSION,
        "session_id": session.id,
        "agent": { "name": "minicode", "version": agent_version },
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": totals.input_tokens,
            "total_completion_tokens": totals.output_tokens,
            "total_steps": steps.len(),
            "extra": {
                "turns": totals.turns,
                "model_calls": totals.model_calls,
                "tool_calls": totals.tool_calls,
            },
        },
    });
    root["extra"] = Value::Object(extra(session));
    if session.checkpoint.is_some() {
        root["notes"] = json!(
            "the conversation was compacted: from extra.checkpoint.first_kept_index on, the \
             model saw extra.checkpoint.summary in place of the earlier messages, which are \
             all kept here"
        );
    }
    root
}

/// The session's own facts ATIF has no field for.
fn extra(session: &Saved) -> Map<String, Value> {
    let mut extra = Map::new();
    extra.insert("created".into(), json!(session.created));
    extra.insert("updated".into(), json!(session.updated));
    extra.insert("workspace".into(), json!(session.workspace));
    let optional = [
        ("forked_from", serde_json::to_value(&session.forked_from)),
        ("parent", serde_json::to_value(&session.parent)),
        ("checkpoint", serde_json::to_value(&session.checkpoint)),
    ];
    for (key, value) in optional {
        if let Ok(value) = value
            && !value.is_null()
        {
            extra.insert(key.into(), value);
        }
    }
    extra
}

fn step(index: usize, source: &str, message: String) -> Value {
    json!({ "step_id": index + 1, "source": source, "message": message })
}

fn agent_step(index: usize, message: &Message, text: String) -> Value {
    let mut s = step(index, "agent", text);
    if let Some(reasoning) = &message.reasoning {
        s["reasoning_content"] = json!(reasoning);
    }
    let calls: Vec<Value> = message
        .tool_calls
        .iter()
        .map(|c| {
            json!({
                "tool_call_id": c.id,
                "function_name": c.name,
                "arguments": arguments(c),
            })
        })
        .collect();
    if !calls.is_empty() {
        s["tool_calls"] = json!(calls);
        s["observation"] = json!({ "results": [] });
    }
    s
}

/// A tool result joins the observation of the agent step that made the call; its status
/// (succeeded, failed, denied, …) goes to that step's `extra.tool_status`.
fn observe(steps: &mut [Value], message: &Message, text: String, status: Option<ToolStatus>) {
    let call = message.tool_call_id.as_deref();
    let Some(step) = steps.iter_mut().rev().find(|s| {
        s.get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|calls| calls.iter().any(|c| c["tool_call_id"].as_str() == call))
    }) else {
        return;
    };
    if let Some(results) = step
        .pointer_mut("/observation/results")
        .and_then(Value::as_array_mut)
    {
        results.push(json!({ "source_call_id": call, "content": text }));
    }
    if let (Some(call), Some(status)) = (call, status) {
        if step.get("extra").is_none() {
            step["extra"] = json!({ "tool_status": {} });
        }
        step["extra"]["tool_status"][call] = json!(status);
    }
}

/// The session as the protocol's events, in the order a live session sends them: its
/// `session_configured` (a session file records neither the model nor the window: empty and
/// 0), then each prompt (as `history_restored` with one user entry, the way a frontend is told
/// of a prompt it did not type), reasoning, reply, tool call and its end. The system prompt is
/// no event (the ATIF export keeps it).
pub(crate) fn events(session: &Saved, path: &str) -> Vec<Event> {
    // The one-line description a call was shown with is recorded with its result.
    let summaries: HashMap<&str, &str> = session
        .results
        .iter()
        .filter_map(|(at, info)| {
            let call = session.messages.get(*at)?.tool_call_id.as_deref()?;
            Some((call, info.summary.as_deref()?))
        })
        .collect();
    let mut out = vec![Event::SessionConfigured {
        session_id: session.id.clone(),
        session_path: path.to_string(),
        model: String::new(),
        context_window: 0,
        resumed_messages: session.messages.len(),
    }];
    for (index, message) in session.messages.iter().enumerate() {
        let text = content(message);
        match message.role {
            Role::System => {}
            Role::User => out.push(Event::HistoryRestored {
                entries: vec![HistoryEntry::User { text }],
            }),
            Role::Assistant => {
                if let Some(reasoning) = &message.reasoning {
                    out.push(Event::ReasoningDelta {
                        text: reasoning.clone(),
                    });
                }
                out.push(Event::AssistantMessage { text });
                out.extend(message.tool_calls.iter().map(|call| Event::ToolCallBegan {
                    call: call.id.clone(),
                    tool: call.name.clone(),
                    summary: summaries.get(call.id.as_str()).unwrap_or(&"").to_string(),
                    arguments: arguments(call),
                    kind: ToolKind::Other,
                    paths: Vec::new(),
                    change: None,
                }));
            }
            Role::Tool => out.push(Event::ToolCallEnded {
                call: message.tool_call_id.clone().unwrap_or_default(),
                // A result the file holds without a record of how it ended.
                status: session
                    .result(index)
                    .and_then(|r| r.status)
                    .unwrap_or(ToolStatus::ExecutionUnknown),
                output: text,
            }),
        }
    }
    out
}
