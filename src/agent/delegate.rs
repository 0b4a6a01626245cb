//! Sub-agents: the `delegate` tool hands 1 to 4 independent tasks to children that run the
//! same agent core, each in its own session, with only the read-only tools (`read`, `list`,
//! `search`), none of the parent's history, and nobody to ask. Their final answers come back
//! in submission order as one tool result; the parent never sees their intermediate messages.
//!
//! The tool is declared through the registry like any other, but its calls are run by the
//! core (`run`), which holds what children need: the provider, the registry to take the
//! whitelist from, the parent's session id and the call id, and the event channel that tells
//! frontends about each child. `tools` therefore never learns about the agent. A process-wide
//! [`Subagents`] value bounds how many children run at once and how long each may take.

mod child;
mod offer;

pub(crate) use offer::Offer;

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::Core;
use crate::chat::{Builtin, ToolKind, ToolSpec, ToolStatus};
use crate::protocol::{SubagentStatus, TokenStats};
use crate::sanitize::text::floor_boundary;
use crate::tools::{
    CoreCall, CoreTool, DelegateTask as Task, Prepared, ToolCtx, ToolFuture, ToolOutput, Typed,
};

/// The tool's name.
pub(crate) const NAME: &str = Builtin::Delegate.name();
/// The registry group the core puts it in.
pub(crate) const GROUP: &str = "subagents";
/// The only tools a child may call: nothing that writes, runs commands, reaches MCP servers
/// or delegates again.
pub(crate) const CHILD_TOOLS: [Builtin; 5] = [
    Builtin::Read,
    Builtin::List,
    Builtin::Search,
    Builtin::Find,
    Builtin::Fetch,
];
/// Tasks one call may hand out.
pub(crate) const MAX_TASKS: usize = 4;

const MAX_TASK_ID_BYTES: usize = 64;
const MAX_INSTRUCTION_BYTES: usize = 32 * 1024;
const MAX_CONTEXT_BYTES: usize = 64 * 1024;

/// The sub-agents' limits: how many children may run at once across every delegation of the
/// process (one value, cloned into every core, shares its slots), and each child's deadline.
#[derive(Debug, Clone)]
pub struct Subagents {
    slots: Arc<Semaphore>,
    timeout: Duration,
}

impl Subagents {
    /// `max_concurrent` below 1 counts as 1.
    pub fn new(max_concurrent: usize, timeout: Duration) -> Self {
        let max_concurrent = max_concurrent.max(1);
        Self {
            slots: Arc::new(Semaphore::new(max_concurrent)),
            timeout,
        }
    }
}

impl Default for Subagents {
    fn default() -> Self {
        Self::new(
            crate::defaults::SUBAGENTS_MAX_CONCURRENT,
            crate::defaults::SUBAGENTS_TIMEOUT,
        )
    }
}

const DESCRIPTION: &str = "For broad exploration (several areas, long searches): run 1 to 4 \
read-only investigations at once, each by a fresh sub-agent that sees only its instruction \
and context. Returns the answers in order.";

/// The `delegate` declaration and argument checks; its calls are run by the core.
pub(crate) struct Delegate;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    tasks: Vec<Task>,
}

/// The child's only user message for `task`.
fn prompt(task: &Task) -> String {
    match task.context.as_deref().filter(|c| !c.trim().is_empty()) {
        Some(context) => format!(
            "{}\n\nContext from the agent that delegated this task:\n{context}",
            task.instruction
        ),
        None => task.instruction.clone(),
    }
}

/// The tasks of one call, checked: how many, their ids, their sizes.
fn check(tasks: &[Task]) -> Result<(), String> {
    if tasks.is_empty() || tasks.len() > MAX_TASKS {
        return Err(format!("give 1 to {MAX_TASKS} tasks (got {})", tasks.len()));
    }
    for (i, task) in tasks.iter().enumerate() {
        let id = task.id.trim();
        if id.is_empty() || task.id.len() > MAX_TASK_ID_BYTES {
            return Err(format!(
                "task {}: id must have 1 to {MAX_TASK_ID_BYTES} bytes",
                i + 1
            ));
        }
        if task.id.chars().any(char::is_control) {
            return Err(format!(
                "task {}: id must not hold control characters",
                i + 1
            ));
        }
        if tasks[..i].iter().any(|t| t.id == task.id) {
            return Err(format!("task id {:?} is used twice", task.id));
        }
        if task.instruction.trim().is_empty() {
            return Err(format!("task {:?}: instruction is empty", task.id));
        }
        if task.instruction.len() > MAX_INSTRUCTION_BYTES {
            return Err(format!(
                "task {:?}: instruction is longer than {} KiB",
                task.id,
                MAX_INSTRUCTION_BYTES / 1024
            ));
        }
        if task
            .context
            .as_ref()
            .is_some_and(|c| c.len() > MAX_CONTEXT_BYTES)
        {
            return Err(format!(
                "task {:?}: context is longer than {} KiB",
                task.id,
                MAX_CONTEXT_BYTES / 1024
            ));
        }
    }
    Ok(())
}

impl Typed for Delegate {
    type Args = Args;
    type Checked = Vec<Task>;

    fn core(&self) -> Option<CoreTool> {
        Some(CoreTool::Delegate)
    }

    fn core_call(args: &Args) -> Option<CoreCall> {
        Some(CoreCall::Delegate(args.tasks.clone()))
    }

