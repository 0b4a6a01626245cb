//! The hooks part of the core: the user's `[[hooks.<Event>]]` commands (and a trusted
//! workspace's the user approved), run at each event with Claude Code's JSON contract on
//! stdin (see docs/hooks.md), one after another in the order configured. Every run goes
//! through the same start as a `bash` call (`tools::bash::run_piped`: the session's sandbox
//! policy, the scrubbed environment, the workspace as cwd, the hook's timeout, its process
//! group killed); only a hook of the user's own file that says `sandbox = "off"` runs
//! unconfined. A run the sandbox stopped is reported as such, never read as a verdict. What the runs say is handed back to the turn as
//! an [`Outcome`]; this part refuses, asks and runs no tool itself, and a hook's "allow" only
//! ever stands where no deny rule, `ask` rule or protected path speaks (the batch sees to it).

mod verdict;

pub(crate) use verdict::Permission;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Emitter;
use crate::hooks::{Hook, HookEvent};
use crate::protocol::{Event, HookOutcome};
use crate::tools::ToolCtx;
use crate::tools::bash::Piped;

/// The hooks a session runs, and context a `SessionStart` hook gave for the next prompt.
pub(crate) struct Hooks {
    list: Arc<Vec<Hook>>,
    emitter: Emitter,
    pending: Vec<String>,
}

/// Where a hook runs: the session it belongs to, as the input's common fields say it.
pub(crate) struct Site {
    pub ctx: Arc<ToolCtx>,
    /// The sandbox part's policy now: what a hook runs under unless it is unconfined.
    pub sandbox: Arc<crate::sandbox::Policy>,
    pub session_id: String,
    pub transcript: PathBuf,
    pub mode: crate::hooks::PermissionMode,
}

/// What every hook of one event said together.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The first reason given to block.
    pub block: Option<String>,
    /// A hook asked the turn to stop (`continue: false`).
    pub halt: bool,
    /// Context for the model, in the order the hooks ran.
    pub context: Vec<String>,
    /// `PreToolUse`: the strongest decision.
    pub permission: Option<Permission>,
}

impl Hooks {
    pub(crate) fn new(list: Arc<Vec<Hook>>, emitter: Emitter) -> Self {
        Self {
            list,
            emitter,
            pending: Vec::new(),
        }
    }

    /// Runs the hooks of `event` that match `tool`, with `fields` added to the common input.
    pub(crate) async fn run(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        fields: Map<String, Value>,
        site: &Site,
        cancel: &CancellationToken,
    ) -> Outcome {
        let mut outcome = Outcome::default();
        let matching = self
            .list
            .iter()
            .filter(|h| h.event == event && h.matches(tool));
        for hook in matching {
            if cancel.is_cancelled() {
                break;
            }
            let name = hook.describe();
            let mut input = common(event, site);
            input.extend(fields.clone());
            let mut input = Value::Object(input);
            site.ctx.secrets.redact_json(&mut input);
            let span = tracing::info_span!(
                "hook",
                event = event.as_str(),
                hook.matcher = hook.matcher.as_deref().unwrap_or("*"),
                hook.outcome = tracing::field::Empty,
            );
            // `sandbox = "off"` (only ever from the user's own file) runs it unconfined.
            let policy = if hook.unconfined {
                Arc::new(crate::sandbox::Policy::unconfined())
            } else {
                site.sandbox.clone()
            };
            let started = std::time::Instant::now();
            let piped = crate::tools::bash::run_piped(
                &hook.command,
                input.to_string().into_bytes(),
                &site.ctx,
                &policy,
                hook.timeout,
                cancel,
            )
            .instrument(span.clone())
            .await;
            tracing::debug!(hook = %name, result = ?piped, "hook ran");
            let ended = ended(&piped);
            let said = verdict::read(event, &name, piped);
            let ended = match ended {
                HookOutcome::Ok if said.blocks() => HookOutcome::Blocked,
                other => other,
            };
            span.record("hook.outcome", ended.as_str());
            self.emitter.emit(Event::Hook {
                event,
                hook: site.ctx.secrets.redact(name.clone()),
                outcome: ended,
                ms: started.elapsed().as_millis() as u64,
            });
            if let Some(notice) = said.notice {
                self.emitter.emit(Event::Warning { message: notice });
            }
            if let Some(reason) = said.block
                && outcome.block.is_none()
            {
                outcome.block = Some(reason);
            }
            outcome.halt |= said.halt;
            outcome.context.extend(said.context);
            if said.permission > outcome.permission {
                outcome.permission = said.permission;
            }
        }
        outcome
    }

    /// `SessionStart` (`source`: `startup` or `resume`): context it gives waits for the next
    /// prompt.
    pub(crate) async fn session_start(&mut self, source: crate::hooks::SessionSource, site: &Site) {
        if !self.has(HookEvent::SessionStart) {
            return;
        }
        let fields = fields([("source", json!(source))]);
        let cancel = CancellationToken::new();
        let outcome = self
            .run(HookEvent::SessionStart, None, fields, site, &cancel)
            .await;
        self.pending.extend(outcome.context);
    }

    /// `UserPromptSubmit`: the prompt with any context the hooks (and an earlier
    /// `SessionStart`) added, or why it was refused.
    pub(crate) async fn prompt(
        &mut self,
        prompt: String,
        site: &Site,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let mut context = std::mem::take(&mut self.pending);
        if self.has(HookEvent::UserPromptSubmit) {
            let fields = fields([("prompt", json!(prompt))]);
            let outcome = self
                .run(HookEvent::UserPromptSubmit, None, fields, site, cancel)
                .await;
            if let Some(reason) = outcome.block {
                return Err(format!(
                    "a UserPromptSubmit hook refused the prompt: {reason}"
                ));
            }
            context.extend(outcome.context);
        }
        if context.is_empty() {
            return Ok(prompt);
        }
        Ok(format!(
            "{prompt}{}{}",
            crate::chat::HOOK_CONTEXT_HEADING,
            context.join("\n")
        ))
    }

