//! The core's reaction to the sandbox: a `bash` call the sandbox could not confine
//! (`Blocked::Unavailable`) or that it denied (`Blocked::Denied`) is either offered to run
//! outside the sandbox, where someone can answer (the full-screen session, ACP), or answered
//! with the reason and the narrowest way out (one-shot, `--yes`, goal rounds, the daemon),
//! which the user also reads as a warning (on stderr in one-shot runs). The question says
//! whether the command already ran once inside the sandbox. `--yes` and "always" never cover
//! running outside. It does not confine anything itself.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::Core;
use crate::agent::approvals::ask;
use crate::chat::{ApprovalRequest, ToolCall, ToolStatus};
use crate::protocol::{CallId, Decision, Event};
use crate::sandbox::{Blocked, Layer, Policy, Report};
use crate::tools::ToolOutput;
use crate::tools::bash::{self, Ran};

impl Core {
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

/// What follows a `bash` call (`args`) the sandbox stopped: `ran` unchanged when it was not
/// stopped; else the user's choice to run it outside (asked where possible), or the reason and
/// the way out.
pub(in crate::agent) async fn after_run(
    core: &mut Core,
    call: &ToolCall,
    args: &bash::Args,
    ran: Ran,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> Ran {
    let Some(blocked) = ran.report.blocked.clone() else {
        return ran;
    };
    let Ran {
        mut output,
        mut report,
    } = ran;
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
        return Ran { output, report };
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
            let run = bash::run(args, &ctx, &unconfined, cancel.child_token());
            let mut out = crate::agent::turn::observed(core, call, run).await.output;
            out.content = format!(
                "[ran outside the sandbox, approved by the user]\n{}",
                out.content
            );
            // The confined run's record no longer covers the call: nothing is handed over.
            report = Report::ran(&unconfined);
            output = out;
        }
        Some(_) => {}
        None => output = ToolOutput::interrupted("not run: the user interrupted the turn"),
    }
    Ran { output, report }
}
