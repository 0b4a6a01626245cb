//! One sub-agent's life: wait for a slot, open its own session (recording the parent), start
//! a core on it with the read-only whitelist, send the task, follow its events (forwarding
//! progress to the parent's frontends, refusing any approval it asks for), stop it at its
//! deadline or on the user's interrupt, and shut it down so its session is saved and closed
//! before the parent names it. It must not touch the parent's history or session.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{CHILD_TOOLS, Outcome, Subagents, Task};
use crate::agent::{Core, Options, Setup};
use crate::chat::Builtin;
use crate::protocol::{Decision, Event, Op, SubagentStatus, TokenStats, TurnEnd, TurnStats};
use crate::provider::Provider;
use crate::session::{Parent, Session};
use crate::tools::{Registry, ToolCtx};

/// How long a child asked to stop (deadline, interrupt) or to shut down may take before it
/// is given up on; its task keeps only what it said so far.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The most streamed text kept as a partial answer.
const MAX_PARTIAL_BYTES: usize = 256 * 1024;

/// Why a child is refused an approval: its only tool that asks is `fetch`, which runs there
/// only where an allow rule covers the host.
const NO_QUESTIONS: &str = "sub-agents cannot ask the user anything; finish the task with \
read, list, search and find (fetch reaches only the hosts an allow rule names)";

/// What every child of one `delegate` call shares.
pub(super) struct Context {
    provider: Arc<dyn Provider>,
    registry: Arc<Registry>,
    workspace: PathBuf,
    parent_ctx: Arc<ToolCtx>,
    options: Options,
    parent_session: String,
    call: String,
    events: mpsc::UnboundedSender<Event>,
    subagents: Subagents,
}

