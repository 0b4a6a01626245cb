//! What one hook run says, read the way Claude Code's hook scripts expect to be read: exit 0
//! goes on (its plain stdout is context for `SessionStart` and `UserPromptSubmit`), exit 2
//! blocks with stderr as the reason, any other end is an error the user is shown; a JSON
//! object on stdout (exit 0) may decide instead (`decision`, `reason`, `continue`,
//! `stopReason`, `systemMessage`, `hookSpecificOutput.permissionDecision`,
//! `permissionDecisionReason`, `additionalContext`). A run the sandbox stopped says nothing,
//! whatever its status: the user is told it was stopped and why. It runs nothing and tells
//! nobody.

use serde_json::Value;

use crate::hooks::HookEvent;
use crate::tools::bash::Piped;

/// What `PreToolUse` hooks decided about a call; the strongest wins (deny, then ask, then
/// allow).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Permission {
    Allow,
    Ask(String),
    Deny(String),
}

/// One run, read.
#[derive(Debug, Default)]
pub(super) struct Verdict {
    /// Exit 2, `decision: "block"`, or `continue: false`: the reason.
    pub block: Option<String>,
    /// `continue: false` (with `stopReason`): the turn is to stop here.
    pub halt: bool,
    /// Text for the model's context.
    pub context: Option<String>,
    pub permission: Option<Permission>,
    /// For the user: `systemMessage`, or why the hook failed.
    pub notice: Option<String>,
}

impl Verdict {
    /// Whether the run stopped something: a block, a halt or a denied call.
    pub(super) fn blocks(&self) -> bool {
        self.block.is_some() || self.halt || matches!(self.permission, Some(Permission::Deny(_)))
    }
}

/// Reads `piped`, a run of a hook for `event`; `name` says which hook in notices.
pub(super) fn read(event: HookEvent, name: &str, piped: Piped) -> Verdict {
    let (code, stdout, stderr) = match piped {
        Piped::Exited {
            denied: Some(what),
            stderr,
            ..
        } => return stopped(name, &what, &stderr),
        Piped::Exited {
            code,
            stdout,
            stderr,
            denied: None,
        } => (code, stdout, stderr),
        Piped::TimedOut => {
            return failed(format!("{name} timed out; its process group was killed"));
        }
        Piped::Cancelled => return Verdict::default(),
        Piped::NotRun(why) => return failed(format!("{name} did not run: {why}")),
    };
    match code {
        Some(0) => succeeded(event, name, stdout),
        Some(2) => {
            let reason = stderr.trim();
            let reason = if reason.is_empty() {
                format!("{name} exited with status 2 and gave no reason")
            } else {
                reason.to_string()
            };
            Verdict {
                block: Some(reason.clone()),
                permission: (event == HookEvent::PreToolUse).then_some(Permission::Deny(reason)),
                ..Verdict::default()
            }
        }
        other => {
            let how = other.map_or("was killed by a signal".to_string(), |c| {
                format!("exited with status {c}")
            });
            let said = stderr.trim();
            let said = if said.is_empty() {
                String::new()
            } else {
                format!(": {}", first_lines(said))
            };
            failed(format!("{name} {how}{said}"))
        }
    }
}

/// A run the sandbox stopped: the user reads what was denied and the way out; the turn goes
/// on as if the hook had said nothing (its exit status is the sandbox's doing, not a verdict).
fn stopped(name: &str, what: &str, stderr: &str) -> Verdict {
    let said = stderr.trim();
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(" ({})", first_lines(said))
    };
    failed(format!(
        "{name} was stopped by the sandbox: it was denied {what}{said}; a hook in your user \
         config may set sandbox = \"off\" to run outside it"
    ))
}

fn failed(notice: String) -> Verdict {
    Verdict {
        notice: Some(notice),
        ..Verdict::default()
    }
}

/// At most a few lines of what a failing hook said, for a one-line notice.
fn first_lines(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().take(4).collect();
    if text.lines().count() > 4 {
        lines.push("…");
    }
    lines.join(" / ")
}

/// Exit 0: a JSON object decides; otherwise plain stdout is context where the event takes it.
fn succeeded(event: HookEvent, name: &str, stdout: String) -> Verdict {
    let trimmed = stdout.trim();
    let json = trimmed
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(trimmed).ok())
        .flatten()
        .filter(Value::is_object);
    let Some(json) = json else {
        let takes_context = matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit);
        return Verdict {
            context: (takes_context && !trimmed.is_empty()).then(|| trimmed.to_string()),
            ..Verdict::default()
        };
    };
    decided(event, name, &json)
}

/// The JSON output's fields that apply to `event`.
fn decided(event: HookEvent, name: &str, json: &Value) -> Verdict {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let specific = json.get("hookSpecificOutput");
    let reason = text(json.get("reason"));
    let mut verdict = Verdict {
        notice: text(json.get("systemMessage")).map(|m| format!("{name}: {m}")),
        context: text(specific.and_then(|s| s.get("additionalContext"))),
        ..Verdict::default()
    };
    let why = |fallback: &str| {
        reason
            .clone()
            .unwrap_or_else(|| format!("{name} {fallback}"))
    };
    match json.get("decision").and_then(Value::as_str) {
        Some("block") => verdict.block = Some(why("blocked it")),
        // The older spelling of a `PreToolUse` allow.
        Some("approve") if event == HookEvent::PreToolUse => {
            verdict.permission = Some(Permission::Allow);
        }
        _ => {}
    }
    if event == HookEvent::PreToolUse {
        if verdict.block.is_some() {
            verdict.permission = Some(Permission::Deny(why("blocked it")));
        }
        let said = text(specific.and_then(|s| s.get("permissionDecisionReason")))
            .or_else(|| reason.clone());
        let said = |fallback: &str| said.clone().unwrap_or_else(|| format!("{name} {fallback}"));
        match specific
            .and_then(|s| s.get("permissionDecision"))
            .and_then(Value::as_str)
        {
            Some("allow") => verdict.permission = Some(Permission::Allow),
            Some("deny") => verdict.permission = Some(Permission::Deny(said("denied it"))),
            Some("ask") => verdict.permission = Some(Permission::Ask(said("asks for it"))),
            _ => {}
        }
    }
    if json.get("continue").and_then(Value::as_bool) == Some(false) {
        let reason = text(json.get("stopReason")).unwrap_or_else(|| why("stopped the turn"));
        verdict.halt = true;
        verdict.block.get_or_insert(reason.clone());
        if event == HookEvent::PreToolUse {
            verdict.permission = Some(Permission::Deny(reason));
        }
    }
    verdict
}
