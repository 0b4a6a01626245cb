//! The core's `tracing` spans (turn, model call, tool call, compaction, sub-agent), shaped
//! after the OpenTelemetry GenAI semantic conventions: their field names are the attribute
//! names an OpenTelemetry exporter sends (see docs/telemetry.md), and they are also what the
//! log shows when a span closes. Fields hold metadata only (ids, names, models, token counts,
//! statuses), so the log stays free of contents.
//!
//! Contents (prompts, replies, tool arguments and results) are attached only when the user set
//! `include_content` ([`Content`]), and then only to the OpenTelemetry span (never to the log),
//! each redacted of the key before it is cut to [`CONTENT_MAX_BYTES`]. Recording anything on a
//! disabled span (no subscriber, or no interest) costs nothing beyond the check.

use serde_json::{Value, json};
use tracing::Span;
use tracing::field::Empty;
#[cfg(feature = "otlp")]
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::compact::CompactError;
use crate::chat::{Message, Role, ToolCall, ToolStatus};
use crate::protocol::{TurnEnd, TurnStats};
use crate::provider::{FinishReason, ProviderError, Reply};
use crate::sanitize::text::floor_boundary;
use crate::tools::Secrets;

/// The most bytes one content attribute carries; longer texts are cut (after redaction), and a
/// request's oldest messages are left out first.
pub(crate) const CONTENT_MAX_BYTES: usize = 256 * 1024;

/// Whether and how contents are attached: `None` unless `include_content` is on.
#[derive(Clone, Copy)]
pub(crate) struct Content<'a> {
    pub(crate) secrets: &'a Secrets,
}

/// The span of one user turn: the root of its trace, or, for a sub-agent (`child`), nested
/// under its `subagent` span. Only a root turn carries `session.id`, the attribute back ends
/// such as Langfuse group a trace's session by: a child's must not regroup its parent's trace.
pub(crate) fn turn(session_id: &str, child: bool) -> Span {
    let span = tracing::info_span!(
        "turn",
        "otel.name" = "invoke_agent minicode",
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = "minicode",
        "gen_ai.conversation.id" = session_id,
        "session.id" = Empty,
        "minicode.turn.end" = Empty,
        "minicode.turn.model_calls" = Empty,
        "minicode.turn.tool_calls" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "otel.status_code" = Empty,
    );
    if !child {
        span.record("session.id", session_id);
    }
    span
}

/// Records how a turn ended, its counts and its token totals (summary calls excluded).
pub(crate) fn end_turn(span: &Span, end: &TurnEnd, stats: &TurnStats) {
    if span.is_disabled() {
        return;
    }
    let (name, failed) = match end {
        TurnEnd::Completed => ("completed", false),
        TurnEnd::RoundLimit { .. } => ("round_limit", true),
        TurnEnd::Interrupted => ("interrupted", false),
        TurnEnd::Failed { .. } => ("failed", true),
    };
    span.record("minicode.turn.end", name);
    span.record("minicode.turn.model_calls", stats.model_calls);
    span.record("minicode.turn.tool_calls", stats.tool_calls);
    if !stats.tokens.unavailable() {
        span.record("gen_ai.usage.input_tokens", stats.tokens.input_tokens);
        span.record("gen_ai.usage.output_tokens", stats.tokens.output_tokens);
    }
    if failed {
        span.record("otel.status_code", "ERROR");
    }
}

/// What a model call is for, as `minicode.model_call.purpose`.
#[derive(Clone, Copy)]
pub(crate) enum Purpose {
    /// A main request of a turn.
    Turn,
    /// The last request after the round limit, asking for a summary.
    RoundLimitSummary,
    /// A compaction's summary call.
    Compaction,
}

/// The span of one model call (`chat <model>`), opened before the request is sent.
pub(crate) fn model_call(
    model: &str,
    server: Option<(&str, u16)>,
    max_tokens: u32,
    purpose: Purpose,
) -> Span {
    let purpose = match purpose {
        Purpose::Turn => "turn",
        Purpose::RoundLimitSummary => "round_limit_summary",
        Purpose::Compaction => "compaction",
    };
    let span = tracing::info_span!(
        "model_call",
        "otel.name" = %format!("chat {model}"),
        "otel.kind" = "client",
        "gen_ai.operation.name" = "chat",
        "gen_ai.request.model" = model,
        "gen_ai.request.max_tokens" = max_tokens,
        "minicode.model_call.purpose" = purpose,
        "server.address" = Empty,
        "server.port" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
    );
    if let Some((address, port)) = server {
        span.record("server.address", address);
        span.record("server.port", port);
    }
    span
}

