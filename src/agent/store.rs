//! The core's keeping of its session: the session itself, the turn counter, the host's journal
//! and the save rule. A save that fails is told once (the same failure again stays quiet until
//! a save works), and a turn whose work the file does not hold never ends as a success: a
//! crash must not leave a run that looked done with nothing of it on disk.

use std::sync::Arc;

use super::{Emitter, validate};
use crate::protocol::{Event, Journal, TurnEnd, TurnStats};
use crate::session::Session;

/// The session part of the core. Its invariant: `save_error` is the last failure the user was
/// told of, so a repeat is not told twice and a working save clears it.
pub(crate) struct Store {
    pub(crate) session: Session,
    /// The host's record of tool calls in flight, when it keeps one.
    pub(crate) journal: Option<Arc<dyn Journal>>,
    /// Turns (and manual compactions) started by this core, for `TurnStarted`.
    turns: u64,
    /// The last save's error, already told to the user (cleared by a save that works).
    save_error: Option<String>,
    events: Emitter,
}

impl Store {
    pub(crate) fn new(
        session: Session,
        journal: Option<Arc<dyn Journal>>,
        events: Emitter,
    ) -> Self {
        Self {
            session,
            journal,
            turns: 0,
            save_error: None,
            events,
        }
    }

    /// Validates and saves the session, reporting (not failing on) errors: used where nothing
    /// waits on the file (a new session, shutdown). A history that fails validation is not
    /// written (the file keeps its last good state): it would only fail again on resume. The
    /// last batch may still be open. Returns whether the file now holds the history.
    pub(crate) fn save(&mut self) -> bool {
        match self.try_save() {
            Ok(()) => true,
            Err(message) => {
                // The same failure again (a full disk at shutdown after a turn failed on it)
                // was already told.
                if self.save_error.as_ref() != Some(&message) {
                    self.events.emit(Event::Warning {
                        message: message.clone(),
                    });
                }
                self.save_error = Some(message);
                false
            }
        }
    }

    /// Validates and saves the session; the error is the user's message. A turn stops on it:
    /// work the file does not record must not go on (a tool call run unrecorded could not be
    /// told apart after a crash, and the user would lose the turn without knowing).
    ///
    /// A session with nothing new since it was opened or saved is not written: a refused goal
    /// command or a shutdown after a saved turn must not move its `updated` time, which orders
    /// `--continue`.
    pub(crate) fn try_save(&mut self) -> Result<(), String> {
        if !self.session.has_unsaved_changes() {
            return Ok(());
        }
        match validate::history_prefix_from(self.session.messages(), self.session.settled()) {
            Ok(settled) => self.session.set_settled(settled),
            Err(e) => {
                tracing::error!(error = %e, "refusing to save an invalid history");
                return Err(format!("could not save the session: {e}"));
            }
        }
        self.session.save().map_err(|e| {
            tracing::error!(error = %e, "session save failed");
            format!("could not save the session: {e}")
        })?;
        self.save_error = None;
        Ok(())
    }

    /// Saves, then tells the host's journal that `calls` are over: only a result on disk may
    /// end a call's "started" mark.
    pub(crate) fn save_and_finish(&mut self, calls: &[String]) {
        if self.save()
            && let Some(journal) = &self.journal
        {
            for id in calls {
                journal.finished(id);
            }
        }
    }

    pub(crate) fn start_turn(&mut self) -> u64 {
        self.turns += 1;
        self.events.emit(Event::TurnStarted { turn: self.turns });
        self.turns
    }

    /// Adds the stats to the session totals, saves and reports the end, which a failed save
    /// turns into a failure (the run must not look done when nothing of it is on disk).
    /// Returns the end reported. `user_turn` is false for a manual compaction, which spends
    /// tokens but is not a turn of the conversation.
    pub(crate) fn finish_turn(
        &mut self,
        turn: u64,
        end: TurnEnd,
        stats: TurnStats,
        user_turn: bool,
    ) -> TurnEnd {
        self.add_totals(&stats, user_turn);
        let end = match (self.try_save(), end) {
            (Ok(()), end) => end,
            // The turn already failed (on this very save, often): its first error stands.
            (Err(message), TurnEnd::Failed { error }) => {
                if message != error {
                    self.events.emit(Event::Warning {
                        message: message.clone(),
                    });
                }
                self.save_error = Some(message);
                TurnEnd::Failed { error }
            }
            (Err(error), _) => {
                self.save_error = Some(error.clone());
                TurnEnd::Failed { error }
            }
        };
        if let TurnEnd::Failed { error } = &end {
            tracing::warn!(%error, "turn failed");
        }
        self.events.emit(Event::TurnEnded {
            turn,
            end: end.clone(),
            stats: Box::new(stats),
        });
        end
    }

    fn add_totals(&mut self, stats: &TurnStats, user_turn: bool) {
        let totals = self.session.totals_mut();
        if user_turn {
            totals.turns += 1;
        }
        totals.model_calls += u64::from(stats.model_calls + stats.summary_calls);
        totals.tool_calls += u64::from(stats.tool_calls);
        for tokens in [stats.tokens, stats.summary_tokens] {
            totals.input_tokens += tokens.input_tokens;
            totals.output_tokens += tokens.output_tokens;
            totals.total_tokens += tokens.total_tokens;
        }
    }

    /// Puts `session` in place of the current one and returns the one it replaces.
    pub(crate) fn replace(&mut self, session: Session) -> Session {
        std::mem::replace(&mut self.session, session)
    }

    /// At shutdown: saves, then releases the session (and its lock); one that never got a
    /// message leaves no file behind.
    pub(crate) fn close(mut self) {
        self.save();
        if let Err(e) = self.session.discard_if_empty() {
            tracing::warn!(error = %e, "could not remove an empty session");
        }
    }
}
