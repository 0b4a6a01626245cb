//! One ACP session: the prompts waiting for their answers and the session's end. Its pump
//! (`session/pump.rs`) turns the core's events into `session/update` notifications, approvals
//! into `session/request_permission` requests and turn ends into the answers of
//! `session/prompt`. It only forwards: what happens is decided by the core.

mod plan_approval;
mod pump;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    LoadSessionResponse, NewSessionResponse, PromptResponse, SessionNotification,
};
use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Connection, goal};
use crate::protocol::{Event, Op, OpSender};
use crate::sync::lock;
use pump::Pump;

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

    /// Answers with the session's id and its modes (`plan`: plan mode is on now).
    fn succeed(self, session_id: &str, plan: bool) -> Result<(), Error> {
        let modes = super::convert::modes(plan);
        match self {
            Ready::New(r) => {
                r.respond(NewSessionResponse::new(session_id.to_string()).modes(modes))
            }
            Ready::Load(r) => r.respond(LoadSessionResponse::new().modes(modes)),
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
    /// The custom commands it offers, besides the built-in ones.
    commands: Vec<crate::protocol::CustomCommand>,
    /// Its background processes as the core last listed them, for `/ps`.
    processes: super::processes::Processes,
}

impl Live {
    pub(super) fn new(
        id: String,
        ops: OpSender,
        cwd: PathBuf,
        commands: Vec<crate::protocol::CustomCommand>,
    ) -> Self {
        Self {
            id,
            ops,
            cwd,
            commands,
            prompts: Mutex::new(VecDeque::new()),
            processes: super::processes::Processes::default(),
        }
    }

    /// `/ps` (the listing) or `/ps kill <id>`: answered here, never queued behind a turn.
    pub(super) fn ps(
        &self,
        arg: &str,
        cx: &Connection,
        responder: Responder<PromptResponse>,
    ) -> Result<(), Error> {
        let say = |update| {
            let note = SessionNotification::new(self.id.clone(), update);
            if let Err(e) = cx.send_notification(note) {
                tracing::debug!(error = %e, "could not send a session update");
            }
        };
        self.processes.command(arg, &self.ops, say, responder)
    }

    pub(super) fn commands(&self) -> &[crate::protocol::CustomCommand] {
        &self.commands
    }

    /// Sends a prompt (or slash command) to the core; the answer goes out when its turn ends,
    /// or for a goal command when the goal run it started stops.
    pub(super) fn prompt(&self, op: Op, responder: Responder<PromptResponse>) {
        let goal = matches!(op, Op::Goal(_)).then(goal::Run::default);
        lock(&self.prompts).push_back(Pending { responder, goal });
        self.ops.send(op);
    }

    /// `session/cancel`: interrupt the running turn (it then ends as cancelled).
    /// `session/set_mode`: plan mode on or off (the core answers with `SandboxChanged`, which
    /// the pump forwards as the current mode).
    pub(super) fn set_mode(&self, mode: &str) -> Result<(), String> {
        let on = super::convert::is_plan_mode(mode)?;
        self.ops.send(Op::SetPlan { on });
        Ok(())
    }

    pub(super) fn cancel(&self) {
        self.ops.send(Op::Interrupt);
    }

    /// Puts a prompt back in front, to be answered by the next turn's end.
    fn resume_prompt(&self, responder: Responder<PromptResponse>) {
        lock(&self.prompts).push_front(Pending {
            responder,
            goal: None,
        });
    }

    fn next_prompt(&self) -> Option<Responder<PromptResponse>> {
        Some(lock(&self.prompts).pop_front()?.responder)
    }

    /// Applies `f` to the goal run of the prompt at the front, if that prompt is a goal
    /// command; answers and removes it once the run is over.
    fn with_goal_run(&self, f: impl FnOnce(&mut goal::Run)) {
        let mut prompts = lock(&self.prompts);
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
        lock(&self.prompts)
            .front()
            .is_some_and(|p| p.goal.is_some())
    }
}

/// A prompt waiting for its answer.
pub(super) struct Pending {
    responder: Responder<PromptResponse>,
    /// `Some` for a goal command: answered when its run stops, not at the first turn's end.
    goal: Option<goal::Run>,
}

/// What to wait for when the connection ends.
pub(super) struct Ending {
    pub(crate) live: Arc<Live>,
    pub(crate) pump: JoinHandle<()>,
    pub(crate) closing: BoxFuture<'static, ()>,
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

/// Reads the core's events until it shuts down, forwarding them to the client.
pub(super) async fn pump(
    live: Arc<Live>,
    events: mpsc::UnboundedReceiver<Event>,
    cx: Connection,
    ready: Ready,
    notes: Vec<String>,
) {
    Pump::new(live, events, cx, ready, notes).run().await;
}
