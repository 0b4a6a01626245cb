//! The core moving to another session: a fresh one (`/clear`, `Op::NewSession`) or a copy
//! of the current one (`/fork`, `Op::Fork`: `Session::fork`), where the core continues as if it
//! had been resumed: the restored history is sent again, the goal comes along with its phase
//! but disarmed, approvals "always" start over. The original session's file is left as it was
//! saved.

use super::Core;
use crate::protocol::Event;
use crate::session::Session;

impl Core {
    /// Replaces the session with a fresh one in the same workspace.
    pub(crate) fn new_session(&mut self) {
        match Session::create(&self.tool_ctx.workspace) {
            Ok(session) => {
                self.save();
                let old = std::mem::replace(&mut self.session, session);
                if let Err(e) = old.discard_if_empty() {
                    tracing::warn!(error = %e, "could not remove an empty session");
                }
                // A fresh history: drop the old checkpoint and cached estimates.
                let _ = self.context.set_checkpoint(None, self.session.messages());
                self.approved_tools.clear();
                self.skills.loaded.set(Vec::new());
                self.tool_ctx.forget_seen();
                self.emit(self.configured());
                self.emit(self.window_set());
                self.goal_start();
                self.report_context();
                self.session_changed_plan();
            }
            Err(e) => self.emit(Event::Error {
                message: format!("could not start a new session: {e}"),
            }),
        }
    }

    pub(crate) fn fork(&mut self) {
        // The copy is taken from memory; the original's file is not written again (the core
        // saved it when its last turn ended), so forking leaves it exactly as it was.
        let copy = match self.session.fork() {
            Ok(copy) => copy,
            Err(e) => {
                self.emit(Event::Error {
                    message: format!("could not fork the session: {e}"),
                });
                return;
            }
        };
        let parent = std::mem::replace(&mut self.session, copy);
        let parent_id = parent.id().to_string();
        // Dropping the original releases its lock.
        drop(parent);
        self.approved_tools.clear();
        self.tool_ctx.forget_seen();
        if let Err(e) = self
            .context
            .set_checkpoint(self.session.checkpoint().cloned(), self.session.messages())
        {
            self.emit(Event::Warning {
                message: format!("ignoring the saved compaction checkpoint: {e}"),
            });
        }
        self.emit(Event::SessionForked {
            parent_id,
            session_id: self.session.id().to_string(),
        });
        self.emit(self.configured());
        if !self.session.messages().is_empty() {
            self.emit(Event::HistoryRestored {
                entries: super::history::entries(
                    &self.session,
                    &self.tool_ctx.secrets,
                    &self.registry,
                ),
            });
        }
        self.emit(self.window_set());
        self.goal_start();
        self.report_context();
        self.session_changed_plan();
    }
}