    /// Whether any hook is configured for `event`: with none, nothing is built or run.
    pub(crate) fn has(&self, event: HookEvent) -> bool {
        self.list.iter().any(|h| h.event == event)
    }

    /// How many times in a row `Stop` hooks may send one turn back to work.
    pub(crate) fn stop_max_blocks(&self) -> u32 {
        self.list
            .iter()
            .filter(|h| h.event == HookEvent::Stop)
            .map(|h| h.max_blocks)
            .max()
            .unwrap_or(crate::hooks::DEFAULT_STOP_MAX_BLOCKS)
    }
}

/// How a run ended, before what it said is read.
fn ended(piped: &Piped) -> HookOutcome {
    match piped {
        // Only a failed run is ever judged the sandbox's doing (exit 2 included: its stderr
        // is then the sandbox's refusal, not the hook's reason).
        Piped::Exited {
            denied: Some(_), ..
        } => HookOutcome::StoppedBySandbox,
        Piped::Exited { code: Some(0), .. } => HookOutcome::Ok,
        Piped::Exited { code: Some(2), .. } => HookOutcome::Blocked,
        Piped::Exited { .. } | Piped::NotRun(_) => HookOutcome::Failed,
        Piped::TimedOut => HookOutcome::TimedOut,
        Piped::Cancelled => HookOutcome::Cancelled,
    }
}

/// The fields every input carries.
fn common(event: HookEvent, site: &Site) -> Map<String, Value> {
    fields([
        ("session_id", json!(site.session_id)),
        (
            "transcript_path",
            json!(site.transcript.display().to_string()),
        ),
        ("cwd", json!(site.ctx.workspace.display().to_string())),
        ("hook_event_name", json!(event.as_str())),
        ("permission_mode", json!(site.mode)),
    ])
}

/// A JSON object of these fields.
pub(crate) fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl super::Core {
    /// Where this core's hooks run now.
    pub(crate) fn hook_site(&self) -> Site {
        let session = &self.store.session;
        Site {
            ctx: self.tool_ctx.clone(),
            sandbox: self.sandbox.policy(),
            session_id: session.id().to_string(),
            transcript: session.path().to_path_buf(),
            mode: if self.plan.is_on() {
                crate::hooks::PermissionMode::Plan
            } else {
                crate::hooks::PermissionMode::Default
            },
        }
    }

    /// `PreToolUse` for a call of `tool` with `args`.
    pub(crate) async fn pre_tool_hooks(
        &self,
        call: &crate::chat::ToolCall,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Option<Permission> {
        if !self.hooks.has(HookEvent::PreToolUse) {
            return None;
        }
        let input = fields([
            ("tool_name", json!(call.name)),
            ("tool_input", args.clone()),
            ("tool_use_id", json!(call.id)),
        ]);
        let site = self.hook_site();
        let outcome = self
            .hooks
            .run(
                HookEvent::PreToolUse,
                Some(&call.name),
                input,
                &site,
                cancel,
            )
            .await;
        outcome.permission
    }

    /// `PostToolUse` after a call ran: what the hooks want the model to read beside the
    /// result (a block's reason, added context), appended to it.
    pub(crate) async fn post_tool_hooks(
        &self,
        call: &crate::chat::ToolCall,
        args: &Value,
        output: &mut crate::tools::ToolOutput,
        cancel: &CancellationToken,
    ) {
        if !self.hooks.has(HookEvent::PostToolUse) {
            return;
        }
        let response = json!({ "status": output.status, "content": output.content });
        let input = fields([
            ("tool_name", json!(call.name)),
            ("tool_input", args.clone()),
            ("tool_response", response),
            ("tool_use_id", json!(call.id)),
        ]);
        let site = self.hook_site();
        let outcome = self
            .hooks
            .run(
                HookEvent::PostToolUse,
                Some(&call.name),
                input,
                &site,
                cancel,
            )
            .await;
        if let Some(reason) = outcome.block {
            output
                .content
                .push_str(&format!("\n[a PostToolUse hook says: {reason}]"));
        }
        for context in outcome.context {
            output
                .content
                .push_str(&format!("\n[context from a PostToolUse hook: {context}]"));
        }
    }

    /// `Stop`: why the model must go on instead of ending the turn, if a hook says so.
    /// `active`: the turn already went on once because of a `Stop` hook.
    pub(crate) async fn stop_hooks(
        &self,
        active: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.hooks.has(HookEvent::Stop) {
            return None;
        }
        let input = fields([("stop_hook_active", json!(active))]);
        let site = self.hook_site();
        let outcome = self
            .hooks
            .run(HookEvent::Stop, None, input, &site, cancel)
            .await;
        if outcome.halt {
            return None;
        }
        outcome.block
    }

    /// `PreCompact` (`trigger`: `manual` for `/compact`, `auto` before an automatic
    /// compaction or one after the server said the context is too long); what it says is
    /// only shown.
    pub(crate) async fn pre_compact_hooks(
        &self,
        trigger: crate::hooks::CompactTrigger,
        instructions: Option<&str>,
    ) {
        if !self.hooks.has(HookEvent::PreCompact) {
            return;
        }
        let input = fields([
            ("trigger", json!(trigger)),
            (
                "custom_instructions",
                json!(instructions.unwrap_or_default()),
            ),
        ]);
        let site = self.hook_site();
        let cancel = CancellationToken::new();
        let _ = self
            .hooks
            .run(HookEvent::PreCompact, None, input, &site, &cancel)
            .await;
    }
}
