//! The key never survives in what tools produce or frontends show: it is redacted before any
//! cut (bash head/tail, the saved output, a long `read` line), approval requests and call
//! arguments reach frontends redacted, and a `bash` child finds it neither in its own
//! environment nor in minicode's (`/proc/<pid>/environ`; the command's parent is its
//! supervisor, minicode is the supervisor's parent).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use minicode::chat::ApprovalRequest;
use minicode::tools::{Registry, Secrets, ToolCtx, ToolOutput};
use tokio_util::sync::CancellationToken;

use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
use crate::support::workspace;

/// 32 bytes, none of them `a`–`d` filler.
const KEY: &str = "sk-live-Zq8XwT4vPmN2rB7kLx9Y3fHj";

/// Whether any 6-byte piece of the key is in `text` (a cut key leaves at least that).
fn has_key_fragment(text: &str) -> bool {
    KEY.as_bytes()
        .windows(6)
        .any(|w| text.contains(std::str::from_utf8(w).unwrap()))
}

fn ctx(ws: &Path) -> ToolCtx {
    let mut ctx = ToolCtx::new(ws.to_path_buf(), Duration::from_secs(60), Vec::new());
    ctx.secrets = Secrets::new([KEY.to_string()]);
    ctx
}

async fn call(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> ToolOutput {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve(tool, &args.to_string()).unwrap();
    tool.prepare(&value, ctx).unwrap();
    if tool.spec().name == "bash" {
        // The core runs `bash` itself (under its sandbox part's policy).
        return crate::support::bash::run(ctx, value, CancellationToken::new()).await;
    }
    tool.run(value, ctx, CancellationToken::new()).await
}

/// The saved-output path a bash result names.
fn saved_path(ws: &Path, content: &str) -> PathBuf {
    let at = content.find(".minicode/outputs/").expect("a saved output");
    let rel = content[at..].split([' ', ']']).next().unwrap();
    ws.join(rel.trim_end_matches(['.', ',']))
}

#[tokio::test]
async fn bash_head_and_tail_cuts_never_leave_part_of_the_key() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    // 2 KiB for the model: the first 1024 bytes and the last 1024. One key runs across the
    // head's end, the other across the tail's start.
    ctx.set_output_limit(2048);
    let text = format!(
        "{}{KEY}{}{KEY}{}",
        "a".repeat(1000),
        "b".repeat(10_000),
        "d".repeat(1024 + 20 - KEY.len())
    );
    std::fs::write(ws.join("out.txt"), &text).unwrap();
    let out = call(&ctx, "bash", serde_json::json!({"command": "cat out.txt"})).await;
    assert!(!has_key_fragment(&out.content), "{}", out.content);
    assert_eq!(
        out.content.matches("[redacted]").count(),
        2,
        "{}",
        out.content
    );
    assert!(out.content.contains("bytes cut"), "{}", out.content);
    let saved = std::fs::read_to_string(saved_path(&ws, &out.content)).unwrap();
    assert!(!has_key_fragment(&saved));
    assert_eq!(saved.matches("[redacted]").count(), 2);
}

#[tokio::test]
async fn saved_output_is_redacted_wherever_the_key_falls_in_the_stream() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    // 300 keys at every offset modulo 997 bytes: some straddle whatever read boundaries the
    // pipe produces; none may survive in the saved file, whole or in part.
    let piece = format!("{KEY}{}", "c".repeat(997 - KEY.len()));
    std::fs::write(ws.join("out.txt"), piece.repeat(300)).unwrap();
    let out = call(&ctx, "bash", serde_json::json!({"command": "cat out.txt"})).await;
    assert!(!has_key_fragment(&out.content), "{}", out.content);
    let saved = std::fs::read_to_string(saved_path(&ws, &out.content)).unwrap();
    assert!(!has_key_fragment(&saved));
    assert_eq!(saved.matches("[redacted]").count(), 300);
}

