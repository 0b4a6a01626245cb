//! How a core comes to be: its parts assembled from a `Setup` (the system prompt, the skills
//! and `delegate` declared before the first request), then the start-up events in the order
//! frontends rely on (the session, its restored history, warnings, the window, the goal, the
//! context). It must not read ops: the op loop starts once everything here is said.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{
    Core, Emitter, Setup, context_upkeep, delegate, goal, history, mcp, prompt, skills, store,
};
use crate::protocol::{CallId, Event, Journal, Recovery};
use crate::tools::Registry;

/// What assembling found that start-up must tell.
pub(super) struct Startup {
    /// Names the skills tool could not take (another group holds them).
    refused_tools: Vec<String>,
    /// Why the session's compaction checkpoint was dropped.
    checkpoint_problem: Option<String>,
    /// A sub-agent's core: it never starts in plan mode (its parent's profile holds).
    child: bool,
}

impl Core {
    /// Builds the core and its parts. A sub-agent's core comes with its own `system_prompt`
    /// and never offers skills or sub-agents.
    pub(super) fn assemble(
        setup: Setup,
        events: mpsc::UnboundedSender<Event>,
        system_prompt: Option<String>,
        journal: Option<Arc<dyn Journal>>,
    ) -> (Core, Startup) {
        let child = system_prompt.is_some();
        let emitter = Emitter(events.clone());
        // A sub-agent keeps the prompt it was given: it never takes the small profile.
        let (system_prompt, small_prompt, refused_tools) = match system_prompt {
            Some(prompt) => (prompt, None, Vec::new()),
            None => {
                let (full, small, refused) = main_prompt(&setup);
                (full, Some(small), refused)
            }
        };
        // Sub-agents: the core declares `delegate` itself, in its own group, before the first
        // request; a name another group already holds is refused (and said so at start-up).
        let subagents = setup.options.subagents.as_ref();
        let delegate = delegate::Offer::declare(&setup.registry, subagents, child);
        // `--no-tools`: plain chat; the memory rules (which name tools) do not apply.
        let no_tools = !child && setup.registry.specs().is_empty();
        let (system_prompt, small_prompt) = if no_tools {
            (prompt::plain_chat_prompt(&setup.tool_ctx.workspace), None)
        } else {
            (system_prompt, small_prompt)
        };
        let options = &setup.options;
        let start = context_upkeep::Start {
            system_prompt,
            window: options.context_window,
            window_source: options.context_window_source,
            reserve: options.reserve_tokens,
            keep: options.keep_recent_tokens,
            user_memory: options.user_memory.clone(),
            profile: super::context_upkeep::ProfileChoice::new(
                options.model_profile.clone(),
                small_prompt,
            ),
        };
        let (upkeep, checkpoint_problem) = context_upkeep::Upkeep::new(
            start,
            &setup.session,
            setup.provider.clone(),
            setup.registry.clone(),
            setup.tool_ctx.clone(),
            emitter.clone(),
        );
        let checkpoints = super::checkpoints::Checkpoints::new(
            &setup.session,
            options.checkpoints.clone(),
            emitter.clone(),
        );
        let core = Core {
            goal: goal::driver::Driver::new(setup.registry.clone(), options.goal, emitter.clone()),
            skills: skills::View::new(options.skills.clone(), emitter.clone()),
            mcp: mcp::Servers::new(setup.mcp, emitter.clone()),
            store: store::Store::new(setup.session, journal, emitter.clone()),
            upkeep,
            delegate,
            approvals: super::approvals::Approvals::default(),
            plan: super::plan::Plan::default(),
            sandbox: super::sandboxing::Sandbox::new(options.sandbox.clone(), !child),
            checkpoints,
            hooks: super::hooks::Hooks::new(options.hooks.clone(), emitter.clone()),
            shell: super::shell::Shell::default(),
            diagnostics: super::diagnostics::Diagnostics::new(options.lsp.clone()),
            provider: setup.provider,
            registry: setup.registry,
            tool_ctx: setup.tool_ctx,
            options: setup.options,
            events,
        };
        if !child {
            super::background::watch(&core.tool_ctx, emitter);
        }
        let startup = Startup {
            refused_tools,
            checkpoint_problem,
            child,
        };
        (core, startup)
    }

