//! The `bash_output` tool: what a background process (`bash` with `background: true`)
//! printed since the last read, optionally only the lines a pattern matches, and whether it
//! still runs. Read-only: it asks no approval and changes nothing but the read position.

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Prepared, Tool, ToolCtx, ToolFuture, ToolOutput, parse_args};
use crate::chat::{BackgroundState, ToolKind, ToolSpec};

const DESCRIPTION: &str = "Read the new output of a background process started with `bash` \
and `background: true`: what it printed since the last read (optionally only lines matching \
`filter`, a regex), and whether it is still running or how it exited.";

pub(crate) struct BashOutput;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
    filter: Option<String>,
}

impl Tool for BashOutput {
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash_output".into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The id `bash` returned, e.g. bg1"},
                    "filter": {"type": "string", "description": "Only lines matching this regex"}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        }
    }

    fn prepare(&self, args: &serde_json::Value, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let args: Args = parse_args(args)?;
        if let Some(filter) = &args.filter {
            super::background::unread::filter(filter)?;
        }
        Ok(Prepared::unasked(args.id))
    }

    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let args: Args = match parse_args(&args) {
                Ok(a) => a,
                Err(e) => return ToolOutput::failed(e),
            };
            let filter = match args
                .filter
                .as_deref()
                .map(super::background::unread::filter)
            {
                Some(Err(e)) => return ToolOutput::failed(e),
                Some(Ok(m)) => Some(m),
                None => None,
            };
            let Some(job) = ctx.background.get(&args.id) else {
                return ToolOutput::failed(unknown(ctx, &args.id));
            };
            let (taken, state, log) = {
                let mut inner = crate::sync::lock(&job.inner);
                let taken = inner.unread.take(filter.as_ref());
                (taken, inner.state, inner.log.clone())
            };
            let text = crate::sanitize::collapse_rewrites(&crate::sanitize::sanitize(&taken.text))
                .into_owned();
            let mut out = String::new();
            if taken.dropped > 0 {
                out.push_str(&format!(
                    "[... {} earlier bytes not kept; {log} ...]\n",
                    taken.dropped
                ));
            }
            if text.is_empty() {
                out.push_str("(no new output)\n");
            } else {
                out.push_str(&text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            if taken.filtered > 0 {
                out.push_str(&format!(
                    "[{} lines did not match the filter]\n",
                    taken.filtered
                ));
            }
            out.push_str(&format!("[{}: {}]", job.id, describe(state)));
            ToolOutput::ok(out)
        })
    }
}

/// The state as the model reads it.
pub(crate) fn describe(state: BackgroundState) -> String {
    match state {
        BackgroundState::Running => "running".to_string(),
        BackgroundState::Exited(code) => format!("exited with code {code}"),
        BackgroundState::Killed(sig) => format!("ended by signal {sig}"),
        BackgroundState::Ended => "ended".to_string(),
    }
}

/// No process `id`: which ones there are.
pub(crate) fn unknown(ctx: &ToolCtx, id: &str) -> String {
    let ids: Vec<String> = ctx.background.list().into_iter().map(|b| b.id).collect();
    if ids.is_empty() {
        format!("no background process {id:?}: none was started in this session")
    } else {
        format!(
            "no background process {id:?}; there are: {}",
            ids.join(", ")
        )
    }
}
