//! The agent core: `spawn` starts one task that owns the session, reads `Op`s and emits
//! `Event`s. Frontends hold an `AgentHandle` and nothing else; the core never touches a
//! terminal and asks for approvals only through `Event::ApprovalRequested` / `Op::Decide`.

mod approval;
pub mod budget;
pub mod compact;
pub mod context;
mod context_upkeep;
pub mod delegate;
pub mod goal;
mod history;
mod mcp;
mod plan;
pub(crate) mod prompt;
pub mod recovery;
mod sandboxing;
mod sessions;
mod skills;
mod spans;
pub(crate) mod turn;
pub mod validate;
mod window;

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::protocol::{
    AgentHandle, CallId, Decision, Event, Journal, Op, TurnEnd, TurnStats, WindowSource,
};
use crate::provider::Provider;
use crate::session::Session;
use crate::tools::skills::Skills;
use crate::tools::{Registry, ToolCtx};
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
    /// Goal rounds a new goal may use unless its command names a limit (`[goal] max_rounds`).
    pub goal_max_rounds: u32,
    /// Start in plan mode (`--plan`).
    pub plan: bool,
    /// A `bash` call the sandbox stopped may be offered to run outside it (the full-screen
    /// session and ACP, where someone answers); otherwise it fails with the way out.
    pub ask_outside_sandbox: bool,
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
            goal_max_rounds: crate::defaults::GOAL_MAX_ROUNDS,
            plan: false,
            ask_outside_sandbox: false,
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
pub fn spawn_hosted(setup: Setup, hooks: recovery::Hooks) -> AgentHandle {
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

/// The state one core task owns: the session and what a turn needs to run.
pub(crate) struct Core {
    provider: Arc<dyn Provider>,
    registry: Arc<Registry>,
    /// What the last request declared, and the registry generation it was taken at.
    tool_specs: (u64, Arc<[crate::chat::ToolSpec]>),
    tool_ctx: Arc<ToolCtx>,
    session: Session,
    options: Options,
    /// System prompt, memory, checkpoint ledger and cached estimates of the model context.
    context: context::Context,
    /// The main conversation's token budget (its window may be replaced by a server-stated one).
    budget: budget::Budget,
    /// Where the budget's window came from.
    window_source: WindowSource,
    /// The probe of the server started with the session, until it lands.
    probe: window::PendingProbe,
    /// The stamp of MiniCode.md at its last load and that load's outcome, so the check before
    /// each request re-reads the file only when it was touched.
    memory_seen: Option<(crate::memory::Stamp, Result<(), String>)>,
    /// Tools the user approved "always" for this session.
    approved_tools: HashSet<String>,
    mcp: Option<Arc<crate::tools::mcp::Manager>>,
    /// The `delegate` tool this core registered, when it runs sub-agents: calls that resolve
    /// to this very instance are run by the core (see `delegate::run`).
    delegate: Option<Arc<dyn crate::tools::Tool>>,
    /// The skills and which of them this session has loaded.
    skills: skills::View,
    events: mpsc::UnboundedSender<Event>,
    turns: u64,
    /// The host's record of tool calls in flight, when it keeps one.
    journal: Option<Arc<dyn Journal>>,
    /// The session's goal: the fold of its records and the live activation.
    goals: goal::Goals,
    /// The goal tools this core runs, and whether they are declared now.
    goal_tools: goal::tools::Set,
    goal_tools_declared: bool,
    /// The last turn failed on an exhausted quota (a goal round then blocks with
    /// `usage-limit`).
    quota_failure: bool,
    /// The last save's error, already told to the user (cleared by a save that works).
    save_error: Option<String>,
    /// Plan mode: on or off, and what it replaced while on.
    plan: plan::Plan,
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

    /// Kills the process groups of calls a previous run of this session left recorded as
    /// running (see `session::running`), if they are still alive and one of our supervisors
    /// leads them, and says so.
    fn kill_left_groups(&self) {
        let left = crate::session::running::take(&self.tool_ctx.workspace, self.session.id());
        for (call, group) in left {
            let pgid = group.pgid;
            if !crate::process::supervisor::is_supervised_group(pgid, &group.tag) {
                continue;
            }
            crate::process::child::kill_group(pgid);
            tracing::warn!(call = %call, pgid, "killed a command group left running");
            self.emit(Event::Warning {
                message: format!(
                    "tool call {call} was still running after an earlier exit (process group \
                     {pgid}); it was killed"
                ),
            });
        }
    }

    /// Validates and saves the session, reporting (not failing on) errors: used where nothing
    /// waits on the file (a new session, shutdown). A history that fails validation is not
    /// written (the file keeps its last good state): it would only fail again on resume. The
    /// last batch may still be open. Returns whether the file now holds the history.
    fn save(&mut self) -> bool {
        match self.try_save() {
            Ok(()) => true,
            Err(message) => {
                // The same failure again (a full disk at shutdown after a turn failed on it)
                // was already told.
                if self.save_error.as_ref() != Some(&message) {
                    self.emit(Event::Warning {
                        message: message.clone(),
                    });
                }
                self.save_error = Some(message);
                false
            }
        }
    }

    /// Validates and saves the session; the error is the user's message. A turn stops on it:
    /// work the file does not record must not go on (a tool call run unrecorded could not be
    /// told apart after a crash, and the user would lose the turn without knowing).
    ///
    /// A session with nothing new since it was opened or saved is not written: a refused goal
    /// command or a shutdown after a saved turn must not move its `updated` time, which orders
    /// `--continue`.
    fn try_save(&mut self) -> Result<(), String> {
        if !self.session.has_unsaved_changes() {
            return Ok(());
        }
        match validate::history_prefix_from(self.session.messages(), self.session.settled()) {
            Ok(settled) => self.session.set_settled(settled),
            Err(e) => {
                tracing::error!(error = %e, "refusing to save an invalid history");
                return Err(format!("could not save the session: {e}"));
            }
        }
        self.session.save().map_err(|e| {
            tracing::error!(error = %e, "session save failed");
            format!("could not save the session: {e}")
        })?;
        self.save_error = None;
        Ok(())
    }

    fn configured(&self) -> Event {
        Event::SessionConfigured {
            session_id: self.session.id().to_string(),
            session_path: self.session.path().display().to_string(),
            model: self.provider.model().to_string(),
            // The window in use: the server's, once it stated one, else the configured one.
            context_window: self.budget.window,
            resumed_messages: self.session.messages().len(),
        }
    }

    /// The window in use and where it came from.
    fn window_set(&self) -> Event {
        Event::ContextWindowSet {
            tokens: self.budget.window,
            source: self.window_source,
        }
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
        self.quota_failure = false;
        let turn = self.start_turn();
        let cancel = CancellationToken::new();
        let (decide_tx, mut decide_rx) = mpsc::unbounded_channel::<(CallId, Decision)>();
        let events = self.events.clone();
        let view = self.skills.clone();
        let mcp = self.mcp.clone();
        let running = turn::run(self, input, cancel.clone(), &mut decide_rx);
        let busy = Busy {
            events: &events,
            skills: &view,
            mcp: mcp.as_deref(),
        };
        let ((end, stats), shutdown) =
            serve_ops(running, ops, queue, &cancel, Some(&decide_tx), busy).await;
        let end = self.finish_turn(turn, end, stats, true);
        let usage_limit = self.quota_failure;
        self.goal_after_turn(&end, goal_round, usage_limit);
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
        let turn = self.start_turn();
        let cancel = CancellationToken::new();
        let events = self.events.clone();
        let view = self.skills.clone();
        let mcp = self.mcp.clone();
        let running = self.manual_compact(instructions, &cancel);
        let busy = Busy {
            events: &events,
            skills: &view,
            mcp: mcp.as_deref(),
        };
        let ((end, stats), shutdown) = serve_ops(running, ops, queue, &cancel, None, busy).await;
        self.finish_turn(turn, end, stats, false);
        shutdown
    }

    /// Takes the registry's tools for the next main request when they changed since the last
    /// one, and refreshes the context's estimate of the declarations with them.
    pub(crate) fn current_tools(&mut self) {
        // Servers that failed since the last request are reported before it goes out.
        mcp::notices(self.mcp.as_deref(), &self.events);
        let generation = self.registry.generation();
        if generation != self.tool_specs.0 {
            let specs = self.registry.specs();
            self.context.set_tools(&specs);
            self.tool_specs = (generation, specs);
        }
    }

    fn start_turn(&mut self) -> u64 {
        self.turns += 1;
        self.emit(Event::TurnStarted { turn: self.turns });
        self.turns
    }

    /// Adds the stats to the session totals, saves and reports the end, which a failed save
    /// turns into a failure (the run must not look done when nothing of it is on disk).
    /// Returns the end reported. `user_turn` is false for a manual compaction, which spends
    /// tokens but is not a turn of the conversation.
    fn finish_turn(
        &mut self,
        turn: u64,
        end: TurnEnd,
        stats: TurnStats,
        user_turn: bool,
    ) -> TurnEnd {
        let totals = self.session.totals_mut();
        if user_turn {
            totals.turns += 1;
        }
        totals.model_calls += u64::from(stats.model_calls + stats.summary_calls);
        totals.tool_calls += u64::from(stats.tool_calls);
        for tokens in [stats.tokens, stats.summary_tokens] {
            totals.input_tokens += tokens.input_tokens;
            totals.output_tokens += tokens.output_tokens;
            totals.total_tokens += tokens.total_tokens;
        }
        let end = match (self.try_save(), end) {
            (Ok(()), end) => end,
            // The turn already failed (on this very save, often): its first error stands.
            (Err(message), TurnEnd::Failed { error }) => {
                if message != error {
                    self.emit(Event::Warning {
                        message: message.clone(),
                    });
                }
                self.save_error = Some(message);
                TurnEnd::Failed { error }
            }
            (Err(error), _) => {
                self.save_error = Some(error.clone());
                TurnEnd::Failed { error }
            }
        };
        if let TurnEnd::Failed { error } = &end {
            tracing::warn!(%error, "turn failed");
        }
        self.emit(Event::TurnEnded {
            turn,
            end: end.clone(),
            stats: Box::new(stats),
        });
        end
    }
}

/// What the core answers while a turn or a compaction runs: events, and the read-only
/// questions (`ListSkills`, `McpServers`) and MCP restarts that do not touch the conversation.
struct Busy<'a> {
    events: &'a mpsc::UnboundedSender<Event>,
    skills: &'a skills::View,
    mcp: Option<&'a crate::tools::mcp::Manager>,
}

