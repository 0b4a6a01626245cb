//! The agent core: `spawn` starts one task that owns the session, reads `Op`s and emits
//! `Event`s. Frontends hold an `AgentHandle` and nothing else; the core never touches a
//! terminal and asks for approvals only through `Event::ApprovalRequested` / `Op::Decide`.
//! The core keeps the turn loop; the session, the context, goal mode, skills, MCP and
//! sub-agents are parts it holds, each owning its state (see `Core`).

mod approvals;
mod background;
pub mod budget;
mod busy;
pub(crate) mod checkpoints;
pub mod compact;
pub mod context;
mod context_upkeep;
pub mod delegate;
mod diagnostics;
pub mod goal;
mod history;
mod hooks;
pub(crate) mod listing;
mod mcp;
mod mentions;
mod model_switch;
mod notice;
mod plan;
pub(crate) mod prompt;
pub(crate) mod recovery;
mod sandboxing;
mod sessions;
mod shell;
mod skills;
pub mod small;
mod spans;
mod start;
mod store;
mod tally;
pub(crate) mod turn;
pub mod validate;

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::protocol::{AgentHandle, CallId, Decision, Event, Op, WindowSource};
use crate::provider::Provider;
use crate::session::Session;
use crate::tools::skills::Skills;
use crate::tools::{Registry, ToolCtx};
use busy::{Busy, serve_ops};
use turn::Input;

/// Knobs of the loop that come from configuration.
#[derive(Debug, Clone)]
pub struct Options {
    /// Tool rounds allowed per turn before a final summary is requested.
    pub max_rounds: u32,
    /// Upper bound of `max_tokens` for every request; each request asks for less when the
    /// window leaves less room (`budget::Budget::reply_tokens`).
    pub max_tokens: u32,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// Where `context_window` came from: anything but `Config` lets the probe at session start
    /// replace it.
    pub context_window_source: WindowSource,
    /// Keep the model's reasoning on its messages and send it back in later requests (some
    /// servers require it during tool loops); otherwise it is shown and dropped.
    pub send_reasoning: bool,
    /// Approve every tool call without asking (`--yes`).
    pub auto_approve: bool,
    /// Tokens kept free for the reply; `None` scales the default to the window.
    pub reserve_tokens: Option<u64>,
    /// Recent history kept verbatim by compaction; `None` scales the default to the window.
    pub keep_recent_tokens: Option<u64>,
    /// Offer the `delegate` tool, with these limits (shared by every core of the process).
    /// `None`: no sub-agents (a sub-agent's own core always has `None`).
    pub subagents: Option<delegate::Subagents>,
    /// The skills the session may load (found by the CLI in the roots the user allows): their
    /// names and descriptions go into the system prompt, the `skill` tool joins the registry
    /// when there is at least one, and their triggers load them.
    pub skills: Arc<Skills>,
    /// Attach prompts, replies, tool arguments and results to the exported spans
    /// (`[telemetry] include_content`); metadata only when false.
    pub trace_content: bool,
    /// `[goal]`: goal mode's round limits.
    pub goal: goal::Settings,
    /// Start in plan mode (`--plan`).
    pub plan: bool,
    /// A `bash` call the sandbox stopped may be offered to run outside it (the full-screen
    /// session and ACP, where someone answers); otherwise it fails with the way out.
    pub ask_outside_sandbox: bool,
    /// `[checkpoints]`: the undo record of tool calls.
    pub checkpoints: crate::checkpoints::Settings,
    /// The user's own `AGENTS.md` (beside the user config file), read with the project's
    /// instruction files; `None` reads none.
    pub user_memory: Option<std::path::PathBuf>,
    /// The hooks this session runs (the CLI left out a workspace's unapproved ones); a
    /// sub-agent's core runs none.
    pub hooks: Arc<Vec<crate::hooks::Hook>>,
    /// What the core does for small local models: recovering calls written as text, bounding
    /// replies (see `agent/small.rs`).
    pub small: small::Settings,
    /// `[model] profile` and `[model] tools`: whether the lean prompt and core tools are used
    /// (see `model_profile`).
    pub model_profile: crate::provider::profiles::Settings,
    /// `[lsp]`: the language servers asked for diagnostics after an edit.
    pub lsp: crate::lsp::Settings,
    /// `[sandbox]` and the flags: the policy commands (`bash`, hooks, language servers) run
    /// under, held by the core's sandbox part. A sub-agent gets its parent's as it stands.
    pub sandbox: crate::sandbox::Policy,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            max_rounds: crate::defaults::MAX_ROUNDS,
            max_tokens: crate::defaults::MAX_TOKENS,
            context_window: crate::defaults::CONTEXT_WINDOW,
            context_window_source: WindowSource::Default,
            send_reasoning: false,
            auto_approve: false,
            reserve_tokens: None,
            keep_recent_tokens: None,
            subagents: None,
            skills: Arc::new(Skills::default()),
            trace_content: false,
            goal: goal::Settings::default(),
            plan: false,
            ask_outside_sandbox: false,
            checkpoints: crate::checkpoints::Settings::default(),
            user_memory: None,
            hooks: Arc::default(),
            small: small::Settings::default(),
            model_profile: crate::provider::profiles::Settings::default(),
            lsp: crate::lsp::Settings::default(),
            sandbox: crate::sandbox::Policy::unconfined(),
        }
    }
}

