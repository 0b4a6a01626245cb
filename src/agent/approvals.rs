//! The approvals part of the core: what the user allowed "always" in this session, the
//! permission rules' ruling on each call, and asking (`Event::ApprovalRequested` /
//! `Op::Decide`). Deny rules refuse a call without asking, also under `--yes`; protected
//! paths and `ask` rules are asked every time; `allow` rules, `--yes` and "always" approve
//! the rest without asking. It decides nothing about running the call: the batch does that
//! with the answer.
//!
//! An "always" is not a blank cheque for the tool: it adds, for the session, the very allow
//! rule `/permissions save` would write (`bash(ls*)` for `ls -la`, the one MCP tool by name),
//! and later calls are approved only when that rule covers them, as a saved rule would.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Core;
use super::spans;
use crate::chat::{ApprovalRequest, ToolCall};
use crate::permissions::{Action, Rule, Rules, Target, Verdict};
use crate::protocol::{CallId, Decision, Event};
use crate::tools::{Aim, ToolCtx, ToolOutput, protected};

/// The session's approvals: the allow rules "always" answers added (forgotten with the
/// session).
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    always: Rules,
}

/// What the permission rules say about one call, owned so the core can be borrowed again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ruling {
    /// No rule speaks: the usual approval.
    Usual,
    /// Allowed by the rules: runs without asking unless the path is protected.
    Allowed,
    /// Asked every time; who asks (the rule and its file, or a hook), for the warning.
    Ask(String),
    /// Refused; the rule and its file, for the model.
    Deny(String),
}

impl Ruling {
    /// The result a denied call gets instead of running.
    pub(crate) fn refusal(&self, tool: &str) -> Option<ToolOutput> {
        let Ruling::Deny(rule) = self else {
            return None;
        };
        Some(ToolOutput::denied(format!(
            "not run: this {tool} call is denied by the permission rule {rule}; do not try to \
             reach the same result another way"
        )))
    }
}

impl Approvals {
    /// A new session (or a fork) starts with no "always".
    pub(crate) fn forget(&mut self) {
        self.always = Rules::default();
    }

    /// The allow rule an "always" answer to `call` adds for the session: the rule
    /// `/permissions save` would keep. `None` when no safe rule can be written (then
    /// "always" approves this one call only).
    pub(crate) fn offer(call: &ToolCall, aim: &Aim) -> Option<String> {
        match aim {
            Aim::Host(host) => crate::permissions::suggest_domain(host),
            Aim::Command(line) => crate::permissions::suggest(&call.name, Some(line)),
            _ => crate::permissions::suggest(&call.name, None),
        }
    }

    /// Whether an earlier "always" covers `call`: every simple command of a `bash` line must
    /// match a rule added so (`ls && rm x` is not covered by `bash(ls*)`), and nothing in it
    /// may be opaque or write a protected path.
    fn covers(&self, call: &ToolCall, aim: &Aim, workspace: &std::path::Path) -> bool {
        if self.always.is_empty() {
            return false;
        }
        let target = match aim {
            Aim::Command(line) => Target::Command(line),
            Aim::Host(host) => Target::Domain(host),
            _ => Target::Call,
        };
        let protected_write = |raw: &str| {
            crate::fsutil::resolve_in_workspace(workspace, raw)
                .is_ok_and(|p| protected::reason(workspace, &p).is_some())
        };
        self.always.check(&call.name, target, &protected_write) == Verdict::Allow
    }

    /// Remembers an "always" answer's rule for the rest of the session.
    fn remember(&mut self, rule: &str) {
        if let Ok(rule) = Rule::parse(rule, Action::Allow, "an \"always\" answer") {
            self.always.push(rule);
        }
    }

    /// The rules' ruling on a call of the tool `name` aiming at `aim`.
    pub(crate) fn ruling(ctx: &ToolCtx, name: &str, aim: &Aim) -> Ruling {
        let Some(rules) = &ctx.permissions else {
            return Ruling::Usual;
        };
        let workspace = &ctx.workspace;
        let relative = |raw: &str| {
            let path = crate::fsutil::resolve_in_workspace(workspace, raw).ok()?;
            path.strip_prefix(workspace)
                .ok()
                .and_then(|p| p.to_str())
                .map(str::to_string)
        };
        let protected_write = |raw: &str| {
            crate::fsutil::resolve_in_workspace(workspace, raw)
                .is_ok_and(|p| protected::reason(workspace, &p).is_some())
        };
        let rel = aim.paths().first().and_then(|p| relative(p));
        let target = match aim {
            Aim::Command(line) => Target::Command(line),
            Aim::Host(host) => Target::Domain(host),
            Aim::Paths(paths) if !paths.is_empty() => Target::Path(rel.as_deref()),
            _ => Target::Call,
        };
        let shown = |r: &crate::permissions::Rule| format!("`{}` (from {})", r.text, r.origin);
        match rules.check(name, target, &protected_write) {
            Verdict::None => Ruling::Usual,
            Verdict::Allow => Ruling::Allowed,
            Verdict::Ask(rule) => Ruling::Ask(format!("the permission rule {}", shown(rule))),
            Verdict::Deny(rule) => Ruling::Deny(shown(rule)),
            Verdict::Unread(reason) => Ruling::Ask(format!(
                "a command the permission rules cannot read ({reason}), while deny or ask rules \
                 are in force,"
            )),
        }
    }
}

