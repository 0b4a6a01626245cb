//! The two tools the model gets while a goal exists: `goal_status` (the current snapshot) and
//! `goal_update` (report the goal complete or blocked). They need no approval and are declared
//! only while the session has a goal, so an ordinary session's first request stays small. The
//! core runs them itself (they change the session's goal); their `run` only answers when a
//! registry holding them is used without that core.

use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::chat::{ToolKind, ToolSpec};
use crate::tools::{
    CoreCall, CoreTool, GoalUpdate, GoalUpdateStatus, Prepared, Tool, ToolCtx, ToolFuture, Typed,
};

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

    fn core_call(_args: &StatusArgs) -> Option<CoreCall> {
        Some(CoreCall::GoalStatus)
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
    type Args = GoalUpdate;
    type Checked = GoalUpdate;

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn core(&self) -> Option<CoreTool> {
        Some(CoreTool::GoalUpdate)
    }

    fn core_call(args: &GoalUpdate) -> Option<CoreCall> {
        Some(CoreCall::GoalUpdate(args.clone()))
    }

    fn check(&self, args: &GoalUpdate, _ctx: &ToolCtx) -> Result<GoalUpdate, String> {
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

    fn describe(&self, args: GoalUpdate, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let summary = match (args.status, args.code) {
            (GoalUpdateStatus::Complete, _) => "complete".to_string(),
            (GoalUpdateStatus::Blocked, Some(code)) => format!("blocked ({code})"),
            (GoalUpdateStatus::Blocked, None) => "blocked".to_string(),
        };
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        _call: GoalUpdate,
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
