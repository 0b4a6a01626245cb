//! Plan mode, a part of the core: while it is on, `bash` runs under the `read-only` profile with
//! the network off, `write`/`edit` are refused by the runtime except to the session's plan file
//! (`.minicode/plans/<session-id>.md`), and MCP tools are always asked. A notice appended to
//! history tells the model when it turns on or off (the system prompt never changes, see
//! `agent::notice`), but the refusal is enforced here, never left to the prompt. The profile
//! `bash` runs under is the sandbox part's (`agent::sandboxing`), switched with this one by
//! `Core::set_plan`. It owns no frontend state: frontends learn of it through
//! `Event::SandboxChanged`.

use std::path::{Path, PathBuf};

use crate::chat::ToolKind;
use crate::tools::{Aim, Tool, ToolCtx};

/// The folder below the workspace that holds plan files.
const PLANS: &str = ".minicode/plans";

/// Plan mode's state: whether it is on, and what the model was last told.
#[derive(Default)]
pub(crate) struct Plan {
    /// Plan mode is on.
    on: bool,
    /// Whether the last plan notice in the history said "on" (with this session's file).
    announced: bool,
}

impl Plan {
    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// The plan file of `session` in `workspace` (relative to the workspace when shown).
    pub(crate) fn file(session: &str) -> PathBuf {
        Path::new(PLANS).join(format!("{session}.md"))
    }

    /// Turns plan mode on or off. The model is told with the next request ([`Plan::notice`]).
    pub(crate) fn set(&mut self, on: bool) {
        self.on = on;
    }

    /// Reads what the model was told from a history (start-up, a new or forked session): the
    /// last plan notice of `session`'s file. A fork's history names its parent's file, so it
    /// counts as not told.
    pub(crate) fn restore(&mut self, messages: &[crate::chat::Message], session: &str) {
        let on = note(session);
        self.announced = super::notice::notices(messages)
            .rev()
            .find(|text| text.contains(NOTE_TITLE))
            .is_some_and(|text| text.contains(&on));
    }

    /// The notice text when plan mode changed since the model was last told, if it did.
    pub(crate) fn notice(&mut self, session: &str) -> Option<String> {
        if self.is_on() == self.announced {
            return None;
        }
        self.announced = self.is_on();
        Some(if self.announced {
            note(session)
        } else {
            format!(
                "{NOTE_TITLE}\nPlan mode is off: the earlier plan-mode note no longer applies. \
                 You may change files and run commands again, as the user approves."
            )
        })
    }

    /// Why plan mode refuses this call, if it does: a `write` or `edit` anywhere but the plan
    /// file. The text is the tool result the model reads.
    pub(crate) fn refusal(
        &self,
        tool: &dyn Tool,
        aim: &Aim,
        ctx: &ToolCtx,
        session: &str,
    ) -> Option<String> {
        if !self.is_on() || tool.kind() != ToolKind::Edit {
            return None;
        }
        let plan = ctx.workspace.join(Self::file(session));
        let targets = aim.paths();
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

/// The heading of every plan notice.
const NOTE_TITLE: &str = "# Plan mode";

/// What the model is told when plan mode turns on.
fn note(session: &str) -> String {
    format!(
        "{NOTE_TITLE}\nPlan mode is on: investigate and plan, do not change anything. You may \
         read, list, search, delegate and run read-only `bash` commands (no writes, no \
         network). `write` and `edit` are refused except to the plan file {}: write your plan \
         there. The user leaves plan mode to let you carry it out.",
        Plan::file(session).display()
    )
}
