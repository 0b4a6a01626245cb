//! Agent events into UI state: what the core reported becomes transcript entries, the
//! activity shown in the status bar, and (when a turn completes) the next queued prompt. A
//! resumed session's transcript arrives the same way, as one `HistoryRestored` event.
//!
//! Part of `update`; no I/O and no decisions that belong to the core.

use std::time::Duration;

use super::live::Running;
use super::state::{Activity, Effect, Hint, PendingApproval, State};
use super::transcript::{Kind, Level, Reply, ToolEntry};
use crate::protocol::{Event, HistoryEntry, SkillEntry, TurnEnd, TurnStats};

impl State {
    /// Rebuilds the transcript of a resumed session from the entries the core restored.
    fn restore(&mut self, entries: Vec<HistoryEntry>) {
        for entry in entries {
            match entry {
                HistoryEntry::User { text } => {
                    self.draft.remember(&text);
                    self.transcript.push(Kind::User(text));
                }
                HistoryEntry::Assistant { text } => {
                    self.transcript.push(Kind::Assistant(Reply::new(&text)));
                }
                HistoryEntry::Goal { text } => self.notice(Level::Info, format!("◆ {text}")),
                HistoryEntry::ToolCall {
                    call,
                    tool,
                    summary,
                    status,
                    output,
                    ..
                } => {
                    let mut t = ToolEntry::new(call, tool, summary);
                    t.status = status;
                    t.output = output;
                    self.transcript.push(Kind::Tool(t));
                }
            }
        }
    }

