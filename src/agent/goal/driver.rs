//! The goal driver: the core's side of goal mode. It serves `Op::Goal` commands, appends the
//! records the domain accepts to the session (and saves), keeps the goal tools declared exactly
//! while a goal exists, runs the goal tools, starts a goal round whenever the goal is active
//! and armed and the core is idle, and maps how a goal turn ended onto the goal (an interrupt
//! disarms; a provider failure blocks with `execution-failed` or `usage-limit`; the last round
//! blocks with `round-limit`; rounds in a row without progress block with `awaiting-human`,
//! see `goal/stall.rs`). It never decides a transition itself: that is `goal.rs`'s.

use std::sync::Arc;
use std::time::SystemTime;

use super::stall::Stall;
use super::tools;
use super::{Accepted, GoalError, Goals, Round};
use crate::agent::Emitter;
use crate::agent::store::Store;
use crate::chat::{Message, ToolCall, ToolKind, ToolStatus};
use crate::protocol::{BlockCode, Event, GoalOp, GoalPhase, GoalRef, TurnEnd};
use crate::provider::ProviderError;
use crate::session::Session;
use crate::tools::{GoalUpdate, GoalUpdateStatus, Registry, ToolOutput};

/// Why a goal round whose every call was refused for lack of a terminal blocks the goal.
const NO_TERMINAL_BLOCK: &str = "every tool call of the round needed approval and no terminal \
was available to ask; rerun with --yes, or resume the goal in a terminal";

impl Goals {
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

/// Goal mode as a part of the core. Its invariant: the goal tools are declared exactly while
/// the session has a goal, and every change the domain accepts reaches the history (and the
/// file) before frontends hear of it, so what they show is what a resume finds.
pub(crate) struct Driver {
    /// The session's goal: the fold of its records and the live activation.
    goals: Goals,
    /// Whether the goal tools are declared now.
    tools_declared: bool,
    /// The last turn failed on an exhausted quota (a goal round then blocks with
    /// `usage-limit`).
    quota_failure: bool,
    /// Rounds a new goal may use unless its command names a limit.
    default_max_rounds: u32,
    /// Goal rounds in a row without progress, counted to block a stalled goal.
    stall: Stall,
    registry: Arc<Registry>,
    events: Emitter,
}

impl Driver {
    pub(crate) fn new(registry: Arc<Registry>, limits: super::Settings, events: Emitter) -> Self {
        Self {
            goals: Goals::default(),
            tools_declared: false,
            quota_failure: false,
            default_max_rounds: limits.max_rounds,
            stall: Stall::new(limits.stall_rounds),
            registry,
            events,
        }
    }

    /// At session start (and after a fork or a new session): the goal as the history says,
    /// disarmed, its tools declared if there is one, and a `GoalStatus` for frontends when the
    /// session has any goal record.
    pub(crate) fn start(&mut self, messages: &[Message]) {
        self.goals = Goals::replay(messages);
        self.stall.reset();
        self.declare_tools();
        if messages.iter().any(super::record::is_goal_message) {
            self.events.emit(self.status());
        }
    }

