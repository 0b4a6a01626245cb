//! The tools the core runs itself (`goal_status`, `goal_update`, `delegate`, `bash`): which
//! they are, and their calls with the arguments parsed once, as the core receives them. The
//! tools themselves (declaration, checks) live with the core's parts, or in `tools` for
//! `bash`; this file holds only what the registry and the core both name, so `tools` still
//! never imports `agent`.

use serde::Deserialize;

use super::{ToolFuture, ToolOutput};

/// A tool whose calls the core runs itself: they change the session (its goal) or need the
/// core (sub-agents, the sandbox policy `bash` runs under). Such a tool declares and checks its calls like any other; the agent
/// recognises it by this, never by its name or instance, and runs the call itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreTool {
    /// `goal_status`: the goal's snapshot.
    GoalStatus,
    /// `goal_update`: the goal is complete or blocked.
    GoalUpdate,
    /// `delegate`: read-only sub-agents.
    Delegate,
    /// `bash`: a command, under the policy of the core's sandbox part.
    Bash,
}

impl CoreTool {
    /// What a call answers when a registry holding the tool is used without a core that runs
    /// it (a library user's own loop).
    pub(crate) fn outside_core(self) -> ToolFuture<'static> {
        let text = match self {
            CoreTool::GoalStatus | CoreTool::GoalUpdate => {
                "goal tools only run in the session that owns the goal"
            }
            CoreTool::Delegate => "delegate can only run inside an agent session with sub-agents",
            CoreTool::Bash => {
                "not run: bash only runs inside an agent session, under its sandbox policy"
            }
        };
        Box::pin(async move { ToolOutput::failed(text) })
    }
}

/// One call of a core-run tool, its arguments as the tool parsed them (see
/// [`super::Invocation::core_call`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreCall {
    /// `goal_status`.
    GoalStatus,
    /// `goal_update`.
    GoalUpdate(GoalUpdate),
    /// `delegate`, its tasks in the order the model gave them.
    Delegate(Vec<DelegateTask>),
    /// `bash`, run under the core's sandbox policy.
    Bash(super::bash::Args),
}

/// What `goal_update` asks.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalUpdate {
    pub(crate) status: GoalUpdateStatus,
    pub(crate) code: Option<String>,
    pub(crate) message: Option<String>,
}

/// The state `goal_update` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalUpdateStatus {
    Complete,
    Blocked,
}

/// One `delegate` task as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegateTask {
    pub(crate) id: String,
    pub(crate) instruction: String,
    pub(crate) context: Option<String>,
}
