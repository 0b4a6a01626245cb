//! Goal mode in the full-screen UI: the goal events become transcript notices and the goal
//! line of the status bar; `/goal …` and `/fork` become ops. The UI keeps only what the core
//! reported (`GoalChanged`, `GoalStatus`); it never decides a transition.

use super::state::{Effect, State};
use super::transcript::Level;
use crate::protocol::{Event, Goal, GoalOp, GoalPhase, Op};

/// What the status bar shows of the goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GoalView {
    pub(crate) goal: Goal,
    pub(crate) armed: bool,
}

impl GoalView {
    /// `goal active · armed · 3/256`.
    pub(crate) fn status(&self) -> String {
        let armed = if self.armed { "armed" } else { "disarmed" };
        format!(
            "goal {} · {armed} · {}/{}",
            self.goal.phase.as_str(),
            self.goal.rounds_used,
            self.goal.max_rounds
        )
    }
}

/// The text of `/goal` with no argument.
fn describe(view: Option<&GoalView>, error: Option<&str>) -> String {
    if let Some(error) = error {
        return format!("goal unavailable: {error}");
    }
    let Some(GoalView { goal, armed }) = view else {
        return "no goal: /goal <objective> sets one".to_string();
    };
    let mut text = format!(
        "goal {} (revision {}) · {} · {} · rounds {}/{}\n{}",
        goal.id,
        goal.revision,
        goal.phase.as_str(),
        if *armed { "armed" } else { "disarmed" },
        goal.rounds_used,
        goal.max_rounds,
        goal.objective
    );
    if let Some(reason) = &goal.reason {
        text.push_str(&format!("\nblocked ({}): {}", reason.code, reason.message));
    }
    if goal.phase != GoalPhase::Complete && !armed {
        text.push_str("\n/goal resume continues it; /goal clear removes it");
    }
    text
}

impl State {
    /// The goal events (see `core_events.rs` for the others).
    pub(crate) fn goal_event(&mut self, e: Event) {
        match e {
            Event::GoalChanged {
                change,
                goal_id,
                goal,
                armed,
                ..
            } => {
                let mut line = format!("goal {goal_id} {}", change.as_str());
                if let Some(reason) = goal.as_ref().and_then(|g| g.reason.as_ref()) {
                    line.push_str(&format!(" ({}): {}", reason.code, reason.message));
                }
                let level = match goal.as_ref().map(|g| g.phase) {
                    Some(GoalPhase::Blocked) => Level::Warning,
                    _ => Level::Info,
                };
                self.notice(level, line);
                self.goal = goal.map(|goal| GoalView { goal, armed });
            }
            Event::GoalStatus { goal, armed, error } => {
                let was = self.goal.as_ref().map(|g| g.armed);
                self.goal = goal.map(|goal| GoalView { goal, armed });
                self.goal_error = error;
                if self.goal_asked {
                    self.goal_asked = false;
                    let text = describe(self.goal.as_ref(), self.goal_error.as_deref());
                    self.notice(Level::Info, text);
                } else if let Some(error) = &self.goal_error {
                    let text = format!("goal unavailable: {error}");
                    self.notice(Level::Error, text);
                } else if was == Some(true) && !armed {
                    self.notice(Level::Warning, "goal disarmed: /goal resume continues it");
                } else if was == Some(false) && armed {
                    self.notice(Level::Info, "goal armed");
                }
            }
            Event::GoalRoundStarted {
                round, max_rounds, ..
            } => {
                if let Some(view) = &mut self.goal {
                    view.goal.rounds_used = round;
                }
                self.notice(Level::Info, format!("◆ goal round {round}/{max_rounds}"));
            }
            Event::GoalRunEnded { goal, .. } => {
                self.goal = goal.map(|goal| GoalView { goal, armed: false });
            }
            Event::GoalRefused { message } => {
                self.goal_asked = false;
                self.notice(Level::Error, format!("goal: {message}"));
            }
            Event::SessionForked {
                parent_id,
                session_id,
            } => {
                // The copy's history arrives again; start from a clean transcript of it.
                self.goal = None;
                self.goal_error = None;
                self.transcript.clear();
                self.sessions_seen = 0;
                self.notice(
                    Level::Info,
                    format!(
                        "forked session {parent_id} into {session_id} (the original is unchanged)"
                    ),
                );
            }
            _ => {}
        }
    }

    /// `/goal [pause|resume|clear|edit <text>|<objective>]`.
    pub(crate) fn goal_command(&mut self, arg: &str) -> Vec<Effect> {
        let op = match GoalOp::parse_command(arg) {
            Ok(op) => op,
            Err(usage) => {
                self.notice(Level::Error, usage);
                return Vec::new();
            }
        };
        if matches!(op, GoalOp::Show) {
            if self.busy {
                // Shown from what the core last reported; the core answers after the turn.
                let text = describe(self.goal.as_ref(), self.goal_error.as_deref());
                self.notice(Level::Info, text);
                return Vec::new();
            }
            self.goal_asked = true;
        }
        if self.busy && !matches!(op, GoalOp::Show) {
            self.notice(Level::Info, "the goal command runs when this turn ends");
        }
        vec![Effect::Op(Op::Goal(op))]
    }
}
