//! The session's pump as a small state machine: one handler per event group (set-up, streamed
//! text, tool calls, turns, goal mode, remarks). It only translates events into updates and
//! answers; what happens is decided by the core.

use std::collections::HashMap;
use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionNotification,
    SessionUpdate, StopReason, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use tokio::sync::mpsc;

use super::super::{Connection, convert, goal};
use super::{Live, Ready, plan_approval};
use crate::chat::{ApprovalRequest, Change, ToolKind, ToolStatus};
use crate::protocol::{Decision, Event, Op, TurnEnd};

/// A tool call of the running turn, as the pump knows it.
struct Call {
    change: Option<Change>,
    kind: ToolKind,
    paths: Vec<String>,
    /// A diff was shown for it (an edit's piece, or a write's approval).
    shown_diff: bool,
}

/// What the pump remembers between events.
pub(super) struct Pump {
    live: Arc<Live>,
    events: mpsc::UnboundedReceiver<Event>,
    cx: Connection,
    id: String,
    /// `session/load`: the restored history is replayed to the client.
    replay: bool,
    /// The answer owed to the request that opened the session, until it is ready.
    ready: Option<Ready>,
    /// Lines for the client once the session is ready.
    notes: Vec<String>,
    /// The calls of the running turn: their kind, paths and change, and whether they showed a diff.
    calls: HashMap<String, Call>,
    /// An event taken while joining deltas, handled next.
    held: Option<Event>,
    /// Plan mode is on (the session's mode), as the core last said.
    plan: bool,
    /// The plan file while plan mode is on, and whether the running turn wrote it.
    plan_file: Option<String>,
    plan_written: bool,
}

impl Pump {
    pub(super) fn new(
        live: Arc<Live>,
        events: mpsc::UnboundedReceiver<Event>,
        cx: Connection,
        ready: Ready,
        notes: Vec<String>,
    ) -> Self {
        Pump {
            id: live.id.clone(),
            replay: ready.replays_history(),
            live,
            events,
            cx,
            ready: Some(ready),
            notes,
            calls: HashMap::new(),
            held: None,
            plan: false,
            plan_file: None,
            plan_written: false,
        }
    }

    /// Reads the core's events until it shuts down, then settles what is still owed.
    pub(super) async fn run(mut self) {
        loop {
            let event = match self.held.take() {
                Some(event) => event,
                None => match self.events.recv().await {
                    Some(event) => event,
                    None => break,
                },
            };
            if !self.handle(event).await {
                break;
            }
        }
        self.close();
    }

