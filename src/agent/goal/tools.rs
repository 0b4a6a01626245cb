//! The two tools the model gets while a goal exists: `goal_status` (the current snapshot) and
//! `goal_update` (report the goal complete or blocked). They need no approval and are declared
//! only while the session has a goal, so an ordinary session's first request stays small. The
//! core runs them itself (they change the session's goal); their `run` only answers when a
//! registry holding them is used without that core.

use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::chat::{ToolKind, ToolSpec};
use crate::tools::{CoreTool, Prepared, Tool, ToolCtx, ToolFuture, Typed};

/// The registry group the goal tools live in.
pub(crate) const GROUP: &str = "goal";
pub(crate) const STATUS: &str = "goal_status";
pub(crate) const UPDATE: &str = "goal_update";

/// `goal_status`.
pub(crate) struct Status;

/// `goal_update`.
pub(crate) struct Update;

/// `goal_status` takes no arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusArgs {}

/// What `goal_update` asks.
#[derive(Debug, Clone, Deserialize)]
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

/// The goal tools, as the registry's `goal` group holds them.
pub(crate) fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Status), Arc::new(Update)]
}

impl Typed for Status {
    type Args = StatusArgs;
    type Checked = ();

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn core(&self) -> Option<CoreTool> {
        Some(CoreTool::GoalStatus)
    }

    fn check(&self, _args: &StatusArgs, _ctx: &ToolCtx) -> Result<(), String> {
        Ok(())
    }

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

    fn describe(&self, _call: (), _ctx: &ToolCtx) -> Result<Prepared, String> {
        Ok(Prepared::unasked(String::new()))
    }

    fn run<'a>(
        &'a self,
        _call: (),
        _ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        CoreTool::GoalStatus.outside_core()
    }
}

impl Typed for Update {
    type Args = UpdateArgs;
    type Checked = UpdateArgs;

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn core(&self) -> Option<CoreTool> {
        Some(CoreTool::GoalUpdate)
    }

    fn check(&self, args: &UpdateArgs, _ctx: &ToolCtx) -> Result<UpdateArgs, String> {
        Ok(args.clone())
    }

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

    fn describe(&self, args: UpdateArgs, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let summary = match (args.status, args.code) {
            (UpdateStatus::Complete, _) => "complete".to_string(),
            (UpdateStatus::Blocked, Some(code)) => format!("blocked ({code})"),
            (UpdateStatus::Blocked, None) => "blocked".to_string(),
        };
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        _call: UpdateArgs,
        _ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        CoreTool::GoalUpdate.outside_core()
    }
}

#[cfg(test)]
mod tests {
    use crate::tools::typed::schema_check::agrees;

    #[test]
    fn the_goal_tools_schemas_match_their_argument_structs() {
        for tool in super::tools() {
            agrees(tool.as_ref());
        }
    }
}