#[tokio::test]
async fn read_line_cut_never_leaves_part_of_the_key() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    // A line is cut after 2000 characters: the key starts at 1990.
    let line = format!(
        "{}{KEY}{}\nsecond {KEY}\n",
        "a".repeat(1990),
        "b".repeat(500)
    );
    std::fs::write(ws.join("long.txt"), line).unwrap();
    let out = call(&ctx, "read", serde_json::json!({"path": "long.txt"})).await;
    assert!(!has_key_fragment(&out.content), "{}", out.content);
    assert!(out.content.contains("line cut"), "{}", out.content);
    assert_eq!(
        out.content.matches("[redacted]").count(),
        2,
        "{}",
        out.content
    );
}

#[tokio::test]
async fn write_and_edit_approvals_show_the_key_redacted() {
    let (_dir, ws) = workspace();
    let ctx = ctx(&ws);
    let registry = Registry::builtin();
    let args = serde_json::json!({"path": "creds.txt", "content": format!("token={KEY}\n")});
    let (write, value) = registry.resolve("write", &args.to_string()).unwrap();
    let prepared = write.prepare(&value, &ctx).unwrap();
    let Some(ApprovalRequest::Diff { diff, .. }) = prepared.approval else {
        panic!("a diff to approve")
    };
    assert!(diff.contains("+token=[redacted]"), "{diff}");
    assert!(!has_key_fragment(&diff));
    // The file itself gets what the model asked for.
    write.run(value, &ctx, CancellationToken::new()).await;
    assert_eq!(
        std::fs::read_to_string(ws.join("creds.txt")).unwrap(),
        format!("token={KEY}\n")
    );
    let args = serde_json::json!({
        "path": "creds.txt", "old_string": "token=", "new_string": "export TOKEN="
    });
    let (edit, value) = registry.resolve("edit", &args.to_string()).unwrap();
    let prepared = edit.prepare(&value, &ctx).unwrap();
    let Some(ApprovalRequest::Diff { diff, .. }) = prepared.approval else {
        panic!("a diff to approve")
    };
    assert!(diff.contains("-token=[redacted]"), "{diff}");
    assert!(!has_key_fragment(&diff));
    let out = edit.run(value, &ctx, CancellationToken::new()).await;
    assert!(!has_key_fragment(&out.content), "{}", out.content);
}

/// The binary in a fresh workspace, key in `MINICODE_API_KEY`, no controlling terminal.
fn run_binary(server: &MockServer, dir: &Path, args: &[&str]) -> Output {
    run_binary_as(server, dir, args, None)
}

/// Like [`run_binary`], as user `uid` (and group `uid`) when given.
fn run_binary_as(server: &MockServer, dir: &Path, args: &[&str], uid: Option<u32>) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.current_dir(dir)
        .args(["--base-url", &server.base_url(), "--model", "m"])
        .args(args)
        .stdin(Stdio::null());
    crate::support::binary::isolate(&mut cmd, &dir.join("home"));
    cmd.env_remove("OPENAI_API_KEY")
        .env("MINICODE_API_KEY", KEY);
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    // SAFETY: setsid only detaches the child from the test's terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.output().unwrap()
}

fn write_call() -> String {
    serde_json::json!({"path": "creds.txt", "content": format!("token={KEY}\n")}).to_string()
}

