//! A batch of tool calls: each validated, approved and run in order, its result appended and
//! saved before the next one runs; a call the session cannot record never runs. It must not
//! start model requests: the turn (`agent/turn.rs`) decides what follows a batch.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::Core;
use crate::agent::approvals::{Approvals, Ruling, approve};
use crate::agent::hooks::Permission;
use crate::agent::{delegate, history, sandboxing, spans};
use crate::chat::{Change, ToolCall, ToolKind, ToolStatus};
use crate::hooks::HookEvent;
use crate::protocol::{CallId, Decision, Event, TurnEnd, TurnStats};
use crate::sandbox::Report;
use crate::tools::{Aim, CoreCall, Invocation, Tool, ToolOutput};

/// How a batch of calls ended.
pub(in crate::agent) enum Batch {
    /// Every call was answered.
    Done,
    /// The user interrupted: the calls not yet run were answered as skipped.
    Interrupted,
    /// A save failed: the calls not yet run were answered as not run, and the turn fails.
    Unsaved(String),
}

/// After a batch: its goal changes recorded (after the whole batch's results) and saved.
/// Returns how the turn ends when it cannot go on.
pub(in crate::agent) fn settle(core: &mut Core, batch: Batch) -> Option<TurnEnd> {
    core.goal.flush(&mut core.store.session);
    match (batch, core.store.try_save()) {
        (Batch::Unsaved(error), _) | (_, Err(error)) => Some(TurnEnd::Failed { error }),
        (Batch::Interrupted, Ok(())) => Some(TurnEnd::Interrupted),
        (Batch::Done, Ok(())) => None,
    }
}

/// Answers `calls` as never run because the session could not be saved.
pub(super) fn not_run(core: &mut Core, calls: &[ToolCall], error: &str) {
    for call in calls {
        core.store.session.push_result(
            call.id.clone(),
            format!("not run: {error}"),
            ToolStatus::Failed,
            None,
        );
    }
}

/// Runs a batch of calls in order, appending one result per call, each saved before the next
/// call runs (see [`Batch`]).
pub(in crate::agent) async fn run_batch(
    core: &mut Core,
    calls: &[ToolCall],
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
    stats: &mut TurnStats,
) -> Batch {
    let mut images = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        if cancel.is_cancelled() {
            for skipped in &calls[index..] {
                core.store.session.push_result(
                    skipped.id.clone(),
                    "not run: the user interrupted the turn",
                    ToolStatus::Interrupted,
                    None,
                );
            }
            show_images(core, std::mem::take(&mut images));
            return Batch::Interrupted;
        }
        stats.tool_calls += 1;
        let Answer {
            summary,
            output,
            sandbox,
        } = run_call(core, call, cancel, decisions, stats).await;
        core.emit(Event::ToolCallEnded {
            call: call.id.clone(),
            status: output.status,
            output: output.content.clone(),
        });
        core.skills.note_call(call, &output);
        let kind = core.registry.get(&call.name).map(|t| t.kind());
        core.goal.note_result(call, kind, output.status);
        crate::agent::tally::edit_result(&*core.provider, call, &output, stats);
        images.extend(output.image.map(|image| *image));
        core.store
            .session
            .push_result(call.id.clone(), output.content, output.status, summary);
        if let Some(report) = sandbox {
            core.store.session.note_sandbox(report);
        }
        // A host that journals calls learns the call is over only once its result is on
        // disk: until then, a crash leaves it "started", never to be run again.
        let journal = core.store.journal.clone();
        if journal.is_some() || index + 1 < calls.len() {
            if let Err(error) = core.store.try_save() {
                not_run(core, &calls[index + 1..], &error);
                return Batch::Unsaved(error);
            }
            if let Some(journal) = journal {
                journal.finished(&call.id);
            }
        }
    }
    show_images(core, images);
    if cancel.is_cancelled() {
        Batch::Interrupted
    } else {
        Batch::Done
    }
}

/// The images `read` calls of the batch returned, shown to the model in one user message
/// after all their results (a tool message cannot carry an image on most servers, and no
/// other message may come between an assistant's calls and their results).
fn show_images(core: &mut Core, images: Vec<crate::chat::Image>) {
    if images.is_empty() {
        return;
    }
    let text = format!(
        "{}\nThe image{} read above (this is not the user speaking).\n</session-notice>",
        crate::chat::NOTICE_OPEN,
        if images.len() == 1 {
            " is the one"
        } else {
            "s are the ones"
        }
    );
    core.store
        .session
        .push(crate::chat::Message::user_with_images(text, images));
}

