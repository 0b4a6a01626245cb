//! The one-shot frontend: submits one prompt, turns core events into output, and decides the
//! exit status. stdout carries only the answer (or JSON); activity, approvals, retries and
//! stats go to stderr. Approvals are asked on the controlling terminal (`/dev/tty`) when there
//! is one, otherwise refused with a hint about `--yes`.
//!
//! Whatever reaches a terminal passes through [`crate::sanitize`]: streamed text on a terminal
//! stdout, JSON lines on a terminal stdout (as `\u` escapes, the same JSON value), and every
//! line on stderr. stdout that is not a terminal gets the model's bytes exactly, for scripts.

mod answers;
mod live;

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use serde::Serialize;
use tokio::sync::mpsc;

mod report;
mod run_state;
mod schema;

use crate::chat::ApprovalRequest;
use crate::protocol::WindowSource;
use crate::protocol::{AgentHandle, OpSender};
use crate::protocol::{Decision, Goal, GoalOp, GoalPhase, Op, TurnEnd, TurnStats};
use crate::sanitize::{self, sanitize};
pub(crate) use answers::{Answers, ScriptedAnswer};
pub(crate) use report::describe_end;
use run_state::RunState;
pub(crate) use schema::OutputSchema;

/// What a one-shot run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Task {
    /// One turn with this prompt.
    Prompt(String),
    /// `--goal`: set this goal and run it to its end.
    Goal {
        objective: String,
        max_rounds: Option<u32>,
    },
    /// `--goal-resume`: arm the session's goal and run it to its end.
    GoalResume { max_rounds: Option<u32> },
}

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// The final answer as Markdown text.
    #[default]
    Text,
    /// One JSON object at the end.
    Json,
    /// One JSON event per line as they happen.
    StreamJson,
}

/// The exit code after an interrupt by SIGINT (128 + 2), as shells expect.
pub(crate) const EXIT_SIGINT: u8 = 130;

/// The JSON object printed by `--output-format json` (README documents it: keep them in step).
#[derive(Serialize)]
struct JsonResult<'a> {
    /// `null` when the session left no file (it never received a message).
    session_id: Option<&'a str>,
    result: &'a str,
    /// `completed`, `round_limit`, `interrupted` or `failed`; `error` says why when not completed.
    status: &'static str,
    stats: &'a TurnStats,
    error: Option<String>,
    /// The context window the run used and where it came from.
    context_window: WindowJson,
    /// The session's goal as the run left it (absent when the session has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    goal: Option<&'a Goal>,
    /// The sandbox profile `bash` calls ran under (and the plan file in plan mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<&'a crate::protocol::Profile>,
    /// With `--output-schema`: the answer, parsed, once it matched the schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_output: Option<&'a serde_json::Value>,
}

/// Where a goal run stands, from the events seen so far.
#[derive(Default)]
struct GoalRun {
    /// The goal as last reported, and whether it is armed.
    goal: Option<Goal>,
    armed: bool,
    /// The goal was armed by this run's command (so "disarmed" now means it stopped).
    started: bool,
    /// The core said the goal run is over (`GoalRunEnded`).
    ended: bool,
    /// Why the goal command was refused.
    refused: Option<String>,
    /// Every round's figures added up.
    stats: TurnStats,
    rounds: u32,
}

impl GoalRun {
    /// The run is over: refused, or the core ended it.
    fn over(&self) -> bool {
        self.refused.is_some() || self.ended
    }
}

#[derive(Serialize, Clone, Copy)]
struct WindowJson {
    tokens: u64,
    source: WindowSource,
}

/// The plain status word of the JSON result.
fn status_word(end: &TurnEnd) -> &'static str {
    match end {
        TurnEnd::Completed => "completed",
        TurnEnd::RoundLimit { .. } => "round_limit",
        TurnEnd::Interrupted => "interrupted",
        TurnEnd::Failed { .. } => "failed",
    }
}

/// The exit code for a refused goal command (a usage/input error).
const EXIT_REFUSED: u8 = 2;

/// How a one-shot run prints and checks its outcome.
pub(crate) struct Options<'a> {
    pub(crate) format: OutputFormat,
    /// The flags that chose the model (e.g. `--demo`), repeated in the resume hint so resuming
    /// talks to the same model.
    pub(crate) resume_flags: &'a str,
    /// Stream the model's reasoning to stderr (it is never part of the answer on stdout).
    pub(crate) show_reasoning: bool,
    /// `--output-schema`: the answer must be JSON valid against it.
    pub(crate) schema: Option<OutputSchema>,
    /// `--approval-answer`: approvals a program answers instead of the terminal.
    pub(crate) answers: Answers,
    /// `--image`: sent with the prompt.
    pub(crate) images: Vec<crate::chat::Image>,
}

