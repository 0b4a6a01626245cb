//! Goal mode's domain: at most one current goal per session, its durable phase (`active`,
//! `paused`, `blocked`, `complete`) and its live activation (`armed`), which is never stored.
//!
//! The session history is the only truth. Every change becomes a `<goal_state>` record (see
//! `goal/record.rs`) that the caller appends to the history; [`Goals`] is the fold of those
//! records and of the goal rounds' instructions, checked at every step: new ids, revision
//! continuity, legal transitions, counters, times. A record that fails a check stops the fold:
//! goal access then fails with an error naming the message index, while the rest of the session
//! works as usual. Nothing here talks to a model, a frontend or a file: the driver
//! (`goal/driver.rs`) does.

pub(crate) mod driver;
mod fold;
pub mod record;
pub(crate) mod stall;
pub(crate) mod tools;

/// `[goal]` in the configuration: the table deserialises straight into this struct (unknown
/// keys refused; a missing key takes its value from [`Default`], the one place the defaults
/// are written), and the goal driver is handed it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Goal rounds a new goal may use unless its command names a limit (`--goal-rounds`).
    pub max_rounds: u32,
    /// Goal rounds in a row without progress after which the goal blocks as
    /// `awaiting-human`.
    pub stall_rounds: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_rounds: crate::defaults::GOAL_MAX_ROUNDS,
            stall_rounds: crate::defaults::GOAL_STALL_ROUNDS,
        }
    }
}

use std::time::SystemTime;

use serde::Deserialize;

use crate::chat::Message;
use crate::protocol::{BlockCode, Goal, GoalBlock, GoalChange, GoalPhase, GoalRef};

use fold::Fold;
pub(crate) use record::{Record, Round, Tombstone};

/// Why a goal command was refused, or why goal access fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoalError {
    #[error("there is no goal in this session")]
    NoGoal,
    #[error(
        "goal {id} is still {}: complete, pause and clear, or clear it before setting another",
        .phase.as_str()
    )]
    Unfinished { id: String, phase: GoalPhase },
    #[error(
        "stale goal reference: expected {expected_id} at revision {expected_revision}, but the \
         current goal is {id} at revision {revision}"
    )]
    Stale {
        expected_id: String,
        expected_revision: u64,
        id: String,
        revision: u64,
    },
    #[error("goal {id} is {}: it cannot be {action}", .phase.as_str())]
    Illegal {
        id: String,
        phase: GoalPhase,
        action: &'static str,
    },
    #[error("goal {id} has used all of its {max_rounds} rounds: resume it with a higher limit")]
    NoRoundsLeft { id: String, max_rounds: u32 },
    #[error("goal {id} is active and already armed")]
    AlreadyArmed { id: String },
    #[error("invalid goal command: {0}")]
    Invalid(String),
    #[error("the goal record at message {index} is invalid: {reason}")]
    Corrupt { index: usize, reason: String },
}

/// The goal state of one session: the fold of its history, the live activation, and records
/// accepted but not yet appended.
#[derive(Debug, Clone)]
pub struct Goals {
    /// The fold; `Err` from the first bad record on (later messages are not read).
    state: Result<Fold, GoalError>,
    /// Messages of the history folded so far.
    folded: usize,
    armed: bool,
    /// A goal run is open: armed since the last `GoalRunEnded`; and whether an interrupt
    /// disarmed it.
    run_open: bool,
    run_interrupted: bool,
    /// Rendered records already applied to the state, waiting to be appended to history.
    pending: Vec<String>,
    /// The tool calls of the running turn, and how many of them nobody could approve.
    tally: RoundTally,
}

/// Counted per turn so a goal round nobody could approve blocks instead of looping.
#[derive(Debug, Clone, Copy, Default)]
struct RoundTally {
    calls: u32,
    unasked: u32,
}

impl Default for Goals {
    fn default() -> Self {
        Goals {
            state: Ok(Fold::default()),
            folded: 0,
            armed: false,
            run_open: false,
            run_interrupted: false,
            pending: Vec::new(),
            tally: RoundTally::default(),
        }
    }
}

/// A change the domain accepted: the record to append and what it did to the activation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub record: Record,
    pub armed: bool,
}

impl Goals {
    /// The goal state of a loaded history: replayed and checked, and always disarmed (opening
    /// a session never starts work).
    pub fn replay(messages: &[Message]) -> Goals {
        let mut goals = Goals::default();
        goals.sync(messages);
        goals
    }

    /// Folds the messages appended since the last call (an append-only history; a shorter one
    /// means a different session and starts over).
    pub fn sync(&mut self, messages: &[Message]) {
        if messages.len() < self.folded {
            *self = Goals::default();
        }
        while self.folded < messages.len() {
            let index = self.folded;
            self.folded += 1;
            let Ok(fold) = &mut self.state else {
                // Stopped at the first bad record: every later read reports that one.
                self.folded = messages.len();
                return;
            };
            if let Err(reason) = fold.apply_message(&messages[index]) {
                self.state = Err(GoalError::Corrupt { index, reason });
                self.armed = false;
            }
        }
    }

