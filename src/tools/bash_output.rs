//! The `bash_output` tool: what a background process (`bash` with `background: true`)
//! printed since the last read, optionally only the lines a pattern matches, and whether it
//! still runs. Read-only: it asks no approval and changes nothing but the read position.

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Prepared, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{BackgroundState, ToolKind, ToolSpec};

const DESCRIPTION: &str = "Read the new output of a background process started with `bash` \
and `background: true`: what it printed since the last read (optionally only lines matching \
`filter`, a regex), and whether it is still running or how it exited.";

pub(crate) struct BashOutput;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    id: String,
    filter: Option<String>,
}

/// A checked call: the process and the compiled filter.
pub(crate) struct Call {
    id: String,
    filter: Option<grep_regex::RegexMatcher>,
}

impl Typed for BashOutput {
    type Args = Args;
    type Checked = Call;

    fn check(&self, args: &Args, _ctx: &ToolCtx) -> Result<Call, String> {
        let filter = match args.filter.as_deref() {
            Some(filter) => Some(super::background::unread::filter(filter)?),
            None => None,
        };
        Ok(Call {
            id: args.id.clone(),
            filter,
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::BashOutput.name().into(),
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

    fn describe(&self, call: Call, _ctx: &ToolCtx) -> Result<Prepared, String> {
        Ok(Prepared::unasked(call.id))
    }

    fn run<'a>(
        &'a self,
        args: Call,
        ctx: &'a ToolCtx,
        _cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let Call { id, filter } = args;
            let Some(job) = ctx.background.get(&id) else {
                return ToolOutput::failed(unknown(ctx, &id));
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