    fn check(&self, args: &Args, _ctx: &ToolCtx) -> Result<Vec<Task>, String> {
        check(&args.tasks)?;
        Ok(args.tasks.clone())
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "tasks": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_TASKS,
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "Short unique name"},
                                "instruction": {"type": "string", "description": "What to find out"},
                                "context": {"type": "string", "description": "Facts it needs from here"}
                            },
                            "required": ["id", "instruction"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["tasks"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, tasks: Vec<Task>, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        let summary = match tasks.len() {
            1 => format!("1 task: {}", ids[0]),
            n => format!("{n} tasks: {}", ids.join(", ")),
        };
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        _tasks: Vec<Task>,
        _ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        CoreTool::Delegate.outside_core()
    }
}

/// What one child's run came to.
pub(crate) struct Outcome {
    pub(crate) task: String,
    pub(crate) status: SubagentStatus,
    /// Its final answer (or, after a timeout or interrupt, what it had said so far).
    pub(crate) answer: String,
    pub(crate) error: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) rounds: u32,
    pub(crate) tool_calls: u32,
    pub(crate) elapsed: Duration,
    /// Model calls (summaries included) and their tokens, for the parent's stats.
    pub(crate) model_calls: u32,
    pub(crate) tokens: TokenStats,
}

/// What the parent's turn adds to its statistics.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) children: u32,
    pub(crate) model_calls: u32,
    pub(crate) tokens: TokenStats,
}

/// Runs one `delegate` call: every task as a child, at most [`Subagents::max_concurrent`] at
/// a time across the process, each within its deadline; `cancel` (the user's interrupt)
/// stops them all. Returns the tool result and the children's spending.
pub(crate) async fn run(
    core: &Core,
    subagents: &Subagents,
    call_id: &str,
    tasks: &[Task],
    cancel: CancellationToken,
) -> (ToolOutput, Tally) {
    // Checked when the call was prepared; checked again (no parse) as every tool re-checks
    // right before it runs.
    if let Err(e) = check(tasks) {
        return (ToolOutput::failed(e), Tally::default());
    }
    let ctx = child::Context::new(core, subagents, call_id);
    let runs = tasks.iter().map(|task| ctx.run(task, &cancel));
    // `join_all` keeps submission order whatever order they finish in.
    let outcomes = futures_util::future::join_all(runs).await;
    let mut tally = Tally::default();
    for o in &outcomes {
        tally.children += u32::from(o.session_id.is_some());
        tally.model_calls += o.model_calls;
        tally.tokens.merge(&o.tokens);
    }
    let output = report(&outcomes, &core.tool_ctx, cancel.is_cancelled());
    (output, tally)
}

/// The one result the parent's model reads: a header with the count per status, then per
/// task its id, status, session and answer (each answer within its share of the output
/// limit, redacted before it is cut).
fn report(outcomes: &[Outcome], ctx: &ToolCtx, interrupted: bool) -> ToolOutput {
    let count = |s: SubagentStatus| outcomes.iter().filter(|o| o.status == s).count();
    let mut tally: Vec<String> = Vec::new();
    for status in [
        SubagentStatus::Completed,
        SubagentStatus::Failed,
        SubagentStatus::TimedOut,
        SubagentStatus::Interrupted,
    ] {
        let n = count(status);
        if n > 0 {
            tally.push(format!("{n} {}", status.as_str().replace('_', " ")));
        }
    }
    let mut out = format!(
        "{} delegated: {}. Each ran as a separate read-only sub-agent; only its final answer is \
         shown.\n",
        match outcomes.len() {
            1 => "1 task".to_string(),
            n => format!("{n} tasks"),
        },
        tally.join(", ")
    );
    let share = ctx.output_limit().saturating_sub(out.len() + 512) / outcomes.len().max(1);
    for o in outcomes {
        out.push_str(&format!("\n## Task {:?}: {}\n", o.task, o.status.as_str()));
        let mut facts = Vec::new();
        if let Some(id) = &o.session_id {
            facts.push(format!("session {id}"));
        }
        let s = |n| if n == 1 { "" } else { "s" };
        facts.push(format!("{} round{}", o.rounds, s(u64::from(o.rounds))));
        facts.push(format!(
            "{} tool call{}",
            o.tool_calls,
            s(u64::from(o.tool_calls))
        ));
        facts.push(format!("{:.1} s", o.elapsed.as_secs_f64()));
        out.push_str(&facts.join(" · "));
        out.push('\n');
        if let Some(error) = &o.error {
            out.push_str(&format!("error: {}\n", ctx.secrets.redact(error.clone())));
        }
        let answer = ctx.secrets.redact(o.answer.trim().to_string());
        if answer.is_empty() {
            out.push_str("(no answer)\n");
        } else {
            if o.status != SubagentStatus::Completed {
                out.push_str("partial answer:\n");
            }
            out.push_str(&cut(&answer, share.max(256), o.session_id.as_deref()));
            out.push('\n');
        }
    }
    let status = if interrupted {
        ToolStatus::Interrupted
    } else if count(SubagentStatus::Completed) == 0 {
        ToolStatus::Failed
    } else {
        ToolStatus::Succeeded
    };
    ToolOutput {
        status,
        content: out,
        matched: None,
        image: None,
    }
}

/// `text` within `max` bytes (at a character boundary), saying where the rest is.
fn cut(text: &str, max: usize, session: Option<&str>) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let end = floor_boundary(text, max);
    let rest = text.len() - end;
    let whole = match session {
        Some(id) => format!("; the whole answer is in session {id}"),
        None => String::new(),
    };
    format!("{}\n[answer cut: {rest} more bytes{whole}]", &text[..end])
}

#[cfg(test)]
mod schema_tests {
    use crate::tools::typed::schema_check::agrees;

    #[test]
    fn the_delegate_schema_matches_its_argument_struct() {
        agrees(&super::Delegate);
    }
}
