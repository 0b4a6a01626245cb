//! Checkpoints, a part of the core: before a mutating call (`write`, `edit`, `bash`, any tool
//! of kind edit or execute) it records the workspace state the call may change, after it what
//! the call changed (see `crate::checkpoints`), each tied to the session's user turn and the
//! call's id; and it serves `Op::ListRewind` and the code half of `Op::Rewind`. A failure to
//! record never stops a call: it is said as a warning for every call it hits, the call runs
//! unrecorded, and the listing names it under its turn.

use crate::chat::{Builtin, Role, ToolCall, ToolKind};
use crate::checkpoints::{FileChange, Position, Recorder, Settings, TurnChanges};
use crate::protocol::{Event, FileChangeKind, RewindTurn};
use crate::session::Session;
use crate::tools::Aim;

use super::Emitter;

pub(crate) struct Checkpoints {
    recorder: Recorder,
    emitter: Emitter,
}

impl Checkpoints {
    pub(crate) fn new(session: &Session, settings: Settings, emitter: Emitter) -> Self {
        Self {
            recorder: Recorder::new(session.workspace(), session.id(), settings),
            emitter,
        }
    }

    /// The core moved to another session (`/clear`, `/fork`, a conversation rewind): its
    /// checkpoints are recorded apart.
    pub(crate) fn follow(&mut self, session: &Session) {
        let settings = self.recorder.settings().clone();
        self.recorder = Recorder::new(session.workspace(), session.id(), settings);
    }

    /// The core continues in a fork of `parent`: the fork starts with the parent's checkpoints
    /// (of the turns before `before`, all without), so its rewinds reach back past the fork.
    pub(crate) fn fork(&mut self, parent: &str, session: &Session, before: Option<u32>) {
        if self.recorder.enabled()
            && let Err(e) =
                crate::checkpoints::share(session.workspace(), parent, session.id(), before)
        {
            tracing::warn!(error = %e, "could not share the checkpoints with the fork");
        }
        self.follow(session);
    }

    /// Whether calls of this kind can change files: all but reads, searches, fetches and the
    /// model's own work (sub-agents only read, skills only load text). An MCP tool's changes
    /// are recorded around its call.
    fn records(kind: ToolKind) -> bool {
        !matches!(
            kind,
            ToolKind::Read | ToolKind::Search | ToolKind::Fetch | ToolKind::Think
        )
    }

    /// Before an approved call runs. Returns whether its `after` is owed (also when recording
    /// failed: the call is then noted as unrecorded).
    pub(crate) fn before(
        &mut self,
        session: &Session,
        call: &ToolCall,
        (kind, aim): (ToolKind, &Aim),
    ) -> bool {
        if !self.recorder.enabled() || !Self::records(kind) {
            return false;
        }
        let position = Position {
            turn: user_turns(session),
            call: call.id.clone(),
            tool: call.name.clone(),
        };
        let scope = named_path(session.workspace(), call, aim);
        let began = self.recorder.before_scoped(&position, scope.as_deref());
        if let Some((entries, took)) = self.recorder.take_slow_base() {
            self.emitter.emit(Event::Warning {
                message: format!(
                    "checkpoints: the session's first record read the workspace ({entries} \
                     files and folders) in {:.1} s; later calls read only what changed \
                     ([checkpoints] enabled = false turns the undo record off)",
                    took.as_secs_f64()
                ),
            });
        }
        match began {
            Ok(()) => true,
            Err(e) => {
                self.failed(&e);
                // Still owed: `after` notes that the call ran unrecorded.
                true
            }
        }
    }

    /// After the call: records what it changed; `written`, the sandbox's record of what a
    /// confined command named, narrows what the call may claim (see `checkpoints::Noted`).
    pub(crate) fn after(&mut self, written: Option<&crate::sandbox::Written>) {
        let noted = written.map(|w| crate::checkpoints::Noted {
            paths: w.paths.clone(),
            notified: w.notified.unwrap_or(w.paths.len() as u64),
        });
        if let Err(e) = self.recorder.after_noted(noted.as_ref()) {
            self.failed(&e);
        }
    }