    /// Routes one core event to the handler of its group; only the end of a turn can ask
    /// for effects (the next queued prompt). The routing is exhaustive so that a new event
    /// must be given a group; each group's handler ignores the events of the others.
    pub(crate) fn agent(&mut self, e: Event) -> Vec<Effect> {
        match e {
            Event::TurnEnded { end, stats, .. } => return self.turn_ended(end, *stats),
            e @ (Event::SessionConfigured { .. }
            | Event::ContextWindowSet { .. }
            | Event::ServerUnreachable { .. }
            | Event::ContextUsage { .. }
            | Event::MemoryLoaded { .. }
            | Event::HistoryRestored { .. }) => self.session_event(e),
            Event::SandboxChanged { profile } => {
                let was_plan = self.sandbox.as_ref().is_some_and(|p| p.plan_file.is_some());
                match (&profile.plan_file, was_plan) {
                    (Some(file), false) => self.notice(
                        Level::Info,
                        format!("plan mode on: no changes but the plan file {file} (/plan off)"),
                    ),
                    (None, true) => self.notice(Level::Info, "plan mode off"),
                    _ => {}
                }
                self.sandbox = Some(profile);
                self.refresh_header();
            }
            e @ (Event::TurnStarted { .. }
            | Event::ModelRequestStarted { .. }
            | Event::ReasoningDelta { .. }
            | Event::TextDelta { .. }
            | Event::AssistantMessage { .. }) => self.reply_event(e),
            e @ (Event::ToolCallBegan { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ToolCallEnded { .. }) => self.tool_event(e),
            e @ (Event::ApprovalRequested { .. } | Event::ApprovalDecided { .. }) => {
                self.approval_event(e)
            }
            e @ (Event::SubagentStarted { .. }
            | Event::SubagentProgress { .. }
            | Event::SubagentEnded { .. }) => self.subagent_event(e),
            e @ (Event::Retrying { .. }
            | Event::Warning { .. }
            | Event::Hook { .. }
            | Event::Error { .. }
            | Event::McpServers { .. }
            | Event::Compacted { .. }
            | Event::SkillLoaded { .. }
            | Event::ModelsListed { .. }
            | Event::SkillsListed { .. }) => self.notice_event(e),
            Event::ModelSwitched { previous, model } => {
                let text = format!("model switched to {model} (was {previous})");
                self.notice(Level::Info, super::wrap::sanitize(&text));
                self.model = model;
                self.refresh_header();
            }
            e @ (Event::RewindList { .. } | Event::Rewound { .. }) => self.rewind_event(e),
            Event::SessionsListed { sessions } => {
                self.sessions_listed(sessions, std::time::SystemTime::now());
            }
            Event::PathCompletions { prefix, paths } => self.path_completions(prefix, paths),
            Event::BackgroundChanged { processes } => self.background_changed(processes),
            e @ (Event::GoalChanged { .. }
            | Event::GoalStatus { .. }
            | Event::GoalRoundStarted { .. }
            | Event::GoalRefused { .. }
            | Event::GoalRunEnded { .. }
            | Event::SessionForked { .. }) => self.goal_event(e),
            Event::ShutdownComplete => {}
        }
        Vec::new()
    }

    /// The session and its context: what the header shows, and a resumed transcript.
    fn session_event(&mut self, e: Event) {
        match e {
            Event::SessionConfigured {
                session_id,
                session_path,
                model,
                context_window,
                ..
            } => {
                self.sessions_seen += 1;
                // The session `/resume` asked for: its history replaces this transcript (a
                // resume that failed left the transcript as it was).
                if self
                    .resuming
                    .take_if(|id| session_id.starts_with(id.as_str()))
                    .is_some()
                {
                    self.reset_view();
                }
                if self.sessions_seen > 1 {
                    self.notice(Level::Info, format!("new session {session_id}"));
                }
                self.session_id = Some(session_id);
                self.session_path = Some(session_path);
                self.model = model;
                self.context_window = context_window;
                self.refresh_header();
            }
            Event::ContextWindowSet { tokens, source } => {
                self.context_window = tokens;
                self.context_window_source = Some(source);
                self.refresh_header();
            }
            Event::ServerUnreachable { message } => {
                self.server_problem = Some(message);
                self.refresh_header();
            }
            Event::ContextUsage { tokens, window } => {
                // Whenever it comes (after a request, after compaction, at session start).
                self.context_tokens = Some(tokens);
                if window > 0 {
                    self.context_window = window;
                }
            }
            Event::MemoryLoaded { path, tokens } => {
                match self.memory.iter_mut().find(|(p, _)| *p == path) {
                    Some(entry) => entry.1 = tokens,
                    None => self.memory.push((path.clone(), tokens)),
                }
                if self.header_live {
                    self.refresh_header();
                } else {
                    let text = format!("project memory loaded from {path} ({tokens} tokens)");
                    self.notice(Level::Info, text);
                }
            }
            Event::HistoryRestored { entries } => self.restore(entries),
            _ => {}
        }
    }

    /// The model's side of a turn: waiting, reasoning, and the streamed then final reply.
    fn reply_event(&mut self, e: Event) {
        match e {
            Event::TurnStarted { .. } => {
                self.busy = true;
                self.activity = Activity::Waiting;
            }
            Event::ModelRequestStarted { .. } => self.activity = Activity::Waiting,
            Event::ReasoningDelta { text } => {
                self.activity = Activity::Streaming;
                self.reasoning_delta(&text);
            }
            Event::TextDelta { text } => self.text_delta(&text),
            Event::AssistantMessage { text } => self.assistant_message(text),
            _ => {}
        }
    }

    /// Appends streamed text to the reply being streamed, opening one if there is none.
    fn text_delta(&mut self, text: &str) {
        self.activity = Activity::Streaming;
        let i = match self.streaming {
            Some(i) => i,
            None => {
                self.close_reasoning();
                self.transcript.push(Kind::Assistant(Reply::default()));
                let i = self.transcript.len() - 1;
                self.streaming = Some(i);
                i
            }
        };
        self.transcript.edit(i, |k| {
            if let Kind::Assistant(r) = k {
                r.push(text);
            }
        });
    }

    /// The final text wins over what was streamed; an empty reply adds no entry.
    fn assistant_message(&mut self, text: String) {
        self.close_reasoning();
        match self.streaming.take() {
            Some(i) => self.transcript.edit(i, |k| {
                if let Kind::Assistant(r) = k {
                    if r.text != text {
                        *r = Reply::new(&text);
                    }
                    r.finished = true;
                }
            }),
            None if !text.trim().is_empty() => {
                self.transcript.push(Kind::Assistant(Reply::new(&text)))
            }
            None => {}
        }
    }

    /// A tool call's entry: opened running, fed its live output, closed with its result.
    fn tool_event(&mut self, e: Event) {
        match e {
            Event::ToolCallBegan {
                call,
                tool,
                summary,
                ..
            } => {
                self.close_reasoning();
                self.streaming = None;
                self.activity = Activity::Tool(tool.clone());
                let mut t = ToolEntry::new(call, tool, summary);
                t.running = Some(Box::new(Running::new(self.now)));
                self.transcript.push(Kind::Tool(t));
                self.running_tool = Some(self.transcript.len() - 1);
            }
            Event::ToolOutputDelta { call, text } => {
                if let Some(i) = self.tool_index(&call) {
                    self.transcript.edit(i, |k| {
                        if let Kind::Tool(t) = k
                            && let Some(run) = &mut t.running
                        {
                            run.tail.push(&text);
                        }
                    });
                }
            }
            Event::ToolCallEnded {
                call,
                status,
                output,
            } => {
                if let Some(i) = self.transcript.find_tool(&call) {
                    self.transcript.edit(i, |k| {
                        if let Kind::Tool(t) = k {
                            t.status = Some(status);
                            t.output = output;
                            t.running = None;
                        }
                    });
                }
                self.running_tool = None;
                self.activity = Activity::Waiting;
            }
            _ => {}
        }
    }

    /// The entry of tool call `call`: the running one when it matches (the common case for
    /// live output, no search), else found by its id.
    fn tool_index(&self, call: &str) -> Option<usize> {
        let is_call = |&i: &usize| match self.transcript.entries().get(i).map(|e| e.kind()) {
            Some(Kind::Tool(t)) => t.call == call,
            _ => false,
        };
        self.running_tool
            .filter(is_call)
            .or_else(|| self.transcript.find_tool(call))
    }

    /// An approval asked (shown on the call's entry, armed after the guard delay) or decided.
    fn approval_event(&mut self, e: Event) {
        match e {
            Event::ApprovalRequested {
                call,
                tool,
                request,
                always,
            } => {
                if let Some(i) = self.transcript.find_tool(&call) {
                    self.transcript.edit(i, |k| {
                        if let Kind::Tool(t) = k {
                            t.approval = Some(request);
                        }
                    });
                }
                self.activity = Activity::Approval(tool.clone());
                let armed_at = self.now + self.approval_guard;
                self.approval = Some(PendingApproval {
                    call,
                    tool,
                    always,
                    typing_reason: false,
                    stashed_draft: String::new(),
                    armed_at,
                });
            }
            Event::ApprovalDecided { call, decision } => {
                if let Some(i) = self.transcript.find_tool(&call) {
                    let tool = match self.transcript.entries()[i].kind() {
                        Kind::Tool(t) => t.tool.clone(),
                        _ => String::new(),
                    };
                    self.activity = Activity::Tool(tool);
                    let now = self.now;
                    self.transcript.edit(i, |k| {
                        if let Kind::Tool(t) = k {
                            // It runs from now on (a denied call does not run).
                            t.running = decision.runs().then(|| Box::new(Running::new(now)));
                            t.decision = Some(decision);
                        }
                    });
                }
                if self.approval.as_ref().is_some_and(|p| p.call == call) {
                    self.approval = None;
                }
            }
            _ => {}
        }
    }

    /// Sub-agents started by a `delegate` call, and their progress.
    fn subagent_event(&mut self, e: Event) {
        match e {
            Event::SubagentStarted { call, task, .. } => self.subagent_started(call, task),
            Event::SubagentProgress {
                call,
                task,
                rounds,
                tool_calls,
                elapsed_ms,
            } => self.subagent_update(&call, &task, |c| {
                c.rounds = rounds;
                c.tool_calls = tool_calls;
                c.elapsed = Duration::from_millis(elapsed_ms);
            }),
            Event::SubagentEnded {
                call,
                task,
                status,
                rounds,
                tool_calls,
                elapsed_ms,
                error,
            } => self.subagent_update(&call, &task, |c| {
                c.ended = Some(status);
                c.rounds = rounds;
                c.tool_calls = tool_calls;
                c.elapsed = Duration::from_millis(elapsed_ms);
                c.error = error;
            }),
            _ => {}
        }
    }

    /// Events that only become a notice line in the transcript.
    fn notice_event(&mut self, e: Event) {
        match e {
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => {
                let secs = delay_ms as f64 / 1000.0;
                let text = format!("retrying ({attempt}/{max_attempts}) in {secs:.1} s: {reason}");
                self.notice(Level::Warning, text);
            }
            Event::Warning { message } => self.notice(Level::Warning, message),
            // A dim line per run, so what hooks do is never hidden.
            Event::Hook {
                hook, outcome, ms, ..
            } => self.notice(Level::Info, crate::protocol::hook_line(&hook, outcome, ms)),
            Event::Error { message } => self.notice(Level::Error, message),
            Event::McpServers { servers } => {
                self.notice(Level::Info, super::mcp::listing(&servers))
            }
            Event::Compacted {
                tokens_before,
                tokens_after,
                messages_summarized,
            } => {
                let summarised = plural(messages_summarized as u64, "message");
                let (before, after) = (tokens_before, tokens_after);
                let text = format!(
                    "context compacted: {before} → {after} tokens ({summarised} summarised)"
                );
                self.notice(Level::Info, text);
            }
            Event::SkillLoaded {
                name,
                source,
                trigger,
            } => {
                let why = trigger.map_or(String::new(), |word| format!(" (trigger: {word})"));
                let text = format!("skill {name} loaded from {source}{why}");
                self.notice(Level::Info, text);
            }
            Event::SkillsListed { skills } => self.notice(Level::Info, skills_text(&skills)),
            Event::ModelsListed { current, models } => {
                self.notice(Level::Info, models_text(&current, &models));
            }
            _ => {}
        }
    }

    pub(crate) fn turn_ended(&mut self, end: TurnEnd, stats: TurnStats) -> Vec<Effect> {
        self.close_reasoning();
        self.streaming = None;
        self.running_tool = None;
        self.busy = false;
        self.activity = Activity::Idle;
        self.approval = None;
        if self.hint == Some(Hint::Interrupting) {
            self.hint = None;
        }
        match &end {
            TurnEnd::Completed => {}
            TurnEnd::Interrupted => {
                let what = self
                    .interrupted_during
                    .take()
                    .unwrap_or_else(|| "the turn".into());
                self.notice(Level::Warning, format!("interrupted ({what})"));
            }
            TurnEnd::RoundLimit { rounds } => {
                self.notice(
                    Level::Warning,
                    format!("stopped after {rounds} tool rounds (the summary is above)"),
                );
            }
            TurnEnd::Failed { error } => self.notice(Level::Error, format!("turn failed: {error}")),
        }
        self.interrupted_during = None;
        // A turn that called nothing (e.g. a /compact with nothing to compact) keeps the last
        // turn's figures and adds no empty stats line.
        if stats.model_calls > 0 || stats.summary_calls > 0 || stats.tool_calls > 0 {
            let tokens = (!stats.tokens.unavailable()).then_some(stats.tokens.total_tokens);
            self.last_turn = Some((tokens, stats.wall));
            self.last_cache = stats.tokens.cached_percent;
            self.transcript.push(Kind::Stats(stats_line(&stats)));
        }
        // Only a completed turn sends the next queued prompt by itself; after an interrupt or
        // a failure the queue waits (`queue_paused`) until Enter on an empty draft.
        if end == TurnEnd::Completed
            && let Some(next) = self.queue.pop_front()
        {
            return self.submit(next);
        }
        Vec::new()
    }
}

/// The `/skills` answer: one line per skill (name, state, source, description).
fn skills_text(skills: &[SkillEntry]) -> String {
    if skills.is_empty() {
        return "no skills: put one in .minicode/skills/<name>/SKILL.md (trusted workspaces) or \
                ~/.config/minicode/skills/<name>/SKILL.md"
            .to_string();
    }
    let mut text = format!("{} skills:", skills.len());
    for s in skills {
        text.push_str(&format!(
            "\n{} · {} · {} — {}",
            s.name,
            s.state.label(),
            s.source,
            s.description
        ));
    }
    text
}

/// One line of per-turn statistics.
pub(crate) fn stats_line(s: &TurnStats) -> String {
    let mut parts = vec![format!("{:.1} s", s.wall.as_secs_f64())];
    parts.push(plural(s.model_calls as u64, "model call"));
    if s.tool_calls > 0 {
        parts.push(plural(s.tool_calls as u64, "tool call"));
    }
    let t = &s.tokens;
    if t.unavailable() {
        parts.push("tokens unavailable".into());
    } else {
        let partial = if t.partial() { ", partial" } else { "" };
        parts.push(format!(
            "{} tokens (in {} / out {}{partial})",
            t.total_tokens, t.input_tokens, t.output_tokens
        ));
    }
    if let Some(pct) = t.cached_percent {
        parts.push(format!("{pct}% of the prompt from the cache"));
    }
    if s.summary_calls > 0 {
        let tokens = if s.summary_tokens.unavailable() {
            "tokens unavailable".to_string()
        } else {
            format!("{} tokens", s.summary_tokens.total_tokens)
        };
        parts.push(format!(
            "{} ({tokens})",
            plural(s.summary_calls as u64, "summary call")
        ));
    }
    if s.subagents > 0 {
        let tokens = if s.subagent_tokens.unavailable() {
            "tokens unavailable".to_string()
        } else {
            format!("{} tokens", s.subagent_tokens.total_tokens)
        };
        parts.push(format!(
            "{} ({}, {tokens})",
            plural(s.subagents as u64, "sub-agent"),
            plural(s.subagent_calls as u64, "model call")
        ));
    }
    parts.join(" · ")
}

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `/model`'s list of the server's models, the one in use marked.
fn models_text(current: &str, models: &[String]) -> String {
    if models.is_empty() {
        return "the server lists no models".to_string();
    }
    let mut text = String::from("models on the server (/model NAME switches):");
    for model in models {
        let mark = if model == current { "*" } else { " " };
        text.push_str(&format!("\n{mark} {}", super::wrap::sanitize(model)));
    }
    if !models.iter().any(|m| m == current) {
        text.push_str(&format!(
            "\n(in use: {}, not listed)",
            super::wrap::sanitize(current)
        ));
    }
    text
}
