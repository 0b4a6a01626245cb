//! The goal driver: the core's side of goal mode. It serves `Op::Goal` commands, appends the
//! records the domain accepts to the session (and saves), keeps the goal tools declared exactly
//! while a goal exists, runs the goal tools, starts a goal round whenever the goal is active
//! and armed and the core is idle, and maps how a goal turn ended onto the goal (an interrupt
//! disarms; a provider failure blocks with `execution-failed` or `usage-limit`; the last round
//! blocks with `round-limit`). It never decides a transition itself: that is `goal.rs`'s.

use std::collections::VecDeque;
use std::time::SystemTime;

use tokio::sync::mpsc;

use super::tools::{self, UpdateArgs, UpdateStatus};
use super::{Accepted, GoalError};
use crate::agent::Core;
use crate::agent::turn::Input;
use crate::protocol::{BlockCode, Event, GoalOp, GoalPhase, GoalRef, Op, TurnEnd};
use crate::tools::ToolOutput;

/// Why a goal round whose every call was refused for lack of a terminal blocks the goal.
const NO_TERMINAL_BLOCK: &str = "every tool call of the round needed approval and no terminal \
was available to ask; rerun with --yes, or resume the goal in a terminal";

impl super::Goals {
    /// A tool call of the running turn is being handled.
    pub(crate) fn note_call(&mut self) {
        self.tally.calls += 1;
    }

    /// A call of the running turn was not run because no terminal could ask for approval.
    pub(crate) fn note_unasked(&mut self) {
        self.tally.unasked += 1;
    }

    /// Whether the turn just ended made calls and every one was refused for lack of a
    /// terminal; starts the next turn's count.
    fn take_all_unasked(&mut self) -> bool {
        let tally = std::mem::take(&mut self.tally);
        tally.calls > 0 && tally.unasked == tally.calls
    }
}

impl Core {
    /// At session start (and after a fork or a new session): the goal as the history says,
    /// disarmed, its tools declared if there is one, and a `GoalStatus` for frontends when the
    /// session has any goal record.
    pub(crate) fn goal_start(&mut self) {
        self.goals = super::Goals::replay(self.session.messages());
        self.declare_goal_tools();
        let has_record = self
            .session
            .messages()
            .iter()
            .any(super::record::is_goal_message);
        if has_record {
            self.emit(self.goal_status());
        }
    }

    /// The goal as it stands, as an event.
    pub(crate) fn goal_status(&self) -> Event {
        match self.goals.current() {
            Ok(goal) => Event::GoalStatus {
                goal: goal.cloned(),
                armed: self.goals.armed(),
                error: None,
            },
            Err(e) => Event::GoalStatus {
                goal: None,
                armed: false,
                error: Some(e.to_string()),
            },
        }
    }

    /// While idle: a goal run that is over is announced, once.
    pub(crate) fn goal_run_check(&mut self) {
        if let Some(interrupted) = self.goals.take_run_end() {
            let goal = self.goals.current().ok().flatten().cloned();
            self.emit(Event::GoalRunEnded { goal, interrupted });
        }
    }

    /// Serves one goal command while idle.
    pub(crate) fn goal_command(&mut self, op: GoalOp) {
        self.goals.sync(self.session.messages());
        let now = SystemTime::now();
        let expect = |goals: &super::Goals, expected: Option<GoalRef>| match expected {
            Some(r) => Ok(r),
            None => goals.current_ref(),
        };
        let result: Result<Option<Accepted>, GoalError> = match op {
            GoalOp::Show => {
                self.emit(self.goal_status());
                return;
            }
            GoalOp::Create {
                objective,
                max_rounds,
            } => {
                let limit = max_rounds.unwrap_or(self.options.goal_max_rounds);
                self.goals.create(&objective, limit, now).map(Some)
            }
            GoalOp::Pause { expected } => expect(&self.goals, expected)
                .and_then(|r| self.goals.pause(&r, now))
                .map(Some),
            GoalOp::Resume {
                expected,
                max_rounds,
            } => expect(&self.goals, expected).and_then(|r| self.goals.resume(&r, max_rounds, now)),
            GoalOp::Edit {
                expected,
                objective,
            } => expect(&self.goals, expected)
                .and_then(|r| self.goals.edit(&r, &objective, now))
                .map(Some),
            GoalOp::Clear { expected } => expect(&self.goals, expected)
                .and_then(|r| self.goals.clear(&r, now))
                .map(Some),
        };
        match result {
            Ok(Some(accepted)) => {
                self.flush_goal_records();
                self.save();
                self.goal_changed(&accepted);
            }
            // An active goal was only armed: nothing to record.
            Ok(None) => self.emit(self.goal_status()),
            Err(e) => self.emit(Event::GoalRefused {
                message: e.to_string(),
            }),
        }
    }

    /// Appends the records the domain accepted to the history (after the messages already
    /// there, so after a whole tool batch when a goal tool changed the goal).
    pub(crate) fn flush_goal_records(&mut self) {
        self.goals.sync(self.session.messages());
        let records = self.goals.take_pending();
        if records.is_empty() {
            return;
        }
        for record in records {
            self.session.push(record);
        }
        self.goals.appended(self.session.messages().len());
    }

    /// Tells frontends about an accepted change and keeps the tools in step.
    fn goal_changed(&mut self, accepted: &Accepted) {
        self.declare_goal_tools();
        let (goal_id, revision) = accepted.record.target();
        self.emit(Event::GoalChanged {
            change: accepted.record.change,
            goal_id: goal_id.to_string(),
            revision,
            goal: accepted.record.goal.clone(),
            armed: accepted.armed,
        });
    }

