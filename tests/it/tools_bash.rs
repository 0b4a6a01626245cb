//! Black-box tests of the `bash` tool (declared by the public registry, run as the core runs
//! it, `support::bash`): arguments, exit status,
//! timeouts and cancellation killing the whole process group, a new session without a
//! controlling terminal, the output cap and log file, interleaving, environment scrubbing and
//! invalid UTF-8.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::workspace;
use minicode::chat::{ApprovalRequest, ToolStatus};
use minicode::tools::{Prepared, Registry, ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn ctx(ws: &Path) -> ToolCtx {
    ToolCtx::new(ws.to_path_buf(), Duration::from_secs(60), Vec::new())
}

fn prepare(ctx: &ToolCtx, args: serde_json::Value) -> Result<Prepared, String> {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve("bash", &args.to_string())?;
    tool.prepare(&value, ctx)
}

async fn run_with(ctx: &ToolCtx, args: serde_json::Value, cancel: CancellationToken) -> ToolOutput {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve("bash", &args.to_string()).unwrap();
    tool.prepare(&value, ctx).unwrap();
    crate::support::bash::run(ctx, value, cancel).await
}

async fn run(ctx: &ToolCtx, command: &str) -> ToolOutput {
    run_with(ctx, json!({ "command": command }), CancellationToken::new()).await
}

/// True while the process exists and is not a zombie (a killed orphan may linger as a zombie
/// when nothing reaps it; it can no longer do anything).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

async fn wait_until(deadline: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn bash_runs_in_workspace_and_reports_exit_code() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let out = run(&ctx, "pwd; echo hello").await;
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert!(
        out.content.contains(&ws.display().to_string()),
        "{}",
        out.content
    );
    assert!(out.content.contains("hello\n"), "{}", out.content);
    assert!(out.content.ends_with("[exit code 0]"), "{}", out.content);
}

#[tokio::test]
async fn bash_nonzero_exit_is_failed_with_code() {
    let (_dir, ws) = workspace();
    let out = run(&ctx(&ws), "echo oops; exit 3").await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("oops"));
    assert!(out.content.ends_with("[exit code 3]"), "{}", out.content);
}

#[tokio::test]
async fn bash_reports_death_by_signal() {
    let (_dir, ws) = workspace();
    let out = run(&ctx(&ws), "kill -9 $$").await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content.contains("killed by signal 9"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn bash_without_output_says_so() {
    let (_dir, ws) = workspace();
    let out = run(&ctx(&ws), "true").await;
    assert_eq!(out.content, "(no output)\n[exit code 0]");
}

#[tokio::test]
async fn bash_stdin_is_empty() {
    let (_dir, ws) = workspace();
    let started = Instant::now();
    let out = run(&ctx(&ws), "cat; echo done").await;
    assert_eq!(out.status, ToolStatus::Succeeded);
    assert!(out.content.starts_with("done\n"), "{}", out.content);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn bash_prepare_asks_approval_with_the_command() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let p = prepare(&ctx, json!({ "command": "echo one\necho two" })).unwrap();
    assert!(p.summary.starts_with("echo one"), "{}", p.summary);
    assert_eq!(
        p.approval,
        Some(ApprovalRequest::Command {
            command: "echo one\necho two".into()
        })
    );
}

#[tokio::test]
async fn bash_rejects_missing_unknown_and_mistyped_arguments() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let missing = prepare(&ctx, json!({})).unwrap_err();
    assert!(missing.contains("command"), "{missing}");
    let unknown = prepare(&ctx, json!({ "command": "true", "cwd": "/" })).unwrap_err();
    assert!(unknown.contains("cwd"), "{unknown}");
    let mistyped = prepare(&ctx, json!({ "command": 42 })).unwrap_err();
    assert!(mistyped.contains("invalid arguments"), "{mistyped}");
    let bad_timeout = prepare(&ctx, json!({ "command": "true", "timeout_secs": "5" })).unwrap_err();
    assert!(bad_timeout.contains("invalid arguments"), "{bad_timeout}");
    assert!(prepare(&ctx, json!({ "command": "true", "timeout_secs": 0 })).is_err());
    assert!(prepare(&ctx, json!({ "command": "  " })).is_err());
}

#[tokio::test]
async fn bash_run_with_invalid_arguments_runs_nothing() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let registry = Registry::builtin();
    let tool = registry.get("bash").unwrap();
    let args = json!({ "command": "touch ran", "extra": true });
    let out = tool.run(args, &ctx, CancellationToken::new()).await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("extra"), "{}", out.content);
    assert!(!ws.join("ran").exists());
}