#[test]
fn stream_json_shows_approval_requests_and_call_arguments_redacted() {
    let args = write_call();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "write", &args)], 7),
        text_reply("ok", 4),
    ]);
    let (_dir, ws) = workspace();
    // No terminal and no --yes: the approval is requested (and then refused).
    let out = run_binary(&server, &ws, &["--output-format", "stream-json", "save it"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let approval = stdout
        .lines()
        .find(|l| l.contains("\"approval_requested\"") || l.contains("ApprovalRequested"))
        .unwrap_or_else(|| panic!("an approval event in {stdout}"));
    assert!(approval.contains("+token=[redacted]"), "{approval}");
    let began = stdout
        .lines()
        .find(|l| l.contains("creds.txt") && l.contains("arguments"))
        .unwrap_or_else(|| panic!("a call event in {stdout}"));
    assert!(began.contains("token=[redacted]"), "{began}");
    assert!(!has_key_fragment(&stdout), "{stdout}");
    assert!(!has_key_fragment(&String::from_utf8_lossy(&out.stderr)));
}

#[test]
fn with_yes_the_file_still_gets_what_the_model_wrote() {
    let args = write_call();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "write", &args)], 7),
        text_reply("ok", 4),
    ]);
    let (_dir, ws) = workspace();
    let out = run_binary(
        &server,
        &ws,
        &["--yes", "--output-format", "stream-json", "save it"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(!has_key_fragment(&String::from_utf8_lossy(&out.stdout)));
    assert_eq!(
        std::fs::read_to_string(ws.join("creds.txt")).unwrap(),
        format!("token={KEY}\n")
    );
}

#[test]
fn a_bash_child_finds_the_key_neither_in_its_environment_nor_in_its_parent() {
    // Written to files, not printed: printed output would be redacted anyway and prove nothing.
    let script = "mc=$(awk '{print $4}' /proc/$PPID/stat); \
                  cat /proc/$mc/environ > parent-environ.txt 2>&1; env > env.txt";
    let args = serde_json::json!({ "command": script }).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &args)], 9),
        text_reply("ok", 4),
    ]);
    let (_dir, ws) = workspace();
    let out = run_binary(&server, &ws, &["--yes", "look around"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(ws.join(name)).unwrap();
    // A process allowed to read minicode's environ block anyway (root, as in many
    // containers) finds the value wiped; anyone else is refused (see the next test).
    let environ = read("parent-environ.txt");
    assert!(!has_key_fragment(&environ), "{environ:?}");
    let env = read("env.txt");
    assert!(
        !has_key_fragment(&env) && !env.contains("MINICODE_API_KEY"),
        "{env}"
    );
    // The key still reached the server: it was read before it was wiped.
    let auth = server.requests()[0]
        .header("authorization")
        .unwrap()
        .to_string();
    assert_eq!(auth, format!("Bearer {KEY}"));
}

#[test]
fn a_same_user_child_cannot_read_minicodes_environ_or_memory() {
    // Run as an ordinary user (root may read any process): `nobody` when the tests run as root.
    // SAFETY: geteuid only reads this process's user id.
    let uid = (unsafe { libc::geteuid() } == 0).then_some(65534);
    let script = "mc=$(awk '{print $4}' /proc/$PPID/stat); \
                  cat /proc/$mc/environ > environ.txt 2>&1; echo $? > environ.rc; \
                  head -c 1 /proc/$mc/mem > mem.txt 2>&1; echo $? > mem.rc";
    let args = serde_json::json!({ "command": script }).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &args)], 9),
        text_reply("ok", 4),
    ]);
    let (_dir, ws) = workspace();
    if let Some(uid) = uid {
        let path = std::ffi::CString::new(ws.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: chown of a directory this test created.
        assert_eq!(unsafe { libc::chown(path.as_ptr(), uid, uid) }, 0);
    }
    let out = run_binary_as(&server, &ws, &["--yes", "look around"], uid);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(ws.join(name)).unwrap();
    for file in ["environ", "mem"] {
        assert_ne!(
            read(&format!("{file}.rc")).trim(),
            "0",
            "{file} was readable"
        );
        // Denied, or (inside the call's own PID namespace) not even visible.
        let text = read(&format!("{file}.txt"));
        assert!(
            text.contains("Permission denied") || text.contains("No such file"),
            "{file}: {text}"
        );
    }
}

#[test]
fn a_resumed_session_shows_the_calls_it_stored_redacted() {
    let args = write_call();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "write", &args)], 7),
        text_reply("saved", 4),
        text_reply("again", 4),
    ]);
    let (_dir, ws) = workspace();
    let first = run_binary(&server, &ws, &["--yes", "save it"]);
    assert_eq!(first.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&first.stderr);
    let at = stderr.find("--session ").expect("a session to resume") + 10;
    let id = stderr[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(')');
    // The session keeps the call as the model made it; what a frontend is shown of it is not.
    let out = run_binary(
        &server,
        &ws,
        &[
            "--session",
            id,
            "--output-format",
            "stream-json",
            "once more",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let restored = stdout
        .lines()
        .find(|l| l.contains("history_restored"))
        .unwrap_or_else(|| panic!("a restored history in {stdout}"));
    assert!(restored.contains("token=[redacted]"), "{restored}");
    assert!(!has_key_fragment(&stdout), "{stdout}");
}
