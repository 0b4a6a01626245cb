//! The on-disk snapshot format: its serde shapes, the one `migrate` path from older versions,
//! and the checks a loaded snapshot must pass (id, workspace, roles, tool-call pairing,
//! checkpoint). Pure data work: no files, no locks, no backups (those are `session.rs`'s).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::chat::{Message, Role, ToolStatus};

use super::stored::History;
use super::{Checkpoint, SNAPSHOT_VERSION, Totals, is_valid_id};

/// The tool result put in place of a call whose outcome was lost (the process died while it
/// ran). It tells the model the truth: the call may or may not have had effects.
pub const INTERRUPTED_RESULT: &str = "interrupted: minicode stopped while this tool call was \
running, so its outcome is unknown. It was not run again; check the current state before \
repeating it.";

/// A snapshot as read from disk (the current version).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Snapshot {
    pub(crate) version: u32,
    pub(crate) id: String,
    pub(crate) workspace: PathBuf,
    pub(crate) created: String,
    pub(crate) updated: String,
    pub(crate) messages: History,
    #[serde(default)]
    pub(crate) totals: Totals,
    #[serde(default)]
    pub(crate) checkpoint: Option<Checkpoint>,
    /// Set on a sub-agent's session: who started it. Absent from every other file, so files
    /// written before sub-agents existed load unchanged (no version step needed).
    #[serde(default)]
    pub(crate) parent: Option<Parent>,
    /// Set on a fork (`--fork`, `/fork`): the session it was copied from. Absent otherwise,
    /// so older files load unchanged.
    #[serde(default)]
    pub(crate) forked_from: Option<String>,
    /// The background processes that were running when the session last ended (they are
    /// not restarted). Absent when there were none, so older files load unchanged.
    #[serde(default)]
    pub(crate) background: Vec<crate::chat::Background>,
}

/// The fields before `messages`, borrowed, for writing. A snapshot is written as this object,
/// the messages (serialized once each and cached, see `stored::Appended`) and [`SnapshotTail`],
/// spliced into one object with the same fields in the same order as [`Snapshot`].
#[derive(Serialize)]
pub(super) struct SnapshotHead<'a> {
    pub(crate) version: u32,
    pub(crate) id: &'a str,
    pub(crate) workspace: &'a Path,
    pub(crate) created: String,
    pub(crate) updated: String,
}

/// The fields after `messages`, borrowed.
#[derive(Serialize)]
pub(super) struct SnapshotTail<'a> {
    pub(crate) totals: &'a Totals,
    pub(crate) checkpoint: Option<&'a Checkpoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parent: Option<&'a Parent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) forked_from: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) background: &'a [crate::chat::Background],
}

/// Where a sub-agent's session came from: the parent session, the parent's `delegate` call
/// and the task's id in it. Stored in the child's snapshot, so a child's file can be traced
/// back to the call that started it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parent {
    pub session_id: String,
    pub call_id: String,
    pub task_id: String,
}

/// The longest call or task id a parent record keeps (ids come from the model).
const MAX_PARENT_ID_BYTES: usize = 256;

impl Parent {
    /// The record is one minicode could have written.
    pub(super) fn check(&self) -> Result<(), String> {
        if !is_valid_id(&self.session_id) {
            return Err("`parent.session_id` is not a session id".to_string());
        }
        for (label, value) in [("call_id", &self.call_id), ("task_id", &self.task_id)] {
            if value.is_empty() || value.len() > MAX_PARENT_ID_BYTES {
                return Err(format!(
                    "`parent.{label}` must have 1 to {MAX_PARENT_ID_BYTES} bytes"
                ));
            }
        }
        Ok(())
    }
}

/// Only the version, read first so an unknown future format is refused with a clear message
/// instead of a confusing field error.
#[derive(Deserialize)]
struct VersionProbe {
    version: u32,
}

/// How a file failed to load, before `session.rs` attaches the path.
pub(super) enum LoadError {
    TooNew(u32),
    Corrupt(String),
}

/// A parsed snapshot and, when it was migrated, the version its file is written in.
pub(super) struct Parsed {
    pub(crate) snapshot: Snapshot,
    pub(crate) migrated_from: Option<u32>,
}

