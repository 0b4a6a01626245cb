//! A session's bookkeeping per core event (pending approvals, turns, the end), kept apart
//! from `live.rs` so its exhaustive match over `Event` does not crowd the log's logic. It
//! changes state only; logging and publishing stay in `live.rs`.

use super::{Batch, State};
use crate::protocol::Event;

impl State {
    /// What an event changes in the session's bookkeeping before it is logged: pending
    /// approvals, where the session's configuration starts, whether a turn is going and
    /// belongs to the run, and the end of the session. Every event is named, so a new one
    /// is a decision here too.
    pub(super) fn track(&mut self, event: &Event, batch: &mut Batch) {
        match event {
            Event::ApprovalRequested { call, .. } => {
                self.pending.insert(call.clone());
                // Announced only once it is on disk: it must survive a crash.
                batch.sync = true;
            }
            Event::ApprovalDecided { call, .. } => {
                self.pending.remove(call);
            }
            Event::SessionConfigured { .. } => self.configured = self.last + 1,
            Event::ShutdownComplete => self.closed = true,
            Event::TurnStarted { .. } => {
                self.turn_active = true;
                let foreign = self.foreign_turn;
                if let Some(run) = self.run.as_mut()
                    && !foreign
                {
                    run.bound = true;
                }
            }
            // The end of a turn and a goal round are handled once the event is logged.
            Event::TurnEnded { .. }
            | Event::GoalRoundStarted { .. }
            | Event::HistoryRestored { .. }
            | Event::ModelRequestStarted { .. }
            | Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::AssistantMessage { .. }
            | Event::Retrying { .. }
            | Event::ToolCallBegan { .. }
            | Event::SandboxChanged { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ToolCallEnded { .. }
            | Event::SubagentStarted { .. }
            | Event::SubagentProgress { .. }
            | Event::SubagentEnded { .. }
            | Event::Warning { .. }
            | Event::Hook { .. }
            | Event::Compacted { .. }
            | Event::MemoryLoaded { .. }
            | Event::ContextWindowSet { .. }
            | Event::ServerUnreachable { .. }
            | Event::SkillLoaded { .. }
            | Event::SkillsListed { .. }
            | Event::ModelsListed { .. }
            | Event::ModelSwitched { .. }
            | Event::GoalChanged { .. }
            | Event::GoalStatus { .. }
            | Event::GoalRunEnded { .. }
            | Event::GoalRefused { .. }
            | Event::RewindList { .. }
            | Event::Rewound { .. }
            | Event::SessionsListed { .. }
            | Event::BackgroundChanged { .. }
            | Event::PathCompletions { .. }
            | Event::SessionForked { .. }
            | Event::ContextUsage { .. }
            | Event::McpServers { .. }
            | Event::Error { .. } => {}
        }
    }
}
