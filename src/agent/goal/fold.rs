//! The fold of a session's goal records: each record and goal-round instruction checked
//! against the state before it (ids, revision continuity, times, counters, legal transitions).
//! It decides whether a history is valid goal-wise; it never creates a change itself.

use std::collections::HashSet;

use super::record::{self, Record, Round, Tombstone};
use super::updated;
use crate::chat::Message;
use crate::protocol::{Goal, GoalChange, GoalPhase};

/// The current goal and every id the session has used.
#[derive(Debug, Clone, Default)]
pub(super) struct Fold {
    pub(super) goal: Option<Goal>,
    /// Every goal id the session has used (never reused).
    pub(super) ids: HashSet<String>,
}

impl Fold {
    pub(super) fn apply_message(&mut self, message: &Message) -> Result<(), String> {
        match record::parse(message)? {
            record::Parsed::None => Ok(()),
            record::Parsed::Record(record) => self.apply_record(&record),
            record::Parsed::Round(round) => self.apply_round(&round),
        }
    }

    /// A goal round's instruction: it must belong to the current, active revision and carry
    /// the next number within the limit.
    fn apply_round(&mut self, round: &Round) -> Result<(), String> {
        let goal = self.goal.as_mut().ok_or("a goal round without a goal")?;
        if round.goal_id != goal.id || round.revision != goal.revision {
            return Err(format!(
                "goal round {} names {} revision {}, but the current goal is {} revision {}",
                round.round, round.goal_id, round.revision, goal.id, goal.revision
            ));
        }
        if goal.phase != GoalPhase::Active {
            return Err(format!(
                "goal round {} of a {} goal",
                round.round,
                goal.phase.as_str()
            ));
        }
        if round.round != goal.rounds_used + 1 || round.max_rounds != goal.max_rounds {
            return Err(format!(
                "goal round {} of {} does not follow round {} of {}",
                round.round, round.max_rounds, goal.rounds_used, goal.max_rounds
            ));
        }
        if round.round > goal.max_rounds {
            return Err(format!("goal round {} exceeds the limit", round.round));
        }
        goal.rounds_used = round.round;
        Ok(())
    }

    /// One record, checked against the state before it.
    pub(super) fn apply_record(&mut self, record: &Record) -> Result<(), String> {
        match &record.goal {
            // A tombstone (the record's shape guarantees it is one).
            None => self.apply_clear(record.cleared.as_ref().ok_or("a record without a goal")?),
            Some(next) if record.change == GoalChange::Created => self.apply_create(next),
            Some(next) => self.apply_change(record.change, next),
        }
    }

    /// A clear: it must name the current goal at its next revision, no earlier than its last
    /// change.
    fn apply_clear(&mut self, t: &Tombstone) -> Result<(), String> {
        let goal = self.goal.as_ref().ok_or("a clear without a goal")?;
        if t.id != goal.id || t.revision != goal.revision + 1 {
            return Err(format!(
                "the clear names {} revision {}, expected {} revision {}",
                t.id,
                t.revision,
                goal.id,
                goal.revision + 1
            ));
        }
        if record::parse_time(&t.at)? < updated(goal) {
            return Err("the clear's time is before the goal's last change".to_string());
        }
        self.goal = None;
        Ok(())
    }

    /// A new goal: only when none is unfinished, with a fresh id, active at revision 1.
    fn apply_create(&mut self, next: &Goal) -> Result<(), String> {
        if let Some(goal) = &self.goal
            && goal.phase != GoalPhase::Complete
        {
            return Err(format!(
                "goal {} was created while goal {} was {}",
                next.id,
                goal.id,
                goal.phase.as_str()
            ));
        }
        if self.ids.contains(&next.id) {
            return Err(format!("goal id {} is used again", next.id));
        }
        if next.revision != 1
            || next.rounds_used != 0
            || next.phase != GoalPhase::Active
            || next.created_at != next.updated_at
        {
            return Err("a new goal must be active, at revision 1, with no rounds".into());
        }
        self.ids.insert(next.id.clone());
        self.goal = Some(next.clone());
        Ok(())
    }

    /// A change of the current goal: the next revision of the same goal, time moving forward,
    /// only what `change` may touch changed, and a legal transition.
    fn apply_change(&mut self, change: GoalChange, next: &Goal) -> Result<(), String> {
        let goal = self.goal.as_ref().ok_or("a change without a goal")?;
        if next.id != goal.id || next.revision != goal.revision + 1 {
            return Err(format!(
                "the change names {} revision {}, expected {} revision {}",
                next.id,
                next.revision,
                goal.id,
                goal.revision + 1
            ));
        }
        if next.created_at != goal.created_at {
            return Err("the creation time changed".to_string());
        }
        if record::parse_time(&next.updated_at)? < updated(goal) {
            return Err("the time went backwards".to_string());
        }
        if next.rounds_used != goal.rounds_used {
            return Err(format!(
                "rounds_used is {}, but {} rounds were counted",
                next.rounds_used, goal.rounds_used
            ));
        }
        if change != GoalChange::Edited && next.objective != goal.objective {
            return Err("the objective changed outside an edit".to_string());
        }
        if change != GoalChange::Resumed && next.max_rounds != goal.max_rounds {
            return Err("max_rounds changed outside a resume".to_string());
        }
        if !legal(change, goal, next) {
            return Err(format!(
                "{} goal cannot become {} by `{}`",
                goal.phase.as_str(),
                next.phase.as_str(),
                change.as_str()
            ));
        }
        self.goal = Some(next.clone());
        Ok(())
    }
}

/// Whether `change` may take `goal` to `next` (creation and clearing are checked apart).
fn legal(change: GoalChange, goal: &Goal, next: &Goal) -> bool {
    use GoalPhase::*;
    match change {
        GoalChange::Paused => goal.phase == Active && next.phase == Paused,
        GoalChange::Resumed => {
            matches!(goal.phase, Paused | Blocked | Active)
                && next.phase == Active
                && next.rounds_used < next.max_rounds
        }
        GoalChange::Edited => {
            goal.phase != Complete && next.phase == goal.phase && next.reason == goal.reason
        }
        GoalChange::Completed => goal.phase != Complete && next.phase == Complete,
        GoalChange::Blocked => goal.phase != Complete && next.phase == Blocked,
        GoalChange::Created | GoalChange::Cleared => false,
    }
}
