//! One ACP session: the pump that turns the core's events into `session/update`
//! notifications, approvals into `session/request_permission` requests and turn ends into the
//! answers of `session/prompt`. It only forwards: what happens is decided by the core.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    LoadSessionResponse, NewSessionResponse, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionNotification, SessionUpdate, StopReason, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Connection, convert, goal};
use crate::chat::{ApprovalRequest, ToolKind};
use crate::protocol::{Decision, Event, Op, OpSender, TurnEnd};

/// The answer owed to `session/new` or `session/load`, given once the core is set up.
pub(super) enum Ready {
    New(Responder<NewSessionResponse>),
    Load(Responder<LoadSessionResponse>),
}

impl Ready {
    /// Answers with an error (the session could not open).
    pub(super) fn fail(self, error: Error) -> Result<(), Error> {
        match self {
            Ready::New(r) => r.respond_with_error(error),
            Ready::Load(r) => r.respond_with_error(error),
        }
    }

    fn succeed(self, session_id: &str) -> Result<(), Error> {
        match self {
            Ready::New(r) => r.respond(NewSessionResponse::new(session_id.to_string())),
            Ready::Load(r) => r.respond(LoadSessionResponse::new()),
        }
    }

    fn replays_history(&self) -> bool {
        matches!(self, Ready::Load(_))
    }
}

/// What the handlers need of a running session.
pub(super) struct Live {
    id: String,
    ops: OpSender,
    /// The session's workspace, for absolute paths in tool calls.
    cwd: PathBuf,
    /// `session/prompt` requests waiting for their turn (or goal run) to end, oldest first
    /// (the core runs prompts and goal commands in the order they came).
    prompts: Mutex<VecDeque<Pending>>,
}

impl Live {
    pub(super) fn new(id: String, ops: OpSender, cwd: PathBuf) -> Self {
        Self {
            id,
            ops,
            cwd,
            prompts: Mutex::new(VecDeque::new()),
        }
    }

    /// Sends a prompt (or slash command) to the core; the answer goes out when its turn ends,
    /// or for a goal command when the goal run it started stops.
    pub(super) fn prompt(&self, op: Op, responder: Responder<PromptResponse>) {
        let goal = matches!(op, Op::Goal(_)).then(goal::Run::default);
        if let Ok(mut prompts) = self.prompts.lock() {
            prompts.push_back(Pending { responder, goal });
        }
        self.ops.send(op);
    }

    /// `session/cancel`: interrupt the running turn (it then ends as cancelled).
    pub(super) fn cancel(&self) {
        self.ops.send(Op::Interrupt);
    }

    fn next_prompt(&self) -> Option<Responder<PromptResponse>> {
        Some(self.prompts.lock().ok()?.pop_front()?.responder)
    }

    /// Applies `f` to the goal run of the prompt at the front, if that prompt is a goal
    /// command; answers and removes it once the run is over.
    fn with_goal_run(&self, f: impl FnOnce(&mut goal::Run)) {
        let Ok(mut prompts) = self.prompts.lock() else {
            return;
        };
        let Some(run) = prompts.front_mut().and_then(|p| p.goal.as_mut()) else {
            return;
        };
        f(run);
        if !run.over() {
            return;
        }
        let reason = run.stop_reason();
        if let Some(pending) = prompts.pop_front()
            && let Err(e) = pending.responder.respond(PromptResponse::new(reason))
        {
            tracing::debug!(error = %e, "could not answer a goal prompt");
        }
    }

    /// Whether the prompt at the front is a goal command.
    fn goal_in_front(&self) -> bool {
        self.prompts
            .lock()
            .is_ok_and(|p| p.front().is_some_and(|p| p.goal.is_some()))
    }
}

/// A prompt waiting for its answer.
pub(super) struct Pending {
    responder: Responder<PromptResponse>,
    /// `Some` for a goal command: answered when its run stops, not at the first turn's end.
    goal: Option<goal::Run>,
}

/// A tool call of the running turn, as the pump knows it.
struct Call {
    arguments: serde_json::Value,
    kind: ToolKind,
    paths: Vec<String>,
    /// A diff was shown for it (an edit's piece, or a write's approval).
    shown_diff: bool,
}

/// What to wait for when the connection ends.
pub(super) struct Ending {
    pub live: Arc<Live>,
    pub pump: JoinHandle<()>,
    pub closing: BoxFuture<'static, ()>,
}

/// How long a core may take to save and stop once the client went away.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

