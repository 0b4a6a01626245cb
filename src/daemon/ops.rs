//! A client's `Op` applied to a daemon session: one exhaustive match, so a new op is a
//! decision here rather than an unknown method. Prompts become runs, interrupts cancel them,
//! approvals go to the first answer, a prompt's image references are swapped for the images a
//! client sent before (`images.rs`); everything else goes to the core as it is, which answers
//! on the event stream. It owns no state: `live.rs` does.

use serde_json::{Value, json};

use super::live::Live;
use super::wire::{self, RpcError};
use crate::protocol::{Decision, Op};

/// Carries out `op` in `live`'s session; the answer is the request's result.
pub(super) fn apply(live: &Live, op: Op) -> Result<Value, RpcError> {
    let session = &live.id;
    match op {
        Op::Submit(text) => {
            let prompt = text.clone();
            run(live, Op::Submit(text), prompt)
        }
        Op::SubmitImages { text, images } => {
            // The op names the images by reference; their bytes came before, once each.
            let images = live.images.resolve(images)?;
            let prompt = text.clone();
            if images.is_empty() {
                return run(live, Op::Submit(text), prompt);
            }
            start(live, Op::SubmitImages { text, images }, prompt)
        }
        Op::Interrupt => {
            let run_id = live.interrupt()?;
            Ok(json!({ "session_id": session, "run_id": run_id }))
        }
        Op::Decide { call, decision } => {
            if decision == Decision::NoTerminal {
                // Only a one-shot run without a terminal decides so, never a client.
                return Err(RpcError::params(
                    "decision must be approve, approve_tool or deny, not \"no_terminal\"",
                ));
            }
            live.decide(&call, decision)?;
            Ok(json!({ "session_id": session, "call_id": call }))
        }
        Op::Rewind { turn: 0, .. } => Err(RpcError::params("turn counts from 1")),
        Op::Rewind { scope, .. } if scope.conversation() => Err(not_remote(
            "a conversation rewind forks the session, and a daemon session keeps its id (its \
             log, its subscribers and its restart follow it): rewind the code only (scope \
             \"code\"), or fork with `minicode rewind --conversation` on the stopped session",
        )),
        Op::Fork | Op::NewSession | Op::Resume { .. } => Err(not_remote(
            "this would switch the session, and a daemon session keeps its id (its log, its \
             subscribers and its restart follow it): open another session with session.open",
        )),
        Op::Shutdown => Err(not_remote(
            "a daemon session is shared: close the connection to detach, or stop the daemon \
             with server.shutdown",
        )),
        op @ (Op::Compact(_)
        | Op::McpServers
        | Op::McpRestart { .. }
        | Op::ListSkills
        | Op::Goal(_)
        | Op::SetPlan { .. }
        | Op::Model { .. }
        | Op::ListRewind
        | Op::Rewind { .. }
        | Op::ListSessions
        | Op::Shell { .. }
        | Op::CompletePath { .. }
        | Op::KillBackground { .. }) => {
            live.forward(op)?;
            Ok(json!({ "session_id": session }))
        }
    }
}

/// Starts a run for a prompt.
fn run(live: &Live, op: Op, prompt: String) -> Result<Value, RpcError> {
    if prompt.trim().is_empty() {
        return Err(RpcError::params("the prompt is empty"));
    }
    start(live, op, prompt)
}

/// Starts a run for a prompt that may be images alone.
fn start(live: &Live, op: Op, prompt: String) -> Result<Value, RpcError> {
    let run_id = live.start_run(op, prompt)?;
    Ok(json!({ "session_id": live.id, "run_id": run_id }))
}

fn not_remote(message: &str) -> RpcError {
    RpcError::new(wire::NOT_REMOTE, message)
}
