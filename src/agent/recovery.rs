//! A run a crashed host left open, answered once when the core starts on the reopened session
//! (see `protocol::Recovery`). It owns the "never run twice" rule for the calls of the last
//! batch: a call that had started ends as `ExecutionUnknown`; the calls that never started run
//! now, through the same approval and execution path as any call, and the turn goes on.
//! It must not guess: what had started is what the host's journal says.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Busy, Core, serve_ops, turn};
use crate::chat::{Role, ToolCall, ToolStatus};
use crate::protocol::{CallId, Decision, Event, Journal, Op, Recovery, TurnEnd, TurnStats};

/// What a host adds to the core it spawns (see `agent::spawn_hosted`).
#[derive(Default)]
pub(crate) struct Hooks {
    /// Told synchronously before each tool call's effect and after its result is saved.
    pub journal: Option<Arc<dyn Journal>>,
    /// The run a crash left open, answered before any op is read.
    pub recovery: Option<Recovery>,
}

/// The result a call that had started gets: it is never run again.
pub(crate) const UNKNOWN_RESULT: &str = "execution_unknown: minicode stopped while this call was \
running, before its result was saved; whether it took effect is unknown, and it was not run \
again. Check its effect before repeating it.";

impl Core {
    /// Answers `recovery` for the calls `open` (left without a result, in call order) as one
    /// turn. Returns true if a shutdown was asked for meanwhile.
    pub(super) async fn recover(
        &mut self,
        recovery: Recovery,
        open: Vec<CallId>,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> bool {
        let turn = self.start_turn();
        let started_at = Instant::now();
        let calls = self.open_calls(&open);
        let started: HashSet<&str> = recovery.started.iter().map(String::as_str).collect();
        let mut unknown: Vec<String> = Vec::new();
        let mut runnable: Vec<ToolCall> = Vec::new();
        for call in &calls {
            if started.contains(call.id.as_str()) {
                unknown.push(call.id.clone());
                self.session.push_result(
                    call.id.clone(),
                    UNKNOWN_RESULT,
                    ToolStatus::ExecutionUnknown,
                    None,
                );
                self.emit(Event::ToolCallEnded {
                    call: call.id.clone(),
                    status: ToolStatus::ExecutionUnknown,
                    output: UNKNOWN_RESULT.to_string(),
                });
            } else if !unknown.is_empty() || recovery.cancelled {
                self.session.push_result(
                    call.id.clone(),
                    "not run: the run was stopped before this call started",
                    ToolStatus::Interrupted,
                    None,
                );
            } else {
                runnable.push(call.clone());
            }
        }
        if runnable.is_empty() {
            let saved = self.save();
            if saved && let Some(journal) = &self.journal {
                for id in &unknown {
                    journal.finished(id);
                }
            }
            let end = if let Some(first) = unknown.first() {
                TurnEnd::Failed {
                    error: format!(
                        "tool call {first} had started when minicode stopped; its outcome is \
                         unknown and it was not run again"
                    ),
                }
            } else if recovery.cancelled {
                TurnEnd::Interrupted
            } else {
                TurnEnd::Failed {
                    error: "minicode stopped during this turn; nothing was left to resume".into(),
                }
            };
            let stats = TurnStats {
                wall: started_at.elapsed(),
                ..TurnStats::default()
            };
            self.finish_turn(turn, end, stats, true);
            return false;
        }
        let cancel = CancellationToken::new();
        let (decide_tx, mut decide_rx) = mpsc::unbounded_channel::<(CallId, Decision)>();
        let events = self.events.clone();
        let view = self.skills.clone();
        let mcp = self.mcp.clone();
        let running = resume(self, runnable, cancel.clone(), &mut decide_rx);
        let busy = Busy {
            events: &events,
            skills: &view,
            mcp: mcp.as_deref(),
        };
        let ((end, mut stats), shutdown) =
            serve_ops(running, ops, queue, &cancel, Some(&decide_tx), busy).await;
        stats.wall = started_at.elapsed();
        self.finish_turn(turn, end, stats, true);
        shutdown
    }

    /// The calls of the last assistant message named in `open`, in call order.
    fn open_calls(&self, open: &[CallId]) -> Vec<ToolCall> {
        let wanted: HashSet<&str> = open.iter().map(String::as_str).collect();
        self.session
            .messages()
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
            .map(|m| {
                m.tool_calls
                    .iter()
                    .filter(|c| wanted.contains(c.id.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Runs the calls that never started, then goes on with the turn as if it had not stopped.
async fn resume(
    core: &mut Core,
    calls: Vec<ToolCall>,
    cancel: CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> (TurnEnd, TurnStats) {
    let mut stats = TurnStats::default();
    let batch = turn::run_batch(core, &calls, &cancel, decisions, &mut stats).await;
    if let Some(end) = turn::settle(core, batch) {
        return (end, stats);
    }
    let end = turn::rounds(core, &cancel, decisions, &mut stats, 1).await;
    (end, stats)
}