/// How one call ended.
struct Answer {
    /// The summary announced with `ToolCallBegan`.
    summary: Option<String>,
    /// What the model reads.
    output: ToolOutput,
    /// For a `bash` call: what the sandbox did to it (kept beside the result).
    sandbox: Option<Report>,
}

/// One call inside its `tool_call` span, which records its status (and, with
/// `include_content`, its arguments and result).
async fn run_call(
    core: &mut Core,
    call: &ToolCall,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
    stats: &mut TurnStats,
) -> Answer {
    let span = spans::tool_call(call, &core.tool_ctx.secrets);
    let ctx = core.tool_ctx.clone();
    let content = core.content(&ctx);
    if let Some(content) = content {
        content.tool_arguments(&span, &call.arguments);
    }
    core.goal.note_call();
    let answer = prepare_and_run(core, call, cancel, decisions, stats)
        .instrument(span.clone())
        .await;
    spans::end_tool_call(&span, answer.output.status);
    if let Some(content) = content {
        content.tool_result(&span, &answer.output.content);
    }
    answer
}

/// Validates, approves and runs one call; every path yields the output the model will read,
/// beside the summary announced with `ToolCallBegan` (kept with the result in the session).
async fn prepare_and_run(
    core: &mut Core,
    call: &ToolCall,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
    stats: &mut TurnStats,
) -> Answer {
    let (tool, args) = match resolve(core, call) {
        Ok(found) => found,
        Err(refused) => return unrun(*refused),
    };
    let (summary, prepared, invocation) = match announce(core, call, &tool, &args) {
        Ok(ready) => ready,
        Err(refused) => return unrun(*refused),
    };
    let aim = invocation.aim();
    if let Some(refused) = gate(
        core,
        call,
        (&tool, &args, &aim),
        prepared,
        &summary,
        cancel,
        decisions,
    )
    .await
    {
        return unrun((summary, refused));
    }
    let seen = core.hooks.has(HookEvent::PostToolUse).then(|| args.clone());
    // The checkpoint spans the call and its run outside the sandbox, if the user allows one.
    let goal_call = matches!(
        invocation.core_call(),
        Some(CoreCall::GoalStatus | CoreCall::GoalUpdate(_))
    );
    let recorded = !goal_call
        && core
            .checkpoints
            .before(&core.store.session, call, (tool.kind(), &aim));
    let edited = core.diagnostics.target(call, &args, &core.tool_ctx);
    let runs = (call, (&tool, &*invocation));
    let (mut output, sandbox) = execute(core, runs, cancel, decisions, stats).await;
    if recorded {
        // The record of a confined run covers the call only when no unconfined run followed
        // (that one's report, with no record, replaces it).
        let written = sandbox.as_ref().and_then(|r| r.written.as_deref());
        core.checkpoints.after(written);
    }
    let (ctx, policy) = (core.tool_ctx.clone(), core.sandbox.policy());
    core.diagnostics
        .after(edited, &mut output, (&ctx, &policy), cancel)
        .await;
    output.content = core.tool_ctx.secrets.redact(output.content);
    if let Some(args) = seen {
        core.post_tool_hooks(call, &args, &mut output, cancel).await;
    }
    Answer {
        summary,
        output,
        sandbox,
    }
}

/// What a stage answers when the call goes no further: the summary and the output (boxed:
/// the rare path should not widen every `Result` it travels in).
type Refused = Box<(Option<String>, ToolOutput)>;

/// The answer of a call that never ran: nothing for the sandbox to report.
fn unrun((summary, output): (Option<String>, ToolOutput)) -> Answer {
    Answer {
        summary,
        output,
        sandbox: None,
    }
}

/// Finds the tool the call names and checks its arguments against the tool's schema; an
/// unknown tool is still announced, under its (redacted) name.
fn resolve(
    core: &mut Core,
    call: &ToolCall,
) -> Result<(Arc<dyn Tool>, serde_json::Value), Refused> {
    core.registry
        .resolve(&call.name, &call.arguments)
        .map_err(|message| {
            let name = core.tool_ctx.secrets.redact(call.name.clone());
            core.emit(began(
                call,
                (ToolKind::Other, Vec::new(), None),
                name.clone(),
                serde_json::Value::Null,
            ));
            Box::new((Some(name), rejected(core.tool_ctx.secrets.redact(message))))
        })
}

