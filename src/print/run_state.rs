//! The one-shot run's bookkeeping while events arrive: what to print for each event group, and
//! what the end of the run needs (the answer, the session, the goal's figures). `print::run`
//! only feeds it events; nothing here sends ops besides approvals and the shutdown.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use tokio::sync::watch;

use super::live::Tail;
use super::report::{describe_end_waited, report};
use super::{
    EXIT_REFUSED, EXIT_SIGINT, GoalRun, JsonResult, Output, OutputFormat, Signal, WindowJson, ask,
    finish_goal, status_word,
};
use crate::chat::ApprovalRequest;
use crate::protocol::{Event, Op, OpSender, TurnEnd, TurnStats, WindowSource};
use crate::sanitize::{self, sanitize};

/// Everything the event loop remembers between events.
pub(super) struct RunState {
    ops: OpSender,
    format: OutputFormat,
    goal_mode: bool,
    stdout_tty: bool,
    /// Text streams to a terminal stdout as it arrives.
    live_stdout: bool,
    /// A running command's last output line, on a terminal stderr only.
    live_stderr: bool,
    /// Reasoning on stderr (`--show-reasoning`).
    show_reasoning: bool,
    run: GoalRun,
    stopping: bool,
    session_id: String,
    session_path: String,
    last_text: String,
    /// Deltas are sanitised one by one; the stream carries the context a joiner needs.
    live: sanitize::Stream,
    thought: sanitize::Stream,
    /// A run of reasoning is open on stderr.
    thinking: bool,
    window: WindowJson,
    sandbox: Option<crate::protocol::Profile>,
    tail: Tail,
    out: io::StdoutLock<'static>,
    err: io::StderrLock<'static>,
    ended: Option<(TurnEnd, TurnStats)>,
    /// Calls refused because nobody could be asked (this frontend answered
    /// `Decision::NoTerminal`): their end is told by its reason alone.
    unasked: std::collections::HashSet<crate::protocol::CallId>,
    /// `--output-schema`, and what checking the answer found: the parsed answer, or why it
    /// failed after the second try; `retried` once the second try was asked for.
    pub(super) schema: Option<super::OutputSchema>,
    structured: Option<serde_json::Value>,
    schema_error: Option<String>,
    retried: bool,
    /// Approvals a script answers (`--approval-answer`).
    answers: super::Answers,
    /// Time spent waiting for the user to answer approval questions, told apart from the
    /// run's own time in the closing line.
    waited: std::sync::Arc<std::sync::Mutex<std::time::Duration>>,
}

impl RunState {
    pub(super) fn new(
        ops: OpSender,
        format: OutputFormat,
        goal_mode: bool,
        show_reasoning: bool,
        answers: super::Answers,
    ) -> Self {
        let stdout_tty = io::stdout().is_terminal();
        RunState {
            ops,
            format,
            goal_mode,
            stdout_tty,
            live_stdout: format == OutputFormat::Text && stdout_tty,
            live_stderr: format != OutputFormat::StreamJson && io::stderr().is_terminal(),
            show_reasoning: show_reasoning && format != OutputFormat::StreamJson,
            run: GoalRun::default(),
            stopping: false,
            session_id: String::new(),
            session_path: String::new(),
            last_text: String::new(),
            live: sanitize::Stream::default(),
            thought: sanitize::Stream::default(),
            thinking: false,
            window: WindowJson {
                tokens: 0,
                source: WindowSource::Default,
            },
            sandbox: None,
            tail: Tail::default(),
            out: io::stdout().lock(),
            err: io::stderr().lock(),
            ended: None,
            unasked: Default::default(),
            schema: None,
            structured: None,
            schema_error: None,
            retried: false,
            answers,
            waited: Default::default(),
        }
    }