    /// Tells frontends what the core starts with and starts the probe. Returns the run a
    /// crashed host left open with the calls it left open, for the op loop to answer first.
    pub(super) fn start_up(
        &mut self,
        startup: Startup,
        recovery: Option<Recovery>,
    ) -> Option<(Recovery, Vec<CallId>)> {
        // Before any open call is called interrupted, a command group an earlier run left
        // recorded that is still alive is killed: its effect must end before the model is told.
        self.kill_left_groups();
        // A host that knows which calls had started answers the open calls itself (see
        // `recovery`); otherwise the load's "interrupted, outcome unknown" results stand.
        let recovery = recovery.map(|r| (r, self.store.session.reopen_repaired()));
        self.skills.restore(self.store.session.messages());
        for call in self.store.session.repaired_calls() {
            self.emit(Event::Warning {
                message: format!(
                    "tool call {call} was interrupted by an earlier exit; its outcome is unknown"
                ),
            });
        }
        self.upkeep.start_probe();
        self.emit(self.configured());
        if let Some(warning) = self.delegate.refusal() {
            self.emit(warning);
        }
        self.restore_history();
        if let Some(notice) = super::background::resumed(&self.store.session) {
            self.emit(notice);
        }
        for warning in self.skills.warnings() {
            self.emit(Event::Warning {
                message: warning.clone(),
            });
        }
        for name in startup.refused_tools {
            self.emit(Event::Warning {
                message: format!(
                    "the {name} tool is already taken by another tool; the model cannot load skills"
                ),
            });
        }
        self.emit(self.upkeep.window_set());
        // After the restored history: the goal it holds, disarmed.
        self.goal.start(self.store.session.messages());
        if let Some(problem) = startup.checkpoint_problem {
            self.emit(Event::Warning {
                message: format!("ignoring the saved compaction checkpoint: {problem}"),
            });
        }
        if let Err(e) = self.upkeep.reload_memory() {
            self.emit(Event::Error { message: e });
        }
        self.report_context();
        self.mcp.notices();
        // Last of the start-up events: the profile, with plan mode when the session starts in it.
        let session = &self.store.session;
        self.plan.restore(session.messages(), session.id());
        self.set_plan(self.options.plan && !startup.child);
        recovery
    }

    /// Sends the session's history to frontends, when it has any (a resume, a fork).
    pub(super) fn restore_history(&self) {
        let session = &self.store.session;
        if !session.messages().is_empty() {
            self.emit(Event::HistoryRestored {
                entries: history::entries(session, &self.tool_ctx.secrets, &self.registry),
            });
        }
    }

    /// Kills the process groups of calls a previous run of this session left recorded as
    /// running (see `session::running`), if they are still alive and one of our supervisors
    /// leads them, and says so.
    fn kill_left_groups(&self) {
        let left = crate::session::running::take(&self.tool_ctx.workspace, self.store.session.id());
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
}

/// The main core's system prompt: the workspace's, the memory rules and, when the session has
/// skills, their section (declaring the skills tool); then the same in the small profile's
/// short form. Returns the names the skills tool could not take.
fn main_prompt(setup: &Setup) -> (String, String, Vec<String>) {
    let workspace = &setup.tool_ctx.workspace;
    let mut full = format!(
        "{}\n\n{}",
        prompt::system_prompt(workspace),
        crate::memory::PROMPT_RULES
    );
    // A small model takes a file the prompt names for one to use: the memory line goes only
    // to a workspace that has memory (it named `MiniCode.md` as a search path otherwise).
    let mut small = prompt::small_system_prompt(workspace);
    if has_memory(workspace) {
        small.push_str("\n\n");
        small.push_str(crate::memory::SHORT_PROMPT_RULES);
    }
    let nested = crate::memory::nested(workspace);
    let mut sections = Vec::new();
    sections.extend(crate::memory::nested_section(&nested));
    let catalog = &setup.options.skills;
    let mut refused = Vec::new();
    if let Some(section) = prompt::skills_section(catalog) {
        sections.push(section);
        refused = declare_skills(&setup.registry, catalog);
    }
    for section in sections {
        for prompt in [&mut full, &mut small] {
            prompt.push_str("\n\n");
            prompt.push_str(&section);
        }
    }
    (full, small, refused)
}

/// Whether the workspace has a root memory file (`MiniCode.md` or `AGENTS.md`) at start.
fn has_memory(workspace: &std::path::Path) -> bool {
    [crate::memory::FILE_NAME, crate::memory::AGENTS_FILE]
        .iter()
        .any(|name| workspace.join(name).is_file())
}

/// Declares the `skill` tool; returns the names another group already holds.
fn declare_skills(registry: &Registry, catalog: &Arc<crate::tools::skills::Skills>) -> Vec<String> {
    registry.set_group(crate::tools::skills::GROUP, vec![catalog.tool()])
}