/// Everything the core needs, assembled by the CLI (or a test).
pub struct Setup {
    pub provider: Arc<dyn Provider>,
    pub registry: Arc<Registry>,
    pub tool_ctx: Arc<ToolCtx>,
    pub session: Session,
    pub options: Options,
    /// The MCP servers, for `/mcp` and their notices (the CLI starts and stops them).
    pub mcp: Option<Arc<crate::tools::mcp::Manager>>,
}

/// Starts the core on the current tokio runtime. The first event is `SessionConfigured`.
pub fn spawn(setup: Setup) -> AgentHandle {
    start(
        setup,
        None,
        recovery::Hooks::default(),
        tracing::Span::none(),
    )
}

/// Starts the core for a host that journals tool calls and may reopen a session a crash left
/// mid-run (the daemon): like [`spawn`], with `hooks` (see `agent::recovery`).
pub(crate) fn spawn_hosted(setup: Setup, hooks: recovery::Hooks) -> AgentHandle {
    start(setup, None, hooks, tracing::Span::none())
}

/// Starts a sub-agent's core: like [`spawn`], with its own system prompt, and inside `span`
/// (the `subagent` span), so its turn, model and tool spans nest under it.
pub(crate) fn spawn_child(setup: Setup, system_prompt: String, span: tracing::Span) -> AgentHandle {
    start(setup, Some(system_prompt), recovery::Hooks::default(), span)
}

/// The one way a core task starts: its two channels, and the task inside `span` (a disabled
/// span, `Span::none()`, changes nothing).
fn start(
    setup: Setup,
    system_prompt: Option<String>,
    hooks: recovery::Hooks,
    span: tracing::Span,
) -> AgentHandle {
    use tracing::Instrument;
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    tokio::spawn(run_core(setup, ops_rx, events_tx, system_prompt, hooks).instrument(span));
    AgentHandle::new(ops_tx, events_rx)
}

/// The core's event channel as its parts hold it: each part tells frontends what it did
/// itself, and a frontend that went away is not an error (the turn still finishes and saves).
#[derive(Debug, Clone)]
pub(crate) struct Emitter(mpsc::UnboundedSender<Event>);

impl Emitter {
    pub(crate) fn emit(&self, event: Event) {
        let _ = self.0.send(event);
    }
}

/// The state one core task owns: the turn loop's tools (provider, registry, tool context,
/// options, events) and one field per part. A feature attaches as a part of its own, never as
/// loose fields here.
pub(crate) struct Core {
    provider: Arc<dyn Provider>,
    registry: Arc<Registry>,
    tool_ctx: Arc<ToolCtx>,
    options: Options,
    events: mpsc::UnboundedSender<Event>,
    /// "Always" for this session and the permission rules' rulings.
    approvals: approvals::Approvals,
    /// The session, its saving and the turn counter.
    store: store::Store,
    /// The model context: memory, budget, window, compaction, the declared tools.
    upkeep: context_upkeep::Upkeep,
    /// Goal mode.
    goal: goal::driver::Driver,
    /// The skills and which of them this session has loaded.
    skills: skills::View,
    /// The MCP servers, for `/mcp` and their notices.
    mcp: mcp::Servers,
    /// The `delegate` tool this core runs itself, when it offers sub-agents.
    delegate: delegate::Offer,
    /// Plan mode: on or off, and what the model was told.
    plan: plan::Plan,
    /// The sandbox policy commands run under, and plan mode's narrowing of it.
    sandbox: sandboxing::Sandbox,
    /// The undo record of tool calls, and rewinds.
    checkpoints: checkpoints::Checkpoints,
    /// The user's hooks.
    hooks: hooks::Hooks,
    /// `!command` outputs waiting for the next prompt.
    shell: shell::Shell,
    /// The language servers asked about a file after `write` and `edit`.
    diagnostics: diagnostics::Diagnostics,
}

