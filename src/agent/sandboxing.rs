//! The core's reaction to the sandbox, and plan mode's switch: a `bash` call the sandbox could
//! not confine (`Blocked::Unavailable`) or that it denied (`Blocked::Denied`) is either offered
//! to run outside the sandbox, where someone can answer (the full-screen session, ACP), or
//! answered with the reason and the narrowest way out (one-shot, `--yes`, goal rounds, the
//! daemon), which the user also reads as a warning (on stderr in one-shot runs). The question
//! says whether the command already ran once inside the sandbox.
//! `--yes` and "always" never cover running outside. It does not confine anything itself.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Core;
use super::approvals::ask;
use super::plan::Plan;
use crate::chat::{ApprovalRequest, ToolCall, ToolStatus};
use crate::protocol::{CallId, Decision, Event, Profile};
use crate::sandbox::{Blocked, Layer, Policy, Report};
use crate::tools::ToolOutput;

impl Core {
    /// The profile frontends show: the policy `bash` runs under now, and plan mode.
    pub(super) fn sandbox_changed(&self) -> Event {
        let policy = self.tool_ctx.sandbox();
        Event::SandboxChanged {
            profile: Profile {
                mode: policy.mode,
                network: policy.network,
                plan_file: self
                    .plan
                    .is_on()
                    .then(|| Plan::file(self.store.session.id()).display().to_string()),
            },
        }
    }

    /// Turns plan mode on or off (`Op::SetPlan`, `--plan`) and tells the frontends (the model
    /// is told in a notice before the next request).
    pub(super) fn set_plan(&mut self, on: bool) {
        self.plan.set(on, &self.tool_ctx);
        self.emit(self.sandbox_changed());
    }

    /// After the session changed (new, fork): the model is told of plan mode again, with the
    /// new session's plan file, unless its history already says so.
    pub(super) fn session_changed_plan(&mut self) {
        let session = &self.store.session;
        self.plan.restore(session.messages(), session.id());
        self.emit(self.sandbox_changed());
    }

    /// Whether a blocked call may be offered to run outside: someone is there to answer and
    /// nothing runs unattended (`--yes`, a goal round, a host that journals calls). Where no
    /// sandbox exists at all (not Linux), `--yes` does not stop the question: every call asks.
    fn may_offer_outside(&self, blocked: &Blocked) -> bool {
        let no_platform = matches!(blocked, Blocked::Unavailable(u) if u.layer == Layer::Platform);
        self.options.ask_outside_sandbox
            && (no_platform || !self.options.auto_approve)
            && !self.goal.armed()
            && self.store.journal.is_none()
    }
}

/// What follows a `bash` call the sandbox stopped: `output` unchanged when it was not stopped;
/// else the user's choice to run it outside (asked where possible), or the reason and the way
/// out. `args` are the call's arguments (`None`: not a `bash` call).
pub(super) async fn after_run(
    core: &mut Core,
    call: &ToolCall,
    args: Option<serde_json::Value>,
    mut output: ToolOutput,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> ToolOutput {
    let (Some(args), Some(blocked)) = (
        args,
        output.sandbox.as_ref().and_then(|r| r.blocked.clone()),
    ) else {
        return output;
    };
    let Ok(args) = crate::tools::parse_args::<crate::tools::bash::Args>(&args) else {
        return output;
    };
    let command = args.command.clone();
    let reason = blocked.reason();
    if let Blocked::Unavailable(_) = &blocked {
        // Whatever the tool said, the model and the user read the reason and the way out.
        output.status = ToolStatus::Failed;
        output.content = format!("not run: {reason}");
    }
    if !core.may_offer_outside(&blocked) {
        // Nobody is asked: the model reads the reason and the narrowest way out, and so does
        // the user on stderr (one-shot, `--yes`, goal rounds), not only the command's error.
        let way_out = blocked.way_out();
        if let Blocked::Denied { .. } = &blocked {
            output.content.push_str(&format!(
                "\n[{reason}; it ran under the sandbox profile. To allow it: {way_out}]"
            ));
        }
        core.emit(Event::Warning {
            message: format!("sandbox: {reason}; to allow it: {way_out}"),
        });
        return output;
    }
    let reason = match &blocked {
        Blocked::Denied { .. } => format!(
            "it already ran once inside the sandbox, which stopped it: {reason} (running it \
             again outside repeats what it did)"
        ),
        Blocked::Unavailable(_) => format!("nothing ran: {reason}"),
    };
    let request = ApprovalRequest::OutsideSandbox { command, reason };
    match ask(core, (call, None), request, cancel, decisions).await {
        Some(decision) if decision.runs() => {
            let ctx = core.tool_ctx.clone();
            let unconfined = Policy::unconfined();
            let run =
                crate::tools::bash::run_with_policy(&args, &ctx, &unconfined, cancel.child_token());
            let mut out = super::turn::observed(core, call, run).await;
            out.content = format!(
                "[ran outside the sandbox, approved by the user]\n{}",
                out.content
            );
            out.sandbox = Some(Report::ran(&unconfined));
            out
        }
        Some(_) => output,
        None => ToolOutput::interrupted("not run: the user interrupted the turn"),
    }
}
