//! The `edit` tool (being implemented).

use tokio_util::sync::CancellationToken;

use super::{Prepared, Tool, ToolCtx, ToolFuture, ToolOutput};
use crate::provider::ToolSpec;

pub struct Edit;

impl Tool for Edit {
    fn spec(&self) -> ToolSpec {
        ToolSpec { name: "edit", description: "", parameters: serde_json::json!({"type": "object"}) }
    }

    fn prepare(&self, _args: &serde_json::Value, _ctx: &ToolCtx) -> Result<Prepared, String> {
        Err("not implemented".into())
    }

    fn run<'a>(&'a self, _args: serde_json::Value, _ctx: &'a ToolCtx, _cancel: CancellationToken) -> ToolFuture<'a> {
        Box::pin(async { ToolOutput::failed("not implemented") })
    }
}