/// Records a model call's outcome: usage and finish reason, or the failure's class.
pub(crate) fn end_model_call(span: &Span, outcome: Result<&Reply, &ProviderError>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(reply) => {
            if let Some(usage) = reply.usage {
                span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", usage.output_tokens);
            }
            let reason = match &reply.finish_reason {
                Some(reason) => reason.as_str(),
                None if reply.tool_calls.is_empty() => FinishReason::Stop.as_str(),
                None => FinishReason::ToolCalls.as_str(),
            };
            finish_reasons(span, reason);
        }
        Err(e) => {
            span.record("error.type", e.kind());
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// `gen_ai.response.finish_reasons`, an array attribute: only the OpenTelemetry side can carry
/// one, so a build without the `otlp` feature drops it.
fn finish_reasons(span: &Span, reason: &str) {
    #[cfg(feature = "otlp")]
    span.set_attribute(
        "gen_ai.response.finish_reasons",
        opentelemetry::Value::Array(vec![opentelemetry::StringValue::from(clean(reason))].into()),
    );
    #[cfg(not(feature = "otlp"))]
    let _ = (span, reason);
}

/// A content attribute, on the OpenTelemetry side only (never the log); a build without the
/// `otlp` feature has no such side and drops it.
fn attach(span: &Span, key: &'static str, value: String) {
    #[cfg(feature = "otlp")]
    span.set_attribute(key, value);
    #[cfg(not(feature = "otlp"))]
    let _ = (span, key, value);
}

/// A model call stopped by the user's interrupt: not an error, but marked.
pub(crate) fn cancel_model_call(span: &Span) {
    span.record("error.type", "cancelled");
}

/// The span of one tool call (`execute_tool <name>`), from validation through approval to its
/// result. The name and id come from the model, so they are redacted like everything else it
/// sends.
pub(crate) fn tool_call(call: &ToolCall, secrets: &Secrets) -> Span {
    let span = tracing::info_span!(
        "tool_call",
        "otel.name" = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = Empty,
        "gen_ai.tool.call.id" = Empty,
        "gen_ai.tool.type" = "function",
        "minicode.tool.status" = Empty,
        "minicode.tool.approval" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
    );
    if !span.is_disabled() {
        let name = clean(&secrets.redact(call.name.clone()));
        span.record("otel.name", format!("execute_tool {name}"));
        span.record("gen_ai.tool.name", name);
        span.record(
            "gen_ai.tool.call.id",
            clean(&secrets.redact(call.id.clone())),
        );
    }
    span
}

/// How a call was approved, as `minicode.tool.approval`: `auto` (`--yes` or "always"), `rule`
/// (an allow permission rule), `user` (asked and allowed), `denied`, or not recorded when nothing was asked (invalid calls).
pub(crate) fn tool_approval(span: &Span, how: &'static str) {
    span.record("minicode.tool.approval", how);
}

/// Records the call's final status; failed, rejected and denied calls are errors.
pub(crate) fn end_tool_call(span: &Span, status: ToolStatus) {
    let (name, error) = match status {
        ToolStatus::Succeeded => ("succeeded", false),
        ToolStatus::Failed => ("failed", true),
        ToolStatus::Denied => ("denied", false),
        ToolStatus::Rejected => ("rejected", true),
        ToolStatus::Interrupted => ("interrupted", false),
        ToolStatus::ExecutionUnknown => ("execution_unknown", true),
    };
    span.record("minicode.tool.status", name);
    if error {
        span.record("error.type", name);
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of one compaction (automatic, after an overflow, or `/compact`); its summary calls
/// are `model_call` spans inside it.
pub(crate) fn compaction(manual: bool) -> Span {
    tracing::info_span!(
        "compaction",
        "minicode.compaction.manual" = manual,
        "minicode.compaction.messages_summarized" = Empty,
        "minicode.compaction.tokens_before" = Empty,
        "minicode.compaction.tokens_after" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
    )
}

/// Records what a successful compaction did.
pub(crate) fn end_compaction(span: &Span, summarized: usize, before: u64, after: u64) {
    span.record("minicode.compaction.messages_summarized", summarized);
    span.record("minicode.compaction.tokens_before", before);
    span.record("minicode.compaction.tokens_after", after);
}

/// Records why a compaction did not happen; only a real failure is an error.
pub(crate) fn end_compaction_failed(span: &Span, error: &CompactError) {
    let (kind, failed) = match error {
        CompactError::NothingToCompact => ("nothing_to_compact", false),
        CompactError::Cancelled => ("cancelled", false),
        CompactError::Invalid(_) => ("invalid_history", true),
        CompactError::Provider(e) => (e.kind(), true),
        CompactError::Rejected { .. } => ("summary_rejected", true),
        CompactError::BudgetTooSmall { .. } => ("budget_too_small", true),
    };
    span.record("error.type", kind);
    if failed {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span a sub-agent's run lives in, around the child's own `turn` span; the `delegate`
/// tool opens it for each child.
pub(crate) fn subagent(task_id: &str, child_session_id: &str) -> Span {
    tracing::info_span!(
        "subagent",
        "otel.name" = "invoke_agent subagent",
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = "subagent",
        "gen_ai.conversation.id" = child_session_id,
        "minicode.subagent.task_id" = task_id,
        "minicode.subagent.status" = Empty,
        "otel.status_code" = Empty,
    )
}

/// Records how a child ended (`completed`, `failed`, `timed_out`, `interrupted`); `failed`
/// and `timed_out` are errors.
pub(crate) fn end_subagent(span: &Span, status: &'static str) {
    span.record("minicode.subagent.status", status);
    if matches!(status, "failed" | "timed_out") {
        span.record("otel.status_code", "ERROR");
    }
}

impl Content<'_> {
    /// `gen_ai.input.messages`: the messages sent, newest kept when they do not all fit.
    pub(crate) fn input_messages(&self, span: &Span, messages: &[&Message]) {
        if span.is_disabled() {
            return;
        }
        let parts: Vec<String> = messages
            .iter()
            .map(|m| self.message_json(m, None).to_string())
            .collect();
        let mut kept = 0;
        let mut bytes = 0;
        for part in parts.iter().rev() {
            if bytes + part.len() + 1 > CONTENT_MAX_BYTES && kept > 0 {
                break;
            }
            bytes += part.len() + 1;
            kept += 1;
        }
        let omitted = parts.len() - kept;
        let mut all = Vec::with_capacity(kept + 1);
        if omitted > 0 {
            let note = format!("[{omitted} earlier messages left out of this attribute]");
            all.push(
                json!({"role": "system", "parts": [{"type": "text", "content": note}]}).to_string(),
            );
        }
        all.extend(parts.into_iter().skip(omitted));
        attach(
            span,
            "gen_ai.input.messages",
            format!("[{}]", all.join(",")),
        );
    }

    /// `gen_ai.output.messages`: the reply (text and tool calls) with its finish reason.
    pub(crate) fn output_reply(&self, span: &Span, reply: &Reply) {
        if span.is_disabled() {
            return;
        }
        let message = reply.to_message();
        let finish = reply
            .finish_reason
            .as_ref()
            .map_or(FinishReason::Stop.as_str(), FinishReason::as_str);
        let value = self.message_json(&message, Some(finish));
        attach(span, "gen_ai.output.messages", format!("[{value}]"));
    }

    /// A turn's prompt (`gen_ai.input.messages`) or its final answer (`gen_ai.output.messages`).
    pub(crate) fn turn_text(&self, span: &Span, role: Role, text: &str) {
        if span.is_disabled() {
            return;
        }
        let (message, key, finish) = match role {
            Role::User => (Message::user(text), "gen_ai.input.messages", None),
            _ => (
                Message::assistant(Some(text.to_string()), Vec::new()),
                "gen_ai.output.messages",
                Some(FinishReason::Stop.as_str()),
            ),
        };
        attach(
            span,
            key,
            format!("[{}]", self.message_json(&message, finish)),
        );
    }

    /// `gen_ai.tool.call.arguments` as the model sent them.
    pub(crate) fn tool_arguments(&self, span: &Span, arguments: &str) {
        if !span.is_disabled() {
            attach(span, "gen_ai.tool.call.arguments", self.text(arguments));
        }
    }

    /// `gen_ai.tool.call.result`: what the model reads back.
    pub(crate) fn tool_result(&self, span: &Span, output: &str) {
        if !span.is_disabled() {
            attach(span, "gen_ai.tool.call.result", self.text(output));
        }
    }

    /// One message in the conventions' shape: `{role, parts: [{type, …}], finish_reason?}`.
    fn message_json(&self, m: &Message, finish: Option<&str>) -> Value {
        let role = m.role.as_str();
        let mut parts = Vec::new();
        if let Some(text) = &m.content {
            parts.push(match (&m.role, &m.tool_call_id) {
                (Role::Tool, Some(id)) => json!({
                    "type": "tool_call_response",
                    "id": self.text(id),
                    "response": self.text(text),
                }),
                _ => json!({"type": "text", "content": self.text(text)}),
            });
        }
        for call in &m.tool_calls {
            parts.push(json!({
                "type": "tool_call",
                "id": self.text(&call.id),
                "name": self.text(&call.name),
                "arguments": self.text(&call.arguments),
            }));
        }
        let mut value = json!({"role": role, "parts": parts});
        if let Some(finish) = finish {
            value["finish_reason"] = Value::String(clean(finish));
        }
        value
    }

    /// `text` redacted, then cut to [`CONTENT_MAX_BYTES`] (redacting first, so a cut never
    /// leaves part of the key behind).
    fn text(&self, text: &str) -> String {
        let mut text = self.secrets.redact(text.to_string());
        if text.len() > CONTENT_MAX_BYTES {
            let end = floor_boundary(&text, CONTENT_MAX_BYTES);
            let dropped = text.len() - end;
            text.truncate(end);
            text.push_str(&format!("…[{dropped} more bytes cut]"));
        }
        text
    }
}

/// A short server- or model-supplied value (a finish reason, a tool name) without control
/// characters and at most 100 characters long.
fn clean(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect()
}