/// What [`announce`] hands on: the summary, what the tool prepared, and the parsed call.
type Announced<'t> = (
    Option<String>,
    crate::tools::Prepared,
    Box<dyn Invocation + 't>,
);

/// Parses the arguments (once), lets the tool prepare the call and announces it
/// (`ToolCallBegan`), refused or not.
fn announce<'t>(
    core: &mut Core,
    call: &ToolCall,
    tool: &'t Arc<dyn Tool>,
    args: &serde_json::Value,
) -> Result<Announced<'t>, Refused> {
    let parsed = tool.parse(args);
    // A call its tool refuses still names the paths it aimed at and what it would write.
    let (paths, change) = match &parsed {
        Ok(invocation) => (invocation.aim().paths().to_vec(), invocation.change()),
        Err(_) => (Vec::new(), None),
    };
    let prepared = parsed.and_then(|invocation| {
        let prepared = invocation.prepare(&core.tool_ctx)?;
        Ok((prepared, invocation))
    });
    // A refused call still names its target, so the user sees what was attempted.
    let summary = match &prepared {
        Ok((p, _)) => p.summary.clone(),
        Err(_) => history::summary_from_arguments(args).unwrap_or_default(),
    };
    // What frontends see of the call is redacted like its result: they may print it, and
    // stream-json, the session and the exit transcript keep it.
    let secrets = &core.tool_ctx.secrets;
    let summary = secrets.redact(summary);
    let mut shown_args = args.clone();
    secrets.redact_json(&mut shown_args);
    let change = change.map(|c| redacted(secrets, c));
    core.emit(began(
        call,
        (tool.kind(), paths, change),
        summary.clone(),
        shown_args,
    ));
    let summary = Some(summary);
    match prepared {
        Ok((p, invocation)) => Ok((summary, p, invocation)),
        Err(message) => Err(Box::new((
            summary,
            rejected(core.tool_ctx.secrets.redact(message)),
        ))),
    }
}

