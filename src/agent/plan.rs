//! Plan mode, a part of the core: while it is on, `bash` runs under the `read-only` profile with
//! the network off, `write`/`edit` are refused by the runtime except to the session's plan file
//! (`.minicode/plans/<session-id>.md`), and MCP tools are always asked. The system prompt
//! carries a note saying so, but the refusal is enforced here, never left to the prompt.
//! Turning it off restores the profile and the prompt it replaced. It owns no frontend state:
//! frontends learn of it through `Event::SandboxChanged`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::chat::ToolKind;
use crate::sandbox::{Mode, Policy};
use crate::tools::{Tool, ToolCtx};

use super::context::Context;

/// The folder below the workspace that holds plan files.
const PLANS: &str = ".minicode/plans";

/// Plan mode's state: whether it is on, and what it replaced while it is.
#[derive(Default)]
pub(crate) struct Plan {
    /// The policy and the system prompt in force before plan mode, while it is on.
    saved: Option<(Arc<Policy>, String)>,
}

impl Plan {
    pub(crate) fn is_on(&self) -> bool {
        self.saved.is_some()
    }

    /// The plan file of `session` in `workspace` (relative to the workspace when shown).
    pub(crate) fn file(session: &str) -> PathBuf {
        Path::new(PLANS).join(format!("{session}.md"))
    }

    /// Turns plan mode on or off; false when it already was so. On: `bash` gets the read-only
    /// profile without network (keeping the session's temporary folder) and the prompt its
    /// note. Off: both are restored.
    pub(crate) fn set(
        &mut self,
        on: bool,
        ctx: &ToolCtx,
        context: &mut Context,
        session: &str,
    ) -> bool {
        match (on, self.saved.take()) {
            (true, None) => {
                let normal = ctx.sandbox();
                let read_only = Policy::for_workspace(
                    Mode::ReadOnly,
                    false,
                    &ctx.workspace,
                    &[],
                    normal.tmpdir.clone(),
                );
                ctx.set_sandbox(read_only);
                let prompt = context.system_prompt().to_string();
                context.set_system_prompt(format!("{prompt}\n\n{}", note(session)));
                self.saved = Some((normal, prompt));
                true
            }
            (false, Some((policy, prompt))) => {
                ctx.set_sandbox((*policy).clone());
                context.set_system_prompt(prompt);
                true
            }
            (_, saved) => {
                self.saved = saved;
                false
            }
        }
    }

    /// Why plan mode refuses this call, if it does: a `write` or `edit` anywhere but the plan
    /// file. The text is the tool result the model reads.
    pub(crate) fn refusal(
        &self,
        tool: &dyn Tool,
        args: &serde_json::Value,
        ctx: &ToolCtx,
        session: &str,
    ) -> Option<String> {
        if !self.is_on() || tool.kind() != ToolKind::Edit {
            return None;
        }
        let plan = ctx.workspace.join(Self::file(session));
        let targets = tool.paths(args);
        let only_plan = !targets.is_empty()
            && targets.iter().all(|raw| {
                crate::fsutil::resolve_in_workspace(&ctx.workspace, raw)
                    .is_ok_and(|path| path == plan)
            });
        (!only_plan).then(|| {
            format!(
                "not run: plan mode is on, so files cannot be changed; only the plan file {} \
                 may be written. Write the plan there and wait for the user to leave plan mode",
                Self::file(session).display()
            )
        })
    }

    /// Whether plan mode makes this call asked whatever `--yes` or "always" say: MCP tools
    /// (their effects are unknown to minicode).
    pub(crate) fn must_ask(&self, tool: &dyn Tool) -> bool {
        self.is_on() && tool.spec().name.starts_with("mcp_")
    }
}

/// What the system prompt says while plan mode is on.
fn note(session: &str) -> String {
    format!(
        "# Plan mode\nPlan mode is on: investigate and plan, do not change anything. You may \
         read, list, search, delegate and run read-only `bash` commands (no writes, no \
         network). `write` and `edit` are refused except to the plan file {}: write your plan \
         there. The user leaves plan mode to let you carry it out.",
        Plan::file(session).display()
    )
}