    /// Said for every call a failure hits: each of them cannot be undone.
    fn failed(&mut self, e: &std::io::Error) {
        tracing::warn!(error = %e, "could not record a checkpoint");
        self.emitter.emit(Event::Warning {
            message: format!("could not record a checkpoint; this call cannot be undone: {e}"),
        });
    }

    /// `Op::ListRewind`'s answer.
    pub(crate) fn listed(&mut self, session: &Session) -> Event {
        let enabled = self.recorder.enabled();
        let turns = match self.recorder.list() {
            Ok(turns) => turns,
            Err(e) => {
                return Event::Error {
                    message: format!("could not read the checkpoints: {e}"),
                };
            }
        };
        Event::RewindList {
            turns: described(session, turns),
            enabled,
        }
    }

    /// Restores the code to before `turn` (a user turn, or a rewind's own record); the rewind's
    /// own record gets the next rewind number.
    pub(crate) fn rewind(
        &mut self,
        turn: u32,
        force: bool,
    ) -> std::io::Result<crate::checkpoints::Outcome> {
        let how = crate::checkpoints::How {
            dry_run: false,
            force,
        };
        self.recorder.rewind(turn, &how)
    }
}

/// The one file a `write` or an `edit` call changes, workspace-relative, as the tool will
/// resolve it (links followed): its records look at that path alone. `None` for any other
/// call, or when the path does not resolve inside the workspace (the tool then fails; the
/// whole tree is scanned anyway).
fn named_path(workspace: &std::path::Path, call: &ToolCall, aim: &Aim) -> Option<Vec<String>> {
    if !matches!(
        Builtin::of(&call.name),
        Some(Builtin::Write | Builtin::Edit)
    ) {
        return None;
    }
    let [raw] = aim.paths() else {
        return None;
    };
    let path = crate::fsutil::resolve_in_workspace(workspace, raw).ok()?;
    let root = workspace.canonicalize().ok()?;
    let rel = path.strip_prefix(&root).ok()?.to_str()?;
    (!rel.is_empty()).then(|| vec![rel.to_string()])
}

/// The recorded turns as a listing shows them: each with its prompt.
pub(crate) fn described(session: &Session, turns: Vec<TurnChanges>) -> Vec<RewindTurn> {
    turns
        .into_iter()
        .map(|t| RewindTurn {
            turn: t.turn,
            prompt: prompt(session, t.turn).unwrap_or_else(|| {
                if t.rewind {
                    "(a rewind: undo it to get back what it overwrote)"
                } else {
                    ""
                }
                .to_string()
            }),
            files: t.files.iter().map(|(p, k)| (p.clone(), kind(*k))).collect(),
            caveats: caveats(&t),
            skipped: t.skipped,
            withheld: t.withheld,
            undone: t.undone,
        })
        .collect()
}

/// What a rewind of a turn cannot (or will not, unforced) undo. A command may have reached
/// past the files: the network, other programs, databases, files outside the workspace.
fn caveats(t: &TurnChanges) -> Vec<String> {
    let mut out = Vec::new();
    if t.interrupted {
        out.push("this rewind was interrupted: run it again".to_string());
    }
    if !t.unrecorded.is_empty() {
        out.push(format!(
            "{} call(s) ran unrecorded ({}): what they changed cannot be undone",
            t.unrecorded.len(),
            t.unrecorded.join(", ")
        ));
    }
    for path in &t.uncertain {
        out.push(format!(
            "{path}: may not be the agent's change (another session or program wrote meanwhile, \
             or after a crash); a rewind keeps it unless forced"
        ));
    }
    if t.tools
        .iter()
        .any(|t| Builtin::of(t) == Some(Builtin::Bash))
    {
        out.push(
            "ran commands: what they did outside the workspace (network, other programs, \
             files elsewhere) is not undone"
                .to_string(),
        );
    }
    out
}