/// Runs `task` (one prompt, or a goal) and prints the outcome.
pub(crate) async fn run(handle: AgentHandle, task: Task, options: Options<'_>) -> ExitCode {
    let (ops, mut events) = handle.split();
    let interrupted_by = spawn_signal_watch(ops.clone());
    let goal_mode = !matches!(task, Task::Prompt(_));
    let Options {
        format,
        resume_flags,
        show_reasoning,
        schema,
        answers,
        images,
    } = options;
    ops.send(match task {
        Task::Prompt(prompt) => {
            let text = match &schema {
                Some(schema) => schema.instruct(&prompt),
                None => prompt,
            };
            if images.is_empty() {
                Op::Submit(text)
            } else {
                Op::SubmitImages { text, images }
            }
        }
        Task::Goal {
            objective,
            max_rounds,
        } => Op::Goal(GoalOp::Create {
            objective,
            max_rounds,
        }),
        Task::GoalResume { max_rounds } => Op::Goal(GoalOp::Resume {
            expected: None,
            max_rounds,
        }),
    });
    let mut state = RunState::new(ops, format, goal_mode, show_reasoning, answers);
    state.schema = schema;
    while let Some(event) = events.recv().await {
        if !state.handle(event) {
            break;
        }
    }
    state.finish(&interrupted_by, resume_flags)
}

/// What the end of a run prints, gathered for [`finish_goal`].
struct Output<'a> {
    format: OutputFormat,
    stdout_tty: bool,
    live_stdout: bool,
    last_text: &'a str,
    session_id: &'a str,
    session_path: &'a str,
    window: WindowJson,
    sandbox: Option<&'a crate::protocol::Profile>,
    resume_flags: &'a str,
}

/// The end of a goal run: the closing line, the answer or JSON, the resume hint, and the exit
/// status (0 when the goal is complete, 130 after SIGINT, 1 otherwise).
fn finish_goal(
    run: &GoalRun,
    last: Option<(TurnEnd, TurnStats)>,
    o: Output<'_>,
    signal: Option<Signal>,
) -> ExitCode {
    let mut out = io::stdout().lock();
    let mut err = io::stderr().lock();
    let (status, error) = goal_status(run, last.as_ref(), signal);
    let _ = writeln!(err, "{}", sanitize(&goal_closing(run)));
    let answer = if status == "completed" {
        o.last_text
    } else {
        ""
    };
    match o.format {
        OutputFormat::Text if !o.live_stdout && !answer.is_empty() => {
            let _ = writeln!(out, "{answer}");
        }
        OutputFormat::Json => {
            let kept = std::path::Path::new(o.session_path).exists();
            let result = JsonResult {
                session_id: kept.then_some(o.session_id),
                result: answer,
                status,
                stats: &run.stats,
                error,
                context_window: o.window,
                goal: run.goal.as_ref(),
                sandbox: o.sandbox,
                structured_output: None,
            };
            write_json_line(&mut out, &result, o.stdout_tty);
        }
        OutputFormat::Text | OutputFormat::StreamJson => {}
    }
    let _ = out.flush();
    goal_resume_hint(&mut err, &o, status);
    match (status, signal) {
        ("completed", _) => ExitCode::SUCCESS,
        (_, Some(Signal::Interrupt)) => ExitCode::from(EXIT_SIGINT),
        _ => ExitCode::FAILURE,
    }
}

/// How a goal run ended, as the JSON `status` word and `error`: the goal's own phase first,
/// then an interruption (of the last turn or by a signal), and otherwise a failure.
fn goal_status(
    run: &GoalRun,
    last: Option<&(TurnEnd, TurnStats)>,
    signal: Option<Signal>,
) -> (&'static str, Option<String>) {
    let phase = run.goal.as_ref().map(|g| g.phase);
    let interrupted = matches!(last, Some((TurnEnd::Interrupted, _))) || signal.is_some();
    match (phase, interrupted) {
        (Some(GoalPhase::Complete), _) => ("completed", None),
        (_, true) => ("interrupted", Some("interrupted".to_string())),
        (Some(GoalPhase::Blocked), _) => {
            let reason = run.goal.as_ref().and_then(|g| g.reason.as_ref());
            let error = reason.map(|r| format!("{}: {}", r.code, r.message));
            ("blocked", error)
        }
        _ => (
            "failed",
            Some("the goal stopped before it was complete".to_string()),
        ),
    }
}

/// The goal's last line on stderr: where it stands, and what the whole run cost.
fn goal_closing(run: &GoalRun) -> String {
    match &run.goal {
        Some(goal) => format!(
            "{} · {}",
            // The reason was reported when the goal was blocked, just above.
            report::goal_line(goal, run.armed, false),
            describe_end(&TurnEnd::Completed, &run.stats).trim_start_matches("completed ")
        ),
        None => "no goal".to_string(),
    }
}