/// The tool holds no sandbox policy (the core's sandbox part does): run through the registry
/// alone, as a library user's own loop would, a call runs nothing rather than run unconfined.
#[tokio::test]
async fn bash_through_the_registry_alone_runs_nothing() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let registry = Registry::builtin();
    let tool = registry.get("bash").unwrap();
    let out = tool
        .run(
            json!({ "command": "touch ran" }),
            &ctx,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("sandbox policy"), "{}", out.content);
    assert!(!ws.join("ran").exists());
}

#[tokio::test]
async fn bash_timeout_kills_grandchildren_and_returns_promptly() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let command = "bash -c 'echo $$ > grandchild.pid; sleep 6; touch marker' & sleep 100";
    let started = Instant::now();
    let out = run_with(
        &ctx,
        json!({ "command": command, "timeout_secs": 2 }),
        CancellationToken::new(),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content.contains("timed out after 2 s"),
        "{}",
        out.content
    );
    assert!(elapsed < Duration::from_secs(6), "took {elapsed:?}");
    let pid = read_pid(&ws.join("grandchild.pid"));
    assert!(
        wait_until(Duration::from_secs(10), || !alive(pid)).await,
        "grandchild {pid} survived"
    );
    // The grandchild is gone, so the marker can never appear.
    assert!(!ws.join("marker").exists());
}

#[tokio::test]
async fn bash_cancel_kills_the_process_group() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let cancel = CancellationToken::new();
    let pid_file = ws.join("child.pid");
    let command = "sleep 100 & echo $! > child.pid; wait";
    let call = run_with(&ctx, json!({ "command": command }), cancel.clone());
    let watcher = async {
        assert!(
            wait_until(Duration::from_secs(20), || {
                std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
            })
            .await
        );
        cancel.cancel();
    };
    let started = Instant::now();
    let (out, ()) = tokio::join!(call, watcher);
    assert_eq!(out.status, ToolStatus::Interrupted, "{}", out.content);
    assert!(out.content.contains("interrupted"), "{}", out.content);
    assert!(started.elapsed() < Duration::from_secs(30));
    let pid = read_pid(&pid_file);
    assert!(
        wait_until(Duration::from_secs(10), || !alive(pid)).await,
        "child {pid} survived"
    );
}

#[tokio::test]
async fn bash_background_job_does_not_outlive_the_call() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let started = Instant::now();
    let out = run(&ctx, "sleep 100 & echo $! > bg.pid; echo started").await;
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert!(out.content.contains("started"));
    assert!(started.elapsed() < Duration::from_secs(20));
    let pid = read_pid(&ws.join("bg.pid"));
    assert!(
        wait_until(Duration::from_secs(10), || !alive(pid)).await,
        "background job survived"
    );
}

#[tokio::test]
async fn bash_output_cap_keeps_head_and_tail_and_saves_full_log() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let command = "echo FIRST-LINE; for i in $(seq 1 20000); do echo \"line $i of the long output\"; done; echo LAST-LINE";
    let out = run(&ctx, command).await;
    assert_eq!(out.status, ToolStatus::Succeeded);
    assert!(
        out.content.starts_with("FIRST-LINE\n"),
        "{}",
        &out.content[..100]
    );
    assert!(out.content.contains("LAST-LINE\n[exit code 0]"));
    assert!(
        out.content.len() < 64 * 1024 + 512,
        "{} bytes",
        out.content.len()
    );
    assert!(!out.content.contains("line 10000 of"));
    let marker_start = out.content.find("[... ").expect("marker");
    let marker = &out.content[marker_start..];
    let marker = &marker[..marker.find('\n').unwrap()];
    assert!(marker.contains("bytes cut"), "{marker}");
    let rel = marker
        .split("saved to ")
        .nth(1)
        .unwrap()
        .trim_end_matches(" ...]");
    assert!(
        rel.starts_with(".minicode/outputs/") && rel.ends_with(".log"),
        "{rel}"
    );
    let log = ws.join(rel);
    let full = std::fs::read_to_string(&log).unwrap();
    assert!(full.starts_with("FIRST-LINE\n") && full.ends_with("LAST-LINE\n"));
    assert!(full.contains("line 10000 of the long output\n"));
    assert_eq!(full.lines().count(), 20002);
    let cut: u64 = marker
        .trim_start_matches("[... ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Head and tail are exact pieces of the full output (a newline may be added before the
    // marker when the head ends mid-line), and the count says what lies between them.
    let head = &out.content[..marker_start];
    let head = if full.starts_with(head) {
        head
    } else {
        head.strip_suffix('\n').unwrap()
    };
    assert!(full.starts_with(head));
    let tail_start = marker_start + marker.len() + 1;
    let tail = &out.content[tail_start..out.content.len() - "[exit code 0]".len()];
    assert!(full.ends_with(tail));
    assert_eq!(cut as usize, full.len() - head.len() - tail.len());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[tokio::test]
async fn bash_small_output_is_not_cut_or_saved() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let out = run(&ctx, "head -c 60000 /dev/zero | tr '\\0' z").await;
    assert!(!out.content.contains("bytes cut"));
    assert_eq!(out.content.matches('z').count(), 60000);
    assert!(!ws.join(".minicode/outputs").exists());
}