/// The number of user messages in the session: the position of the turn now running.
pub(crate) fn user_turns(session: &Session) -> u32 {
    let count = session
        .messages()
        .iter()
        .filter(|m| m.role == Role::User)
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// The index of the `turn`th user message (1-based) and its text.
pub(crate) fn user_message(session: &Session, turn: u32) -> Option<(usize, String)> {
    let nth = usize::try_from(turn).ok()?.checked_sub(1)?;
    session
        .messages()
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .nth(nth)
        .map(|(i, m)| (i, m.content.clone().unwrap_or_default()))
}

fn prompt(session: &Session, turn: u32) -> Option<String> {
    user_message(session, turn).map(|(_, text)| text)
}

fn kind(change: FileChange) -> FileChangeKind {
    match change {
        FileChange::Created => FileChangeKind::Created,
        FileChange::Modified => FileChangeKind::Modified,
        FileChange::Deleted => FileChangeKind::Deleted,
        FileChange::ModeChanged => FileChangeKind::ModeChanged,
    }
}

impl super::Core {
    /// `Op::ListRewind`.
    pub(crate) fn list_rewind(&mut self) {
        let event = self.checkpoints.listed(&self.store.session);
        self.emit(event);
    }

    /// `Op::Rewind`: the code first (while the session is still the one that recorded it),
    /// then the conversation, forked before the turn's user message.
    pub(crate) fn rewind(&mut self, turn: u32, scope: crate::protocol::RewindScope, force: bool) {
        if crate::checkpoints::is_rewind_turn(turn) {
            self.undo_rewind(turn, force);
            return;
        }
        let Some((index, prompt)) = user_message(&self.store.session, turn) else {
            self.emit(rewound(
                turn,
                None,
                Some(format!("this session has no turn {turn}")),
            ));
            return;
        };
        let mut outcome = crate::checkpoints::Outcome::default();
        if scope.code() {
            match self.checkpoints.rewind(turn, force) {
                Ok(done) => outcome = done,
                Err(e) => {
                    let error = format!("could not restore the code: {e}");
                    self.emit(rewound(turn, None, Some(error)));
                    return;
                }
            }
        }
        if scope.conversation() {
            self.store.save();
            let copy = self.store.session.fork_before(index);
            self.fork_with(copy, Some(turn));
        }
        // Only a conversation that went back lost the prompt: a code-only rewind keeps the
        // turn in history, and sending its prompt again would repeat it.
        self.emit(rewound_event(
            turn,
            outcome,
            scope.conversation().then_some(prompt),
        ));
    }

    /// `Op::Rewind` to a rewind's own record: the code only (a rewind has no message).
    fn undo_rewind(&mut self, turn: u32, force: bool) {
        match self.checkpoints.rewind(turn, force) {
            Ok(outcome) => self.emit(rewound_event(turn, outcome, None)),
            Err(e) => {
                let error = format!("could not restore the code: {e}");
                self.emit(rewound(turn, None, Some(error)));
            }
        }
    }
}

/// The event for a rewind's outcome. Protected paths and uncertain changes were left alone
/// like conflicts; files holding a secret were never stored, like large ones.
fn rewound_event(turn: u32, outcome: crate::checkpoints::Outcome, prompt: Option<String>) -> Event {
    let error = if outcome.pruned {
        Some(format!(
            "the checkpoints of turn {turn} were pruned; no file was restored"
        ))
    } else if outcome.nothing_recorded {
        Some(nothing_recorded(turn, &outcome.unrecorded))
    } else {
        None
    };
    let mut conflicts = outcome.conflicts;
    conflicts.extend(outcome.uncertain);
    conflicts.extend(outcome.protected);
    conflicts.sort();
    conflicts.dedup();
    let mut skipped = outcome.skipped;
    skipped.extend(outcome.withheld);
    Event::Rewound {
        turn,
        restored: outcome.restored,
        conflicts,
        overwritten: outcome.overwritten,
        skipped,
        prompt,
        error,
    }
}

/// What a rewind to a turn with nothing recorded from it on says.
pub(crate) fn nothing_recorded(turn: u32, unrecorded: &[String]) -> String {
    if unrecorded.is_empty() {
        format!("nothing was recorded from turn {turn} on: no file to restore")
    } else {
        format!(
            "nothing was recorded from turn {turn} on: {} call(s) ran unrecorded ({}), so what \
             they changed cannot be restored",
            unrecorded.len(),
            unrecorded.join(", ")
        )
    }
}

fn rewound(turn: u32, prompt: Option<String>, error: Option<String>) -> Event {
    Event::Rewound {
        turn,
        restored: Vec::new(),
        conflicts: Vec::new(),
        overwritten: Vec::new(),
        skipped: Vec::new(),
        prompt,
        error,
    }
}