impl Ending {
    /// Shuts the core down (it saves the session), waits for its pump, then for its MCP
    /// servers to stop.
    pub(super) async fn finish(self) {
        self.live.ops.send(Op::Shutdown);
        if tokio::time::timeout(SHUTDOWN_GRACE, self.pump)
            .await
            .is_err()
        {
            tracing::warn!(session = %self.live.id, "the core did not stop in time");
        }
        self.closing.await;
    }
}

/// Sends one `session/update`; a client that went away cannot be told anything.
fn notify(cx: &Connection, session: &str, update: SessionUpdate) {
    if let Err(e) = cx.send_notification(SessionNotification::new(session.to_string(), update)) {
        tracing::debug!(error = %e, "could not send a session update");
    }
}

/// Reads the core's events until it shuts down, forwarding them to the client.
pub(super) async fn pump(
    live: Arc<Live>,
    mut events: mpsc::UnboundedReceiver<Event>,
    cx: Connection,
    ready: Ready,
    notes: Vec<String>,
) {
    let id = live.id.clone();
    let replay = ready.replays_history();
    let mut ready = Some(ready);
    // The calls of the running turn: their tool and arguments, and whether they showed a diff.
    let mut calls: HashMap<String, Call> = HashMap::new();
    // An event taken while joining deltas, handled next.
    let mut held: Option<Event> = None;
    loop {
        let event = match held.take() {
            Some(event) => event,
            None => match events.recv().await {
                Some(event) => event,
                None => break,
            },
        };
        match event {
            Event::SessionConfigured { .. } => {}
            Event::HistoryRestored { entries } => {
                if replay {
                    for update in convert::history(&entries, &live.cwd) {
                        notify(&cx, &id, update);
                    }
                }
            }
            Event::ContextWindowSet { .. } => {
                // The last event of the set-up: the session is ready for prompts.
                if let Some(ready) = ready.take() {
                    if let Err(e) = ready.succeed(&id) {
                        tracing::warn!(error = %e, "could not answer the session request");
                    }
                    notify(&cx, &id, convert::available_commands());
                    for note in &notes {
                        notify(&cx, &id, convert::message(&format!("minicode: {note}\n")));
                    }
                }
            }
            Event::TurnStarted { .. } => {}
            Event::GoalRunEnded { .. } => live.with_goal_run(|run| run.ended = true),
            Event::ModelRequestStarted { .. } => {}
            Event::TextDelta { text } => {
                let text = join_deltas(text, &mut events, &mut held, false).await;
                notify(&cx, &id, convert::message(&text));
            }
            Event::ReasoningDelta { text } => {
                let text = join_deltas(text, &mut events, &mut held, true).await;
                notify(&cx, &id, convert::thought(&text));
            }
            Event::AssistantMessage { .. } => {}
            // The editor gets a command's whole output with its result at the call's end.
            Event::ToolOutputDelta { .. } => {}
            Event::Retrying {
                attempt,
                max_attempts,
                reason,
                ..
            } => notify(
                &cx,
                &id,
                convert::thought(&format!(
                    "\n(retrying the request, attempt {attempt} of {max_attempts}: {reason})\n"
                )),
            ),
            Event::ToolCallBegan {
                call,
                tool,
                summary,
                arguments,
                kind,
                paths,
            } => {
                let shown = convert::Announced {
                    tool: &tool,
                    summary: &summary,
                    arguments: &arguments,
                    kind,
                    paths: &paths,
                };
                notify(&cx, &id, convert::tool_call(&call, &shown, &live.cwd));
                let shown_diff = convert::shows_diff(&shown, &live.cwd);
                calls.insert(
                    call,
                    Call {
                        arguments,
                        kind,
                        paths,
                        shown_diff,
                    },
                );
            }
            Event::ApprovalRequested {
                call,
                tool,
                request,
            } => {
                let unknown = Call {
                    arguments: serde_json::Value::Null,
                    kind: ToolKind::Other,
                    paths: Vec::new(),
                    shown_diff: false,
                };
                let known = match calls.get_mut(&call) {
                    Some(known) => {
                        known.shown_diff |= matches!(request, ApprovalRequest::Diff { .. });
                        &*known
                    }
                    None => &unknown,
                };
                let shown = convert::Announced {
                    tool: &tool,
                    summary: "",
                    arguments: &known.arguments,
                    kind: known.kind,
                    paths: &known.paths,
                };
                let fields = convert::approval_fields(&request, &shown, &live.cwd);
                // The client shows the call as the question describes it, then asks.
                let shown = ToolCallUpdate::new(call.clone(), fields.clone());
                notify(&cx, &id, SessionUpdate::ToolCallUpdate(shown));
                ask_permission(&live, &cx, call, &tool, fields);
            }
            Event::ApprovalDecided { call, decision } => {
                if decision.runs() {
                    let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                    notify(
                        &cx,
                        &id,
                        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call, fields)),
                    );
                }
            }
            Event::ToolCallEnded {
                call,
                status,
                output,
            } => {
                let shown_diff = calls.remove(&call).is_some_and(|c| c.shown_diff);
                let update = convert::tool_ended(&call, status, &output, shown_diff);
                notify(&cx, &id, update);
            }
            Event::SubagentStarted { task, .. } => notify(
                &cx,
                &id,
                convert::thought(&format!("\n(sub-agent {task} started)\n")),
            ),
            Event::SubagentProgress { .. } => {}
            Event::SubagentEnded { task, status, .. } => notify(
                &cx,
                &id,
                convert::thought(&format!("\n(sub-agent {task}: {})\n", status.as_str())),
            ),
            Event::Warning { message } => notify(
                &cx,
                &id,
                convert::message(&format!("\n> minicode: {message}\n")),
            ),
            Event::Compacted {
                tokens_before,
                tokens_after,
                messages_summarized,
            } => notify(
                &cx,
                &id,
                convert::message(&format!(
                    "Context compacted: {messages_summarized} messages summarised, about \
                     {tokens_before} → {tokens_after} tokens.\n"
                )),
            ),
            Event::MemoryLoaded { .. }
            | Event::ContextUsage { .. }
            | Event::SkillsListed { .. }
            | Event::McpServers { .. }
            | Event::ServerUnreachable { .. } => {}
            Event::SkillLoaded { name, .. } => notify(
                &cx,
                &id,
                convert::thought(&format!("\n(skill {name} loaded)\n")),
            ),
            Event::TurnEnded { end, .. } if live.goal_in_front() => {
                calls.clear();
                live.with_goal_run(|run| {
                    run.last_end = Some(end);
                });
            }
            Event::TurnEnded { end, .. } => {
                calls.clear();
                if let Some(responder) = live.next_prompt() {
                    let answer = match stop_reason(&end) {
                        Ok(reason) => responder.respond(PromptResponse::new(reason)),
                        Err(error) => responder.respond_with_error(error),
                    };
                    if let Err(e) = answer {
                        tracing::debug!(error = %e, "could not answer a prompt");
                    }
                }
            }
            Event::GoalChanged {
                change,
                goal: snapshot,
                armed,
                ..
            } => {
                notify(&cx, &id, goal::plan(snapshot.as_ref(), armed));
                let line = match &snapshot {
                    Some(g) => format!("\n> Goal {}: {}\n", change.as_str(), g.objective),
                    None => format!("\n> Goal {}.\n", change.as_str()),
                };
                notify(&cx, &id, convert::message(&line));
                let blocked = snapshot
                    .as_ref()
                    .and_then(|g| g.reason.as_ref())
                    .map(|r| r.code.clone());
                live.with_goal_run(|run| {
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
                notify(&cx, &id, goal::plan(snapshot.as_ref(), armed));
                // Said in words only when asked (`/goal`); otherwise the plan shows it.
                if live.goal_in_front() {
                    let text = goal::describe(snapshot.as_ref(), armed, error.as_deref());
                    notify(&cx, &id, convert::message(&text));
                }
                live.with_goal_run(|run| {
                    run.answered = true;
                    run.started |= armed;
                });
            }
            Event::GoalRoundStarted {
                round, max_rounds, ..
            } => notify(
                &cx,
                &id,
                convert::thought(&format!("\n(goal round {round} of {max_rounds})\n")),
            ),
            Event::GoalRefused { message } => {
                notify(&cx, &id, convert::message(&format!("Goal: {message}\n")));
                live.with_goal_run(|run| {
                    run.answered = true;
                });
            }
            Event::SessionForked { .. } => {}
            Event::Error { message } => {
                tracing::warn!(session = %id, %message, "the core reported an error");
            }
            Event::ShutdownComplete => break,
        }
    }
    // The core is gone: nothing it was doing will end any more.
    while let Some(responder) = live.next_prompt() {
        let _ = responder.respond(PromptResponse::new(StopReason::Cancelled));
    }
    if let Some(ready) = ready.take() {
        let _ = ready.fail(Error::new(
            agent_client_protocol::ErrorCode::INTERNAL_ERROR,
            "the session stopped before it was ready",
        ));
    }
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
    tool: &str,
    fields: ToolCallUpdateFields,
) {
    let question = RequestPermissionRequest::new(
        live.id.clone(),
        ToolCallUpdate::new(call.clone(), fields),
        convert::permission_options(tool),
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