impl Core {
    /// How contents go into spans: `None` unless `include_content` is on. Takes the tool
    /// context (a clone of `tool_ctx` where `self` is borrowed mutably meanwhile) for the key.
    fn content<'a>(&self, ctx: &'a ToolCtx) -> Option<spans::Content<'a>> {
        self.options.trace_content.then_some(spans::Content {
            secrets: &ctx.secrets,
        })
    }

    fn emit(&self, event: Event) {
        // A frontend that went away cannot be told anything; the turn still finishes and saves.
        let _ = self.events.send(event);
    }

    fn configured(&self) -> Event {
        let session = &self.store.session;
        Event::SessionConfigured {
            session_id: session.id().to_string(),
            session_path: session.path().display().to_string(),
            model: self.provider.model().to_string(),
            // The window in use: the server's, once it stated one, else the configured one.
            context_window: self.upkeep.window(),
            resumed_messages: session.messages().len(),
        }
    }

    /// Emits `ContextUsage` for the session as it stands (see `Upkeep::report_context`).
    fn report_context(&mut self) {
        self.upkeep.report_context(self.store.session.messages());
    }

    /// Runs one user turn while serving ops (see [`serve_ops`]). Returns true if a shutdown
    /// was asked for meanwhile.
    async fn turn(
        &mut self,
        input: Input,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> bool {
        let goal_round = matches!(input, Input::GoalRound(_));
        self.goal.begin_turn();
        let turn = self.store.start_turn();
        let cancel = CancellationToken::new();
        let (decide_tx, mut decide_rx) = mpsc::unbounded_channel::<(CallId, Decision)>();
        let (events, skills, mcp) = (self.events.clone(), self.skills.clone(), self.mcp.clone());
        let tools = self.tool_ctx.clone();
        let running = turn::run(self, input, cancel.clone(), &mut decide_rx);
        let busy = Busy {
            tools,
            events: &events,
            skills: &skills,
            mcp: &mcp,
        };
        let ((end, stats), shutdown) =
            serve_ops(running, ops, queue, &cancel, Some(&decide_tx), busy).await;
        let end = self.store.finish_turn(turn, end, stats, true);
        self.goal.after_turn(&end, goal_round, &mut self.store);
        shutdown
    }

    /// `/compact [instructions]`, reported like a turn (`TurnStarted`, `TurnEnded` with the
    /// summary calls in its stats) so a frontend shows it as busy, can interrupt it and sees
    /// what it cost. It is served like a turn too: `Interrupt` cancels it (the old checkpoint
    /// stays), `Shutdown` stops it, prompts are queued. It does not count as a turn in the
    /// session totals. Returns true if a shutdown was asked for meanwhile.
    async fn compact(
        &mut self,
        instructions: Option<String>,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> bool {
        self.pre_compact_hooks(
            crate::hooks::CompactTrigger::Manual,
            instructions.as_deref(),
        )
        .await;
        let turn = self.store.start_turn();
        let cancel = CancellationToken::new();
        let running = self
            .upkeep
            .manual_compact(&mut self.store.session, instructions, &cancel);
        let busy = Busy {
            tools: self.tool_ctx.clone(),
            events: &self.events,
            skills: &self.skills,
            mcp: &self.mcp,
        };
        let ((end, stats), shutdown) = serve_ops(running, ops, queue, &cancel, None, busy).await;
        self.store.finish_turn(turn, end, stats, false);
        shutdown
    }

    /// Serves ops until `Shutdown` (or every sender is gone), starting with the run a crashed
    /// host left open, if any.
    async fn serve(
        &mut self,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        recovery: Option<(crate::protocol::Recovery, Vec<CallId>)>,
    ) {
        let mut queue: VecDeque<Op> = VecDeque::new();
        if let Some((recovery, open)) = recovery
            && self.recover(recovery, open, ops, &mut queue).await
        {
            return;
        }
        loop {
            self.goal.run_check();
            let op = match queue.pop_front() {
                Some(op) => op,
                None => match self.next_op(ops, &mut queue).await {
                    Next::Op(op) => op,
                    Next::Again => continue,
                    Next::Stop => return,
                },
            };
            if self.handle(op, ops, &mut queue).await {
                return;
            }
        }
    }

    /// The next op when none is queued: an armed, active goal runs its next round whenever
    /// nothing else waits (an op already sent, like a prompt typed during the last round,
    /// goes first); otherwise the core waits for an op, applying a probe that lands meanwhile
    /// at once (the status bar shows it).
    async fn next_op(
        &mut self,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> Next {
        if self.goal.wants_round() {
            return match ops.try_recv() {
                Ok(op) => Next::Op(op),
                Err(mpsc::error::TryRecvError::Empty) => {
                    if self.goal_round(ops, queue).await {
                        Next::Stop
                    } else {
                        Next::Again
                    }
                }
                Err(mpsc::error::TryRecvError::Disconnected) => Next::Stop,
            };
        }
        let next = match self.upkeep.pending_probe() {
            Some(probe) => tokio::select! {
                landed = probe => Err(landed.ok().flatten()),
                op = ops.recv() => Ok(op),
            },
            None => Ok(ops.recv().await),
        };
        match next {
            Ok(Some(op)) => Next::Op(op),
            Ok(None) => Next::Stop,
            Err(landed) => {
                self.upkeep
                    .apply_probe(landed, self.store.session.messages());
                Next::Again
            }
        }
    }

    /// Starts the next goal round. Returns true if a shutdown was asked for meanwhile.
    async fn goal_round(
        &mut self,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> bool {
        match self.goal.next_round(&mut self.store) {
            Some(round) => {
                self.turn(Input::GoalRound(round.render()), ops, queue)
                    .await
            }
            None => false,
        }
    }

    /// Serves one op while idle. Returns true when the core is to shut down.
    async fn handle(
        &mut self,
        op: Op,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> bool {
        match op {
            Op::Submit(text) => return self.turn(Input::User(text, Vec::new()), ops, queue).await,
            Op::SubmitImages { text, images } => {
                return self.turn(Input::User(text, images), ops, queue).await;
            }
            Op::Goal(command) => self.goal.command(command, &mut self.store),
            Op::Fork => self.fork(),
            Op::SetPlan { on } => self.set_plan(on),
            Op::Model { name } => self.model(name).await,
            Op::ListRewind => self.list_rewind(),
            Op::Rewind { turn, scope, force } => self.rewind(turn, scope, force),
            Op::Decide { call, .. } => self.emit(Event::Error {
                message: format!("no approval is pending for call {call:?}"),
            }),
            Op::Interrupt => self.goal.interrupt(),
            Op::Compact(instructions) => return self.compact(instructions, ops, queue).await,
            Op::NewSession => self.new_session(),
            Op::McpServers => self.emit(self.mcp.listed()),
            Op::McpRestart { server } => self.emit(self.mcp.restart(&server)),
            Op::ListSkills => self.emit(self.skills.listed()),
            Op::ListSessions => self.list_sessions(),
            Op::Resume { id } => self.resume(&id),
            Op::Shell { command } => return self.shell(command, ops, queue).await,
            Op::CompletePath { prefix } => self.complete_path(prefix),
            Op::KillBackground { id } => {
                background::kill(&self.tool_ctx, id, Emitter(self.events.clone()))
            }
            Op::Shutdown => return true,
        }
        false
    }

    /// Saves and releases the session (and its lock) before saying the core is done. The
    /// sandbox's private temporary folder of the session goes with it: every host (one-shot,
    /// full-screen, ACP, the daemon) ends a session here, after its last `bash` call.
    fn shut_down(mut self) {
        let events = self.events.clone();
        background::end(&self.tool_ctx, &mut self.store.session);
        self.store.close();
        self.sandbox.end();
        let _ = events.send(Event::ShutdownComplete);
    }
}

/// What the idle op loop does next.
enum Next {
    Op(Op),
    /// Something was done meanwhile (a goal round, a probe applied): look again.
    Again,
    Stop,
}

/// The core's task: assemble the core, announce it, serve ops until `Shutdown` (or every
/// sender is gone), then save and release the session.
async fn run_core(
    setup: Setup,
    mut ops: mpsc::UnboundedReceiver<Op>,
    events: mpsc::UnboundedSender<Event>,
    system_prompt: Option<String>,
    hooks: recovery::Hooks,
) {
    let (mut core, startup) = Core::assemble(setup, events, system_prompt, hooks.journal);
    let recovery = core.start_up(startup, hooks.recovery);
    let source = if core.store.session.messages().is_empty() {
        crate::hooks::SessionSource::Startup
    } else {
        crate::hooks::SessionSource::Resume
    };
    let site = core.hook_site();
    core.hooks.session_start(source, &site).await;
    core.serve(&mut ops, recovery).await;
    core.diagnostics.end().await;
    core.shut_down();
}