/// Plan mode's refusal, then the call's approval when the tool wants one; `Some` is the
/// output of a call that must not run (refused, denied, nobody to ask, or interrupted).
async fn gate(
    core: &mut Core,
    call: &ToolCall,
    (tool, args, aim): (&Arc<dyn Tool>, &serde_json::Value, &Aim),
    prepared: crate::tools::Prepared,
    summary: &Option<String>,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> Option<ToolOutput> {
    let session = core.store.session.id().to_string();
    if let Some(text) = core.plan.refusal(&**tool, aim, &core.tool_ctx, &session) {
        return Some(ToolOutput::denied(text));
    }
    let mut ruling = Approvals::ruling(&core.tool_ctx, &call.name, aim);
    if let Some(output) = ruling.refusal(&call.name) {
        return Some(output);
    }
    // A `PreToolUse` hook may refuse the call, ask for it, or allow it; its allow never
    // covers what a rule asks for or a protected path (those stay asked), and the sandbox
    // still confines what runs.
    match core.pre_tool_hooks(call, args, cancel).await {
        Some(Permission::Deny(reason)) => {
            return Some(ToolOutput::denied(format!(
                "not run: a PreToolUse hook blocked this call: {reason}"
            )));
        }
        Some(Permission::Ask(reason)) if matches!(ruling, Ruling::Usual | Ruling::Allowed) => {
            ruling = Ruling::Ask(format!("a PreToolUse hook ({reason})"));
        }
        Some(Permission::Allow) if ruling == Ruling::Usual => ruling = Ruling::Allowed,
        _ => {}
    }
    let request = prepared.approval?;
    // The redacted summary: the warning it goes into reaches frontends too. Plan mode asks
    // for every MCP call, as for a protected path.
    let plan_asks = core
        .plan
        .must_ask(&**tool)
        .then_some("plan mode is on: MCP tools are always asked");
    let protected = prepared
        .protected
        .or(plan_asks)
        .map(|reason| (summary.as_deref().unwrap_or_default(), reason));
    match approve(
        core,
        (call, aim),
        request,
        protected,
        &ruling,
        cancel,
        decisions,
    )
    .await
    {
        Some(Decision::Deny { reason }) => {
            let mut text = "the user denied this call; it did not run".to_string();
            if let Some(reason) = reason.filter(|r| !r.trim().is_empty()) {
                text.push_str(&format!(". Reason: {reason}"));
            }
            Some(ToolOutput::denied(text))
        }
        Some(Decision::NoTerminal) => {
            core.goal.note_unasked();
            Some(ToolOutput::denied(
                crate::protocol::NO_TERMINAL_REFUSAL.to_string(),
            ))
        }
        Some(_) => None,
        None => Some(ToolOutput::interrupted(
            "not run: the user interrupted the turn",
        )),
    }
}

/// Runs an approved call: a goal tool, the core's own `delegate`, a `bash` command under the
/// sandbox part's policy (then what follows when the sandbox stopped it), or the tool itself;
/// the live output and process group of what runs are reported as it runs. Beside the output:
/// a `bash` call's sandbox report.
async fn execute(
    core: &mut Core,
    (call, (tool, invocation)): (&ToolCall, (&Arc<dyn Tool>, &dyn Invocation)),
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
    stats: &mut TurnStats,
) -> (ToolOutput, Option<Report>) {
    let core_call = invocation.core_call();
    match &core_call {
        Some(CoreCall::GoalStatus) => {
            return (core.goal.tool(None, core.store.session.messages()), None);
        }
        Some(CoreCall::GoalUpdate(update)) => {
            let output = core.goal.tool(Some(update), core.store.session.messages());
            return (output, None);
        }
        _ => {}
    }
    if let Some(journal) = &core.store.journal
        && let Err(e) = journal.starting(&call.id)
    {
        let output = ToolOutput {
            status: ToolStatus::Failed,
            content: format!("not run: could not record that the call starts: {e}"),
            matched: None,
            image: None,
        };
        return (output, None);
    }
    if let Some(CoreCall::Bash(args)) = &core_call {
        let ran = core.run_bash(call, args, cancel).await;
        let ran = sandboxing::after_run(core, call, args, ran, cancel, decisions).await;
        return (ran.output, Some(ran.report));
    }
    let subagents = core.options.subagents.clone();
    let ours = core.delegate.owns(&**tool);
    if let (Some(subagents), Some(CoreCall::Delegate(tasks))) =
        (subagents.filter(|_| ours), &core_call)
    {
        // The core's own `delegate`: its children need the core, not just a tool context.
        let (output, tally) =
            delegate::run(core, &subagents, &call.id, tasks, cancel.child_token()).await;
        stats.subagents += tally.children;
        stats.subagent_calls += tally.model_calls;
        stats.subagent_tokens.merge(&tally.tokens);
        return (output, None);
    }
    let ctx = core.tool_ctx.clone();
    let run = invocation.run(&ctx, cancel.child_token());
    (observed(core, call, run).await, None)
}

/// Runs a tool's future so that what it prints reaches frontends as it comes and the process
/// group it starts is recorded beside the session while it runs.
pub(in crate::agent) async fn observed<F: std::future::Future>(
    core: &Core,
    call: &ToolCall,
    run: F,
) -> F::Output {
    let events = core.events.clone();
    let id = call.id.clone();
    let sink: crate::tools::live::Sink = Arc::new(move |text| {
        let _ = events.send(Event::ToolOutputDelta {
            call: id.clone(),
            text,
        });
    });
    let workspace = core.tool_ctx.workspace.clone();
    let (session, id) = (core.store.session.id().to_string(), call.id.clone());
    let watcher: crate::tools::running::Watcher = Arc::new(move |group| {
        let group = group.map(|g| crate::session::running::Group {
            pgid: g.pgid,
            tag: g.tag.clone(),
        });
        let recorded = crate::session::running::record(&workspace, &session, &id, group.as_ref());
        if let Err(e) = recorded {
            tracing::warn!(error = %e, "could not record a running process group");
        }
    });
    let run = crate::tools::live::scope(sink, run);
    crate::tools::running::scope(watcher, run).await
}

fn began(
    call: &ToolCall,
    (kind, paths, change): (ToolKind, Vec<String>, Option<Change>),
    summary: String,
    arguments: serde_json::Value,
) -> Event {
    Event::ToolCallBegan {
        call: call.id.clone(),
        tool: call.name.clone(),
        summary,
        kind,
        paths,
        arguments,
        change,
    }
}

/// `change` with the session's secrets taken out, as the call's arguments are.
fn redacted(secrets: &crate::tools::Secrets, change: Change) -> Change {
    match change {
        Change::Replace { old, new } => Change::Replace {
            old: secrets.redact(old),
            new: secrets.redact(new),
        },
        Change::Whole { text } => Change::Whole {
            text: secrets.redact(text),
        },
    }
}

fn rejected(message: String) -> ToolOutput {
    ToolOutput {
        status: ToolStatus::Rejected,
        content: message,
        matched: None,
        image: None,
    }
}
