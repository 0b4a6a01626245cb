//! The durable form of a goal: the `<goal_state>{json}</goal_state>` record every change appends
//! to the session, and the `<goal_round …/>` line that opens each goal round's instruction.
//! Rendering and strict parsing only: a record parses when it is exactly what this build would
//! have written (unknown fields, other spacing or a non-canonical time are refused). Whether a
//! record is a legal next step is `goal.rs`'s question, not this file's.

use std::time::SystemTime;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::chat::{Message, Role};
use crate::protocol::{Goal, GoalChange, GoalPhase};

/// The version of the record format written by this build.
pub(crate) const RECORD_VERSION: u32 = 1;

/// Opens and closes a goal record.
pub(crate) const STATE_OPEN: &str = "<goal_state>";
pub(crate) const STATE_CLOSE: &str = "</goal_state>";

/// Opens a goal round's instruction.
pub(crate) const ROUND_OPEN: &str = "<goal_round ";

/// The longest objective accepted, in characters.
pub(crate) const MAX_OBJECTIVE_CHARS: usize = 4000;

/// The longest blocked-reason message kept, in characters (longer ones are cut).
pub(crate) const MAX_MESSAGE_CHARS: usize = 500;

/// The longest blocked-reason code, in bytes.
pub(crate) const MAX_CODE_BYTES: usize = 64;

/// One record: a change and the goal after it, or a tombstone (`cleared`) naming the goal,
/// the revision the clear gave it and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub version: u32,
    pub change: GoalChange,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "stored"
    )]
    pub goal: Option<Goal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cleared: Option<Tombstone>,
}

/// What a clear leaves behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tombstone {
    pub(crate) id: String,
    pub(crate) revision: u64,
    pub(crate) at: String,
}

/// The goal as a record writes it: the fields of [`Goal`] in their order, with an unset
/// `reason` left out rather than written as `null` (the form version 1 records have always had).
fn stored<S: Serializer>(goal: &Option<Goal>, s: S) -> Result<S::Ok, S::Error> {
    let Some(goal) = goal else {
        return s.serialize_none();
    };
    let mut out = s.serialize_struct("Goal", 9)?;
    out.serialize_field("id", &goal.id)?;
    out.serialize_field("objective", &goal.objective)?;
    out.serialize_field("phase", &goal.phase)?;
    match &goal.reason {
        Some(reason) => out.serialize_field("reason", reason)?,
        None => out.skip_field("reason")?,
    }
    out.serialize_field("revision", &goal.revision)?;
    out.serialize_field("max_rounds", &goal.max_rounds)?;
    out.serialize_field("rounds_used", &goal.rounds_used)?;
    out.serialize_field("created_at", &goal.created_at)?;
    out.serialize_field("updated_at", &goal.updated_at)?;
    out.end()
}

impl Record {
    /// The goal id and revision this record sets.
    pub fn target(&self) -> (&str, u64) {
        match (&self.goal, &self.cleared) {
            (Some(goal), _) => (&goal.id, goal.revision),
            (None, Some(t)) => (&t.id, t.revision),
            (None, None) => ("", 0),
        }
    }

    /// The message text: the tags around the compact JSON.
    pub fn render(&self) -> String {
        // Serializing plain strings and numbers cannot fail; an empty body would be refused
        // on replay rather than silently accepted.
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{STATE_OPEN}{json}{STATE_CLOSE}")
    }
}

/// What a user message of the history is to the goal.
pub(crate) enum Parsed {
    /// Not a goal message: an ordinary prompt.
    None,
    Record(Record),
    Round(Round),
}

/// The attribution of a goal round's instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    pub goal_id: String,
    pub revision: u64,
    pub round: u32,
    pub max_rounds: u32,
}

impl Round {
    /// The instruction that opens the round, as the model reads it.
    pub fn render(&self) -> String {
        let Round {
            goal_id,
            revision,
            round,
            max_rounds,
        } = self;
        format!(
            "{ROUND_OPEN}goal=\"{goal_id}\" revision=\"{revision}\" round=\"{round}\" \
             max_rounds=\"{max_rounds}\"/>\nGoal round {round} of {max_rounds}. Keep working \
             towards the objective of the current goal (its latest <goal_state>). When the \
             objective is achieved, call goal_update with status \"complete\". If you cannot go \
             on (you need the user, access, or a decision), call goal_update with status \
             \"blocked\", a short kebab-case code and a message. Otherwise do the next step."
        )
    }

