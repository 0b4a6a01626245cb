//! The `read` tool (being implemented).

use tokio_util::sync::CancellationToken;

use super::{Prepared, Tool, ToolCtx, ToolFuture, ToolOutput};
use crate::provider::ToolSpec;

pub struct Read;

impl Tool for Read {
    fn spec(&self) -> ToolSpec {
        ToolSpec { name: "read", description: "", parameters: serde_json::json!({"type": "object"}) }
    }

    fn prepare(&self, _args: &serde_json::Value, _ctx: &ToolCtx) -> Result<Prepared, String> {
        Err("not implemented".into())
    }

    fn run<'a>(&'a self, _args: serde_json::Value, _ctx: &'a ToolCtx, _cancel: CancellationToken) -> ToolFuture<'a> {
        Box::pin(async { ToolOutput::failed("not implemented") })
    }
}
