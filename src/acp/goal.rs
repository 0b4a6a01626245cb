//! Goal mode over ACP: `/goal …` prompts become `Op::Goal` (read by `GoalOp::parse_command`),
//! the goal shows as the session's plan (one entry: the objective and where it stands), and a goal prompt is answered when the
//! goal run it started stops (or at once for commands that start none). What a goal does is the
//! core's; this only reads its events.

use agent_client_protocol::v1::schema::{
    Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, StopReason,
};

use crate::protocol::{BlockCode, Goal, GoalPhase, TurnEnd};

/// The goal as the client's plan: one entry, or none once it is cleared.
pub(super) fn plan(goal: Option<&Goal>, armed: bool) -> SessionUpdate {
    let entries = goal
        .map(|g| {
            let status = match g.phase {
                GoalPhase::Complete => PlanEntryStatus::Completed,
                GoalPhase::Active if armed => PlanEntryStatus::InProgress,
                _ => PlanEntryStatus::Pending,
            };
            vec![PlanEntry::new(
                g.objective.clone(),
                PlanEntryPriority::High,
                status,
            )]
        })
        .unwrap_or_default();
    SessionUpdate::Plan(Plan::new(entries))
}

/// One line saying where the goal stands.
pub(super) fn describe(goal: Option<&Goal>, armed: bool, error: Option<&str>) -> String {
    if let Some(error) = error {
        return format!("Goal unavailable: {error}\n");
    }
    let Some(goal) = goal else {
        return "No goal. `/goal <objective>` sets one.\n".to_string();
    };
    let mut text = format!(
        "Goal ({}, {}, rounds {}/{}): {}\n",
        goal.phase.as_str(),
        if armed { "running" } else { "stopped" },
        goal.rounds_used,
        goal.max_rounds,
        goal.objective
    );
    if let Some(reason) = &goal.reason {
        text.push_str(&format!("Blocked ({}): {}\n", reason.code, reason.message));
    }
    text
}

/// Where the goal prompt at the front of the queue stands.
#[derive(Debug, Default)]
pub(super) struct Run {
    /// The core answered the command (a goal change or status).
    pub(crate) answered: bool,
    /// The command armed the goal: a goal run began, and the prompt waits for its end.
    pub(crate) started: bool,
    /// The core said the goal run is over (`GoalRunEnded`).
    pub(crate) ended: bool,
    /// How the last round's turn ended.
    pub(crate) last_end: Option<TurnEnd>,
    /// Why the goal was blocked, when it was.
    pub(crate) blocked: Option<BlockCode>,
}

impl Run {
    /// The command was answered and started no run, or the run it started is over.
    pub(super) fn over(&self) -> bool {
        self.answered && (self.ended || !self.started)
    }

    /// The stop reason of the goal prompt.
    pub(super) fn stop_reason(&self) -> StopReason {
        match (&self.last_end, &self.blocked) {
            (Some(TurnEnd::Interrupted), _) => StopReason::Cancelled,
            (_, Some(BlockCode::RoundLimit)) => StopReason::MaxTurnRequests,
            _ => StopReason::EndTurn,
        }
    }
}
