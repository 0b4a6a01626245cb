//! Pure mappings between our protocol and ACP's types: prompts in, session updates, tool
//! calls, permission options and decisions out. No I/O and no state here.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, Content, ContentBlock,
    ContentChunk, Diff, EmbeddedResourceResource, McpServer, PermissionOption,
    PermissionOptionKind, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UnstructuredCommandInput,
};

use super::COMMANDS;
use crate::chat::{self, ApprovalRequest, ToolStatus};
use crate::protocol::McpServerSpec;
use crate::protocol::{Decision, HistoryEntry};

/// The option ids of a permission request.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject";

/// The prompt's blocks as the text of one user message: text as it is, a linked resource as
/// its URI, an embedded text resource fenced under its URI; images go beside the text (see
/// [`prompt_images`]), audio is left out (we did not offer it).
pub(super) fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut text = String::new();
    for block in blocks {
        let piece = match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::ResourceLink(link) => format!("@{}", link.uri),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    format!("\n<file uri=\"{}\">\n{}\n</file>\n", r.uri, r.text)
                }
                _ => continue,
            },
            _ => continue,
        };
        if !text.is_empty() && !text.ends_with(char::is_whitespace) {
            text.push(' ');
        }
        text.push_str(&piece);
    }
    text
}

/// The prompt's image blocks as checked images (the same formats and limit as `--image`);
/// the error names the block for the client.
pub(super) fn prompt_images(blocks: &[ContentBlock]) -> Result<Vec<chat::Image>, String> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut images = Vec::new();
    for block in blocks {
        let ContentBlock::Image(image) = block else {
            continue;
        };
        let bytes = b64
            .decode(image.data.trim())
            .map_err(|e| format!("image block: not base64: {e}"))?;
        let checked = chat::Image::new(bytes).map_err(|e| format!("image block: {e}"))?;
        if chat::ImageFormat::from_media_type(&image.mime_type) != Some(checked.format) {
            tracing::debug!(stated = %image.mime_type, "image block's type differs from its bytes");
        }
        images.push(checked);
    }
    Ok(images)
}

/// The client's MCP servers we can start (stdio), and a note for each we cannot.
pub(super) fn mcp_servers(servers: Vec<McpServer>) -> (Vec<McpServerSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut notes = Vec::new();
    for server in servers {
        match server {
            McpServer::Stdio(s) => specs.push(McpServerSpec {
                name: s.name,
                command: s.command.display().to_string(),
                args: s.args,
                env: s.env.into_iter().map(|v| (v.name, v.value)).collect(),
            }),
            McpServer::Http(s) => notes.push(unsupported(&s.name, "HTTP")),
            McpServer::Sse(s) => notes.push(unsupported(&s.name, "SSE")),
            _ => notes.push("an MCP server of an unsupported transport was left out".into()),
        }
    }
    (specs, notes)
}

fn unsupported(name: &str, transport: &str) -> String {
    format!("MCP server `{name}` was left out: only stdio servers are supported, not {transport}")
}

fn text_block(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text.to_string()))
}

/// A piece of the answer.
pub(super) fn message(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text)))
}

/// A piece of the model's reasoning (or a side note shown with it).
pub(super) fn thought(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(text)))
}

