//! The daemon's run markers: the events `minicode serve` numbers and logs beside the core's,
//! and that `attach` and the daemon's own restart read back. One type, written and parsed by
//! serde, so a renamed marker cannot leave a reader matching the old name.

use serde::{Deserialize, Serialize};

use super::TurnEnd;

/// A run's boundaries and its cancel, as the daemon logs them (`type` tags them beside the
/// core's events, whose names never clash with these).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunMarker {
    /// A `submit` op was accepted (`prompt`), or a goal round began (`goal_id`, after the
    /// core's `goal_round_started`); the core's `turn_started` follows.
    RunStarted {
        run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal_id: Option<String>,
    },
    /// A restarted daemon reopened the session with this run still open; the core answers it
    /// with one turn (see docs/headless.md, "Restarts").
    RunResumed { run_id: String },
    /// An `interrupt` of the run was received (recorded before the core is told).
    CancelRequested { run_id: String },
    /// The run is over; `end` is the core's `turn_ended` status.
    RunEnded { run_id: String, end: TurnEnd },
}

impl RunMarker {
    /// The run it marks.
    pub(crate) fn run_id(&self) -> &str {
        match self {
            RunMarker::RunStarted { run_id, .. }
            | RunMarker::RunResumed { run_id }
            | RunMarker::CancelRequested { run_id }
            | RunMarker::RunEnded { run_id, .. } => run_id,
        }
    }
}
