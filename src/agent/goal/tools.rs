//! The two tools the model gets while a goal exists: `goal_status` (the current snapshot) and
//! `goal_update` (report the goal complete or blocked). They need no approval and are declared
//! only while the session has a goal, so an ordinary session's first request stays small. The
//! core runs them itself (they change the session's goal); their `run` only answers when a
//! registry holding them is used without that core.

use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::chat::ToolSpec;
use crate::tools::{Prepared, Tool, ToolCtx, ToolFuture, ToolOutput};

/// The registry group the goal tools live in.
pub(crate) const GROUP: &str = "goal";
pub(crate) const STATUS: &str = "goal_status";
pub(crate) const UPDATE: &str = "goal_update";

/// `goal_status`.
pub(crate) struct Status;

/// `goal_update`.
pub(crate) struct Update;

/// What `goal_update` asks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateArgs {
    pub status: UpdateStatus,
    pub code: Option<String>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum UpdateStatus {
    Complete,
    Blocked,
}

/// The core's instances, so it recognises its own calls (see `turn.rs`).
#[derive(Clone)]
pub(crate) struct Set {
    pub status: Arc<dyn Tool>,
    pub update: Arc<dyn Tool>,
}

impl Default for Set {
    fn default() -> Self {
        Set {
            status: Arc::new(Status),
            update: Arc::new(Update),
        }
    }
}

impl Set {
    pub(crate) fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![self.status.clone(), self.update.clone()]
    }

    /// Which of ours `tool` is, if any.
    pub(crate) fn which(&self, tool: &Arc<dyn Tool>) -> Option<&'static str> {
        if Arc::ptr_eq(tool, &self.status) {
            Some(STATUS)
        } else if Arc::ptr_eq(tool, &self.update) {
            Some(UPDATE)
        } else {
            None
        }
    }
}

fn outside_core() -> ToolFuture<'static> {
    Box::pin(async { ToolOutput::failed("goal tools only run in the session that owns the goal") })
}

impl Tool for Status {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: STATUS.into(),
            description: "The session's current goal: objective, phase, rounds used and left."
                .into(),
            parameters: serde_json::json!({
                "type": "object", "properties": {}, "additionalProperties": false
            }),
        }
    }

    fn prepare(&self, _args: &serde_json::Value, _ctx: &ToolCtx) -> Result<Prepared, String> {
        Ok(Prepared {
            summary: String::new(),
            approval: None,
            protected: None,
        })
    }

    fn run<'a>(
        &'a self,
        _args: serde_json::Value,
        _ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        outside_core()
    }
}

impl Tool for Update {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: UPDATE.into(),
            description: "Report the current goal complete (the objective is achieved) or \
                          blocked (you cannot go on without the user)."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["complete", "blocked"]},
                    "code": {"type": "string", "description": "When blocked: kebab-case, e.g. awaiting-human"},
                    "message": {"type": "string", "description": "When blocked: what is needed"}
                },
                "required": ["status"],
                "additionalProperties": false
            }),
        }
    }

    fn prepare(&self, args: &serde_json::Value, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let args = crate::tools::parse_args::<UpdateArgs>(args)?;
        let summary = match (args.status, args.code) {
            (UpdateStatus::Complete, _) => "complete".to_string(),
            (UpdateStatus::Blocked, Some(code)) => format!("blocked ({code})"),
            (UpdateStatus::Blocked, None) => "blocked".to_string(),
        };
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        _args: serde_json::Value,
        _ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        outside_core()
    }
}
