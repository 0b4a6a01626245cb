//! Goal mode's part of the contract: the goal commands a frontend sends (`Op::Goal`) and the
//! goal data events carry. Plain, typed data with serde on both sides, so a headless client
//! (JSON-RPC) reads and writes them as they are; what they mean is the core's (`agent::goal`).

use serde::{Deserialize, Serialize};

/// What a goal command asks. `expected` names the goal and revision the sender last saw;
/// `None` means "the current goal, whatever its revision" (a person typing `/goal pause`). A
/// stale reference is refused, so two frontends never overwrite each other's change unseen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum GoalOp {
    /// Set a new goal and start working on it (refused while an unfinished goal exists).
    Create {
        objective: String,
        /// Goal rounds allowed; `None` takes `[goal] max_rounds`.
        max_rounds: Option<u32>,
    },
    /// Report the goal (answered by `GoalStatus`).
    Show,
    Pause {
        expected: Option<GoalRef>,
    },
    /// Arm the goal again and run its next round; `max_rounds` may raise the limit.
    Resume {
        expected: Option<GoalRef>,
        max_rounds: Option<u32>,
    },
    /// Replace the objective; phase, reason and activation stay.
    Edit {
        expected: Option<GoalRef>,
        objective: String,
    },
    /// Remove the goal (a tombstone is recorded).
    Clear {
        expected: Option<GoalRef>,
    },
}

/// Names one revision of one goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalRef {
    pub id: String,
    pub revision: u64,
}

/// The durable phase of a goal (its live activation is separate: `armed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalPhase {
    Active,
    Paused,
    Blocked,
    Complete,
}

impl GoalPhase {
    pub fn as_str(self) -> &'static str {
        crate::chat::serde_name(&self)
    }
}

/// Why a goal is blocked: a code and a one-line message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalBlock {
    pub code: BlockCode,
    pub message: String,
}

/// A blocked goal's lower-case kebab-case code: the ones the core sets, or one the model chose
/// (`goal_update`), kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockCode {
    /// Every goal round was used.
    RoundLimit,
    /// The server refused a request over a usage or rate limit.
    UsageLimit,
    /// A goal round's turn failed.
    ExecutionFailed,
    /// Only a person can move the goal on.
    AwaitingHuman,
    /// A code the model chose.
    #[serde(untagged)]
    Other(String),
}

impl BlockCode {
    pub fn as_str(&self) -> &str {
        match self {
            BlockCode::Other(code) => code,
            known => crate::chat::serde_name(known),
        }
    }
}

impl From<&str> for BlockCode {
    /// The code named so: a known one's variant, any other kept as written.
    fn from(code: &str) -> Self {
        let name: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
            serde::de::IntoDeserializer::into_deserializer(code);
        BlockCode::deserialize(name).unwrap_or_else(|_| BlockCode::Other(code.to_string()))
    }
}

impl std::fmt::Display for BlockCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One revision of a goal: the one form the core keeps, its session records store
/// (`agent::goal::record`, which leaves out an unset `reason`) and events carry (with
/// `"reason": null`). Unknown fields are refused so a tampered record never parses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    pub id: String,
    pub objective: String,
    pub phase: GoalPhase,
    /// Set exactly when the phase is `blocked`.
    #[serde(default)]
    pub reason: Option<GoalBlock>,
    pub revision: u64,
    pub max_rounds: u32,
    pub rounds_used: u32,
    /// RFC 3339, UTC, milliseconds.
    pub created_at: String,
    pub updated_at: String,
}

/// Which change a goal record made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalChange {
    Created,
    Paused,
    Resumed,
    Edited,
    Completed,
    Blocked,
    Cleared,
}

impl GoalChange {
    pub fn as_str(self) -> &'static str {
        crate::chat::serde_name(&self)
    }
}
