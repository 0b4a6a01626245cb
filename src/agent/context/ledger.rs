//! The task ledger of a compacted context: what of the compacted part it quotes verbatim (the
//! user's first and latest words, the last goal record, the skills loaded), and its text. It
//! reads the history; it never changes the context's estimates (`Context` does).

use crate::agent::goal;
use crate::chat::{Message, Role};

/// The ledger + summary text of a checkpoint.
pub(super) struct Ledger {
    pub(super) text: String,
}

impl Ledger {
    /// The ledger for a checkpoint with this `summary` that compacted `before`: the first user
    /// message and the last one of the compacted part. It depends on the compacted part only,
    /// never on what is kept or appended later, so it stays byte for byte the same until the
    /// next compaction (a local server's prompt cache keeps serving it) and a resumed session
    /// sends what the live one did.
    pub(super) fn of(summary: &str, before: &[Message]) -> Self {
        // The user's own words: goal records, goal rounds' instructions and notices are not.
        let words = |m: &Message| {
            m.role == Role::User
                && !goal::record::is_goal_message(m)
                && !crate::agent::notice::is_notice(m)
        };
        let first = before.iter().position(words);
        let latest = before
            .iter()
            .rposition(words)
            .filter(|at| Some(*at) != first);
        let goal_state = before
            .iter()
            .rev()
            .find(|m| goal::record::is_record(m))
            .map(Message::text);
        let text = |at: usize| before[at].text();
        let skills = crate::tools::skills::loaded_in(before);
        Self {
            text: ledger_text(
                summary,
                first.map(text),
                latest.map(text),
                &skills,
                goal_state,
            ),
        }
    }
}

/// The text of the ledger + summary message. The first request and the latest user message are
/// quoted verbatim because summaries lose them: that is the failure users of other agents
/// report most.
///
/// `loaded_skills` are the skills loaded in the compacted part: their instructions are gone
/// from the context, so the ledger names them for the model to load again when it needs them.
///
/// `goal_state` is the latest goal record of the compacted part, quoted verbatim: the goal must
/// outlive any number of compactions.
fn ledger_text(
    summary: &str,
    first_request: Option<&str>,
    latest_request: Option<&str>,
    loaded_skills: &[String],
    goal_state: Option<&str>,
) -> String {
    let mut text = String::from(
        "<task-ledger>\nThe earlier conversation was compacted. The user's own words below are \
         verbatim and authoritative; the summary after them is your notes of the work so far. \
         The messages after this one are the recent conversation, verbatim.\n",
    );
    if let Some(first) = first_request {
        text.push_str("<first-request>\n");
        text.push_str(first);
        text.push_str("\n</first-request>\n");
    }
    if let Some(latest) = latest_request {
        text.push_str("<last-compacted-user-message>\n");
        text.push_str(latest);
        text.push_str("\n</last-compacted-user-message>\n");
    }
    if let Some(goal) = goal_state {
        text.push_str(
            "<goal>\nThe session's goal as last recorded (newer goal records below override it):\n",
        );
        text.push_str(goal);
        text.push_str("\n</goal>\n");
    }
    if !loaded_skills.is_empty() {
        text.push_str(
            "<loaded-skills>\nSkills loaded earlier, whose instructions were compacted away \
             (call the `skill` tool again to reload one the task still needs): ",
        );
        text.push_str(&loaded_skills.join(", "));
        text.push_str("\n</loaded-skills>\n");
    }
    text.push_str("</task-ledger>\n<summary>\n");
    text.push_str(summary);
    text.push_str("\n</summary>");
    text
}