/// Why this call must be asked even though `--yes`, "always" or a rule would cover it (a
/// protected path, an `ask` rule), said on the warning channel when one of them is overridden.
fn forced(
    core: &Core,
    call: &ToolCall,
    protected: Option<(&str, &'static str)>,
    ruling: &Ruling,
    always: bool,
) -> Option<String> {
    let why = match (protected, ruling) {
        (Some((summary, reason)), _) => format!(
            "{summary} is protected ({reason}); {} is never allowed there without an answer",
            call.name
        ),
        (None, Ruling::Ask(who)) => format!("{who} asks for every such call"),
        _ => return None,
    };
    let message = if core.options.auto_approve {
        Some(format!("asking although --yes was given: {why}"))
    } else if always {
        Some(format!(
            "asking again although an \"always\" answer covers this {} call: {why}",
            call.name
        ))
    } else {
        None
    };
    if let Some(message) = message {
        core.emit(Event::Warning { message });
    }
    Some(why)
}

/// Asks for approval unless the rules, `--yes` or an earlier "always" cover this call. `None`
/// means the turn was interrupted while waiting.
///
/// A call on a protected path (`protected`: its summary and why) or under an `ask` rule is the
/// exception: neither "always" nor `--yes` nor an allow rule covers it, so it is asked every
/// time, and the warning channel (stderr in one-shot mode) says why it is asked; a frontend
/// with nobody to ask refuses it.
pub(super) async fn approve(
    core: &mut Core,
    (call, aim): (&ToolCall, &Aim),
    request: ApprovalRequest,
    protected: Option<(&str, &'static str)>,
    ruling: &Ruling,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> Option<Decision> {
    let always = core.approvals.covers(call, aim, &core.tool_ctx.workspace);
    let forced = forced(core, call, protected, ruling, always);
    let allowed = core.options.auto_approve || always || *ruling == Ruling::Allowed;
    if forced.is_none() && allowed {
        let how = if *ruling == Ruling::Allowed {
            "rule"
        } else {
            "auto"
        };
        spans::tool_approval(&tracing::Span::current(), how);
        core.emit(Event::ApprovalDecided {
            call: call.id.clone(),
            decision: Decision::Approve,
        });
        return Some(Decision::Approve);
    }
    let offer = Approvals::offer(call, aim);
    let decision = ask(core, (call, offer.clone()), request, cancel, decisions).await?;
    if decision == Decision::ApproveTool
        && let Some(rule) = &offer
    {
        core.approvals.remember(rule);
    }
    Some(decision)
}

/// Asks the user and waits for the answer, whatever `--yes`, "always" or the rules say (the
/// caller decided to ask). `always` is the rule an "always" answer would add, shown on the
/// key (`None`: "always" approves this call only). An "always" answer is not remembered here.
pub(super) async fn ask(
    core: &mut Core,
    (call, always): (&ToolCall, Option<String>),
    request: ApprovalRequest,
    cancel: &CancellationToken,
    decisions: &mut mpsc::UnboundedReceiver<(CallId, Decision)>,
) -> Option<Decision> {
    core.emit(Event::ApprovalRequested {
        call: call.id.clone(),
        tool: call.name.clone(),
        request: core.tool_ctx.secrets.redact_request(request),
        always,
    });
    let decision = loop {
        let answer = tokio::select! {
            biased;
            _ = cancel.cancelled() => return None,
            answer = decisions.recv() => answer,
        };
        match answer {
            Some((id, decision)) if id == call.id => break decision,
            Some((id, _)) => core.emit(Event::Error {
                message: format!("no approval is pending for call {id:?}"),
            }),
            None => return None,
        }
    };
    let how = match decision {
        Decision::Deny { .. } => "denied",
        Decision::NoTerminal => "no_terminal",
        _ => "user",
    };
    spans::tool_approval(&tracing::Span::current(), how);
    core.emit(Event::ApprovalDecided {
        call: call.id.clone(),
        decision: decision.clone(),
    });
    Some(decision)
}