#[tokio::test]
async fn bash_interleaves_stdout_and_stderr_in_order() {
    let (_dir, ws) = workspace();
    let out = run(
        &ctx(&ws),
        "echo out1; echo err1 >&2; echo out2; echo err2 >&2; echo out3",
    )
    .await;
    assert!(
        out.content.starts_with("out1\nerr1\nout2\nerr2\nout3\n"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn bash_child_environment_has_no_secrets() {
    // The secrets must be in minicode's own environment; setting them in this shared test
    // process would race every other test thread, so the body runs in a child that has them
    // from its start.
    let envs = [
        ("MINICODE_API_KEY", "sk-minicode-secret"),
        ("OPENAI_API_KEY", "sk-openai-secret"),
        ("TOOLS_BASH_CUSTOM_KEY", "sk-custom-secret"),
        ("TOOLS_BASH_HARMLESS", "visible-value"),
    ];
    let name = "tools_bash::bash_child_environment_has_no_secrets";
    if !crate::support::isolated::in_child(name, &envs, &[]) {
        return;
    }
    let (_dir, ws) = workspace();
    let ctx = ToolCtx::new(
        ws.clone(),
        Duration::from_secs(60),
        vec!["TOOLS_BASH_CUSTOM_KEY".into()],
    );
    let out = run(&ctx, "env").await;
    assert_eq!(out.status, ToolStatus::Succeeded);
    for secret in ["sk-minicode-secret", "sk-openai-secret", "sk-custom-secret"] {
        assert!(!out.content.contains(secret), "{}", out.content);
    }
    assert!(!out.content.contains("MINICODE_"));
    assert!(!out.content.contains("OPENAI_API_KEY"));
    assert!(out.content.contains("TOOLS_BASH_HARMLESS=visible-value"));
}

#[tokio::test]
async fn bash_runs_in_its_own_session_without_a_controlling_terminal() {
    let (_dir, ws) = workspace();
    let script = "read -r pid comm state ppid pgrp sid rest < /proc/$$/stat; \
                  echo \"pid=$pid pgrp=$pgrp sid=$sid\"; \
                  (exec 3<>/dev/tty) 2>/dev/null && echo tty-opened || echo no-tty";
    let out = run(&ctx(&ws), script).await;
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    let line = out.content.lines().next().unwrap();
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .unwrap()
            .to_string()
    };
    // The shell leads its own session and process group (the group a timeout kills).
    assert_eq!(field("sid"), field("pid"), "{line}");
    assert_eq!(field("pgrp"), field("pid"), "{line}");
    assert_ne!(
        field("sid"),
        std::process::id().to_string(),
        "not the test's session"
    );
    assert!(out.content.contains("no-tty"), "{}", out.content);
}

#[tokio::test]
async fn bash_invalid_utf8_output_is_replaced() {
    let (_dir, ws) = workspace();
    let out = run(&ctx(&ws), "printf 'a\\377b\\n'").await;
    assert_eq!(out.status, ToolStatus::Succeeded);
    assert!(out.content.starts_with("a\u{FFFD}b\n"), "{:?}", out.content);
}

#[tokio::test]
async fn bash_each_call_gets_a_fresh_shell() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    run(&ctx, "export TOOLS_BASH_STATE=1; cd /").await;
    let out = run(&ctx, "echo \"[${TOOLS_BASH_STATE:-unset}]\"; pwd").await;
    assert!(out.content.starts_with("[unset]\n"), "{}", out.content);
    assert!(out.content.contains(&ws.display().to_string()));
}

#[tokio::test]
async fn output_for_the_model_shrinks_with_a_small_context_window() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    ctx.set_output_limit(4096);
    assert_eq!(ctx.output_limit(), 4096);
    let out = run(&ctx, "seq 1 20000").await;
    assert!(
        out.content.len() < 4096 + 400,
        "{} bytes",
        out.content.len()
    );
    assert!(out.content.contains("bytes cut") && out.content.starts_with("1\n"));
    assert!(out.content.contains("20000"), "the tail is kept");
    ctx.set_output_limit(10);
    assert_eq!(ctx.output_limit(), minicode::tools::MIN_OUTPUT_LIMIT);
    ctx.set_output_limit(1 << 30);
    assert_eq!(ctx.output_limit(), minicode::tools::MAX_OUTPUT_LIMIT);
}