    fn parse(text: &str) -> Result<Round, String> {
        let head = text.lines().next().unwrap_or("");
        let attrs = head
            .strip_prefix(ROUND_OPEN)
            .and_then(|rest| rest.strip_suffix("/>"))
            .ok_or("the goal round line is malformed")?;
        let mut values = attrs.split(' ').map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k, v.trim_matches('"')))
                .unwrap_or((pair, ""))
        });
        let mut next = |name: &str| -> Result<String, String> {
            match values.next() {
                Some((key, value)) if key == name => Ok(value.to_string()),
                _ => Err(format!("the goal round line lacks `{name}`")),
            }
        };
        let number = |v: String, name: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("the goal round's `{name}` is not a number"))
        };
        let goal_id = next("goal")?;
        let revision = number(next("revision")?, "revision")?;
        let round = number(next("round")?, "round")?;
        let max_rounds = number(next("max_rounds")?, "max_rounds")?;
        let round = Round {
            goal_id,
            revision,
            round: u32::try_from(round).map_err(|_| "the goal round is too large")?,
            max_rounds: u32::try_from(max_rounds).map_err(|_| "max_rounds is too large")?,
        };
        if round.render() != text {
            return Err("the goal round's text differs from what minicode writes".to_string());
        }
        Ok(round)
    }
}

/// Whether this message is a goal record or a goal round's instruction (not the user's words).
pub fn is_goal_message(message: &Message) -> bool {
    message.role == Role::User && {
        let text = message.text();
        text.starts_with(STATE_OPEN) || text.starts_with(ROUND_OPEN)
    }
}

/// A user's prompt that starts like a goal message gets a leading space, so it is never read
/// as one (the user's words are theirs, not a record).
pub fn escape_user_text(text: String) -> String {
    if text.starts_with(STATE_OPEN) || text.starts_with(ROUND_OPEN) {
        format!(" {text}")
    } else {
        text
    }
}

/// One line describing a goal message for a transcript, or `None` for any other message.
pub(crate) fn describe(message: &Message) -> Option<String> {
    if !is_goal_message(message) {
        return None;
    }
    Some(match parse(message) {
        Ok(Parsed::Round(r)) => format!("goal round {}/{}", r.round, r.max_rounds),
        Ok(Parsed::Record(record)) => match &record.goal {
            Some(goal) => {
                let mut line = format!(
                    "goal {} {} · {} · rounds {}/{}",
                    goal.id,
                    record.change.as_str(),
                    goal.phase.as_str(),
                    goal.rounds_used,
                    goal.max_rounds
                );
                if let Some(reason) = &goal.reason {
                    line.push_str(&format!(" · {}: {}", reason.code, reason.message));
                }
                if matches!(record.change, GoalChange::Created | GoalChange::Edited) {
                    line.push_str(&format!(" · {}", goal.objective));
                }
                line
            }
            None => format!("goal {} cleared", record.target().0),
        },
        Ok(Parsed::None) | Err(_) => "goal record (invalid)".to_string(),
    })
}

/// Whether this message is a goal record.
pub fn is_record(message: &Message) -> bool {
    message.role == Role::User && message.text().starts_with(STATE_OPEN)
}

/// Reads a history message. `Err` says what is wrong with something that claims to be a goal
/// message.
pub(crate) fn parse(message: &Message) -> Result<Parsed, String> {
    if message.role != Role::User {
        return Ok(Parsed::None);
    }
    let text = message.text();
    if text.starts_with(ROUND_OPEN) {
        return Round::parse(text).map(Parsed::Round);
    }
    let Some(body) = text.strip_prefix(STATE_OPEN) else {
        return Ok(Parsed::None);
    };
    let json = body
        .strip_suffix(STATE_CLOSE)
        .ok_or("the goal record does not end with </goal_state>")?;
    let record: Record =
        serde_json::from_str(json).map_err(|e| format!("the goal record is not valid: {e}"))?;
    if record.version != RECORD_VERSION {
        return Err(format!(
            "the goal record has version {}, this minicode writes {RECORD_VERSION}",
            record.version
        ));
    }
    if record.render() != text {
        return Err("the goal record's text differs from its data".to_string());
    }
    shape(&record)?;
    Ok(Parsed::Record(record))
}

