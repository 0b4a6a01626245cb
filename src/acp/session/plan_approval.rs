//! Approving the plan over ACP, as `/plan approve` does in the full-screen session: when a
//! turn in plan mode wrote the plan file, its prompt is not answered at once; the client is
//! asked "approve the plan and leave plan mode?" through `session/request_permission` on a
//! call of its own. Approved, the core leaves plan mode and carries the plan out in a turn that
//! answers the same prompt; declined (or unanswered), the prompt is answered as the turn ended
//! and plan mode stays on (`cancelled` when the client cancelled the question). The model can
//! never leave plan mode itself.

use std::sync::Arc;

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionNotification, SessionUpdate, StopReason, ToolCall,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};

use super::super::Connection;
use super::Live;
use crate::protocol::Op;

const APPROVE: &str = "approve_plan";
const KEEP: &str = "keep_planning";

/// Asks the client whether the plan in `file` is approved, in a task of its own; `responder`
/// is the prompt of the turn that wrote it, which ended with `reason`.
pub(super) fn ask(
    live: &Arc<Live>,
    cx: &Connection,
    file: &str,
    responder: Responder<PromptResponse>,
    reason: StopReason,
) {
    let call = format!("plan-approval-{}", uuid::Uuid::new_v4().simple());
    let title = format!("Approve the plan in {file} and leave plan mode?");
    let notify = {
        let (cx, id) = (cx.clone(), live.id.clone());
        move |update: SessionUpdate| {
            if let Err(e) = cx.send_notification(SessionNotification::new(id.clone(), update)) {
                tracing::debug!(error = %e, "could not send a session update");
            }
        }
    };
    notify(SessionUpdate::ToolCall(
        ToolCall::new(call.clone(), title.clone())
            .kind(ToolKind::SwitchMode)
            .status(ToolCallStatus::Pending),
    ));
    let question = RequestPermissionRequest::new(
        live.id.clone(),
        ToolCallUpdate::new(call.clone(), ToolCallUpdateFields::new().title(title)),
        vec![
            PermissionOption::new(
                APPROVE,
                "Approve the plan and leave plan mode",
                PermissionOptionKind::AllowOnce,
            ),
            PermissionOption::new(KEEP, "Keep planning", PermissionOptionKind::RejectOnce),
        ],
    );
    let sent = cx.send_request(question);
    let (live, file) = (live.clone(), file.to_string());
    tokio::spawn(async move {
        let (approved, reason) = match sent.block_task().await {
            Ok(answer) => match answer.outcome {
                RequestPermissionOutcome::Selected(s) => {
                    (s.option_id.0.as_ref() == APPROVE, reason)
                }
                // The client cancels what it still asks when the user cancels the prompt.
                RequestPermissionOutcome::Cancelled => (false, StopReason::Cancelled),
                _ => (false, reason),
            },
            Err(e) => {
                tracing::warn!(error = %e, "the plan approval request failed");
                (false, reason)
            }
        };
        let status = if approved {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call,
            ToolCallUpdateFields::new().status(status),
        )));
        if approved {
            // The prompt waits for the turn that carries the plan out (the core takes the two
            // ops in this order, as after `/plan approve`).
            live.resume_prompt(responder);
            live.ops.send(Op::SetPlan { on: false });
            live.ops.send(Op::Submit(format!(
                "The plan in {file} is approved: carry it out."
            )));
        } else if let Err(e) = responder.respond(PromptResponse::new(reason)) {
            tracing::debug!(error = %e, "could not answer a prompt");
        }
    });
}
