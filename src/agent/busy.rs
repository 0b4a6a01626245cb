//! Serving ops while the core is busy with a turn, a manual compaction or a recovered run:
//! decisions reach the waiting approval, an interrupt cancels, prompts wait their turn, and the
//! read-only questions are answered at once. It never touches the conversation.

use std::collections::VecDeque;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{mcp, skills};
use crate::protocol::{CallId, Decision, Event, Op};

/// What the core answers while a turn or a compaction runs: events, and the read-only
/// questions (`ListSkills`, `McpServers`) and MCP restarts that do not touch the conversation.
pub(super) struct Busy<'a> {
    /// For `CompletePath`, answered while busy (typing the next prompt goes on meanwhile),
    /// and `KillBackground`.
    pub(crate) tools: std::sync::Arc<crate::tools::ToolCtx>,
    pub(crate) events: &'a mpsc::UnboundedSender<Event>,
    pub(crate) skills: &'a skills::View,
    pub(crate) mcp: &'a mcp::Servers,
}

/// Drives `work` (a turn or a manual compaction) to its end while serving ops: decisions go
/// to `decisions` (none pending when it is `None`), `Interrupt` cancels `cancel`, prompts and
/// goal commands are queued, `Compact`, `NewSession` and `Fork` are refused as busy, `ListSkills` and the MCP ops are
/// answered from `busy`, and `Shutdown` (or every sender gone) cancels and is remembered. Returns the
/// work's output and whether to shut down.
pub(super) async fn serve_ops<T>(
    work: impl Future<Output = T>,
    ops: &mut mpsc::UnboundedReceiver<Op>,
    queue: &mut VecDeque<Op>,
    cancel: &CancellationToken,
    decisions: Option<&mpsc::UnboundedSender<(CallId, Decision)>>,
    busy: Busy<'_>,
) -> (T, bool) {
    tokio::pin!(work);
    let mut shutdown = false;
    let mut ops_open = true;
    loop {
        // Biased towards ops: every op already sent is handled before the work is polled
        // again, so a `Decide` followed by `Interrupt` cancels before the work can act on the
        // decision alone (e.g. start another model request after a denial).
        tokio::select! {
            biased;
            op = ops.recv(), if ops_open => match op {
                Some(op) => shutdown |= busy.serve(op, queue, cancel, decisions),
                None => {
                    ops_open = false;
                    shutdown = true;
                    cancel.cancel();
                }
            },
            output = &mut work => return (output, shutdown),
        }
    }
}

impl Busy<'_> {
    /// One op that arrived while busy; `true` when it was `Shutdown` (the work is cancelled
    /// and the core stops once it has ended).
    fn serve(
        &self,
        op: Op,
        queue: &mut VecDeque<Op>,
        cancel: &CancellationToken,
        decisions: Option<&mpsc::UnboundedSender<(CallId, Decision)>>,
    ) -> bool {
        match op {
            Op::Interrupt => cancel.cancel(),
            Op::Decide { call, decision } => match decisions {
                Some(tx) => {
                    let _ = tx.send((call, decision));
                }
                None => {
                    let _ = self.events.send(Event::Error {
                        message: format!("no approval is pending for call {call:?}"),
                    });
                }
            },
            op @ (Op::Submit(_)
            | Op::SubmitImages { .. }
            | Op::Goal(_)
            | Op::SetPlan { .. }
            | Op::Model { .. }
            | Op::Rewind { .. }
            | Op::Shell { .. }) => queue.push_back(op),
            // Reading or restarting a server does not touch the conversation.
            Op::McpServers => {
                let _ = self.events.send(self.mcp.listed());
            }
            Op::McpRestart { server } => {
                let _ = self.events.send(self.mcp.restart(&server));
            }
            Op::ListSkills => {
                let _ = self.events.send(self.skills.listed());
            }
            Op::CompletePath { prefix } => {
                let paths = crate::tools::walk::complete(
                    &self.tools.workspace,
                    &prefix,
                    super::mentions::MAX_COMPLETIONS,
                );
                let _ = self.events.send(Event::PathCompletions { prefix, paths });
            }
            Op::KillBackground { id } => {
                super::background::kill(&self.tools, id, super::Emitter(self.events.clone()));
            }
            Op::Compact(_)
            | Op::NewSession
            | Op::Fork
            | Op::ListRewind
            | Op::ListSessions
            | Op::Resume { .. } => {
                let _ = self.events.send(Event::Error {
                    message: "busy: wait for the turn to end or interrupt it".into(),
                });
            }
            Op::Shutdown => {
                cancel.cancel();
                return true;
            }
        }
        false
    }
}