    /// The current goal (`None` when there is none or it was cleared), or why goal access
    /// fails.
    pub fn current(&self) -> Result<Option<&Goal>, GoalError> {
        match &self.state {
            Ok(fold) => Ok(fold.goal.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Live activation: the driver runs rounds only while the goal is active and armed.
    pub fn armed(&self) -> bool {
        self.armed
    }

    /// Whether the driver should start another round.
    pub(crate) fn wants_round(&self) -> bool {
        self.armed && matches!(self.current(), Ok(Some(goal)) if goal.phase == GoalPhase::Active)
    }

    /// Disarms without recording anything (an interrupt, a new session). Returns whether it
    /// was armed.
    pub(crate) fn disarm(&mut self) -> bool {
        std::mem::replace(&mut self.armed, false)
    }

    /// Disarms because the user interrupted; returns whether it was armed.
    pub(crate) fn interrupt(&mut self) -> bool {
        let was = self.disarm();
        self.run_interrupted |= was;
        was
    }

    /// Once per goal run, when it is over (no round runs or will run): whether an interrupt
    /// ended it. The core asks only while idle, so the run's last turn has ended.
    pub(crate) fn take_run_end(&mut self) -> Option<bool> {
        if !self.run_open || self.wants_round() {
            return None;
        }
        self.run_open = false;
        Some(std::mem::take(&mut self.run_interrupted))
    }

    /// The records accepted since the last call, to append to history in this order. The
    /// caller appends them right after calling [`Goals::sync`] on the history they join.
    pub fn take_pending(&mut self) -> Vec<Message> {
        self.pending.drain(..).map(Message::user).collect()
    }

    /// Records appended by the caller: they are already in the fold.
    pub fn appended(&mut self, history_len: usize) {
        self.folded = history_len;
    }

    /// The instruction that opens the next goal round, attributed to the current goal.
    pub fn next_round(&self) -> Result<Round, GoalError> {
        let goal = self.current()?.ok_or(GoalError::NoGoal)?;
        Ok(Round {
            goal_id: goal.id.clone(),
            revision: goal.revision,
            round: goal.rounds_used + 1,
            max_rounds: goal.max_rounds,
        })
    }

    /// Sets a new goal (only when there is none, or the current one is complete) and arms it.
    pub fn create(
        &mut self,
        objective: &str,
        max_rounds: u32,
        now: SystemTime,
    ) -> Result<Accepted, GoalError> {
        let objective = record::normalize_objective(objective).map_err(GoalError::Invalid)?;
        if max_rounds == 0 {
            return Err(GoalError::Invalid("max_rounds must be at least 1".into()));
        }
        let fold = self.fold()?;
        if let Some(goal) = &fold.goal
            && goal.phase != GoalPhase::Complete
        {
            return Err(GoalError::Unfinished {
                id: goal.id.clone(),
                phase: goal.phase,
            });
        }
        let mut id = record::new_id();
        while fold.ids.contains(&id) {
            id = record::new_id();
        }
        let at = record::format_time(now);
        let goal = Goal {
            id,
            objective,
            phase: GoalPhase::Active,
            reason: None,
            revision: 1,
            max_rounds,
            rounds_used: 0,
            created_at: at.clone(),
            updated_at: at,
        };
        self.accept(GoalChange::Created, Some(goal), None, true)
    }

    pub fn pause(&mut self, expected: &GoalRef, now: SystemTime) -> Result<Accepted, GoalError> {
        let goal = self.expect(expected)?;
        if goal.phase != GoalPhase::Active {
            return Err(illegal(goal, "paused"));
        }
        let next = next_revision(goal, now, GoalPhase::Paused, None);
        self.accept(GoalChange::Paused, Some(next), None, false)
    }

    /// Arms the goal again: a paused or blocked goal becomes active (its reason cleared); an
    /// active, disarmed one is only armed (`Ok(None)`: nothing to record). Refused when no
    /// round is left; `max_rounds` may raise the limit.
    pub fn resume(
        &mut self,
        expected: &GoalRef,
        max_rounds: Option<u32>,
        now: SystemTime,
    ) -> Result<Option<Accepted>, GoalError> {
        let armed = self.armed;
        let goal = self.expect(expected)?;
        let limit = max_rounds.unwrap_or(goal.max_rounds);
        if limit <= goal.rounds_used {
            return Err(GoalError::NoRoundsLeft {
                id: goal.id.clone(),
                max_rounds: limit,
            });
        }
        match goal.phase {
            GoalPhase::Complete => Err(illegal(goal, "resumed")),
            GoalPhase::Active if limit == goal.max_rounds => {
                if armed {
                    return Err(GoalError::AlreadyArmed {
                        id: goal.id.clone(),
                    });
                }
                self.armed = true;
                self.run_open = true;
                Ok(None)
            }
            _ => {
                let mut next = next_revision(goal, now, GoalPhase::Active, None);
                next.max_rounds = limit;
                self.accept(GoalChange::Resumed, Some(next), None, true)
                    .map(Some)
            }
        }
    }

    /// Replaces the objective; phase, reason and activation stay.
    pub fn edit(
        &mut self,
        expected: &GoalRef,
        objective: &str,
        now: SystemTime,
    ) -> Result<Accepted, GoalError> {
        let objective = record::normalize_objective(objective).map_err(GoalError::Invalid)?;
        let armed = self.armed;
        let goal = self.expect(expected)?;
        if goal.phase == GoalPhase::Complete {
            return Err(illegal(goal, "edited"));
        }
        let mut next = next_revision(goal, now, goal.phase, goal.reason.clone());
        next.objective = objective;
        self.accept(GoalChange::Edited, Some(next), None, armed)
    }

    pub fn complete(&mut self, expected: &GoalRef, now: SystemTime) -> Result<Accepted, GoalError> {
        let goal = self.expect(expected)?;
        if goal.phase == GoalPhase::Complete {
            return Err(illegal(goal, "completed again"));
        }
        let next = next_revision(goal, now, GoalPhase::Complete, None);
        self.accept(GoalChange::Completed, Some(next), None, false)
    }

    /// Blocks the goal with a kebab-case `code` and a message (normalised; a default is used
    /// when it is empty).
    pub fn block(
        &mut self,
        expected: &GoalRef,
        code: impl Into<BlockCode>,
        message: &str,
        now: SystemTime,
    ) -> Result<Accepted, GoalError> {
        let code = code.into();
        record::check_code(code.as_str()).map_err(GoalError::Invalid)?;
        let mut message = record::normalize_message(message);
        if message.is_empty() {
            message = format!("blocked: {code}");
        }
        let goal = self.expect(expected)?;
        if goal.phase == GoalPhase::Complete {
            return Err(illegal(goal, "blocked"));
        }
        let reason = GoalBlock { code, message };
        let next = next_revision(goal, now, GoalPhase::Blocked, Some(reason));
        self.accept(GoalChange::Blocked, Some(next), None, false)
    }

    /// Removes the goal: a tombstone with the next revision.
    pub fn clear(&mut self, expected: &GoalRef, now: SystemTime) -> Result<Accepted, GoalError> {
        let goal = self.expect(expected)?;
        let tombstone = Tombstone {
            id: goal.id.clone(),
            revision: goal.revision + 1,
            at: record::format_time(now.max(updated(goal))),
        };
        self.accept(GoalChange::Cleared, None, Some(tombstone), false)
    }

    /// A reference to the current goal, for commands that act on "whatever is current".
    pub fn current_ref(&self) -> Result<GoalRef, GoalError> {
        let goal = self.current()?.ok_or(GoalError::NoGoal)?;
        Ok(GoalRef {
            id: goal.id.clone(),
            revision: goal.revision,
        })
    }

    fn fold(&self) -> Result<&Fold, GoalError> {
        self.state.as_ref().map_err(Clone::clone)
    }

    /// The current goal if `expected` names it at its current revision.
    fn expect(&self, expected: &GoalRef) -> Result<&Goal, GoalError> {
        let goal = self.fold()?.goal.as_ref().ok_or(GoalError::NoGoal)?;
        if goal.id != expected.id || goal.revision != expected.revision {
            return Err(GoalError::Stale {
                expected_id: expected.id.clone(),
                expected_revision: expected.revision,
                id: goal.id.clone(),
                revision: goal.revision,
            });
        }
        Ok(goal)
    }

    /// Applies a change through the same checks replay uses, and queues its record.
    fn accept(
        &mut self,
        change: GoalChange,
        goal: Option<Goal>,
        cleared: Option<Tombstone>,
        armed: bool,
    ) -> Result<Accepted, GoalError> {
        let record = Record {
            version: record::RECORD_VERSION,
            change,
            goal,
            cleared,
        };
        let fold = match &mut self.state {
            Ok(fold) => fold,
            Err(e) => return Err(e.clone()),
        };
        // A check failing here is a bug in this file, not the user's doing: refuse the change.
        fold.apply_record(&record).map_err(GoalError::Invalid)?;
        self.pending.push(record.render());
        self.armed = armed;
        self.run_open |= armed;
        Ok(Accepted { record, armed })
    }
}

fn illegal(goal: &Goal, action: &'static str) -> GoalError {
    GoalError::Illegal {
        id: goal.id.clone(),
        phase: goal.phase,
        action,
    }
}

fn updated(goal: &Goal) -> SystemTime {
    record::parse_time(&goal.updated_at).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The goal's next revision in `phase`: times never go backwards, even when the clock does.
fn next_revision(
    goal: &Goal,
    now: SystemTime,
    phase: GoalPhase,
    reason: Option<GoalBlock>,
) -> Goal {
    Goal {
        phase,
        reason,
        revision: goal.revision + 1,
        updated_at: record::format_time(now.max(updated(goal))),
        ..goal.clone()
    }
}
