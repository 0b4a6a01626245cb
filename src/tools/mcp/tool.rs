//! One tool of an MCP server as the model sees it: the name `mcp_<server>__<tool>` (only
//! `[A-Za-z0-9_-]`, at most 64 characters, made unique), the server's description (capped)
//! and schema (replaced when too large), the argument check, the approval every call needs
//! (the server's own hints, such as read-only, are not trusted), the call with its timeout,
//! and the result as text: text joined, other content described by type and size, `isError`
//! a failure, capped and redacted like `bash` output.
//!
//! A call that times out or whose server dies is reported with an unknown outcome and never
//! sent again.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use tokio_util::sync::CancellationToken;

use super::{Server, schema};
use crate::chat::{ApprovalRequest, ToolSpec};
use crate::sanitize::text::truncate;
use crate::tools::bash::Sink;
use crate::tools::{
    Invocation, JsonCall, JsonTool, Prepared, Tool, ToolCtx, ToolFuture, ToolOutput,
};

/// The longest tool name servers accept from OpenAI-compatible clients.
pub(crate) const MAX_NAME: usize = 64;
/// Characters of a server's description declared to the model.
pub(crate) const MAX_DESCRIPTION: usize = 1024;
/// Bytes of a server's argument schema declared to the model; a larger one is replaced by a
/// plain object schema (it would be sent with every request).
pub(crate) const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// Characters of the arguments shown in a call's one-line summary.
const SUMMARY_CHARS: usize = 100;

pub(crate) struct McpTool {
    server: Arc<Server>,
    name: String,
    remote: String,
    description: String,
    schema: serde_json::Value,
}

impl McpTool {
    /// Declares `remote` under a name no other tool has (`taken` says which are).
    pub(super) fn new(
        server: Arc<Server>,
        remote: rmcp::model::Tool,
        taken: &dyn Fn(&str) -> bool,
    ) -> Self {
        let name = model_name(server.id(), &remote.name, taken);
        let description = remote
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .or_else(|| remote.title.clone())
            .unwrap_or_else(|| {
                format!(
                    "Tool `{}` of the MCP server `{}`.",
                    remote.name,
                    server.id()
                )
            });
        let mut description = truncate(&description, MAX_DESCRIPTION);
        let mut schema = serde_json::Value::Object((*remote.input_schema).clone());
        if let Some(object) = schema.as_object_mut() {
            // Which draft the schema follows tells the model nothing and is sent with every
            // request (generated schemas often carry it).
            object.remove("$schema");
            if !object.contains_key("type") {
                object.insert("type".into(), "object".into());
            }
        }
        let size = serde_json::to_string(&schema).map_or(usize::MAX, |s| s.len());
        if size > MAX_SCHEMA_BYTES {
            schema = serde_json::json!({"type": "object"});
            description.push_str(" (Its argument schema was too large to declare.)");
        }
        Self {
            server,
            name,
            remote: remote.name.into_owned(),
            description,
            schema,
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn remote(&self) -> &str {
        &self.remote
    }
}

/// `mcp_<server>__<tool>` with every character outside `[A-Za-z0-9_-]` replaced by `_`, cut to
/// [`MAX_NAME`] (the server's part first), and given a `_2`, `_3`… suffix while `taken`.
pub(crate) fn model_name(server: &str, tool: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let (mut server, mut tool) = (clean(server), clean(tool));
    // Too long: the server's part gives way first (down to 16 characters), so the tools of a
    // server with a long id keep names that tell them apart. Only ASCII is left, so any byte
    // index is a character boundary.
    let room = MAX_NAME - "mcp___".len();
    if server.len() + tool.len() > room {
        server.truncate(room.saturating_sub(tool.len()).max(16));
        tool.truncate(room - server.len().min(room));
    }
    let base = format!("mcp_{server}__{tool}");
    if !taken(&base) {
        return base;
    }
    let mut n = 2u32;
    loop {
        let suffix = format!("_{n}");
        let name = format!(
            "{}{suffix}",
            &base[..base.len().min(MAX_NAME - suffix.len())]
        );
        if !taken(&name) {
            return name;
        }
        n += 1;
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone().into(),
            description: self.description.clone().into(),
            parameters: self.schema.clone(),
        }
    }

    fn parse<'t>(&'t self, args: &serde_json::Value) -> Result<Box<dyn Invocation + 't>, String> {
        Ok(JsonCall::boxed(self, args))
    }
}

/// Its arguments are whatever the server declares: checked against its schema, sent as JSON.
impl JsonTool for McpTool {
    fn prepare_json(&self, args: &serde_json::Value, _ctx: &ToolCtx) -> Result<Prepared, String> {
        schema::check(&self.schema, args).map_err(|e| format!("invalid arguments: {e}"))?;
        let compact = serde_json::to_string(args).unwrap_or_default();
        let mut summary = format!("{} · {}", self.server.id(), self.remote);
        if compact != "{}" {
            summary.push(' ');
            summary.push_str(&truncate(&compact, SUMMARY_CHARS));
        }
        Ok(Prepared {
            summary,
            approval: Some(ApprovalRequest::McpCall {
                server: self.server.id().to_string(),
                tool: self.remote.clone(),
                arguments: serde_json::to_string_pretty(args).unwrap_or_default(),
            }),
            protected: None,
        })
    }

