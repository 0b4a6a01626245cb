//! Sub-agents as a part of the core: whether this core offers `delegate`, and which tool
//! instance is its own. Only a call that resolves to that very instance is run by the core
//! with children (see `delegate::run`); a tool of the same name from elsewhere is not.

use std::sync::Arc;

use super::{Delegate, GROUP, NAME, Subagents};
use crate::protocol::Event;
use crate::tools::{Registry, Tool};

/// The `delegate` tool this core declared, if any. Its invariant: set only when the registry
/// took the declaration, so a name another group holds never reaches the model as ours.
pub(crate) struct Offer {
    tool: Option<Arc<dyn Tool>>,
    /// The name was taken by another group: said once at start-up.
    refused: bool,
}

impl Offer {
    /// Declares `delegate` in its own group before the first request when the core runs
    /// sub-agents (`subagents`) and is not itself a sub-agent (`child`).
    pub(crate) fn declare(registry: &Registry, subagents: Option<&Subagents>, child: bool) -> Self {
        if subagents.is_none() || child {
            return Self {
                tool: None,
                refused: false,
            };
        }
        let tool: Arc<dyn Tool> = Arc::new(Delegate);
        let refused = !registry.set_group(GROUP, vec![tool.clone()]).is_empty();
        Self {
            tool: (!refused).then_some(tool),
            refused,
        }
    }

    /// Whether `tool` is a `delegate` this core runs: it offers one, and the tool is of that
    /// kind (another tool that took the name is not).
    pub(crate) fn owns(&self, tool: &dyn Tool) -> bool {
        self.tool.is_some() && tool.core() == Some(crate::tools::CoreTool::Delegate)
    }

    /// For start-up: the warning that sub-agents are off, when the name was taken.
    pub(crate) fn refusal(&self) -> Option<Event> {
        self.refused.then(|| Event::Warning {
            message: format!("sub-agents are off: another tool is already named {NAME}"),
        })
    }
}