    /// Takes one event; `false` when the run is over and the loop must stop.
    pub(super) fn handle(&mut self, event: Event) -> bool {
        self.before(&event);
        match event {
            Event::SessionConfigured { .. } => self.configured(event),
            Event::ContextWindowSet { tokens, source } => {
                self.window = WindowJson { tokens, source };
            }
            Event::SandboxChanged { profile } => self.sandbox = Some(profile),
            Event::ReasoningDelta { text } if self.show_reasoning => self.reasoning(&text),
            Event::TextDelta { text } if self.live_stdout => self.text(&text),
            Event::AssistantMessage { text } => self.answer(text),
            Event::ApprovalRequested {
                call,
                tool,
                request,
                always,
            } => self.approval(call, tool, (request, always)),
            Event::ToolCallBegan { .. } => self.tool_began(&event),
            Event::ToolOutputDelta { text, .. } if self.live_stderr => {
                self.tail
                    .push(&mut self.err, &text, std::time::Instant::now());
            }
            Event::TurnStarted { .. } => {}
            Event::TurnEnded { end, stats, .. } => self.turn_ended(end, *stats),
            Event::GoalChanged { .. }
            | Event::GoalStatus { .. }
            | Event::GoalRoundStarted { .. }
            | Event::GoalRefused { .. }
            | Event::GoalRunEnded { .. } => self.goal(event),
            Event::ShutdownComplete => return false,
            Event::ApprovalDecided {
                call,
                decision: crate::protocol::Decision::NoTerminal,
            } => {
                self.unasked.insert(call);
            }
            Event::ToolCallEnded { ref call, .. } if self.unasked.remove(call) => {
                self.unasked_ended(&event);
            }
            Event::ToolCallEnded { .. }
            | Event::SubagentStarted { .. }
            | Event::SubagentEnded { .. }
            | Event::Retrying { .. }
            | Event::Warning { .. }
            | Event::Hook { .. }
            | Event::Error { .. }
            | Event::Compacted { .. }
            | Event::MemoryLoaded { .. }
            | Event::SkillLoaded { .. } => self.report(&event),
            // Not shown in text or json output (stream-json printed them already). A resumed
            // conversation is not repeated: the user asked for this turn's answer.
            Event::HistoryRestored { .. }
            | Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::SessionForked { .. }
            | Event::ModelRequestStarted { .. }
            | Event::ApprovalDecided { .. }
            | Event::McpServers { .. }
            | Event::ServerUnreachable { .. }
            | Event::SubagentProgress { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ContextUsage { .. }
            | Event::ModelsListed { .. }
            | Event::ModelSwitched { .. }
            | Event::RewindList { .. }
            | Event::Rewound { .. }
            | Event::SessionsListed { .. }
            | Event::PathCompletions { .. }
            | Event::BackgroundChanged { .. }
            | Event::SkillsListed { .. } => {}
        }
        if self.goal_mode && !self.stopping && self.run.over() {
            self.stopping = true;
            self.ops.send(Op::Shutdown);
        }
        true
    }

    /// The session's id, file and window, from `SessionConfigured`.
    fn configured(&mut self, event: Event) {
        if let Event::SessionConfigured {
            session_id,
            session_path,
            context_window,
            ..
        } = event
        {
            self.session_id = session_id;
            self.session_path = session_path;
            self.window.tokens = context_window;
        }
    }

    /// The end of a call no one was there to approve: said on stderr (stream-json printed it).
    fn unasked_ended(&mut self, event: &Event) {
        if self.format != OutputFormat::StreamJson {
            super::report::unasked(&mut self.err, event);
        }
    }

    /// What every event does first: erase the tail, print the stream-json line, close a
    /// reasoning block that this event ends.
    fn before(&mut self, event: &Event) {
        if !matches!(event, Event::ToolOutputDelta { .. }) {
            self.tail.clear(&mut self.err);
        }
        if self.format == OutputFormat::StreamJson
            && let Ok(line) = serde_json::to_string(event)
        {
            let line = self.json_line(line);
            let _ = writeln!(self.out, "{line}");
            let _ = self.out.flush();
        }
        if self.thinking
            && matches!(
                event,
                Event::TextDelta { .. }
                    | Event::AssistantMessage { .. }
                    | Event::ToolCallBegan { .. }
                    | Event::TurnEnded { .. }
            )
        {
            // The reasoning ended: close its block before anything else reaches stderr.
            self.thinking = false;
            self.thought = sanitize::Stream::default();
            let _ = writeln!(self.err, "\n");
        }
    }

    /// A JSON line as it goes to stdout: escaped for a terminal, exact for a script.
    fn json_line(&self, line: String) -> String {
        if self.stdout_tty {
            sanitize::json_escaped(&line)
        } else {
            line
        }
    }

    /// One stderr line for the event, except in stream-json (which printed the event itself).
    fn report(&mut self, event: &Event) {
        if self.format != OutputFormat::StreamJson {
            report(&mut self.err, event);
        }
    }

    fn reasoning(&mut self, text: &str) {
        if !self.thinking {
            self.thinking = true;
            let _ = writeln!(self.err, "thinking:");
        }
        let _ = self.err.write_all(self.thought.push(text).as_bytes());
        let _ = self.err.flush();
    }

    fn text(&mut self, text: &str) {
        let text = self.live.push(text);
        let _ = self.out.write_all(text.as_bytes());
        if text.contains('\n') {
            let _ = self.out.flush();
        }
    }

    fn answer(&mut self, text: String) {
        if self.live_stdout && !text.is_empty() {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
        }
        self.last_text = text;
    }

    /// Asked on the side, so a signal still ends the turn while the prompt waits; a turn that
    /// ended meanwhile simply never gets this answer.
    fn approval(
        &mut self,
        call: String,
        tool: String,
        (request, always): (ApprovalRequest, Option<String>),
    ) {
        let ops = self.ops.clone();
        if let Some(decision) = self.answers.decide(&tool) {
            ops.send(Op::Decide { call, decision });
            return;
        }
        let waited = self.waited.clone();
        tokio::spawn(async move {
            let asked = std::time::Instant::now();
            let decision = ask(&tool, &request, always.as_deref()).await;
            *crate::sync::lock(&waited) += asked.elapsed();
            ops.send(Op::Decide { call, decision });
        });
    }

    fn tool_began(&mut self, event: &Event) {
        // Text beside tool calls is narration, not the answer.
        self.last_text.clear();
        if self.format != OutputFormat::StreamJson {
            report(&mut self.err, event);
            self.tail.start(std::time::Instant::now());
        }
    }

    fn turn_ended(&mut self, end: TurnEnd, stats: TurnStats) {
        self.run.stats.merge(&stats);
        if !self.goal_mode
            && end == TurnEnd::Completed
            && let Some(schema) = &self.schema
        {
            match schema.check(&self.last_text) {
                Ok(value) => self.structured = Some(value),
                Err(errors) if !self.retried => {
                    // One second try, with the errors; its turn ends the run.
                    self.retried = true;
                    let note = format!("minicode: {errors}; asking the model once more");
                    let _ = writeln!(self.err, "{}", sanitize(&note));
                    self.ops.send(Op::Submit(schema.retry(&errors)));
                    self.last_text.clear();
                    return;
                }
                Err(errors) => self.schema_error = Some(errors),
            }
        }
        self.ended = Some((end, stats));
        if !self.goal_mode {
            self.ops.send(Op::Shutdown);
        }
    }

    /// Goal events: the run's figures, and their lines on stderr.
    fn goal(&mut self, event: Event) {
        match event {
            Event::GoalChanged {
                ref goal, armed, ..
            } => {
                self.run.goal = goal.clone();
                self.run.armed = armed;
                self.run.started |= armed;
                self.report(&event);
            }
            Event::GoalStatus {
                ref goal, armed, ..
            } => {
                self.run.goal = goal.clone();
                self.run.armed = armed;
                // A goal run that was going and is now disarmed is over: its closing line
                // says the same, so it is not said twice.
                let ending = self.goal_mode && self.run.started && !armed;
                self.run.started |= armed;
                if !ending {
                    self.report(&event);
                }
            }
            Event::GoalRoundStarted { .. } => {
                self.run.rounds += 1;
                self.report(&event);
            }
            Event::GoalRefused { message } => self.run.refused = Some(message),
            Event::GoalRunEnded { goal, .. } => {
                (self.run.goal, self.run.armed, self.run.ended) = (goal, false, true);
            }
            _ => {}
        }
    }

    /// The end of the run: the closing lines, the answer or JSON, and the exit status.
    pub(super) fn finish(
        mut self,
        interrupted_by: &watch::Receiver<Option<Signal>>,
        resume_flags: &str,
    ) -> ExitCode {
        if let Some(message) = &self.run.refused {
            let _ = writeln!(self.err, "minicode: goal: {}", sanitize(message));
            return ExitCode::from(EXIT_REFUSED);
        }
        if self.goal_mode {
            let ended = self.ended.take();
            let output = Output {
                format: self.format,
                stdout_tty: self.stdout_tty,
                live_stdout: self.live_stdout,
                last_text: &self.last_text,
                session_id: &self.session_id,
                session_path: &self.session_path,
                window: self.window,
                sandbox: self.sandbox.as_ref(),
                resume_flags,
            };
            return finish_goal(&self.run, ended, output, *interrupted_by.borrow());
        }
        let Some((mut end, mut stats)) = self.ended.take() else {
            let _ = writeln!(self.err, "minicode: the agent stopped unexpectedly");
            return ExitCode::FAILURE;
        };
        if self.retried {
            // Both tries count.
            stats = self.run.stats;
        }
        if let Some(error) = self.schema_error.take() {
            end = TurnEnd::Failed { error };
        }
        let waited = *crate::sync::lock(&self.waited);
        let line = describe_end_waited(&end, &stats, waited);
        let _ = writeln!(self.err, "{}", sanitize(&line));
        // A session that never got a message was removed on shutdown: name no file that is gone.
        let kept = std::path::Path::new(&self.session_path).exists();
        if !matches!(end, TurnEnd::Completed | TurnEnd::RoundLimit { .. }) {
            self.last_text.clear();
        }
        self.print_answer(&end, &stats, kept);
        let _ = self.out.flush();
        if kept {
            let id = &self.session_id;
            let _ = writeln!(
                self.err,
                "session {id} (resume with: minicode{resume_flags} --session {id})"
            );
        }
        match (end, *interrupted_by.borrow()) {
            (TurnEnd::Completed, _) => ExitCode::SUCCESS,
            (TurnEnd::Interrupted, Some(Signal::Interrupt)) => ExitCode::from(EXIT_SIGINT),
            _ => ExitCode::FAILURE,
        }
    }

    /// A prompt run's answer on stdout: the text (unless it streamed), or the JSON result.
    fn print_answer(&mut self, end: &TurnEnd, stats: &TurnStats, kept: bool) {
        match self.format {
            OutputFormat::Text if !self.live_stdout && !self.last_text.is_empty() => {
                let _ = writeln!(self.out, "{}", self.last_text);
            }
            OutputFormat::Json => {
                let error = match end {
                    TurnEnd::Failed { error } => Some(error.clone()),
                    TurnEnd::Interrupted => Some("interrupted".to_string()),
                    TurnEnd::RoundLimit { rounds } => {
                        Some(format!("reached the limit of {rounds} tool rounds"))
                    }
                    TurnEnd::Completed => None,
                };
                let result = JsonResult {
                    session_id: kept.then_some(self.session_id.as_str()),
                    result: &self.last_text,
                    status: status_word(end),
                    stats,
                    error,
                    context_window: self.window,
                    goal: self.run.goal.as_ref(),
                    sandbox: self.sandbox.as_ref(),
                    structured_output: self.structured.as_ref(),
                };
                if let Ok(line) = serde_json::to_string(&result) {
                    let line = self.json_line(line);
                    let _ = writeln!(self.out, "{line}");
                }
            }
            _ => {}
        }
    }
}