    /// The goal tools are declared exactly while the session has a goal.
    fn declare_goal_tools(&mut self) {
        let want = matches!(self.goals.current(), Ok(Some(_)));
        if want == self.goal_tools_declared {
            return;
        }
        let tools = if want {
            self.goal_tools.tools()
        } else {
            Vec::new()
        };
        let refused = self.registry.set_group(tools::GROUP, tools);
        self.goal_tools_declared = want;
        for name in refused {
            self.emit(Event::Warning {
                message: format!("another tool is already named {name}; the goal cannot use it"),
            });
        }
    }

    /// Starts the next goal round (the caller checked the goal wants one). Returns true if a
    /// shutdown was asked for meanwhile.
    pub(crate) async fn goal_round(
        &mut self,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> bool {
        self.goals.sync(self.session.messages());
        let round = match self.goals.next_round() {
            Ok(round) => round,
            Err(_) => {
                self.goals.disarm();
                self.emit(self.goal_status());
                return false;
            }
        };
        if round.round > round.max_rounds {
            self.block_goal(
                BlockCode::RoundLimit,
                &format!("used all {} goal rounds", round.max_rounds),
            );
            return false;
        }
        self.emit(Event::GoalRoundStarted {
            goal_id: round.goal_id.clone(),
            revision: round.revision,
            round: round.round,
            max_rounds: round.max_rounds,
        });
        self.turn(Input::GoalRound(round.render()), ops, queue)
            .await
    }

    /// After any turn: an interrupt disarms (nothing is recorded); a goal round that failed
    /// blocks the goal; the last allowed round blocks it with `round-limit`.
    pub(crate) fn goal_after_turn(&mut self, end: &TurnEnd, goal_round: bool, usage_limit: bool) {
        let all_unasked = self.goals.take_all_unasked();
        self.goals.sync(self.session.messages());
        if let TurnEnd::Interrupted = end {
            if self.goals.interrupt() {
                self.emit(self.goal_status());
            }
            return;
        }
        if !goal_round || !self.goals.wants_round() {
            return;
        }
        match end {
            TurnEnd::Failed { error } => {
                let code = if usage_limit {
                    BlockCode::UsageLimit
                } else {
                    BlockCode::ExecutionFailed
                };
                self.block_goal(code, error);
            }
            // Another round would only ask again where nobody can answer.
            TurnEnd::Completed | TurnEnd::RoundLimit { .. } if all_unasked => {
                self.block_goal(BlockCode::AwaitingHuman, NO_TERMINAL_BLOCK);
            }
            TurnEnd::Completed | TurnEnd::RoundLimit { .. } | TurnEnd::Interrupted => {
                if let Ok(Some(goal)) = self.goals.current()
                    && goal.rounds_used >= goal.max_rounds
                {
                    let message = format!("used all {} goal rounds", goal.max_rounds);
                    self.block_goal(BlockCode::RoundLimit, &message);
                }
            }
        }
    }

    /// The driver blocks the current goal, records it and says so.
    fn block_goal(&mut self, code: BlockCode, message: &str) {
        let result = self
            .goals
            .current_ref()
            .and_then(|r| self.goals.block(&r, code, message, SystemTime::now()));
        match result {
            Ok(accepted) => {
                self.flush_goal_records();
                self.save();
                self.goal_changed(&accepted);
            }
            Err(e) => {
                self.goals.disarm();
                self.emit(Event::Warning {
                    message: format!("could not block the goal: {e}"),
                });
                self.emit(self.goal_status());
            }
        }
    }

    /// Runs `goal_status` or `goal_update` for the model. The change is recorded when the
    /// tool batch ends (see [`Core::flush_goal_records`]); frontends hear of it at once.
    pub(crate) fn goal_tool(&mut self, which: &str, args: &serde_json::Value) -> ToolOutput {
        self.goals.sync(self.session.messages());
        if which == tools::STATUS {
            return match self.goals.current() {
                Ok(Some(goal)) => {
                    let mut value = serde_json::to_value(goal).unwrap_or_default();
                    if let Some(map) = value.as_object_mut() {
                        map.insert("armed".into(), self.goals.armed().into());
                        let left = goal.max_rounds.saturating_sub(goal.rounds_used);
                        map.insert("rounds_left".into(), left.into());
                    }
                    ToolOutput::ok(value.to_string())
                }
                Ok(None) => ToolOutput::failed("there is no goal in this session"),
                Err(e) => ToolOutput::failed(e.to_string()),
            };
        }
        let args: UpdateArgs = match crate::tools::parse_args(args) {
            Ok(args) => args,
            Err(e) => return ToolOutput::failed(e),
        };
        let now = SystemTime::now();
        let result = self.goals.current_ref().and_then(|r| match args.status {
            UpdateStatus::Complete => self.goals.complete(&r, now),
            UpdateStatus::Blocked => {
                let code = args
                    .code
                    .as_deref()
                    .map_or(BlockCode::AwaitingHuman, BlockCode::from);
                let message = args.message.as_deref().unwrap_or("");
                self.goals.block(&r, code, message, now)
            }
        });
        match result {
            Ok(accepted) => {
                self.goal_changed(&accepted);
                let Some(goal) = accepted.record.goal.as_ref() else {
                    return ToolOutput::ok("the goal changed");
                };
                let what = match goal.phase {
                    GoalPhase::Complete => "complete. Give the user a short final summary",
                    _ => "blocked. Tell the user briefly what you need",
                };
                ToolOutput::ok(format!(
                    "goal {} is now {what} (revision {}).",
                    goal.id, goal.revision
                ))
            }
            Err(e) => ToolOutput::failed(e.to_string()),
        }
    }
}