    fn run_json<'a>(
        &'a self,
        args: &'a serde_json::Value,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let id = self.server.id();
            let unavailable = |why: String| {
                ToolOutput::failed(format!(
                    "MCP server `{id}` is not available ({why}); the call was not sent. The user \
                     can restart it with /mcp restart {id}."
                ))
            };
            let conn = match self.server.connection() {
                Ok(conn) => conn,
                Err(why) => return unavailable(why),
            };
            // Its pipes closed a moment ago and its run has not noticed yet.
            if conn.peer.is_transport_closed() {
                return unavailable(self.why_gone(&conn).await);
            }
            if cancel.is_cancelled() {
                return ToolOutput::interrupted("interrupted by the user; the call was not sent");
            }
            let mut params = CallToolRequestParams::new(self.remote.clone());
            if let serde_json::Value::Object(map) = args.clone() {
                params = params.with_arguments(map);
            }
            let limit = self.server.call_timeout();
            let call = conn.peer.call_tool(params);
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    return ToolOutput::interrupted(
                        "interrupted by the user while the MCP server worked on the call; its \
                         outcome is unknown",
                    );
                }
                _ = conn.ended.cancelled() => {
                    let why = self.why_gone(&conn).await;
                    return ToolOutput::failed(format!(
                        "MCP server `{id}` stopped while the call ran ({why}); the outcome is \
                         unknown and the call was not repeated. The user can restart it with \
                         /mcp restart {id}."
                    ));
                }
                result = tokio::time::timeout(limit, call) => result,
            };
            let result = match result {
                Err(_) => {
                    return ToolOutput::failed(format!(
                        "MCP server `{id}` did not answer within {} s: the outcome is unknown (it \
                         may still carry the call out); the call was not repeated",
                        limit.as_secs()
                    ));
                }
                // The server answered with an error: nothing was done.
                Ok(Err(rmcp::ServiceError::McpError(e))) => {
                    return ToolOutput::failed(format!(
                        "MCP server `{id}` refused the call: {}",
                        e.message
                    ));
                }
                // The connection broke with the call in flight (usually: the server exited).
                Ok(Err(e)) => {
                    let why = self.why_gone(&conn).await;
                    return ToolOutput::failed(format!(
                        "MCP server `{id}` stopped while the call ran ({why}; {e}); the outcome is \
                         unknown and the call was not repeated. The user can restart it with \
                         /mcp restart {id}."
                    ));
                }
                Ok(Ok(result)) => result,
            };
            let text = render(&result);
            let mut sink = Sink::new(ctx, ctx.output_limit());
            sink.push(text.as_bytes());
            let mut content = sink.finish(&ctx.workspace);
            if content.trim().is_empty() {
                content = "(no output)".to_string();
            }
            if result.is_error == Some(true) {
                ToolOutput::failed(content)
            } else {
                ToolOutput::ok(content)
            }
        })
    }
}

impl McpTool {
    /// Why the server's connection ended: its run's verdict (it exited with…, it closed its
    /// connection), waited for briefly, since the call may notice the broken pipe first.
    async fn why_gone(&self, conn: &super::Conn) -> String {
        let _ = tokio::time::timeout(GONE_GRACE, conn.ended.cancelled()).await;
        match self.server.connection() {
            Err(why) => why,
            Ok(_) if conn.ended.is_cancelled() => "it was restarted".to_string(),
            Ok(_) => "its connection closed".to_string(),
        }
    }
}

/// How long a call that saw the connection break waits for the server's run to say why.
const GONE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The result as text: text content joined, everything else described by type and size,
/// structured content when nothing else came.
fn render(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!(
                "[image: {}, {} bytes, not shown]",
                image.mime_type,
                base64_len(&image.data)
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio: {}, {} bytes, not shown]",
                audio.mime_type,
                base64_len(&audio.data)
            ),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => format!(
                    "[resource {uri}: {}, {} bytes, not shown]",
                    mime_type.as_deref().unwrap_or("text"),
                    text.len()
                ),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => format!(
                    "[resource {uri}: {}, {} bytes, not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    base64_len(blob)
                ),
                _ => "[resource of an unknown kind, not shown]".to_string(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
            _ => "[content of an unknown type, not shown]".to_string(),
        });
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let chars = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let padding = data
        .trim_end()
        .bytes()
        .rev()
        .take_while(|b| *b == b'=')
        .count();
    (chars / 4 * 3).saturating_sub(padding.min(2))
}
