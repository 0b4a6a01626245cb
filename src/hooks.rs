//! Hooks as data: the events a hook runs at (Claude Code's names) and one checked hook with its
//! matcher and the digest an approval holds. Pure: it runs nothing and reads no file; config
//! builds them, the CLI chooses which run, and the agent's hooks part runs them.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a session starts, as `SessionStart` hooks read it (`source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SessionSource {
    /// A new conversation.
    Startup,
    /// A saved conversation goes on.
    Resume,
}

/// The approval mode in force, as every hook reads it (`permission_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PermissionMode {
    /// Calls are approved as usual.
    Default,
    /// Plan mode: nothing but the plan file may change.
    Plan,
}

/// What starts a compaction, as `PreCompact` hooks read it (`trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CompactTrigger {
    /// The user asked (`/compact`).
    Manual,
    /// The context was nearly full, or the server said it was too long.
    Auto,
}

/// When a hook runs. The names are the ones Claude Code's hook scripts are written against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEvent {
    /// A session started (a new one or a resume).
    SessionStart,
    /// The user sent a prompt; before the model sees it.
    UserPromptSubmit,
    /// The model asked for a tool call; before it is approved and run.
    PreToolUse,
    /// A tool call finished.
    PostToolUse,
    /// Compaction is about to summarise the history.
    PreCompact,
    /// The model answered without asking for a tool: the turn is about to end.
    Stop,
}

impl HookEvent {
    pub(crate) const ALL: [HookEvent; 6] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PreCompact,
        HookEvent::Stop,
    ];

    /// The name in the config and in `hook_event_name`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Stop => "Stop",
        }
    }

    /// Whether the event is about one tool call (and so takes a `matcher`).
    pub(crate) fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }

    /// The event a config names, if it is one.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// How many times in a row one turn may be sent back to work by `Stop` hooks when no hook
/// sets `max_blocks`: a hook that always blocks must not drive the model to the round limit.
pub const DEFAULT_STOP_MAX_BLOCKS: u32 = 3;

/// One hook, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub event: HookEvent,
    /// Tool names it applies to (tool events only): `|`-separated alternatives, each a name
    /// or a pattern with `*`; `None` (or `*`) means every tool.
    pub matcher: Option<String>,
    /// The shell command (`bash -c`), run in the workspace.
    pub command: String,
    pub timeout: Duration,
    /// The file that defines it.
    pub origin: PathBuf,
    /// Defined by the workspace's own file: runs only once the user approved it as it is.
    pub from_workspace: bool,
    /// `Stop` hooks: how many times in a row a turn may be sent back to work before it ends
    /// anyway (the largest among the `Stop` hooks applies); other events ignore it.
    pub max_blocks: u32,
    /// `sandbox = "off"` in the user's own file: runs unconfined, like a Claude Code hook,
    /// so it may log under `$HOME`, notify or call a webhook. Never a workspace's hook.
    pub unconfined: bool,
}

impl Hook {
    /// A SHA-256 (hex) of what the hook is: event, matcher, command and timeout. An approval
    /// holds it, so any change to these asks again.
    pub fn definition_hash(&self) -> String {
        use sha2::Digest;
        let mut canonical = serde_json::json!({
            "event": self.event.as_str(),
            "matcher": self.matcher,
            "command": self.command,
            "timeout": self.timeout.as_secs(),
        });
        // Only when set, so approvals recorded before the setting existed still hold.
        if self.max_blocks != DEFAULT_STOP_MAX_BLOCKS {
            canonical["max_blocks"] = self.max_blocks.into();
        }
        let digest = sha2::Sha256::digest(canonical.to_string().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether the hook applies to a call of `tool` (always true for the other events).
    /// Names compare without regard to case, so Claude Code's `Bash` matches `bash`.
    pub fn matches(&self, tool: Option<&str>) -> bool {
        let (Some(pattern), Some(tool)) = (self.matcher.as_deref(), tool) else {
            return true;
        };
        let tool = tool.to_lowercase();
        pattern.split('|').map(str::trim).any(|alt| {
            let alt = alt.to_lowercase().replace(".*", "*");
            alt.is_empty() || glob(&alt, &tool)
        })
    }

    /// How the user is told which hook this is: its event, matcher and command.
    pub(crate) fn describe(&self) -> String {
        let matcher = self
            .matcher
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        format!(
            "{}{matcher} hook `{}`",
            self.event.as_str(),
            crate::sanitize::visible(&self.command)
        )
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(after) = text.strip_prefix(head) else {
                return false;
            };
            (0..=after.len())
                .filter(|i| after.is_char_boundary(*i))
                .any(|i| glob(rest, &after[i..]))
        }
    }
}
