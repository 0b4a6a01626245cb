//! The `bash_kill` tool: ends a background process of the session (SIGTERM to its whole
//! group, SIGKILL after a grace period) and waits until it is gone. It asks no approval: it
//! can only end what this session started, under the rules its `bash` call was approved by.

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Prepared, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{ToolKind, ToolSpec};

const DESCRIPTION: &str = "End a background process started with `bash` and \
`background: true` (its whole process tree), and return its last output.";

pub(crate) struct BashKill;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    id: String,
}

impl Typed for BashKill {
    type Args = Args;
    type Checked = Args;

    fn check(&self, args: &Args, _ctx: &ToolCtx) -> Result<Args, String> {
        Ok(args.clone())
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::BashKill.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The id `bash` returned, e.g. bg1"}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, args: Args, _ctx: &ToolCtx) -> Result<Prepared, String> {
        Ok(Prepared::unasked(args.id))
    }

    fn run<'a>(
        &'a self,
        args: Args,
        ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(job) = ctx.background.get(&args.id) else {
                return ToolOutput::failed(super::bash_output::unknown(ctx, &args.id));
            };
            let was_running = !job.ended.is_cancelled();
            let Some(ended) = ctx.background.kill(&args.id).await else {
                return ToolOutput::failed(super::bash_output::unknown(ctx, &args.id));
            };
            let last = crate::sync::lock(&job.inner).unread.take(None).text;
            let last = crate::sanitize::sanitize(&last);
            let mut out = String::new();
            if !last.is_empty() {
                out.push_str(&last);
                if !last.ends_with('\n') {
                    out.push('\n');
                }
            }
            let state = super::bash_output::describe(ended.state);
            if was_running {
                out.push_str(&format!("[{} stopped: {state}]", ended.id));
            } else {
                out.push_str(&format!("[{} had already ended: {state}]", ended.id));
            }
            ToolOutput::ok(out)
        })
    }
}