impl Context {
    pub(super) fn new(core: &Core, subagents: &Subagents, call: &str) -> Self {
        // No sub-agents of its own, no skills (their tool and trigger loads are not on the
        // whitelist), nobody to approve anything.
        // The parent's window as it stands (probed, configured or named by the server): a
        // child never probes the server again, so it is handed over as settled.
        let options = Options {
            auto_approve: false,
            subagents: None,
            skills: Arc::default(),
            hooks: Arc::default(),
            // A child only reads; the parent's checkpoints span its `delegate` call.
            checkpoints: crate::checkpoints::Settings {
                enabled: false,
                ..core.options.checkpoints.clone()
            },
            context_window: core.upkeep.window(),
            context_window_source: crate::protocol::WindowSource::Config,
            // The parent's profile as it stands (plan mode's included).
            sandbox: (*core.sandbox.policy()).clone(),
            ..core.options.clone()
        };
        Self {
            provider: core.provider.clone(),
            registry: Arc::new(core.registry.subset(&CHILD_TOOLS.map(Builtin::name))),
            workspace: core.tool_ctx.workspace.clone(),
            parent_ctx: core.tool_ctx.clone(),
            options,
            parent_session: core.store.session.id().to_string(),
            call: call.to_string(),
            events: core.events.clone(),
            subagents: subagents.clone(),
        }
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// A child's own tool context: same workspace, limits and secrets as the parent's, but
    /// its own record of files seen (a child's reads must not let the parent edit unread).
    fn tool_ctx(&self) -> ToolCtx {
        let p = &self.parent_ctx;
        let mut ctx = ToolCtx::new(self.workspace.clone(), p.bash_timeout, p.scrub_env.clone());
        ctx.secrets = p.secrets.clone();
        ctx.outputs = p.outputs;
        ctx.permissions = p.permissions.clone();
        // A child's work ends with its answer: nothing of it may keep running after.
        ctx.background = crate::tools::background::Jobs::refusing(
            "not started: a sub-agent cannot start background processes (they would outlive \
             its task); run the command in the foreground",
        );
        ctx
    }

    /// Runs `task` to its end; never fails (a failure is an outcome).
    pub(super) async fn run(&self, task: &Task, cancel: &CancellationToken) -> Outcome {
        let mut outcome = Outcome {
            task: task.id.clone(),
            status: SubagentStatus::Interrupted,
            answer: String::new(),
            error: None,
            session_id: None,
            rounds: 0,
            tool_calls: 0,
            elapsed: Duration::ZERO,
            model_calls: 0,
            tokens: TokenStats::default(),
        };
        // Wait for a slot; an interrupt meanwhile means it never starts.
        let slot = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                outcome.error = Some("interrupted before it started".to_string());
                return outcome;
            }
            slot = self.subagents.slots.clone().acquire_owned() => slot,
        };
        let Ok(_slot) = slot else {
            outcome.status = SubagentStatus::Failed;
            outcome.error = Some("the sub-agent pool is closed".to_string());
            return outcome;
        };
        let parent = Parent {
            session_id: self.parent_session.clone(),
            call_id: self.call.clone(),
            task_id: task.id.clone(),
        };
        let session = match Session::create_child(&self.workspace, parent) {
            Ok(session) => session,
            Err(e) => {
                outcome.status = SubagentStatus::Failed;
                outcome.error = Some(format!("could not create its session: {e}"));
                return outcome;
            }
        };
        let session_id = session.id().to_string();
        outcome.session_id = Some(session_id.clone());
        let span = crate::agent::spans::subagent(&task.id, &session_id);
        let setup = Setup {
            provider: self.provider.clone(),
            registry: self.registry.clone(),
            tool_ctx: Arc::new(self.tool_ctx()),
            session,
            options: self.options.clone(),
            // Sub-agents call no MCP tool (their registry is a read-only subset).
            mcp: None,
        };
        let prompt = crate::agent::prompt::subagent_prompt(&self.workspace);
        let handle = crate::agent::spawn_child(setup, prompt, span.clone());
        self.emit(Event::SubagentStarted {
            call: self.call.clone(),
            task: task.id.clone(),
            session_id,
        });
        self.follow(handle, task, cancel, &mut outcome)
            .instrument(span.clone())
            .await;
        crate::agent::spans::end_subagent(&span, outcome.status.as_str());
        self.emit(Event::SubagentEnded {
            call: self.call.clone(),
            task: task.id.clone(),
            status: outcome.status,
            rounds: outcome.rounds,
            tool_calls: outcome.tool_calls,
            elapsed_ms: millis(outcome.elapsed),
            error: outcome.error.clone(),
        });
        outcome
    }

    /// Sends the task and follows the child until its turn ends (or it is given up on), then
    /// shuts it down.
    async fn follow(
        &self,
        mut handle: crate::protocol::AgentHandle,
        task: &Task,
        cancel: &CancellationToken,
        outcome: &mut Outcome,
    ) {
        let started = Instant::now();
        handle.send(Op::Submit(super::prompt(task)));
        let deadline = tokio::time::sleep(self.subagents.timeout);
        tokio::pin!(deadline);
        // Armed when the child is asked to stop: how long it may take to do so.
        let grace = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(grace);
        let mut stopping: Option<SubagentStatus> = None;
        let mut answer: Option<String> = None;
        let mut partial = String::new();
        let ended: Option<(TurnEnd, TurnStats)> = loop {
            let mut stop = None;
            tokio::select! {
                biased;
                _ = cancel.cancelled(), if stopping.is_none() => stop = Some(SubagentStatus::Interrupted),
                _ = &mut deadline, if stopping.is_none() => stop = Some(SubagentStatus::TimedOut),
                _ = &mut grace, if stopping.is_some() => break None,
                event = handle.next_event() => match event {
                    None => break None,
                    Some(Event::TurnEnded { end, stats, .. }) => break Some((end, *stats)),
                    Some(Event::ModelRequestStarted { round }) => {
                        outcome.rounds = round;
                        self.progress(task, outcome, started);
                    }
                    Some(Event::ToolCallBegan { .. }) => {
                        outcome.tool_calls += 1;
                        self.progress(task, outcome, started);
                    }
                    Some(Event::TextDelta { text }) => {
                        if partial.len() + text.len() <= MAX_PARTIAL_BYTES {
                            partial.push_str(&text);
                        }
                    }
                    Some(Event::AssistantMessage { text }) => {
                        partial.clear();
                        if !text.trim().is_empty() {
                            answer = Some(text);
                        }
                    }
                    Some(Event::ApprovalRequested { call, .. }) => handle.send(Op::Decide {
                        call,
                        decision: Decision::Deny { reason: Some(NO_QUESTIONS.to_string()) },
                    }),
                    Some(_) => {}
                },
            }
            if let Some(why) = stop {
                tracing::info!(status = why.as_str(), "stopping a sub-agent");
                handle.send(Op::Interrupt);
                stopping = Some(why);
                grace
                    .as_mut()
                    .reset(tokio::time::Instant::now() + STOP_GRACE);
            }
        };
        outcome.elapsed = started.elapsed();
        let (status, error) = self.ending(ended.as_ref().map(|(end, _)| end), stopping);
        outcome.status = status;
        outcome.error = error;
        outcome.answer = last_words(status, answer, partial);
        if let Some((_, stats)) = ended {
            outcome.model_calls = stats.model_calls + stats.summary_calls;
            outcome.tokens = stats.tokens;
            outcome.tokens.merge(&stats.summary_tokens);
        }
        shut_down(handle).await;
    }

    /// The task's status and error from how the child's turn ended (`None`: it was given up
    /// on) and why it was asked to stop, if it was.
    fn ending(
        &self,
        end: Option<&TurnEnd>,
        stopping: Option<SubagentStatus>,
    ) -> (SubagentStatus, Option<String>) {
        match end {
            Some(TurnEnd::Completed) => (SubagentStatus::Completed, None),
            Some(TurnEnd::RoundLimit { rounds }) => (
                SubagentStatus::Failed,
                Some(format!("stopped at the limit of {rounds} tool rounds")),
            ),
            Some(TurnEnd::Failed { error }) => (SubagentStatus::Failed, Some(error.clone())),
            Some(TurnEnd::Interrupted) | None => match stopping {
                Some(SubagentStatus::TimedOut) => (
                    SubagentStatus::TimedOut,
                    Some(format!(
                        "no answer within its deadline of {} s",
                        self.subagents.timeout.as_secs()
                    )),
                ),
                Some(why) => (why, None),
                None => (
                    SubagentStatus::Failed,
                    Some("the sub-agent stopped unexpectedly".to_string()),
                ),
            },
        }
    }

    fn progress(&self, task: &Task, outcome: &Outcome, started: Instant) {
        self.emit(Event::SubagentProgress {
            call: self.call.clone(),
            task: task.id.clone(),
            rounds: outcome.rounds,
            tool_calls: outcome.tool_calls,
            elapsed_ms: millis(started.elapsed()),
        });
    }
}

/// A stopped child's last words: the reply it was streaming, else its last message.
fn last_words(status: SubagentStatus, answer: Option<String>, partial: String) -> String {
    match status {
        SubagentStatus::Completed => answer.unwrap_or_default(),
        _ if !partial.trim().is_empty() => partial,
        _ => answer.unwrap_or_default(),
    }
}

/// Shuts the child down and waits (bounded) until it saved and released its session.
async fn shut_down(mut handle: crate::protocol::AgentHandle) {
    handle.send(Op::Shutdown);
    let _ = tokio::time::timeout(STOP_GRACE, async {
        while let Some(event) = handle.next_event().await {
            if matches!(event, Event::ShutdownComplete) {
                break;
            }
        }
    })
    .await;
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
