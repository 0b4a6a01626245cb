//! This workspace's sessions as the `/resume` picker and `minicode sessions` show them: a
//! clean title (a goal session's objective rather than its record; never a notice's markup)
//! and the turns each holds. Reads the listing; opens no session.

use std::path::Path;

use crate::agent::goal::record;
use crate::chat::Message;
use crate::protocol::SessionSummary;
use crate::protocol::sessions::unix_secs;
use crate::sanitize::visible;
use crate::session::{Session, SessionError, SessionInfo};

/// A session's title from the first line of its first user message: the prompt itself, or for
/// a goal session (whose first message is the goal's record) `goal: <objective>`.
pub(crate) fn title(first_prompt: &str) -> String {
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

/// One listed session as a summary; its text comes from a file in the repository, so nothing
/// in it may act on a terminal.
pub(crate) fn summary(info: &SessionInfo, current: Option<&str>) -> SessionSummary {
    SessionSummary {
        id: info.id.clone(),
        title: visible(&title(&info.first_prompt)),
        updated: unix_secs(info.updated),
        turns: info.turns,
        forked_from: info.forked_from.clone(),
        current: current == Some(info.id.as_str()),
    }
}

/// The sessions a user can resume here, newest first: a sub-agent's, an unreadable one and
/// one without a prompt are left out (there is no conversation of the user's to go back to).
pub(crate) fn resumable(
    workspace: &Path,
    current: Option<&str>,
) -> Result<Vec<SessionSummary>, SessionError> {
    Ok(Session::list(workspace)?
        .iter()
        .filter(|s| s.parent.is_none() && s.problem.is_none() && !s.empty)
        .map(|s| summary(s, current))
        .collect())
}
