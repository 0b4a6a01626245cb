//! The conversation data model: messages, tool calls and their declarations, token usage, and
//! how a tool call is approved and ends. Plain data shared by every layer; it imports nothing
//! else of ours, so the provider, the core, the tools, the session store and the frontends can
//! all depend on it without depending on each other.
//!
//! Messages serialize exactly as `/chat/completions` expects, so the same type is sent to the
//! server, kept in history and stored in session files.

mod background;
mod image;
mod names;
pub(crate) mod schema;
mod tokens;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub(crate) use background::{Background, BackgroundState};
pub use image::{Image, ImageError, ImageFormat, MAX_IMAGE_BYTES};
pub(crate) use names::serde_name;
pub use tokens::{estimate_message, estimate_text, estimate_tools, split_at_budget};

/// What separates the user's own words from the context hooks added to a prompt
/// (`UserPromptSubmit`, `SessionStart`) in one user message: whatever follows it is not the
/// user's, which the demo model needs to know.
pub(crate) const HOOK_CONTEXT_HEADING: &str = "\n\n[Context added by hooks]\n";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        serde_name(&self)
    }
}

/// minicode's own tools, by name: what code outside `tools` compares a call's tool with (ACP
/// titles, tallies, checkpoints, permission rule families, the sub-agents' tools) rather than
/// a string of its own. Each tool declares its name from here, so the two cannot drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    Bash,
    BashOutput,
    BashKill,
    Read,
    Write,
    Edit,
    List,
    Search,
    Find,
    Fetch,
    /// Read-only sub-agents; the core runs its calls itself.
    Delegate,
}

impl Builtin {
    /// Every built-in tool.
    pub(crate) const ALL: [Builtin; 11] = [
        Builtin::Bash,
        Builtin::BashOutput,
        Builtin::BashKill,
        Builtin::Read,
        Builtin::Write,
        Builtin::Edit,
        Builtin::List,
        Builtin::Search,
        Builtin::Find,
        Builtin::Fetch,
        Builtin::Delegate,
    ];

    /// The name the model calls it by.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Builtin::Bash => "bash",
            Builtin::BashOutput => "bash_output",
            Builtin::BashKill => "bash_kill",
            Builtin::Read => "read",
            Builtin::Write => "write",
            Builtin::Edit => "edit",
            Builtin::List => "list",
            Builtin::Search => "search",
            Builtin::Find => "find",
            Builtin::Fetch => "fetch",
            Builtin::Delegate => "delegate",
        }
    }

    /// The built-in tool called `name`, if one is (an MCP tool or a skill is not).
    pub(crate) fn of(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// What a tool call does, as its tool declares it: frontends show a call by its kind, never by
/// the tool's name, so renaming a tool changes nothing they do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or folders.
    Read,
    /// Creates or changes files.
    Edit,
    /// Runs a command.
    Execute,
    /// Searches file contents.
    Search,
    /// Fetches something from elsewhere.
    Fetch,
    /// Works on the model's own behalf (sub-agents, skills).
    Think,
    /// Anything else (MCP tools, goal tools).
    #[default]
    Other,
}

/// One chat message. `content` stays `null` (not omitted) beside assistant tool calls, and a
/// tool result with no output is sent as `""`, because some servers reject anything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// What a reasoning model thought before this assistant reply, kept only when the user
    /// asked for it to be sent back (`[model] send_reasoning`): some servers require it during
    /// tool loops. Named `reasoning_content` on the wire and in session files, as DeepSeek,
    /// vLLM and llama.cpp name it; the provider leaves it out of requests unless enabled.
    #[serde(
        rename = "reasoning_content",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning: Option<String>,
    /// Images attached to a user message (`--image`, `@image.png`, a `read` of an image, ACP
    /// image blocks). Sent as `image_url` parts after the text; a message without any keeps
    /// the plain string `content` on the wire, byte for byte. Session files hold only each
    /// image's reference (see [`Image`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text.into())
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text.into())
    }

    pub fn assistant(text: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            role: Role::Assistant,
            content: text,
            tool_calls,
            tool_call_id: None,
            reasoning: None,
            images: Vec::new(),
        }
    }

    pub fn tool_result(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: Some(output.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            reasoning: None,
            images: Vec::new(),
        }
    }

    fn plain(role: Role, text: String) -> Self {
        Self {
            role,
            content: Some(text),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: None,
            images: Vec::new(),
        }
    }

    /// A user message carrying `images` after its text.
    pub(crate) fn user_with_images(text: impl Into<String>, images: Vec<Image>) -> Self {
        let mut message = Self::user(text);
        message.images = images;
        message
    }

    /// The text content, or "" when there is none.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    /// Whether this is a session notice (`agent::notice`): a user-role message minicode
    /// wrote, not the user. Defined here so a session's listing can pass it over too.
    pub(crate) fn is_notice(&self) -> bool {
        self.role == Role::User
            && (self.text().starts_with(NOTICE_OPEN) || self.text().starts_with(REMINDER_OPEN))
    }
}

