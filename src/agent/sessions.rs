//! The core moving to another session: a fresh one (`/clear`, `Op::NewSession`) or a copy
//! of the current one (`/fork`, `Op::Fork`: `Session::fork`), where the core continues as if it
//! had been resumed: the restored history is sent again, the goal comes along with its phase
//! but disarmed, approvals "always" start over. The original session's file is left as it was
//! saved. `/resume` (`Op::Resume`) moves to another saved session of the workspace, as
//! `--session` would have opened it; `Op::ListSessions` lists the ones it can move to.

use super::Core;
use crate::protocol::Event;
use crate::session::Session;

impl Core {
    /// Replaces the session with a fresh one in the same workspace.
    pub(crate) fn new_session(&mut self) {
        match Session::begin(&self.tool_ctx.workspace) {
            Ok(session) => {
                super::background::end(&self.tool_ctx, &mut self.store.session);
                self.diagnostics.end_soon();
                self.store.save();
                let old = self.store.replace(session);
                self.checkpoints.follow(&self.store.session);
                if let Err(e) = old.discard_if_empty() {
                    tracing::warn!(error = %e, "could not remove an empty session");
                }
                // A fresh history: drop the old checkpoint and cached estimates.
                let _ = self.upkeep.reset(&self.store.session);
                // A fresh start of the request: the instruction files are read into it again
                // (an invalid one fails the next turn).
                let _ = self.upkeep.reload_memory();
                self.approvals.forget();
                self.skills.restore(self.store.session.messages());
                self.tool_ctx.forget_seen();
                self.emit(self.configured());
                self.emit(self.upkeep.window_set());
                self.goal.start(self.store.session.messages());
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
        self.fork_with(self.store.session.fork(), None);
    }

    /// Continues in `copy`, a copy of the session (all of it, or the part before a rewound
    /// turn).
    /// `before`: the copy holds the turns before this one only; its checkpoints too.
    pub(crate) fn fork_with(
        &mut self,
        copy: Result<Session, crate::session::SessionError>,
        before: Option<u32>,
    ) {
        let copy = match copy {
            Ok(copy) => copy,
            Err(e) => {
                self.emit(Event::Error {
                    message: format!("could not fork the session: {e}"),
                });
                return;
            }
        };
        let parent = self.store.replace(copy);
        self.checkpoints
            .fork(parent.id(), &self.store.session, before);
        let parent_id = parent.id().to_string();
        // Dropping the original releases its lock.
        drop(parent);
        self.approvals.forget();
        self.tool_ctx.forget_seen();
        if let Err(e) = self.upkeep.reset(&self.store.session) {
            self.emit(Event::Warning {
                message: format!("ignoring the saved compaction checkpoint: {e}"),
            });
        }
        self.emit(Event::SessionForked {
            parent_id,
            session_id: self.store.session.id().to_string(),
        });
        self.emit(self.configured());
        self.restore_history();
        self.emit(self.upkeep.window_set());
        self.goal.start(self.store.session.messages());
        self.report_context();
        self.session_changed_plan();
    }
}

impl Core {
    /// Answers `Op::ListSessions`: this workspace's sessions a user can resume.
    pub(crate) fn list_sessions(&self) {
        let current = self.store.session.id().to_string();
        match super::listing::resumable(&self.tool_ctx.workspace, Some(&current)) {
            Ok(sessions) => self.emit(Event::SessionsListed { sessions }),
            Err(e) => self.emit(Event::Error {
                message: format!("cannot list the sessions: {e}"),
            }),
        }
    }

    /// Continues in the saved session `id` of this workspace (locked like `--session`); the
    /// current one is saved and released, or removed when it holds nothing.
    pub(crate) fn resume(&mut self, id: &str) {
        if id == self.store.session.id() {
            self.emit(Event::Warning {
                message: "that is the session running now".to_string(),
            });
            return;
        }
        let opened = Session::resolve_id(&self.tool_ctx.workspace, id)
            .and_then(|id| Session::open(&self.tool_ctx.workspace, &id));
        let session = match opened {
            Ok(session) => session,
            Err(e) => {
                self.emit(Event::Error {
                    message: format!("could not resume session {id}: {e}"),
                });
                return;
            }
        };
        super::background::end(&self.tool_ctx, &mut self.store.session);
        self.diagnostics.end_soon();
        self.store.save();
        let old = self.store.replace(session);
        self.checkpoints.follow(&self.store.session);
        if let Err(e) = old.discard_if_empty() {
            tracing::warn!(error = %e, "could not remove an empty session");
        }
        if let Some(notice) = super::background::resumed(&self.store.session) {
            self.emit(notice);
        }
        if let Err(e) = self.upkeep.reset(&self.store.session) {
            self.emit(Event::Warning {
                message: format!("ignoring the saved compaction checkpoint: {e}"),
            });
        }
        let _ = self.upkeep.reload_memory();
        self.approvals.forget();
        self.skills.restore(self.store.session.messages());
        self.tool_ctx.forget_seen();
        self.emit(self.configured());
        self.restore_history();
        self.emit(self.upkeep.window_set());
        self.goal.start(self.store.session.messages());
        self.report_context();
        self.session_changed_plan();
    }
}