/// The slash commands the session offers.
pub(super) fn available_commands(custom: &[crate::protocol::CustomCommand]) -> SessionUpdate {
    let builtin = COMMANDS.iter().map(|(name, description, hint)| {
        (
            name.to_string(),
            description.to_string(),
            hint.map(String::from),
        )
    });
    let custom = custom.iter().map(|c| {
        let description = if c.description.is_empty() {
            format!("Custom command ({})", c.source)
        } else {
            c.description.clone()
        };
        (c.name.clone(), description, c.argument_hint.clone())
    });
    let commands = builtin
        .chain(custom)
        .map(|(name, description, hint)| {
            let command = AvailableCommand::new(name, description);
            match hint {
                Some(hint) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                )),
                None => command,
            }
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

/// The kind the tool declared, in ACP's terms.
fn kind(kind: chat::ToolKind) -> ToolKind {
    match kind {
        chat::ToolKind::Read => ToolKind::Read,
        chat::ToolKind::Edit => ToolKind::Edit,
        chat::ToolKind::Execute => ToolKind::Execute,
        chat::ToolKind::Search => ToolKind::Search,
        chat::ToolKind::Fetch => ToolKind::Fetch,
        chat::ToolKind::Think => ToolKind::Think,
        chat::ToolKind::Other => ToolKind::Other,
    }
}

/// The first path the tool said the call touches, absolute.
fn path_of(paths: &[String], cwd: &Path) -> Option<PathBuf> {
    paths.first().map(|p| cwd.join(p))
}

fn title(tool: &str, summary: &str) -> String {
    let builtin = chat::Builtin::of(tool);
    match builtin {
        Some(chat::Builtin::Bash) => format!("Run `{summary}`"),
        Some(chat::Builtin::BashOutput) => format!("Read the output of {summary}"),
        Some(chat::Builtin::BashKill) => format!("Stop {summary}"),
        Some(chat::Builtin::Read) => format!("Read {summary}"),
        Some(chat::Builtin::Write) => format!("Write {summary}"),
        Some(chat::Builtin::Edit) => format!("Edit {summary}"),
        Some(chat::Builtin::List) => format!("List {summary}"),
        Some(chat::Builtin::Search) => format!("Search {summary}"),
        Some(chat::Builtin::Find) => format!("Find {summary}"),
        Some(chat::Builtin::Fetch) => format!("Fetch {summary}"),
        // Sub-agents, MCP tools and skills: the tool's own name.
        Some(chat::Builtin::Delegate) | None if summary.is_empty() => tool.to_string(),
        Some(chat::Builtin::Delegate) | None => format!("{tool}: {summary}"),
    }
}

/// What an `edit` will change, as an ACP diff of the replaced piece. A `write`'s diff comes
/// with its approval (see [`approval_fields`]), once it is known whether the file is new.
fn diff(shown: &Announced<'_>, cwd: &Path) -> Vec<ToolCallContent> {
    let Some(path) = path_of(shown.paths, cwd) else {
        return Vec::new();
    };
    match shown.change {
        Some(chat::Change::Replace { old, new }) => {
            vec![ToolCallContent::Diff(
                Diff::new(path, new.as_str()).old_text(old.clone()),
            )]
        }
        _ => Vec::new(),
    }
}

/// What the core announced of a call: the tool's name, its summary and arguments, and the
/// kind, paths and change the tool declared.
pub(super) struct Announced<'a> {
    pub(crate) tool: &'a str,
    pub(crate) summary: &'a str,
    pub(crate) arguments: &'a serde_json::Value,
    pub(crate) kind: chat::ToolKind,
    pub(crate) paths: &'a [String],
    pub(crate) change: Option<&'a chat::Change>,
}

/// Whether the call is announced with a diff (an edit's replaced piece).
pub(super) fn shows_diff(shown: &Announced<'_>, cwd: &Path) -> bool {
    !diff(shown, cwd).is_empty()
}

/// A tool call as it begins: pending, with its arguments, the kind and locations its tool
/// declared and, for file changes, the diff.
pub(super) fn tool_call(call: &str, shown: &Announced<'_>, cwd: &Path) -> SessionUpdate {
    let Announced {
        tool,
        summary,
        arguments,
        paths,
        ..
    } = *shown;
    let locations = paths
        .iter()
        .map(|p| ToolCallLocation::new(cwd.join(p)))
        .collect();
    SessionUpdate::ToolCall(
        ToolCall::new(call.to_string(), title(tool, summary))
            .kind(kind(shown.kind))
            .status(ToolCallStatus::Pending)
            .content(diff(shown, cwd))
            .locations(locations)
            .raw_input(arguments.clone()),
    )
}

/// The tool call a permission request is about: its title and what the user must see. An
/// `edit` keeps the diff it was announced with; a `write` shows the whole new file as a diff
/// when the file is new, else the unified diff against the current text.
pub(super) fn approval_fields(
    request: &ApprovalRequest,
    shown: &Announced<'_>,
    cwd: &Path,
) -> ToolCallUpdateFields {
    let Announced {
        tool,
        paths,
        change,
        ..
    } = *shown;
    let (title, content) = match request {
        ApprovalRequest::Command { command } => (
            format!("Run `{command}`"),
            Some(vec![text_content(&format!("```sh\n{command}\n```"))]),
        ),
        ApprovalRequest::Diff { path, diff }
            if chat::Builtin::of(tool) == Some(chat::Builtin::Write) =>
        {
            let whole = match change {
                Some(chat::Change::Whole { text }) => path_of(paths, cwd).map(|f| (text, f)),
                _ => None,
            };
            let content = match whole {
                Some((text, file)) if diff.starts_with("--- /dev/null") => {
                    ToolCallContent::Diff(Diff::new(file, text.as_str()))
                }
                _ => text_content(&format!("```diff\n{diff}```")),
            };
            (format!("Write {path}"), Some(vec![content]))
        }
        ApprovalRequest::Diff { path, .. } => (format!("Edit {path}"), None),
        ApprovalRequest::McpCall {
            server,
            tool: name,
            arguments,
        } => (
            format!("{server}: {name}"),
            Some(vec![text_content(&format!("```json\n{arguments}\n```"))]),
        ),
        ApprovalRequest::OutsideSandbox { command, reason } => (
            format!("Run `{command}` outside the sandbox?"),
            Some(vec![text_content(&format!(
                "{reason}\n\n```sh\n{command}\n```"
            ))]),
        ),
        ApprovalRequest::Fetch { url } => (format!("Fetch {url}"), None),
    };
    let fields = ToolCallUpdateFields::new()
        .title(title)
        .kind(kind(shown.kind));
    match content {
        Some(content) => fields.content(content),
        None => fields,
    }
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::Content(Content::new(text_block(text)))
}

