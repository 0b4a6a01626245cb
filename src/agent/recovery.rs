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
    pub(crate) journal: Option<Arc<dyn Journal>>,
    /// The run a crash left open, answered before any op is read.
    pub(crate) recovery: Option<Recovery>,
}

/// The result a call that had started gets: it is never run again.
pub(crate) const UNKNOWN_RESULT: &str = "execution_unknown: minicode stopped while this call was \
running, before its result was saved; whether it took effect is unknown, and it was not run \
again. Check its effect before repeating it.";

/// The open calls sorted by what the journal says: those that had started are answered as
/// unknown, those after one (or after a stop) as not run, and the rest may run now.
struct Sorted {
    unknown: Vec<String>,
    runnable: Vec<ToolCall>,
}

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
        let turn = self.store.start_turn();
        let started_at = Instant::now();
        let Sorted { unknown, runnable } = self.sort_open(&recovery, &open);
        if runnable.is_empty() {
            self.store.save_and_finish(&unknown);
            let end = nothing_to_run(&unknown, recovery.cancelled);
            let stats = TurnStats {
                wall: started_at.elapsed(),
                ..TurnStats::default()
            };
            self.store.finish_turn(turn, end, stats, true);
            return false;
        }
        let cancel = CancellationToken::new();
        let (decide_tx, mut decide_rx) = mpsc::unbounded_channel::<(CallId, Decision)>();
        let (events, skills, mcp) = (self.events.clone(), self.skills.clone(), self.mcp.clone());
        let tools = self.tool_ctx.clone();
        let running = resume(self, runnable, cancel.clone(), &mut decide_rx);
        let busy = Busy {
            tools,
            events: &events,
            skills: &skills,
            mcp: &mcp,
        };
        let ((end, mut stats), shutdown) =
            serve_ops(running, ops, queue, &cancel, Some(&decide_tx), busy).await;
        stats.wall = started_at.elapsed();
        self.store.finish_turn(turn, end, stats, true);
        shutdown
    }

    /// Answers the open calls that must not run (see [`Sorted`]) and returns the rest.
    fn sort_open(&mut self, recovery: &Recovery, open: &[CallId]) -> Sorted {
        let calls = self.open_calls(open);
        let started: HashSet<&str> = recovery.started.iter().map(String::as_str).collect();
        let mut sorted = Sorted {
            unknown: Vec::new(),
            runnable: Vec::new(),
        };
        for call in calls {
            if started.contains(call.id.as_str()) {
                sorted.unknown.push(call.id.clone());
                self.store.session.push_result(
                    call.id.clone(),
                    UNKNOWN_RESULT,
                    ToolStatus::ExecutionUnknown,
                    None,
                );
                self.emit(Event::ToolCallEnded {
                    call: call.id,
                    status: ToolStatus::ExecutionUnknown,
                    output: UNKNOWN_RESULT.to_string(),
                });
            } else if !sorted.unknown.is_empty() || recovery.cancelled {
                self.store.session.push_result(
                    call.id,
                    "not run: the run was stopped before this call started",
                    ToolStatus::Interrupted,
                    None,
                );
            } else {
                sorted.runnable.push(call);
            }
        }
        sorted
    }

    /// The calls of the last assistant message named in `open`, in call order.
    fn open_calls(&self, open: &[CallId]) -> Vec<ToolCall> {
        let wanted: HashSet<&str> = open.iter().map(String::as_str).collect();
        self.store
            .session
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

/// How a recovered run ends when none of its calls may run: failed on the first call whose
/// outcome is unknown, interrupted when the user had stopped it, else failed with nothing left.
fn nothing_to_run(unknown: &[String], cancelled: bool) -> TurnEnd {
    if let Some(first) = unknown.first() {
        TurnEnd::Failed {
            error: format!(
                "tool call {first} had started when minicode stopped; its outcome is unknown and \
                 it was not run again"
            ),
        }
    } else if cancelled {
        TurnEnd::Interrupted
    } else {
        TurnEnd::Failed {
            error: "minicode stopped during this turn; nothing was left to resume".into(),
        }
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
