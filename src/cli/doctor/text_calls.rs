//! The tool row when the forced call did not come as a native call: a model that wrote it as
//! text minicode recovers ("calls as text: recovered") is told apart from one that never
//! calls, each with its fix. The recovery itself is `provider::recover`'s, as in a session.

use super::{Findings, NO_TOOLS_FIX};
use crate::chat::ToolSpec;
use crate::provider::Reply;
use crate::provider::recover;

/// What to change for native calls when the model writes them as text.
const NATIVE_FIX: &str = "minicode runs these calls, but native ones are more reliable: on \
llama.cpp start the server with --jinja (and a tool-capable chat template); on vLLM \
--enable-auto-tool-choice with the model's --tool-call-parser";

/// Judges `reply`, which has no native call of the probe's tool: `true` when its text held the
/// call (the row is written), `false` when it did not (the caller says "never calls").
pub(super) fn judged(
    reply: &Reply,
    tools: &[ToolSpec],
    recover_on: bool,
    f: &mut Findings,
) -> bool {
    let found = recover::recover(&reply.text, tools);
    if found.calls.is_empty() {
        return false;
    }
    if recover_on {
        f.warn(
            "tools",
            "calls as text: recovered (the model wrote the forced call in its reply's text; \
             minicode runs such calls as tool calls)",
            NATIVE_FIX,
        );
    } else {
        f.fail(
            "tools",
            "calls as text, and [model] recover_tool_calls = false leaves such calls as text: \
             the agent cannot act",
            "remove [model] recover_tool_calls = false (recovery is on by default), or serve \
             the model so that it calls natively (llama.cpp: --jinja)",
        );
    }
    true
}

/// The "never calls" failure: no native call and nothing recoverable in the text.
pub(super) fn never(f: &mut Findings, why: &str) {
    f.fail("tools", format!("never calls: {why}"), NO_TOOLS_FIX);
}