/// Drives `work` (a turn or a manual compaction) to its end while serving ops: decisions go
/// to `decisions` (none pending when it is `None`), `Interrupt` cancels `cancel`, prompts and
/// goal commands are queued, `Compact`, `NewSession` and `Fork` are refused as busy, `ListSkills` and the MCP ops are
/// answered from `busy`, and `Shutdown` (or every sender gone) cancels and is remembered. Returns the
/// work's output and whether to shut down.
async fn serve_ops<T>(
    work: impl Future<Output = T>,
    ops: &mut mpsc::UnboundedReceiver<Op>,
    queue: &mut VecDeque<Op>,
    cancel: &CancellationToken,
    decisions: Option<&mpsc::UnboundedSender<(CallId, Decision)>>,
    busy: Busy<'_>,
) -> (T, bool) {
    let Busy {
        events,
        skills,
        mcp: mcp_servers,
    } = busy;
    tokio::pin!(work);
    let mut shutdown = false;
    let mut ops_open = true;
    loop {
        // Biased towards ops: every op already sent is handled before the work is polled
        // again, so a `Decide` followed by `Interrupt` cancels before the work can act on the
        // decision alone (e.g. start another model request after a denial).
        tokio::select! {
            biased;
            op = ops.recv(), if ops_open => match op {
                Some(Op::Interrupt) => cancel.cancel(),
                Some(Op::Decide { call, decision }) => match decisions {
                    Some(tx) => {
                        let _ = tx.send((call, decision));
                    }
                    None => {
                        let _ = events.send(Event::Error {
                            message: format!("no approval is pending for call {call:?}"),
                        });
                    }
                },
                Some(op @ (Op::Submit(_) | Op::Goal(_) | Op::SetPlan { .. })) => {
                    queue.push_back(op)
                }
                // Reading or restarting a server does not touch the conversation.
                Some(Op::McpServers) => {
                    let _ = events.send(mcp::servers(mcp_servers));
                }
                Some(Op::McpRestart { server }) => {
                    let _ = events.send(mcp::restart(mcp_servers, &server));
                }
                Some(Op::ListSkills) => {
                    let _ = events.send(skills.listed());
                }
                Some(Op::Compact(_)) | Some(Op::NewSession) | Some(Op::Fork) => {
                    let _ = events.send(Event::Error {
                        message: "busy: wait for the turn to end or interrupt it".into(),
                    });
                }
                Some(Op::Shutdown) => {
                    shutdown = true;
                    cancel.cancel();
                }
                None => {
                    ops_open = false;
                    shutdown = true;
                    cancel.cancel();
                }
            },
            output = &mut work => return (output, shutdown),
        }
    }
}

