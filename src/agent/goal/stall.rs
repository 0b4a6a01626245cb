//! Telling a goal round that moved the work on from one that did not, so a goal whose model
//! keeps answering without progress blocks as `awaiting-human` instead of burning every round
//! (and a growing context) in seconds. A round makes progress when one of its calls succeeded,
//! can change something (not a read or a search, not `goal_status`) and is not a repeat of a
//! call the round before made. It only counts: the driver blocks the goal.

use crate::chat::{ToolCall, ToolKind, ToolStatus};

/// One call of a round, as far as progress is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    name: String,
    arguments: String,
    succeeded: bool,
}

/// The calls of the running turn and the run of goal rounds without progress.
#[derive(Debug, Clone)]
pub(crate) struct Stall {
    /// Rounds without progress that block the goal.
    limit: u32,
    /// Goal rounds in a row that made no progress.
    idle: u32,
    /// The calls of the running turn.
    round: Vec<Seen>,
    /// The calls of the last goal round.
    previous: Vec<Seen>,
    /// The running turn made a call that changed something.
    changed: bool,
}

impl Stall {
    pub(crate) fn new(limit: u32) -> Self {
        Self {
            limit,
            idle: 0,
            round: Vec::new(),
            previous: Vec::new(),
            changed: false,
        }
    }

    /// A new goal run (a goal set or resumed, a session opened): nothing is held against it.
    pub(crate) fn reset(&mut self) {
        *self = Self::new(self.limit);
    }

    /// A call of the running turn ended with `status`; `kind` is its tool's (`None`: no such
    /// tool).
    pub(crate) fn note(&mut self, call: &ToolCall, kind: Option<ToolKind>, status: ToolStatus) {
        let seen = Seen {
            name: call.name.clone(),
            arguments: call.arguments.trim().to_string(),
            succeeded: status == ToolStatus::Succeeded,
        };
        let may_change = !matches!(kind, None | Some(ToolKind::Read | ToolKind::Search))
            && call.name != super::tools::STATUS;
        if seen.succeeded && may_change && !self.previous.contains(&seen) {
            self.changed = true;
        }
        self.round.push(seen);
    }

    /// A turn ended; `goal_round`: it was a goal round. Returns why the goal must block when
    /// this round was the last the limit allows without progress.
    pub(crate) fn after_turn(&mut self, goal_round: bool) -> Option<String> {
        let round = std::mem::take(&mut self.round);
        let changed = std::mem::take(&mut self.changed);
        if !goal_round {
            return None;
        }
        let why = if changed {
            None
        } else if round.is_empty() {
            Some("the model answered without calling a tool (goal_update included)".to_string())
        } else if !round.iter().any(|c| c.succeeded) && round == self.previous {
            let name = round.first().map(|c| c.name.as_str()).unwrap_or_default();
            Some(format!("the model repeated the same failing `{name}` call"))
        } else {
            Some("no tool call changed anything (only reads, failures or repeats)".to_string())
        };
        self.previous = round;
        let Some(why) = why else {
            self.idle = 0;
            return None;
        };
        self.idle += 1;
        (self.idle >= self.limit).then(|| {
            format!(
                "no progress in {} goal rounds in a row: {why}; check what the goal needs, then \
                 resume it",
                self.idle
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn rounds_of_text_alone_block_at_the_limit() {
        let mut stall = Stall::new(3);
        assert_eq!(stall.after_turn(true), None);
        assert_eq!(stall.after_turn(true), None);
        let why = stall.after_turn(true).unwrap_or_default();
        assert!(
            why.contains("3 goal rounds") && why.contains("without calling"),
            "{why}"
        );
    }

    #[test]
    fn a_change_starts_the_count_again_and_other_turns_do_not_count() {
        let mut stall = Stall::new(2);
        assert_eq!(stall.after_turn(true), None);
        stall.note(
            &call("write", "{}"),
            Some(ToolKind::Edit),
            ToolStatus::Succeeded,
        );
        assert_eq!(stall.after_turn(true), None);
        assert_eq!(stall.after_turn(false), None);
        assert_eq!(stall.after_turn(true), None);
        assert!(stall.after_turn(true).is_some());
    }

    #[test]
    fn the_same_failing_call_again_is_named_and_reads_are_no_progress() {
        let mut stall = Stall::new(2);
        let failing = call("goal_update", r#"{"status":"done"}"#);
        stall.note(&failing, Some(ToolKind::Other), ToolStatus::Failed);
        assert_eq!(stall.after_turn(true), None);
        stall.note(&failing, Some(ToolKind::Other), ToolStatus::Failed);
        let why = stall.after_turn(true).unwrap_or_default();
        assert!(why.contains("same failing `goal_update`"), "{why}");
        let mut stall = Stall::new(1);
        stall.note(
            &call("read", "{}"),
            Some(ToolKind::Read),
            ToolStatus::Succeeded,
        );
        assert!(stall.after_turn(true).is_some());
    }

    #[test]
    fn a_successful_call_repeated_from_the_last_round_is_no_progress() {
        let mut stall = Stall::new(2);
        let echo = call("bash", r#"{"command":"echo hi"}"#);
        stall.note(&echo, Some(ToolKind::Execute), ToolStatus::Succeeded);
        assert_eq!(stall.after_turn(true), None);
        stall.note(&echo, Some(ToolKind::Execute), ToolStatus::Succeeded);
        assert_eq!(stall.after_turn(true), None);
        stall.note(&echo, Some(ToolKind::Execute), ToolStatus::Succeeded);
        assert!(stall.after_turn(true).is_some());
    }
}