    /// Takes one event; `false` once the core has shut down.
    async fn handle(&mut self, event: Event) -> bool {
        match event {
            Event::HistoryRestored { entries } => {
                if self.replay {
                    for update in convert::history(&entries, &self.live.cwd) {
                        self.notify(update);
                    }
                }
            }
            // The last event of the set-up: the session is ready for prompts.
            Event::ContextWindowSet { .. } => self.ready(),
            Event::SandboxChanged { profile } => {
                let plan = profile.plan_file.is_some();
                if plan != self.plan && self.ready.is_none() {
                    self.notify(convert::current_mode(plan));
                }
                self.plan = plan;
                self.plan_file = profile.plan_file;
            }
            Event::TextDelta { text } => {
                let text = join_deltas(text, &mut self.events, &mut self.held, false).await;
                self.notify(convert::message(&text));
            }
            Event::ReasoningDelta { text } => {
                let text = join_deltas(text, &mut self.events, &mut self.held, true).await;
                self.notify(convert::thought(&text));
            }
            Event::ToolCallBegan { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecided { .. }
            | Event::ToolCallEnded { .. } => self.tool(event),
            Event::TurnStarted { .. } | Event::TurnEnded { .. } => self.turn(event),
            Event::GoalChanged { .. }
            | Event::GoalStatus { .. }
            | Event::GoalRefused { .. }
            | Event::GoalRunEnded { .. } => self.goal(event),
            Event::Retrying { .. }
            | Event::SubagentStarted { .. }
            | Event::SubagentEnded { .. }
            | Event::Warning { .. }
            | Event::Compacted { .. }
            | Event::SkillLoaded { .. }
            | Event::Hook { .. }
            | Event::GoalRoundStarted { .. } => {
                if let Some(update) = remark(&event) {
                    self.notify(update);
                }
            }
            Event::Error { message } => {
                tracing::warn!(session = %self.id, %message, "the core reported an error");
            }
            // The editor gets a command's whole output with its result at the call's end.
            Event::ToolOutputDelta { .. } => {}
            Event::SessionConfigured { .. }
            | Event::ModelRequestStarted { .. }
            | Event::AssistantMessage { .. }
            | Event::SubagentProgress { .. }
            | Event::MemoryLoaded { .. }
            | Event::ContextUsage { .. }
            | Event::SkillsListed { .. }
            | Event::SessionsListed { .. }
            | Event::PathCompletions { .. }
            | Event::ModelsListed { .. }
            | Event::ModelSwitched { .. }
            | Event::McpServers { .. }
            | Event::ServerUnreachable { .. }
            | Event::SessionForked { .. } => {}
            Event::RewindList { .. } | Event::Rewound { .. } => self.rewound(&event),
            Event::BackgroundChanged { processes } => {
                self.live.processes.changed(processes, |u| self.notify(u));
            }
            Event::ShutdownComplete => return false,
        }
        true
    }

    /// Sends one `session/update`; a client that went away cannot be told anything.
    fn notify(&self, update: SessionUpdate) {
        let note = SessionNotification::new(self.id.clone(), update);
        if let Err(e) = self.cx.send_notification(note) {
            tracing::debug!(error = %e, "could not send a session update");
        }
    }

    /// Answers the request that opened the session, then tells the client what it can do.
    fn ready(&mut self) {
        let Some(ready) = self.ready.take() else {
            return;
        };
        if let Err(e) = ready.succeed(&self.id, self.plan) {
            tracing::warn!(error = %e, "could not answer the session request");
        }
        self.notify(convert::available_commands(self.live.commands()));
        for note in &self.notes {
            self.notify(convert::message(&format!("minicode: {note}\n")));
        }
    }

    /// Tool-call events: announced, asked about, started and ended.
    fn tool(&mut self, event: Event) {
        match event {
            Event::ToolCallBegan {
                call,
                tool,
                summary,
                arguments,
                kind,
                paths,
                change,
            } => {
                let shown = convert::Announced {
                    tool: &tool,
                    summary: &summary,
                    arguments: &arguments,
                    kind,
                    paths: &paths,
                    change: change.as_ref(),
                };
                self.notify(convert::tool_call(&call, &shown, &self.live.cwd));
                let shown_diff = convert::shows_diff(&shown, &self.live.cwd);
                let known = Call {
                    change,
                    kind,
                    paths,
                    shown_diff,
                };
                self.calls.insert(call, known);
            }
            Event::ApprovalRequested {
                call,
                tool,
                request,
                always,
            } => self.approval(call, (&tool, always.as_deref()), &request),
            Event::ApprovalDecided { call, decision } if decision.runs() => {
                let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                let update = ToolCallUpdate::new(call, fields);
                self.notify(SessionUpdate::ToolCallUpdate(update));
            }
            Event::ToolCallEnded {
                call,
                status,
                output,
            } => {
                let known = self.calls.remove(&call);
                self.plan_written |= status == ToolStatus::Succeeded
                    && known.as_ref().is_some_and(|c| self.writes_plan(c));
                let shown_diff = known.is_some_and(|c| c.shown_diff);
                self.notify(convert::tool_ended(&call, status, &output, shown_diff));
            }
            _ => {}
        }
    }

    /// The client shows the call as the question describes it, then asks.
    /// `always` is the rule an "allow always" answer adds (no such option without one).
    fn approval(
        &mut self,
        call: String,
        (tool, always): (&str, Option<&str>),
        request: &ApprovalRequest,
    ) {
        let unknown = Call {
            change: None,
            kind: ToolKind::Other,
            paths: Vec::new(),
            shown_diff: false,
        };
        let known = match self.calls.get_mut(&call) {
            Some(known) => {
                known.shown_diff |= matches!(request, ApprovalRequest::Diff { .. });
                &*known
            }
            None => &unknown,
        };
        let shown = convert::Announced {
            tool,
            summary: "",
            arguments: &serde_json::Value::Null,
            kind: known.kind,
            paths: &known.paths,
            change: known.change.as_ref(),
        };
        let fields = convert::approval_fields(request, &shown, &self.live.cwd);
        let shown = ToolCallUpdate::new(call.clone(), fields.clone());
        self.notify(SessionUpdate::ToolCallUpdate(shown));
        let options = convert::permission_options(always);
        ask_permission(&self.live, &self.cx, call, options, fields);
    }

    /// Whether `call` changed the plan file (a file change naming it).
    fn writes_plan(&self, call: &Call) -> bool {
        let Some(file) = &self.plan_file else {
            return false;
        };
        call.kind == ToolKind::Edit
            && call
                .paths
                .iter()
                .any(|p| p == file || self.live.cwd.join(p) == self.live.cwd.join(file))
    }

    /// A turn started or ended: a plain prompt is answered at its turn's end, a goal command
    /// when its run is over.
    fn turn(&mut self, event: Event) {
        match event {
            Event::TurnStarted { .. } => {}
            Event::TurnEnded { end, .. } if self.live.goal_in_front() => {
                self.calls.clear();
                self.live.with_goal_run(|run| run.last_end = Some(end));
            }
            Event::TurnEnded { end, .. } => {
                self.calls.clear();
                let wrote_plan = std::mem::take(&mut self.plan_written);
                if let Some(responder) = self.live.next_prompt() {
                    let answer = match (stop_reason(&end), &self.plan_file) {
                        (Ok(reason), Some(file)) if wrote_plan => {
                            plan_approval::ask(&self.live, &self.cx, file, responder, reason);
                            Ok(())
                        }
                        (Ok(reason), _) => responder.respond(PromptResponse::new(reason)),
                        (Err(error), _) => responder.respond_with_error(error),
                    };
                    if let Err(e) = answer {
                        tracing::debug!(error = %e, "could not answer a prompt");
                    }
                }
            }
            _ => {}
        }
    }

    /// `/rewind`'s answer: said in words, and the prompt that asked is answered.
    fn rewound(&mut self, event: &Event) {
        let text = match event {
            Event::RewindList { turns, enabled } => {
                crate::protocol::rewind::describe_list(turns, *enabled)
            }
            Event::Rewound {
                turn,
                restored,
                conflicts,
                error,
                ..
            } => crate::protocol::rewind::describe_rewound(
                *turn,
                restored,
                conflicts,
                error.as_deref(),
            ),
            _ => return,
        };
        self.notify(convert::message(&text));
        if let Some(responder) = self.live.next_prompt()
            && let Err(e) = responder.respond(PromptResponse::new(StopReason::EndTurn))
        {
            tracing::debug!(error = %e, "could not answer a rewind prompt");
        }
    }

    /// Goal events: the plan, a line in words, and the goal command's run.
    fn goal(&mut self, event: Event) {
        match event {
            Event::GoalChanged {
                change,
                goal: snapshot,
                armed,
                ..
            } => {
                self.notify(goal::plan(snapshot.as_ref(), armed));
                let line = match &snapshot {
                    Some(g) => format!("\n> Goal {}: {}\n", change.as_str(), g.objective),
                    None => format!("\n> Goal {}.\n", change.as_str()),
                };
                self.notify(convert::message(&line));
                let blocked = snapshot
                    .as_ref()
                    .and_then(|g| g.reason.as_ref())
                    .map(|r| r.code.clone());
                self.live.with_goal_run(|run| {
                    run.answered = true;
                    run.started |= armed;
                    if blocked.is_some() {
                        run.blocked = blocked;
                    }
                });
            }
            Event::GoalStatus {
                goal: snapshot,
                armed,
                error,
            } => {
                self.notify(goal::plan(snapshot.as_ref(), armed));
                // Said in words only when asked (`/goal`); otherwise the plan shows it.
                if self.live.goal_in_front() {
                    let text = goal::describe(snapshot.as_ref(), armed, error.as_deref());
                    self.notify(convert::message(&text));
                }
                self.live.with_goal_run(|run| {
                    run.answered = true;
                    run.started |= armed;
                });
            }
            Event::GoalRunEnded { .. } => self.live.with_goal_run(|run| run.ended = true),
            Event::GoalRefused { message } => {
                self.notify(convert::message(&format!("Goal: {message}\n")));
                self.live.with_goal_run(|run| run.answered = true);
            }
            _ => {}
        }
    }

    /// The core is gone: nothing it was doing will end any more.
    fn close(mut self) {
        self.live.processes.close();
        while let Some(responder) = self.live.next_prompt() {
            let _ = responder.respond(PromptResponse::new(StopReason::Cancelled));
        }
        if let Some(ready) = self.ready.take() {
            let _ = ready.fail(Error::new(
                agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                "the session stopped before it was ready",
            ));
        }
    }
}

/// The words an event that only informs adds to the conversation (a message or a thought).
fn remark(event: &Event) -> Option<SessionUpdate> {
    Some(match event {
        Event::Retrying {
            attempt,
            max_attempts,
            reason,
            ..
        } => convert::thought(&format!(
            "\n(retrying the request, attempt {attempt} of {max_attempts}: {reason})\n"
        )),
        Event::SubagentStarted { task, .. } => {
            convert::thought(&format!("\n(sub-agent {task} started)\n"))
        }
        Event::SubagentEnded { task, status, .. } => {
            convert::thought(&format!("\n(sub-agent {task}: {})\n", status.as_str()))
        }
        Event::Warning { message } => convert::message(&format!("\n> minicode: {message}\n")),
        Event::Compacted {
            tokens_before,
            tokens_after,
            messages_summarized,
        } => convert::message(&format!(
            "Context compacted: {messages_summarized} messages summarised, about \
             {tokens_before} → {tokens_after} tokens.\n"
        )),
        Event::SkillLoaded { name, .. } => convert::thought(&format!("\n(skill {name} loaded)\n")),
        Event::Hook {
            hook, outcome, ms, ..
        } => convert::thought(&format!(
            "\n({})\n",
            crate::protocol::hook_line(hook, *outcome, *ms)
        )),
        Event::GoalRoundStarted {
            round, max_rounds, ..
        } => convert::thought(&format!("\n(goal round {round} of {max_rounds})\n")),
        _ => return None,
    })
}

/// Most text one update carries when deltas are joined.
const MAX_JOINED_BYTES: usize = 16 * 1024;

/// Joins the deltas of the same kind that are already waiting to `text`, so a reply streamed
/// in tiny pieces costs a few updates, not one per piece (each is a JSON-RPC message the client
/// parses). Lets the core run once first, so pieces that are already there arrive. The first
/// event of another kind is kept in `held`.
async fn join_deltas(
    mut text: String,
    events: &mut mpsc::UnboundedReceiver<Event>,
    held: &mut Option<Event>,
    reasoning: bool,
) -> String {
    tokio::task::yield_now().await;
    while text.len() < MAX_JOINED_BYTES {
        match events.try_recv() {
            Ok(Event::TextDelta { text: more }) if !reasoning => text.push_str(&more),
            Ok(Event::ReasoningDelta { text: more }) if reasoning => text.push_str(&more),
            Ok(other) => {
                *held = Some(other);
                break;
            }
            Err(_) => break,
        }
    }
    text
}

/// How a turn's end answers `session/prompt`: a stop reason, or an error for a failed turn.
fn stop_reason(end: &TurnEnd) -> Result<StopReason, Error> {
    match end {
        TurnEnd::Completed => Ok(StopReason::EndTurn),
        TurnEnd::Interrupted => Ok(StopReason::Cancelled),
        TurnEnd::RoundLimit { .. } => Ok(StopReason::MaxTurnRequests),
        TurnEnd::Failed { error } => Err(Error::new(
            agent_client_protocol::ErrorCode::INTERNAL_ERROR,
            format!("the turn failed: {error}"),
        )),
    }
}

/// Asks the client for a decision in a task of its own (the pump goes on, so a cancel still
/// gets through), then hands the answer to the core.
fn ask_permission(
    live: &Arc<Live>,
    cx: &Connection,
    call: String,
    options: Vec<agent_client_protocol::v1::schema::PermissionOption>,
    fields: ToolCallUpdateFields,
) {
    let question = RequestPermissionRequest::new(
        live.id.clone(),
        ToolCallUpdate::new(call.clone(), fields),
        options,
    );
    let sent = cx.send_request(question);
    let ops = live.ops.clone();
    tokio::spawn(async move {
        let decision = match sent.block_task().await {
            Ok(answer) => match answer.outcome {
                RequestPermissionOutcome::Selected(selected) => {
                    convert::decision(&selected.option_id.0)
                }
                RequestPermissionOutcome::Cancelled => Decision::Deny {
                    reason: Some("the user cancelled".to_string()),
                },
                _ => Decision::Deny { reason: None },
            },
            Err(e) => {
                tracing::warn!(error = %e, "the permission request failed");
                Decision::Deny {
                    reason: Some("the editor did not answer the permission request".to_string()),
                }
            }
        };
        ops.send(Op::Decide { call, decision });
    });
}