    /// The goal as it stands, as an event.
    pub(crate) fn status(&self) -> Event {
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
    pub(crate) fn run_check(&mut self) {
        if let Some(interrupted) = self.goals.take_run_end() {
            let goal = self.goals.current().ok().flatten().cloned();
            self.events.emit(Event::GoalRunEnded { goal, interrupted });
        }
    }

    /// Whether goal rounds run unattended now (a blocked call is then never offered outside).
    pub(crate) fn armed(&self) -> bool {
        self.goals.armed()
    }

    /// Whether an armed, active goal wants its next round.
    pub(crate) fn wants_round(&self) -> bool {
        self.goals.wants_round()
    }

    /// Between goal rounds, an interrupt still stops the goal (nothing is recorded).
    pub(crate) fn interrupt(&mut self) {
        if self.goals.interrupt() {
            self.events.emit(self.status());
        }
    }

    /// Folds what the history gained since the last look (a goal round counts from its
    /// instruction on).
    pub(crate) fn sync(&mut self, messages: &[Message]) {
        self.goals.sync(messages);
    }

    /// A tool call of the running turn is being handled.
    pub(crate) fn note_call(&mut self) {
        self.goals.note_call();
    }

    /// A call of the running turn was not run because no terminal could ask for approval.
    pub(crate) fn note_unasked(&mut self) {
        self.goals.note_unasked();
    }

    /// A call of the running turn ended (`kind`: its tool's, `None` when there is no such
    /// tool): counted towards the round's progress.
    pub(crate) fn note_result(
        &mut self,
        call: &ToolCall,
        kind: Option<ToolKind>,
        status: ToolStatus,
    ) {
        self.stall.note(call, kind, status);
    }

    /// A turn starts: nothing has failed on a quota yet.
    pub(crate) fn begin_turn(&mut self) {
        self.quota_failure = false;
    }

    /// The turn failed on `error`: an exhausted quota blocks a goal round with `usage-limit`.
    pub(crate) fn note_failure(&mut self, error: &ProviderError) {
        self.quota_failure = matches!(
            error,
            ProviderError::RateLimited {
                quota_exhausted: true,
                ..
            }
        );
    }

    /// Serves one goal command while idle.
    pub(crate) fn command(&mut self, op: GoalOp, store: &mut Store) {
        self.goals.sync(store.session.messages());
        let now = SystemTime::now();
        let expect = |goals: &Goals, expected: Option<GoalRef>| match expected {
            Some(r) => Ok(r),
            None => goals.current_ref(),
        };
        let result: Result<Option<Accepted>, GoalError> = match op {
            GoalOp::Show => {
                self.events.emit(self.status());
                return;
            }
            GoalOp::Create {
                objective,
                max_rounds,
            } => {
                let limit = max_rounds.unwrap_or(self.default_max_rounds);
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
        if result.is_ok() {
            // A goal set, resumed or changed by the user starts its progress count afresh.
            self.stall.reset();
        }
        match result {
            Ok(Some(accepted)) => self.record(&accepted, store),
            // An active goal was only armed: nothing to record.
            Ok(None) => self.events.emit(self.status()),
            Err(e) => self.events.emit(Event::GoalRefused {
                message: e.to_string(),
            }),
        }
    }

    /// An accepted change outside a tool batch: appended, saved, then announced.
    fn record(&mut self, accepted: &Accepted, store: &mut Store) {
        self.flush(&mut store.session);
        store.save();
        self.changed(accepted);
    }

    /// Appends the records the domain accepted to the history (after the messages already
    /// there, so after a whole tool batch when a goal tool changed the goal).
    pub(crate) fn flush(&mut self, session: &mut Session) {
        self.goals.sync(session.messages());
        let records = self.goals.take_pending();
        if records.is_empty() {
            return;
        }
        for record in records {
            session.push(record);
        }
        self.goals.appended(session.messages().len());
    }

    /// Tells frontends about an accepted change and keeps the tools in step.
    fn changed(&mut self, accepted: &Accepted) {
        self.declare_tools();
        let (goal_id, revision) = accepted.record.target();
        self.events.emit(Event::GoalChanged {
            change: accepted.record.change,
            goal_id: goal_id.to_string(),
            revision,
            goal: accepted.record.goal.clone(),
            armed: accepted.armed,
        });
    }

    /// The goal tools are declared exactly while the session has a goal.
    fn declare_tools(&mut self) {
        let want = matches!(self.goals.current(), Ok(Some(_)));
        if want == self.tools_declared {
            return;
        }
        let tools = if want { tools::tools() } else { Vec::new() };
        let refused = self.registry.set_group(tools::GROUP, tools);
        self.tools_declared = want;
        for name in refused {
            self.events.emit(Event::Warning {
                message: format!("another tool is already named {name}; the goal cannot use it"),
            });
        }
    }

    /// The instruction of the next goal round (the caller checked the goal wants one),
    /// announced; `None` when the goal cannot run one (it is then disarmed or blocked).
    pub(crate) fn next_round(&mut self, store: &mut Store) -> Option<Round> {
        self.goals.sync(store.session.messages());
        let round = match self.goals.next_round() {
            Ok(round) => round,
            Err(_) => {
                self.goals.disarm();
                self.events.emit(self.status());
                return None;
            }
        };
        if round.round > round.max_rounds {
            let message = format!("used all {} goal rounds", round.max_rounds);
            self.block(BlockCode::RoundLimit, &message, store);
            return None;
        }
        self.events.emit(Event::GoalRoundStarted {
            goal_id: round.goal_id.clone(),
            revision: round.revision,
            round: round.round,
            max_rounds: round.max_rounds,
        });
        Some(round)
    }

    /// After any turn: an interrupt disarms (nothing is recorded); a goal round that failed
    /// blocks the goal; the last allowed round blocks it with `round-limit`.
    pub(crate) fn after_turn(&mut self, end: &TurnEnd, goal_round: bool, store: &mut Store) {
        let all_unasked = self.goals.take_all_unasked();
        let stalled = self
            .stall
            .after_turn(goal_round && !matches!(end, TurnEnd::Interrupted));
        self.goals.sync(store.session.messages());
        if let TurnEnd::Interrupted = end {
            self.interrupt();
            return;
        }
        if !goal_round || !self.goals.wants_round() {
            return;
        }
        match end {
            TurnEnd::Failed { error } => {
                let code = if self.quota_failure {
                    BlockCode::UsageLimit
                } else {
                    BlockCode::ExecutionFailed
                };
                self.block(code, error, store);
            }
            // Another round would only ask again where nobody can answer.
            TurnEnd::Completed | TurnEnd::RoundLimit { .. } if all_unasked => {
                self.block(BlockCode::AwaitingHuman, NO_TERMINAL_BLOCK, store);
            }
            TurnEnd::Completed | TurnEnd::RoundLimit { .. } | TurnEnd::Interrupted => {
                if let Ok(Some(goal)) = self.goals.current()
                    && goal.rounds_used >= goal.max_rounds
                {
                    let message = format!("used all {} goal rounds", goal.max_rounds);
                    self.block(BlockCode::RoundLimit, &message, store);
                } else if let Some(why) = stalled {
                    // More rounds would only repeat the same nothing, ever more expensively.
                    self.block(BlockCode::AwaitingHuman, &why, store);
                }
            }
        }
    }

    /// The driver blocks the current goal, records it and says so.
    fn block(&mut self, code: BlockCode, message: &str, store: &mut Store) {
        let result = self
            .goals
            .current_ref()
            .and_then(|r| self.goals.block(&r, code, message, SystemTime::now()));
        match result {
            Ok(accepted) => self.record(&accepted, store),
            Err(e) => {
                self.goals.disarm();
                self.events.emit(Event::Warning {
                    message: format!("could not block the goal: {e}"),
                });
                self.events.emit(self.status());
            }
        }
    }

    /// Runs `goal_status` (`update` is `None`) or `goal_update` for the model, its arguments
    /// as the tool parsed them. The change is recorded when the tool batch ends (see
    /// [`Driver::flush`]); frontends hear of it at once.
    pub(crate) fn tool(&mut self, update: Option<&GoalUpdate>, messages: &[Message]) -> ToolOutput {
        self.goals.sync(messages);
        let Some(args) = update else {
            return self.status_output();
        };
        let now = SystemTime::now();
        let result = self.goals.current_ref().and_then(|r| match args.status {
            GoalUpdateStatus::Complete => self.goals.complete(&r, now),
            GoalUpdateStatus::Blocked => {
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
                self.changed(&accepted);
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

    /// `goal_status`: the goal with its activation and the rounds it has left.
    fn status_output(&self) -> ToolOutput {
        match self.goals.current() {
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
        }
    }
}
