//! Asking for a tool call's approval: `--yes`, the session's "always" for a tool, or the
//! user's answer (`Event::ApprovalRequested` / `Op::Decide`); protected paths are asked every
//! time. It decides nothing about running the call: `turn.rs` does that with the answer.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Core;
use super::spans;
use crate::chat::{ApprovalRequest, ToolCall};
use crate::protocol::{CallId, Decision, Event};

/// Asks for approval unless `--yes` or an earlier "always" covers this tool. `None` means the
/// turn was interrupted while waiting.
///
/// A call on a protected path (`protected`: its summary and why) is the exception: neither
/// "always" nor `--yes` covers it, so it is asked every time, and the warning channel (stderr
/// in one-shot mode) says why it is asked; a frontend with nobody to ask refuses it.
pub(super) async fn approve(
    core: &mut Core,
    call: &ToolCall,
    request: ApprovalRequest,
    protected: Option<(&str, &'static str)>,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> Option<Decision> {
    let always = core.approved_tools.contains(&call.name);
    if let Some((summary, reason)) = protected {
        if core.options.auto_approve {
            core.emit(Event::Warning {
                message: format!(
                    "asking although --yes was given: {summary} is protected ({reason}); \
                     {} is never allowed there without an answer",
                    call.name
                ),
            });
        } else if always {
            core.emit(Event::Warning {
                message: format!(
                    "asking again although {} is allowed always: {summary} is protected ({reason})",
                    call.name
                ),
            });
        }
    }
    if protected.is_none() && (core.options.auto_approve || always) {
        spans::tool_approval(&tracing::Span::current(), "auto");
        core.emit(Event::ApprovalDecided {
            call: call.id.clone(),
            decision: Decision::Approve,
        });
        return Some(Decision::Approve);
    }
    let decision = ask(core, call, request, cancel, decisions).await?;
    if decision == Decision::ApproveTool {
        core.approved_tools.insert(call.name.clone());
    }
    Some(decision)
}

/// Asks the user and waits for the answer, whatever `--yes` or "always" say (the caller
/// decided to ask). An "always" answer is not remembered here.
pub(super) async fn ask(
    core: &mut Core,
    call: &ToolCall,
    request: ApprovalRequest,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> Option<Decision> {
    core.emit(Event::ApprovalRequested {
        call: call.id.clone(),
        tool: call.name.clone(),
        request: core.tool_ctx.secrets.redact_request(request),
    });
    let decision = loop {
        let answer = tokio::select! {
            biased;
            _ = cancel.cancelled() => return None,
            answer = decisions.recv() => answer,
        };
        match answer {
            Some((id, decision)) if id == call.id => break decision,
            Some((id, _)) => core.emit(Event::Error {
                message: format!("no approval is pending for call {id:?}"),
            }),
            None => return None,
        }
    };
    let how = match decision {
        Decision::Deny { .. } => "denied",
        Decision::NoTerminal => "no_terminal",
        _ => "user",
    };
    spans::tool_approval(&tracing::Span::current(), how);
    core.emit(Event::ApprovalDecided {
        call: call.id.clone(),
        decision: decision.clone(),
    });
    Some(decision)
}