/// Parses bytes into a current-version snapshot, migrating older versions. The common case
/// (a current file) is one pass; the version is probed separately only when that fails or
/// finds an older file.
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, LoadError> {
    let corrupt = |e: serde_json::Error| LoadError::Corrupt(json_reason(&e));
    let version = match serde_json::from_slice::<Snapshot>(bytes) {
        Ok(snapshot) if snapshot.version == SNAPSHOT_VERSION => {
            return Ok(Parsed {
                snapshot,
                migrated_from: None,
            });
        }
        Ok(snapshot) => snapshot.version,
        Err(e) => match serde_json::from_slice::<VersionProbe>(bytes) {
            Ok(probe) if probe.version != SNAPSHOT_VERSION => probe.version,
            _ => return Err(corrupt(e)),
        },
    };
    if version > SNAPSHOT_VERSION {
        return Err(LoadError::TooNew(version));
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(corrupt)?;
    let snapshot = migrate(value).map_err(LoadError::Corrupt)?;
    Ok(Parsed {
        snapshot,
        migrated_from: Some(version),
    })
}

fn json_reason(e: &serde_json::Error) -> String {
    if e.is_eof() {
        format!(
            "the file is truncated (line {}, column {})",
            e.line(),
            e.column()
        )
    } else {
        // serde_json messages quote at most a field name or a short token, never whole values.
        e.to_string()
    }
}

/// Brings an older snapshot up to [`SNAPSHOT_VERSION`]. Every format change adds one step
/// here, so loading has a single path for old files.
///
/// - v1 → v2: v2 adds the optional `checkpoint` (compaction summary); v1 files have none.
/// - v2 → v3: v3 records on each tool result how the call ended (`status`) and its one-line
///   `summary`. Older files stored only the text, so the status is inferred here, once, from
///   the fixed wordings minicode wrote (see [`status_from_text`]); the summary stays unknown
///   (a frontend is shown one built from the call's arguments).
pub(super) fn migrate(mut value: serde_json::Value) -> Result<Snapshot, String> {
    let object = value
        .as_object_mut()
        .ok_or("the snapshot is not a JSON object")?;
    let mut version = object
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .ok_or("missing version")?;
    if version == 0 || version > u64::from(SNAPSHOT_VERSION) {
        return Err(format!("unknown snapshot version {version}"));
    }
    if version == 1 {
        if object.contains_key("checkpoint") {
            return Err("a version 1 snapshot cannot have a checkpoint".to_string());
        }
        version = 2;
    }
    if version == 2 {
        let messages = object
            .get_mut("messages")
            .and_then(serde_json::Value::as_array_mut)
            .ok_or("`messages` is not a list")?;
        for (index, message) in messages.iter_mut().enumerate() {
            let Some(message) = message.as_object_mut() else {
                return Err(format!("message {index} is not an object"));
            };
            if message.contains_key("status") || message.contains_key("summary") {
                return Err(format!(
                    "message {index} has a status or summary, which version 2 files never have"
                ));
            }
            if message.get("role").and_then(serde_json::Value::as_str) != Some("tool") {
                continue;
            }
            let text = message
                .get("content")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("");
            let status = serde_json::to_value(status_from_text(text)).map_err(|e| e.to_string())?;
            message.insert("status".into(), status);
        }
        version = 3;
    }
    object.insert("version".into(), version.into());
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// How a version 1 or 2 tool result ended, read from its text: those files stored nothing
/// else. It knows the fixed wordings the core and the tools wrote: a denial, "not run" or
/// "interrupted" at the start, "invalid arguments" or "unknown tool" at the start, or a closing
/// `[exit code N]` (N ≠ 0), `[timed out …]`, `[killed by signal …]` or `[interrupted …]` line.
/// Anything else counts as a success. Used by the migration only: a current file says.
fn status_from_text(text: &str) -> ToolStatus {
    let head = text.trim_start().to_lowercase();
    if head.starts_with("the user denied") {
        return ToolStatus::Denied;
    }
    if head.starts_with("not run") || head.starts_with("interrupted") {
        return ToolStatus::Interrupted;
    }
    if head.starts_with("invalid arguments") || head.starts_with("unknown tool") {
        return ToolStatus::Rejected;
    }
    let last = text.trim_end().rsplit('\n').next().unwrap_or("").trim();
    if let Some(inner) = last.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
        if let Some(code) = inner.strip_prefix("exit code ") {
            return if code.trim() == "0" {
                ToolStatus::Succeeded
            } else {
                ToolStatus::Failed
            };
        }
        if inner.starts_with("interrupted") {
            return ToolStatus::Interrupted;
        }
        if inner.starts_with("timed out") || inner.starts_with("killed by signal") {
            return ToolStatus::Failed;
        }
    }
    ToolStatus::Succeeded
}

/// Checks a parsed snapshot belongs to `id` in `workspace` and that its history is one the
/// agent could have written. Returns the call ids left open at the very end (the process
/// died mid-call); any other pairing problem is corruption.
pub(super) fn validate(
    snapshot: &Snapshot,
    id: &str,
    workspace: &Path,
) -> Result<Vec<String>, Problem> {
    if snapshot.version != SNAPSHOT_VERSION {
        return Err(Problem::Corrupt(format!(
            "unexpected version {}",
            snapshot.version
        )));
    }
    if snapshot.id != id {
        return Err(Problem::Corrupt(format!(
            "it names session {:?}, not the {id} its file name says",
            snapshot.id
        )));
    }
    if snapshot.workspace != workspace {
        return Err(Problem::WrongWorkspace(snapshot.workspace.clone()));
    }
    for (label, text) in [
        ("created", &snapshot.created),
        ("updated", &snapshot.updated),
    ] {
        parse_time(text)
            .ok_or_else(|| Problem::Corrupt(format!("`{label}` is not an RFC 3339 time")))?;
    }
    let open = check_history(&snapshot.messages.messages).map_err(Problem::Corrupt)?;
    if let Some(checkpoint) = &snapshot.checkpoint {
        check_checkpoint(checkpoint, &snapshot.messages.messages).map_err(Problem::Corrupt)?;
    }
    if let Some(parent) = &snapshot.parent {
        parent.check().map_err(Problem::Corrupt)?;
    }
    if let Some(origin) = &snapshot.forked_from
        && !is_valid_id(origin)
    {
        return Err(Problem::Corrupt(
            "`forked_from` is not a session id".to_string(),
        ));
    }
    Ok(open)
}

pub(super) enum Problem {
    Corrupt(String),
    WrongWorkspace(PathBuf),
}

/// Walks the history: no system messages; every assistant tool call answered by exactly one
/// tool message with its id before any other role follows; no tool message without an open
/// call. Returns the calls still open at the end.
pub(super) fn check_history(messages: &[Message]) -> Result<Vec<String>, String> {
    let mut open: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::System => {
                return Err(format!(
                    "message {index} is a system message (those are never stored)"
                ));
            }
            Role::Tool => {
                let Some(call_id) = &message.tool_call_id else {
                    return Err(format!("tool message {index} has no tool_call_id"));
                };
                match open.iter().position(|c| c == call_id) {
                    Some(at) => {
                        open.remove(at);
                    }
                    None => {
                        return Err(format!(
                            "tool message {index} answers call {call_id:?}, which is not open"
                        ));
                    }
                }
                if !message.tool_calls.is_empty() {
                    return Err(format!("tool message {index} carries tool calls"));
                }
            }
            Role::User | Role::Assistant => {
                if let Some(call_id) = open.first() {
                    return Err(format!(
                        "tool call {call_id:?} has no result before message {index}"
                    ));
                }
                if message.role == Role::User && !message.tool_calls.is_empty() {
                    return Err(format!("user message {index} carries tool calls"));
                }
                let mut seen = HashSet::new();
                for call in &message.tool_calls {
                    if call.id.is_empty() {
                        return Err(format!("a tool call in message {index} has an empty id"));
                    }
                    if !seen.insert(call.id.as_str()) {
                        return Err(format!(
                            "message {index} repeats tool call id {:?}",
                            call.id
                        ));
                    }
                    open.push(call.id.clone());
                }
            }
        }
    }
    Ok(open)
}

/// A checkpoint must point at a message boundary inside the history, never between a tool
/// call and its results.
pub(super) fn check_checkpoint(
    checkpoint: &Checkpoint,
    messages: &[Message],
) -> Result<(), String> {
    let index = checkpoint.first_kept_index;
    if index > messages.len() {
        return Err(format!(
            "checkpoint keeps messages from {index}, but there are only {}",
            messages.len()
        ));
    }
    if messages.get(index).is_some_and(|m| m.role == Role::Tool) {
        return Err(format!(
            "checkpoint starts at message {index}, inside a tool batch"
        ));
    }
    Ok(())
}

pub(super) fn format_time(time: SystemTime) -> String {
    humantime::format_rfc3339_micros(time).to_string()
}

pub(super) fn parse_time(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(text).ok()
}
