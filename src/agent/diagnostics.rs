//! The compiler's word after an edit, as a part of the core: after a successful `write` or
//! `edit`, the session's language servers (`lsp::Servers`) are asked about the file and what
//! they found new is appended to the call's result, which the model reads next round, the
//! frontends show and the session records like any result. The servers end with the session.
//! It never fails a call and never delays a file no server is for.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::chat::{ToolCall, ToolStatus};
use crate::lsp::{Servers, Settings};
use crate::tools::{ToolCtx, ToolOutput};

/// The tools whose success changes a file's text.
const EDITING_TOOLS: &[&str] = &["write", "edit"];

pub(crate) struct Diagnostics {
    settings: Settings,
    servers: Servers,
}

impl Diagnostics {
    pub(crate) fn new(settings: Settings) -> Self {
        Self {
            servers: Servers::new(settings.clone()),
            settings,
        }
    }

    /// The file a call is about to change, when it is one the servers may be asked about
    /// (taken before the call runs: its arguments move into it).
    pub(crate) fn target(
        &self,
        call: &ToolCall,
        args: &serde_json::Value,
        ctx: &ToolCtx,
    ) -> Option<PathBuf> {
        if !self.settings.enabled || !EDITING_TOOLS.contains(&call.name.as_str()) {
            return None;
        }
        let raw = args.get("path")?.as_str()?;
        let path = crate::fsutil::resolve_in_workspace(&ctx.workspace, raw).ok()?;
        crate::lsp::language::Language::of(&path).map(|_| path)
    }

    /// After the call: the servers' new errors about `path`, appended to a successful
    /// result. An interrupt stops the wait (the result stands as it is).
    pub(crate) async fn after(
        &mut self,
        path: Option<PathBuf>,
        output: &mut ToolOutput,
        (ctx, policy): (&ToolCtx, &crate::sandbox::Policy),
        cancel: &CancellationToken,
    ) {
        let Some(path) = path else { return };
        if output.status != ToolStatus::Succeeded {
            return;
        }
        let said = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            said = self.servers.after_edit(&path, ctx, policy) => said,
        };
        if let Some(said) = said {
            output.content.push_str(&said);
        }
    }

    /// The session ends: every server is asked to exit, then killed.
    pub(crate) async fn end(&mut self) {
        self.servers.shut_down().await;
    }

    /// Another session takes this one's place (`/clear`, `/resume`): its servers end in the
    /// background and the next session starts its own when it needs them.
    pub(crate) fn end_soon(&mut self) {
        let mut old = std::mem::replace(&mut self.servers, Servers::new(self.settings.clone()));
        tokio::spawn(async move { old.shut_down().await });
    }
}