/// Allow once, allow always (what the rule `always` covers, in this session; offered only
/// with a rule), reject.
pub(super) fn permission_options(always: Option<&str>) -> Vec<PermissionOption> {
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow",
        PermissionOptionKind::AllowOnce,
    )];
    if let Some(rule) = always {
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            format!(
                "Always allow {} in this session",
                crate::protocol::always_label(rule)
            ),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The decision an option id stands for (an unknown one rejects).
pub(super) fn decision(option: &str) -> Decision {
    match option {
        ALLOW_ONCE => Decision::Approve,
        ALLOW_ALWAYS => Decision::ApproveTool,
        _ => Decision::Deny { reason: None },
    }
}

fn status(status: ToolStatus) -> ToolCallStatus {
    match status {
        ToolStatus::Succeeded => ToolCallStatus::Completed,
        _ => ToolCallStatus::Failed,
    }
}

/// The end of a tool call: its status and its output. A file change that succeeded keeps the
/// diff it showed (`shown_diff`).
pub(super) fn tool_ended(
    call: &str,
    result: ToolStatus,
    output: &str,
    shown_diff: bool,
) -> SessionUpdate {
    let mut fields = ToolCallUpdateFields::new()
        .status(status(result))
        .raw_output(serde_json::json!({ "output": output }));
    if !(shown_diff && result == ToolStatus::Succeeded) {
        fields = fields.content(vec![text_content(&fenced(output))]);
    }
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call.to_string(), fields))
}

/// Output in a code fence long enough not to be closed by the output itself.
fn fenced(output: &str) -> String {
    let mut fence = "```".to_string();
    while output.contains(fence.as_str()) {
        fence.push('`');
    }
    let newline = if output.ends_with('\n') { "" } else { "\n" };
    format!("{fence}\n{output}{newline}{fence}")
}

/// A resumed conversation as the updates a client replays (`session/load`).
pub(super) fn history(entries: &[HistoryEntry], cwd: &Path) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for entry in entries {
        match entry {
            HistoryEntry::User { text } => updates.push(SessionUpdate::UserMessageChunk(
                ContentChunk::new(text_block(text)),
            )),
            HistoryEntry::Assistant { text } => updates.push(message(text)),
            HistoryEntry::Goal { text } => updates.push(thought(&format!("\n(goal: {text})\n"))),
            HistoryEntry::ToolCall {
                call,
                tool,
                summary,
                arguments,
                status: ended,
                output,
                tool_kind,
                paths,
                change,
            } => {
                let shown = Announced {
                    tool,
                    summary,
                    arguments,
                    kind: *tool_kind,
                    paths,
                    change: change.as_deref(),
                };
                updates.push(tool_call(call, &shown, cwd));
                let result = ended.unwrap_or(ToolStatus::Failed);
                updates.push(tool_ended(call, result, output, shows_diff(&shown, cwd)));
            }
        }
    }
    updates
}

/// The session modes minicode offers: `default` (the configured sandbox profile) and `plan`.
const DEFAULT_MODE: &str = "default";
const PLAN_MODE: &str = "plan";

/// The modes of a session, with the current one.
pub(super) fn modes(plan: bool) -> agent_client_protocol::v1::schema::SessionModeState {
    use agent_client_protocol::v1::schema::{SessionMode, SessionModeState};
    SessionModeState::new(
        if plan { PLAN_MODE } else { DEFAULT_MODE },
        vec![
            SessionMode::new(DEFAULT_MODE, "Default")
                .description("commands run under the configured sandbox profile".to_string()),
            SessionMode::new(PLAN_MODE, "Plan").description(
                "read and plan only: no changes but the plan file, commands read-only without \
                 network"
                    .to_string(),
            ),
        ],
    )
}

/// The update that tells the client the session's mode changed.
pub(super) fn current_mode(plan: bool) -> SessionUpdate {
    use agent_client_protocol::v1::schema::CurrentModeUpdate;
    SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(if plan {
        PLAN_MODE
    } else {
        DEFAULT_MODE
    }))
}

/// Whether a mode id the client chose is plan mode; an unknown id is an error.
pub(super) fn is_plan_mode(mode: &str) -> Result<bool, String> {
    match mode {
        PLAN_MODE => Ok(true),
        DEFAULT_MODE => Ok(false),
        other => Err(format!("unknown mode {other:?} (expected default or plan)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_is_titled_by_its_url_and_declared_a_fetch() {
        assert_eq!(
            title("fetch", "https://docs.rs/htmd"),
            "Fetch https://docs.rs/htmd"
        );
        assert_eq!(kind(chat::ToolKind::Fetch), ToolKind::Fetch);
    }
}