/// One JSON result line on stdout, escaped when stdout is a terminal.
fn write_json_line(out: &mut impl Write, result: &JsonResult<'_>, stdout_tty: bool) {
    if let Ok(line) = serde_json::to_string(result) {
        let line = if stdout_tty {
            sanitize::json_escaped(&line)
        } else {
            line
        };
        let _ = writeln!(out, "{line}");
    }
}

/// How to come back to a kept session: a finished goal cannot be resumed (the command would
/// be refused), so it gets the plain resume; any other end continues the goal.
fn goal_resume_hint(err: &mut impl Write, o: &Output<'_>, status: &str) {
    if !std::path::Path::new(o.session_path).exists() {
        return;
    }
    let id = o.session_id;
    let flags = o.resume_flags;
    let _ = if status == "completed" {
        writeln!(
            err,
            "session {id} (resume with: minicode{flags} --session {id})"
        )
    } else {
        writeln!(
            err,
            "session {id} (continue the goal with: minicode{flags} --session {id} --goal-resume)"
        )
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Interrupt,
    Terminate,
}

/// Interrupts the turn on SIGINT/SIGTERM and remembers which one came.
fn spawn_signal_watch(ops: OpSender) -> tokio::sync::watch::Receiver<Option<Signal>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        loop {
            let which = tokio::select! {
                _ = int.recv() => Signal::Interrupt,
                _ = term.recv() => Signal::Terminate,
            };
            let _ = tx.send(Some(which));
            ops.send(Op::Interrupt);
        }
    });
    rx
}

/// Asks on `/dev/tty`; without one, refuses and says how to allow tools. `always` is the rule
/// an "always" answer adds for the session, shown in the question.
async fn ask(tool: &str, request: &ApprovalRequest, always: Option<&str>) -> Decision {
    let prompt = match request {
        ApprovalRequest::Command { command } => format!("\n{tool} wants to run:\n  {command}\n"),
        ApprovalRequest::Diff { path, diff } => {
            format!("\n{tool} wants to change {path}:\n{diff}\n")
        }
        ApprovalRequest::McpCall {
            server,
            tool: remote,
            arguments,
        } => format!(
            "\n{tool} wants to call tool `{remote}` of MCP server `{server}` with:\n{arguments}\n"
        ),
        ApprovalRequest::OutsideSandbox { command, reason } => {
            format!("\n{tool} wants to run OUTSIDE the sandbox ({reason}):\n  {command}\n")
        }
        ApprovalRequest::Fetch { url } => format!("\n{tool} wants to fetch:\n  {url}\n"),
    };
    let always = match always {
        Some(rule) => format!(
            "[a]lways: {} in this session",
            crate::protocol::always_label(rule)
        ),
        None => "[a]lways: this call only".to_string(),
    };
    let (tx, mut rx) = mpsc::channel(1);
    std::thread::spawn(move || {
        let _ = tx.blocking_send(ask_tty(&prompt, &always));
    });
    // Without a terminal nobody is asked; the call's result line on stderr says so.
    rx.recv().await.flatten().unwrap_or(Decision::NoTerminal)
}

/// `None` when there is no controlling terminal. Input typed before the question appears is
/// discarded first: a "y" meant for something else (typed ahead while the model was still
/// working) must not answer a question the user has not seen.
fn ask_tty(prompt: &str, always: &str) -> Option<Decision> {
    let line = ask_line(&format!(
        "{}Allow? [y]es / {} / [n]o (optionally: n <reason>): ",
        sanitize(prompt),
        sanitize(always)
    ))?;
    let answer = line.trim();
    let (word, reason) = answer
        .split_once(char::is_whitespace)
        .unwrap_or((answer, ""));
    Some(match word.to_lowercase().as_str() {
        "y" | "yes" => Decision::Approve,
        "a" | "always" => Decision::ApproveTool,
        _ => Decision::Deny {
            reason: (!reason.trim().is_empty()).then(|| reason.trim().to_string()),
        },
    })
}

/// Writes `question` (already sanitised) on the controlling terminal and reads one line of
/// answer; `None` without a terminal. Input typed before the question appears is discarded
/// first, so only an answer to this very question counts.
pub(crate) fn ask_line(question: &str) -> Option<String> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    // A failure (not a terminal after all) leaves nothing to discard.
    let _ = nix::sys::termios::tcflush(&tty, nix::sys::termios::FlushArg::TCIFLUSH);
    let mut writer = tty.try_clone().ok()?;
    let _ = write!(writer, "{question}");
    let _ = writer.flush();
    let mut line = String::new();
    io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(line)
}
