//! The restored conversation a frontend shows on resume: the session's messages and recorded
//! tool outcomes turned into `protocol::HistoryEntry`s. Frontends read only these entries, never
//! the session, so none of them needs to know how a session file stores a call.

use crate::chat::ToolKind;
use crate::chat::{Change, Role};
use crate::protocol::HistoryEntry;
use crate::sanitize::text::truncate;
use crate::session::Session;
use crate::tools::{Registry, Secrets};

/// The longest summary rebuilt from raw arguments, in characters.
const SUMMARY_CHARS: usize = 200;

/// Every user prompt, non-empty assistant text and tool call of the session, in order. A tool
/// call is listed where the model made it, with its result's status and output once answered
/// (an unanswered call, which only a session saved mid-call can hold, has no status).
/// Everything is redacted like a live call's events: the session keeps the model's calls as it
/// made them, and a frontend (or the exit transcript) must not show the key from there.
pub(crate) fn entries(
    session: &Session,
    secrets: &Secrets,
    registry: &Registry,
) -> Vec<HistoryEntry> {
    let messages = session.messages();
    let mut entries = Vec::with_capacity(messages.len());
    // Calls not yet answered: (call id, index of its entry).
    let mut open: Vec<(&str, usize)> = Vec::new();
    for (index, m) in messages.iter().enumerate() {
        match m.role {
            // Notices are minicode's words to the model; the user saw each change as it came.
            Role::System => {}
            Role::User if super::notice::is_notice(m) => {}
            Role::User => match super::goal::record::describe(m) {
                Some(text) => entries.push(HistoryEntry::Goal { text }),
                None => entries.push(HistoryEntry::User {
                    text: m.text().to_string(),
                }),
            },
            Role::Assistant => {
                if !m.text().trim().is_empty() {
                    entries.push(HistoryEntry::Assistant {
                        text: m.text().to_string(),
                    });
                }
                for call in &m.tool_calls {
                    let arguments =
                        serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
                    open.push((call.id.as_str(), entries.len()));
                    let tool = registry.get(&call.name);
                    let parsed = tool.as_ref().and_then(|t| t.parse(&arguments).ok());
                    let (paths, change) = parsed.map_or((Vec::new(), None), |c| {
                        (c.aim().paths().to_vec(), c.change().map(Box::new))
                    });
                    entries.push(HistoryEntry::ToolCall {
                        tool_kind: tool.as_ref().map_or(ToolKind::Other, |t| t.kind()),
                        paths,
                        change,
                        call: call.id.clone(),
                        tool: call.name.clone(),
                        summary: summary_from_arguments(&arguments).unwrap_or_else(|| {
                            truncate(&call.arguments.replace('\n', " "), SUMMARY_CHARS)
                        }),
                        arguments,
                        status: None,
                        output: String::new(),
                    });
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or("");
                let Some(at) = open.iter().position(|(call, _)| *call == id) else {
                    continue;
                };
                let (_, entry) = open.remove(at);
                let info = session.result_info(index);
                if let Some(HistoryEntry::ToolCall {
                    summary,
                    status,
                    output,
                    ..
                }) = entries.get_mut(entry)
                {
                    if let Some(recorded) = info.and_then(|i| i.summary.clone()) {
                        *summary = recorded;
                    }
                    *status = info.and_then(|i| i.status);
                    *output = m.text().to_string();
                }
            }
        }
    }
    if !secrets.is_empty() {
        entries.iter_mut().for_each(|e| redact(e, secrets));
    }
    entries
}

fn redact(entry: &mut HistoryEntry, secrets: &Secrets) {
    let text = |t: &mut String| *t = secrets.redact(std::mem::take(t));
    match entry {
        HistoryEntry::User { text: t }
        | HistoryEntry::Assistant { text: t }
        | HistoryEntry::Goal { text: t } => text(t),
        HistoryEntry::ToolCall {
            tool,
            summary,
            arguments,
            output,
            paths,
            change,
            ..
        } => {
            text(tool);
            text(summary);
            text(output);
            paths.iter_mut().for_each(text);
            secrets.redact_json(arguments);
            match change.as_deref_mut() {
                Some(Change::Replace { old, new }) => {
                    text(old);
                    text(new);
                }
                Some(Change::Whole { text: whole }) => text(whole),
                None => {}
            }
        }
    }
}

/// A call's target as its summary when the tool did not describe it: the first line of a
/// `path` or `command` argument.
pub(crate) fn summary_from_arguments(arguments: &serde_json::Value) -> Option<String> {
    ["path", "command"]
        .iter()
        .find_map(|key| arguments.get(*key).and_then(|v| v.as_str()))
        .map(|s| s.lines().next().unwrap_or("").to_string())
}
