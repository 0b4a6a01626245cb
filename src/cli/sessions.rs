//! `minicode sessions` and the session `--session` names: listing this workspace's sessions
//! (what `--continue` passes over marked, a goal session titled by its objective rather than
//! its raw record), the bare ids the shell completion scripts offer for `--session`
//! (`sessions --ids`, hidden), and opening the session a full id or a unique prefix names.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::agent::goal::record;
use crate::chat::Message;
use crate::sanitize::visible;
use crate::session::{Session, SessionError, SessionInfo};

use super::{Failure, usage};

/// Prints the listing, or with `ids_only` one id per line (newest first) for completion.
pub(super) fn list(workspace: &Path, ids_only: bool) -> Result<ExitCode, Failure> {
    let sessions = Session::list(workspace).map_err(usage)?;
    let mut out = std::io::stdout().lock();
    if ids_only {
        for s in &sessions {
            let _ = writeln!(out, "{}", s.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        let _ = writeln!(std::io::stderr(), "no sessions in this workspace yet");
    }
    let now = std::time::SystemTime::now();
    for s in &sessions {
        let when = humantime::format_rfc3339_seconds(s.updated);
        let _ = writeln!(out, "{}  {}  {}", s.id, when, about(s, now));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a listing line says about a session after its id and time. Everything in it comes from
/// files in the repository: nothing may act on the terminal.
fn about(s: &SessionInfo, now: std::time::SystemTime) -> String {
    let about = match &s.problem {
        Some(problem) => format!("(unreadable: {})", visible(problem)),
        None => visible(&title(&s.first_prompt)),
    };
    let about = match (&s.parent, &s.forked_from) {
        (Some(parent), _) => format!("(sub-agent of {}) {about}", visible(parent)),
        (None, Some(origin)) => format!("(fork of {}) {about}", visible(origin)),
        (None, None) => about,
    };
    // What `--continue` passes over is marked, so the choice it makes can be understood.
    match s.passed_over(now) {
        Some(reason) => format!("({reason}; --continue skips it) {about}"),
        None => about,
    }
}

/// A session's title from the first line of its first user message: the prompt itself, or for
/// a goal session (whose first message is the goal's record) `goal: <objective>`.
pub(super) fn title(first_prompt: &str) -> String {
    if !first_prompt.starts_with(record::STATE_OPEN) {
        return first_prompt.to_string();
    }
    match record::parse(&Message::user(first_prompt.to_string())) {
        Ok(record::Parsed::Record(r)) => match r.goal {
            Some(goal) => format!("goal: {}", goal.objective.lines().next().unwrap_or("")),
            None => "goal: (cleared)".to_string(),
        },
        _ => "goal: (unreadable record)".to_string(),
    }
}

/// Opens the session `given` names: a full id, or a unique prefix of 6 or more characters (the
/// short id the full-screen session shows). Every failure is a usage error (exit 2).
pub(super) fn open(workspace: &Path, given: &str) -> Result<Session, Failure> {
    let id = Session::resolve_id(workspace, given).map_err(usage)?;
    Session::open(workspace, &id).map_err(usage)
}

/// `--continue`: the newest session worth continuing. When there is none but some were passed
/// over, the error says so, so a user who sees sessions listed knows why none was picked.
pub(super) fn open_latest(workspace: &Path) -> Result<Session, Failure> {
    match Session::open_latest(workspace) {
        Err(e @ SessionError::NotFound { id: None }) => {
            let now = std::time::SystemTime::now();
            let skipped = Session::list(workspace)
                .map(|all| all.iter().filter(|s| s.passed_over(now).is_some()).count())
                .unwrap_or(0);
            Err(match skipped {
                0 => usage(e),
                n => usage(format!(
                    "{e} to continue ({n} passed over: see `minicode sessions`; open one with \
                     --session ID)"
                )),
            })
        }
        other => other.map_err(usage),
    }
}