/// The core's task: serve ops until `Shutdown` (or every sender is gone).
async fn run_core(
    setup: Setup,
    mut ops: mpsc::UnboundedReceiver<Op>,
    events: mpsc::UnboundedSender<Event>,
    system_prompt: Option<String>,
    hooks: recovery::Hooks,
) {
    // A sub-agent's core comes with its own prompt and never offers skills or sub-agents.
    let child = system_prompt.is_some();
    let mut system_prompt = system_prompt.unwrap_or_else(|| {
        format!(
            "{}\n\n{}",
            prompt::system_prompt(&setup.tool_ctx.workspace),
            crate::memory::PROMPT_RULES
        )
    });
    let catalog = setup.options.skills.clone();
    let mut refused_tools = Vec::new();
    if !child && let Some(section) = prompt::skills_section(&catalog) {
        system_prompt.push_str("\n\n");
        system_prompt.push_str(&section);
        refused_tools = setup
            .registry
            .set_group(crate::tools::skills::GROUP, vec![catalog.tool()]);
    }
    // Sub-agents: the core declares `delegate` itself, in its own group, before the first
    // request; a name another group already holds is refused (and said so below).
    let mut delegate_refused = false;
    let delegate = match &setup.options.subagents {
        Some(_) if !child => {
            let tool: Arc<dyn crate::tools::Tool> = Arc::new(delegate::Delegate);
            delegate_refused = !setup
                .registry
                .set_group(delegate::GROUP, vec![tool.clone()])
                .is_empty();
            (!delegate_refused).then_some(tool)
        }
        _ => None,
    };
    let tool_specs = setup.registry.specs();
    if !child && tool_specs.is_empty() {
        // `--no-tools`: plain chat; the memory rules (which name tools) do not apply.
        system_prompt = prompt::plain_chat_prompt(&setup.tool_ctx.workspace);
    }
    let tools_generation = setup.registry.generation();
    let mut context = context::Context::new(system_prompt, &tool_specs);
    setup
        .tool_ctx
        .set_output_limit(setup.options.context_window);
    let window = setup.options.context_window;
    let (reserve, keep) = (
        setup.options.reserve_tokens,
        setup.options.keep_recent_tokens,
    );
    // The CLI validated these already; a library caller with odd values gets the defaults.
    let budget = budget::Budget::new(window, reserve, keep)
        .unwrap_or_else(|_| budget::Budget::for_window(window));
    let checkpoint_problem = context
        .set_checkpoint(
            setup.session.checkpoint().cloned(),
            setup.session.messages(),
        )
        .err();
    let window_source = setup.options.context_window_source;
    let mut core = Core {
        provider: setup.provider,
        registry: setup.registry,
        tool_specs: (tools_generation, tool_specs),
        tool_ctx: setup.tool_ctx,
        session: setup.session,
        options: setup.options,
        context,
        budget,
        window_source,
        probe: None,
        memory_seen: None,
        approved_tools: HashSet::new(),
        mcp: setup.mcp,
        delegate,
        skills: skills::View {
            skills: catalog,
            loaded: skills::Loaded::default(),
        },
        events,
        turns: 0,
        journal: hooks.journal,
        goals: goal::Goals::default(),
        goal_tools: goal::tools::Set::default(),
        goal_tools_declared: false,
        quota_failure: false,
        save_error: None,
        plan: plan::Plan::default(),
    };
    // Before any open call is called interrupted, a command group an earlier run left
    // recorded that is still alive is killed: its effect must end before the model is told.
    core.kill_left_groups();
    // A host that knows which calls had started answers the open calls itself (below);
    // otherwise the load's "interrupted, outcome unknown" results stand.
    let mut recovery = hooks.recovery.map(|r| (r, core.session.reopen_repaired()));
    core.skills
        .loaded
        .set(crate::tools::skills::loaded_in(core.session.messages()));
    for call in core.session.repaired_calls() {
        core.emit(Event::Warning {
            message: format!(
                "tool call {call} was interrupted by an earlier exit; its outcome is unknown"
            ),
        });
    }
    core.start_probe();
    core.emit(core.configured());
    if delegate_refused {
        core.emit(Event::Warning {
            message: format!(
                "sub-agents are off: another tool is already named {}",
                delegate::NAME
            ),
        });
    }
    if !core.session.messages().is_empty() {
        core.emit(Event::HistoryRestored {
            entries: history::entries(&core.session, &core.tool_ctx.secrets, &core.registry),
        });
    }
    for warning in core.skills.skills.warnings() {
        core.emit(Event::Warning {
            message: warning.clone(),
        });
    }
    for name in refused_tools {
        core.emit(Event::Warning {
            message: format!(
                "the {name} tool is already taken by another tool; the model cannot load skills"
            ),
        });
    }
    core.emit(core.window_set());
    // After the restored history: the goal it holds, disarmed.
    core.goal_start();
    if let Some(problem) = checkpoint_problem {
        core.emit(Event::Warning {
            message: format!("ignoring the saved compaction checkpoint: {problem}"),
        });
    }
    if let Err(e) = core.reload_memory() {
        core.emit(Event::Error { message: e });
    }
    core.report_context();
    mcp::notices(core.mcp.as_deref(), &core.events);
    // Last of the start-up events: the profile, with plan mode when the session starts in it.
    let start_in_plan = core.options.plan && !child;
    core.set_plan(start_in_plan);
    let mut queue: VecDeque<Op> = VecDeque::new();
    loop {
        if let Some((recovery, open)) = recovery.take() {
            if core.recover(recovery, open, &mut ops, &mut queue).await {
                break;
            }
            continue;
        }
        core.goal_run_check();
        let op = match queue.pop_front() {
            Some(op) => op,
            // An armed, active goal runs its next round whenever nothing else waits: an op
            // already sent (a prompt typed during the last round) goes first.
            None if core.goals.wants_round() => match ops.try_recv() {
                Ok(op) => op,
                Err(mpsc::error::TryRecvError::Empty) => {
                    if core.goal_round(&mut ops, &mut queue).await {
                        break;
                    }
                    continue;
                }
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            },
            None => {
                // While idle, a probe that lands is applied at once (the status bar shows it).
                let next = match core.probe.as_mut() {
                    Some(probe) => tokio::select! {
                        landed = probe => Err(landed.ok().flatten()),
                        op = ops.recv() => Ok(op),
                    },
                    None => Ok(ops.recv().await),
                };
                match next {
                    Ok(Some(op)) => op,
                    Ok(None) => break,
                    Err(landed) => {
                        core.apply_probe(landed);
                        continue;
                    }
                }
            }
        };
        match op {
            Op::Submit(text) => {
                if core.turn(Input::User(text), &mut ops, &mut queue).await {
                    break;
                }
            }
            Op::Goal(command) => core.goal_command(command),
            Op::Fork => core.fork(),
            Op::SetPlan { on } => core.set_plan(on),
            Op::Decide { call, .. } => core.emit(Event::Error {
                message: format!("no approval is pending for call {call:?}"),
            }),
            // Between goal rounds, an interrupt still stops the goal (nothing is recorded).
            Op::Interrupt => {
                if core.goals.interrupt() {
                    core.emit(core.goal_status());
                }
            }
            Op::Compact(instructions) => {
                if core.compact(instructions, &mut ops, &mut queue).await {
                    break;
                }
            }
            Op::NewSession => core.new_session(),
            Op::McpServers => core.emit(mcp::servers(core.mcp.as_deref())),
            Op::McpRestart { server } => core.emit(mcp::restart(core.mcp.as_deref(), &server)),
            Op::ListSkills => core.emit(core.skills.listed()),
            Op::Shutdown => break,
        }
    }
    core.save();
    // Release the session (and its lock) before saying we are done; one that never got a
    // message leaves no file behind.
    let events = core.events.clone();
    if let Err(e) = core.session.discard_if_empty() {
        tracing::warn!(error = %e, "could not remove an empty session");
    }
    let _ = events.send(Event::ShutdownComplete);
}
