//! The sandbox, a part of the core: it holds the policy commands run under (the session's
//! configured one, or plan mode's read-only one while plan mode is on), runs each approved
//! `bash` call under it and gets back what the sandbox did to the call beside its output
//! (`tools::bash::Ran`), hands the policy to hooks and language servers, and removes the
//! session's private temporary folder when the session ends. The tool context holds no
//! policy: nothing runs a command under one but the core. What follows a call the sandbox
//! stopped (asking to run it outside, or the way out) is `sandboxing/outside.rs`.

mod outside;

pub(super) use outside::after_run;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Core;
use super::plan::Plan;
use crate::chat::ToolCall;
use crate::protocol::{Event, Profile};
use crate::sandbox::{Mode, Policy};
use crate::tools::bash::{self, Ran};

/// The part: the policies and whose temporary folder this is.
pub(crate) struct Sandbox {
    /// The policy the session was configured with.
    configured: Arc<Policy>,
    /// Plan mode's read-only profile without network, while plan mode is on.
    plan: Option<Arc<Policy>>,
    /// The session's temporary folder, removed when the core ends; `None` for a sub-agent,
    /// whose policy is its parent's (so is the folder).
    owned_tmpdir: Option<PathBuf>,
}

impl Sandbox {
    /// The part of a core configured with `policy`; `owner`: the folder is this session's.
    pub(crate) fn new(policy: Policy, owner: bool) -> Self {
        Self {
            owned_tmpdir: owner.then(|| policy.tmpdir.clone()),
            configured: Arc::new(policy),
            plan: None,
        }
    }

    /// The policy the next command runs under (a command already running keeps its own).
    pub(crate) fn policy(&self) -> Arc<Policy> {
        self.plan.as_ref().unwrap_or(&self.configured).clone()
    }

    /// Plan mode's switch: on, commands get the read-only profile without network (keeping
    /// the session's temporary folder and hidden paths); off, the configured one again.
    pub(crate) fn plan_mode(&mut self, on: bool, workspace: &Path) {
        match (on, &self.plan) {
            (true, None) => {
                let normal = &self.configured;
                let read_only = Policy::for_workspace(
                    Mode::ReadOnly,
                    false,
                    workspace,
                    &[],
                    normal.tmpdir.clone(),
                )
                .hiding(normal.hidden.clone());
                self.plan = Some(Arc::new(read_only));
            }
            (false, Some(_)) => self.plan = None,
            _ => {}
        }
    }

    /// The session ends, after its last command: its temporary folder goes (every host ends
    /// a session through the core).
    pub(crate) fn end(&self) {
        if let Some(tmpdir) = &self.owned_tmpdir {
            crate::sandbox::tmpdir::remove(tmpdir);
        }
    }
}

impl Core {
    /// The profile frontends show: the policy commands run under now, and plan mode.
    pub(super) fn sandbox_changed(&self) -> Event {
        let policy = self.sandbox.policy();
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
        self.plan.set(on);
        self.sandbox.plan_mode(on, &self.tool_ctx.workspace);
        self.emit(self.sandbox_changed());
    }

    /// After the session changed (new, fork): the model is told of plan mode again, with the
    /// new session's plan file, unless its history already says so.
    pub(super) fn session_changed_plan(&mut self) {
        let session = &self.store.session;
        self.plan.restore(session.messages(), session.id());
        self.emit(self.sandbox_changed());
    }

    /// Runs an approved `bash` call under the part's policy, its output reaching frontends as
    /// it comes (see `turn::observed`).
    pub(super) async fn run_bash(
        &self,
        call: &ToolCall,
        args: &bash::Args,
        cancel: &CancellationToken,
    ) -> Ran {
        let policy = self.sandbox.policy();
        let ctx = self.tool_ctx.clone();
        let run = bash::run(args, &ctx, &policy, cancel.child_token());
        super::turn::observed(self, call, run).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test's failure is its panic
mod tests {
    use super::*;

    fn configured(ws: &Path) -> Policy {
        Policy::for_workspace(Mode::WorkspaceWrite, true, ws, &[], ws.join("t"))
            .hiding(vec![ws.join("secret")])
    }

    #[test]
    fn plan_mode_narrows_commands_to_read_only_without_network_and_leaving_restores() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let mut part = Sandbox::new(configured(ws), true);
        assert_eq!(*part.policy(), configured(ws));
        part.plan_mode(true, ws);
        let plan = part.policy();
        assert_eq!(plan.mode, Mode::ReadOnly);
        assert!(!plan.network);
        assert!(plan.writable.is_empty(), "{plan:?}");
        // The session's temporary folder and hidden paths stay.
        assert_eq!(plan.tmpdir, ws.join("t"));
        assert_eq!(plan.hidden, vec![ws.join("secret")]);
        // Asking again changes nothing; leaving gives the configured policy back.
        part.plan_mode(true, ws);
        assert!(Arc::ptr_eq(&plan, &part.policy()));
        part.plan_mode(false, ws);
        assert_eq!(*part.policy(), configured(ws));
    }

    #[test]
    fn a_sub_agents_part_owns_no_temporary_folder() {
        let dir = tempfile::tempdir().unwrap();
        let child = Sandbox::new(configured(dir.path()), false);
        assert_eq!(child.owned_tmpdir, None);
        let own = Sandbox::new(configured(dir.path()), true);
        assert_eq!(own.owned_tmpdir, Some(dir.path().join("t")));
    }
}
