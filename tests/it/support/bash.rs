//! Running one `bash` call as the core runs it (the tool holds no policy: the core's sandbox
//! part hands one over), for the tests of the tool itself.

use minicode::sandbox::Policy;
use minicode::tools::ToolCtx;
use minicode::tools::bash::{self, Args, Ran};
use tokio_util::sync::CancellationToken;

/// Runs a call with the model's JSON `args` under `policy`: its output and sandbox report.
pub async fn run_under(
    ctx: &ToolCtx,
    policy: &Policy,
    args: serde_json::Value,
    cancel: CancellationToken,
) -> Ran {
    let args: Args = serde_json::from_value(args).expect("bash arguments");
    bash::run(&args, ctx, policy, cancel).await
}

/// Runs a call with the model's JSON `args` unconfined (a plain tool context's tests).
pub async fn run(
    ctx: &ToolCtx,
    args: serde_json::Value,
    cancel: CancellationToken,
) -> minicode::tools::ToolOutput {
    run_under(ctx, &Policy::unconfined(), args, cancel)
        .await
        .output
}