/// How a session notice opens (see [`Message::is_notice`]).
pub(crate) const NOTICE_OPEN: &str = "<session-notice>";

/// How a reminder to a small model opens: a notice too, in plain words rather than a tag,
/// because Qwen2.5-Coder 1.5B copied a tagged reminder back as its answer.
pub(crate) const REMINDER_OPEN: &str = "Reminder from minicode (not the user):";

/// A tool call as the model made it. `arguments` is the raw JSON text from the wire; it is
/// parsed and validated by the tool registry, never trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Wire shape: `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Serialize, Deserialize)]
struct WireToolCall<'a> {
    id: std::borrow::Cow<'a, str>,
    #[serde(rename = "type", default = "function_kind")]
    kind: std::borrow::Cow<'a, str>,
    function: WireFunction<'a>,
}

#[derive(Serialize, Deserialize)]
struct WireFunction<'a> {
    name: std::borrow::Cow<'a, str>,
    #[serde(default)]
    arguments: std::borrow::Cow<'a, str>,
}

fn function_kind() -> std::borrow::Cow<'static, str> {
    "function".into()
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        WireToolCall {
            id: self.id.as_str().into(),
            kind: "function".into(),
            function: WireFunction {
                name: self.name.as_str().into(),
                arguments: self.arguments.as_str().into(),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireToolCall::deserialize(d)?;
        if w.kind != "function" {
            return Err(serde::de::Error::custom(format!(
                "unsupported tool call type {:?}",
                w.kind
            )));
        }
        Ok(ToolCall {
            id: w.id.into_owned(),
            name: w.function.name.into_owned(),
            arguments: w.function.arguments.into_owned(),
        })
    }
}

/// A tool declaration sent with a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: Cow<'static, str>,
    pub description: Cow<'static, str>,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Token counts as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Prompt tokens the server served from its prompt cache, when it says
    /// (`usage.prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

impl Usage {
    /// Builds usage from server numbers; a total of 0 beside real counts means "not filled in".
    pub fn new(input: u64, output: u64, total: u64) -> Self {
        let total = if total == 0 { input + output } else { total };
        Self {
            input_tokens: input,
            output_tokens: output,
            total_tokens: total,
            cached_tokens: None,
        }
    }
}

/// What a call that changes a file will put there, as its tool parsed the arguments: a
/// frontend previews the change (ACP's diffs) from this, never from the call's JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// `edit`: the piece `old` replaced by `new`.
    Replace { old: String, new: String },
    /// `write`: the file's whole new text.
    Whole { text: String },
}

/// What the user must see to decide on a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalRequest {
    /// A shell command to run in the workspace.
    Command { command: String },
    /// A file change as a unified diff against the current file (empty old side for new files).
    Diff { path: String, diff: String },
    /// A call to a tool of an MCP server: the server's id, the tool's own name and the
    /// arguments it would receive (pretty-printed JSON).
    McpCall {
        server: String,
        tool: String,
        arguments: String,
    },
    /// Running a shell command outside the sandbox: it could not be confined there, or the
    /// sandbox denied it (`reason` says which, and what was denied).
    OutsideSandbox { command: String, reason: String },
    /// Fetching a web page (`fetch`): its URL, without credentials or fragment.
    Fetch { url: String },
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Succeeded,
    /// It ran (or tried to) and failed; the output says why.
    Failed,
    /// The user refused it; nothing ran.
    Denied,
    /// Arguments were invalid; nothing ran.
    Rejected,
    /// Interrupted by the user; the process group was killed.
    Interrupted,
    /// It had started when the process running it died, before its result was saved:
    /// whether it took effect is unknown, and it is never run again.
    ExecutionUnknown,
}