/// Field checks that need no history: a goal with every field well formed, or a tombstone.
fn shape(record: &Record) -> Result<(), String> {
    match (&record.goal, &record.cleared, record.change) {
        (None, Some(t), GoalChange::Cleared) => {
            check_id(&t.id)?;
            check_time(&t.at)?;
            if t.revision < 2 {
                return Err("a tombstone's revision must follow a goal's".to_string());
            }
            Ok(())
        }
        (Some(goal), None, change) if change != GoalChange::Cleared => {
            check_id(&goal.id)?;
            check_objective(&goal.objective)?;
            check_time(&goal.created_at)?;
            check_time(&goal.updated_at)?;
            if goal.revision == 0 {
                return Err("the revision must start at 1".to_string());
            }
            if goal.max_rounds == 0 {
                return Err("max_rounds must be at least 1".to_string());
            }
            if goal.rounds_used > goal.max_rounds {
                return Err("rounds_used exceeds max_rounds".to_string());
            }
            match (&goal.reason, goal.phase) {
                (Some(reason), GoalPhase::Blocked) => {
                    check_code(reason.code.as_str())?;
                    if normalize_message(&reason.message) != reason.message
                        || reason.message.is_empty()
                    {
                        return Err("the blocked reason's message is not normalised".to_string());
                    }
                    Ok(())
                }
                (None, GoalPhase::Blocked) => Err("a blocked goal has no reason".to_string()),
                (Some(_), _) => Err("only a blocked goal has a reason".to_string()),
                (None, _) => Ok(()),
            }
        }
        _ => Err("the record's change does not match its contents".to_string()),
    }
}

fn check_id(id: &str) -> Result<(), String> {
    let ok = id.len() == 14
        && id.starts_with("g-")
        && id[2..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!("{id:?} is not a goal id"))
    }
}

/// A new goal id: `g-` and 12 hex digits.
pub(crate) fn new_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("g-{}", &hex[..12])
}

/// The objective as stored: trimmed, not empty, not too long.
pub(crate) fn normalize_objective(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the objective is empty".to_string());
    }
    if text.chars().count() > MAX_OBJECTIVE_CHARS {
        return Err(format!(
            "the objective is longer than {MAX_OBJECTIVE_CHARS} characters"
        ));
    }
    Ok(text.to_string())
}

fn check_objective(text: &str) -> Result<(), String> {
    match normalize_objective(text) {
        Ok(normal) if normal == text => Ok(()),
        Ok(_) => Err("the objective is not trimmed".to_string()),
        Err(e) => Err(e),
    }
}

/// Whether `code` is lower-case kebab-case (`round-limit`).
pub(crate) fn check_code(code: &str) -> Result<(), String> {
    let ok = !code.is_empty()
        && code.len() <= MAX_CODE_BYTES
        && code.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{:?} is not a lower-case kebab-case code (like `awaiting-human`)",
            crate::sanitize::visible(code)
        ))
    }
}

/// A reason's message as stored: one line, control characters dropped, runs of whitespace
/// made one space, trimmed, cut at [`MAX_MESSAGE_CHARS`].
pub(crate) fn normalize_message(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ");
    let clean: String = joined
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_MESSAGE_CHARS)
        .collect();
    clean.trim().to_string()
}

/// A time as records store it.
pub(crate) fn format_time(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

pub(crate) fn parse_time(text: &str) -> Result<SystemTime, String> {
    humantime::parse_rfc3339(text).map_err(|_| format!("{text:?} is not an RFC 3339 time"))
}

fn check_time(text: &str) -> Result<(), String> {
    let time = parse_time(text)?;
    if format_time(time) != text {
        return Err(format!("{text:?} is not written as minicode writes times"));
    }
    Ok(())
}
