//! Black-box tests of the `read`, `write` and `edit` tools through the public registry: happy
//! paths, argument validation, workspace containment (`..`, absolute paths, symlinks, sibling
//! prefixes), binary and huge files, and edit's read-before-edit and match-count rules.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::support::tool_workspace;
use minicode::chat::{ApprovalRequest, ToolStatus};
use minicode::tools::{Prepared, Registry, ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn prepare(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> Result<Prepared, String> {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve(tool, &args.to_string())?;
    tool.prepare(&value, ctx)
}

/// prepare, then run: the way the agent calls a tool. A prepare error comes back as `Err`.
async fn call(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> Result<ToolOutput, String> {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve(tool, &args.to_string())?;
    tool.prepare(&value, ctx)?;
    Ok(tool.run(value, ctx, CancellationToken::new()).await)
}

/// Runs without prepare, to check `run` validates on its own.
async fn run_only(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> ToolOutput {
    let registry = Registry::builtin();
    registry
        .get(tool)
        .unwrap()
        .run(args, ctx, CancellationToken::new())
        .await
}

async fn read(ctx: &ToolCtx, args: serde_json::Value) -> ToolOutput {
    let out = call(ctx, "read", args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    out
}

fn write_file(path: &Path, content: &str) {
    std::fs::write(path, content).unwrap();
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

// ---------- read ----------

#[tokio::test]
async fn read_shows_numbered_lines() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("a.txt"), "alpha\nbeta\r\ngamma");
    let out = read(&ctx, json!({ "path": "a.txt" })).await;
    assert_eq!(out.content, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
    let p = prepare(&ctx, "read", json!({ "path": "a.txt" })).unwrap();
    assert_eq!(p.approval, None);
    assert_eq!(p.summary, "a.txt");
}

#[tokio::test]
async fn read_offset_and_limit_with_continuation_hint() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("n.txt"), &numbered(10));
    let out = read(&ctx, json!({ "path": "n.txt", "offset": 3, "limit": 2 })).await;
    assert!(
        out.content.starts_with("     3\tline 3\n     4\tline 4\n"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("use offset=5 to continue"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("line 5\n"));
    let rest = read(&ctx, json!({ "path": "n.txt", "offset": 9 })).await;
    assert_eq!(rest.content, "     9\tline 9\n    10\tline 10\n");
}

#[tokio::test]
async fn read_offset_past_end_is_an_error() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("n.txt"), &numbered(3));
    let out = call(&ctx, "read", json!({ "path": "n.txt", "offset": 10 }))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("past the end"), "{}", out.content);
}

#[tokio::test]
async fn read_stops_at_2000_lines() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("big.txt"), &numbered(2500));
    let out = read(&ctx, json!({ "path": "big.txt" })).await;
    assert!(out.content.contains("  2000\tline 2000\n"));
    assert!(!out.content.contains("line 2001\n"));
    assert!(
        out.content.contains("use offset=2001 to continue"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn read_stops_at_50_kb_of_output() {
    let (_d, ws, ctx) = tool_workspace();
    let line = "x".repeat(199);
    let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
    write_file(&ws.join("wide.txt"), &text);
    let out = read(&ctx, json!({ "path": "wide.txt" })).await;
    assert!(
        out.content.len() <= 50 * 1024 + 200,
        "{}",
        out.content.len()
    );
    let hint = out.content.lines().last().unwrap();
    let next: usize = hint
        .split("offset=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(next > 200 && next < 300, "{hint}");
    assert_eq!(out.content.lines().count(), next);
}

#[tokio::test]
async fn read_cuts_long_lines() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(
        &ws.join("long.txt"),
        &format!("short\n{}\nend\n", "é".repeat(5000)),
    );
    let out = read(&ctx, json!({ "path": "long.txt" })).await;
    let second = out.content.lines().nth(1).unwrap();
    let end: String = second.chars().skip(2000).collect();
    assert!(second.contains("line cut: 5000 characters"), "{end}");
    assert_eq!(second.matches('é').count(), 2000);
    assert!(out.content.contains("     3\tend\n"));
}

#[tokio::test]
async fn read_refuses_binary_files() {
    let (_d, ws, ctx) = tool_workspace();
    std::fs::write(ws.join("nul.bin"), b"abc\0def").unwrap();
    // No NUL, but mostly control bytes: not text either.
    let controls: Vec<u8> = (0..400u32)
        .map(|i| [1u8, 2, 3, 0xff, b'a'][i as usize % 5])
        .collect();
    std::fs::write(ws.join("controls.bin"), controls).unwrap();
    for name in ["nul.bin", "controls.bin"] {
        let out = call(&ctx, "read", json!({ "path": name })).await.unwrap();
        assert_eq!(out.status, ToolStatus::Failed);
        assert!(out.content.contains("binary"), "{}", out.content);
    }
}

#[tokio::test]
async fn read_shows_a_latin1_file_decoded_with_a_note_and_edit_still_refuses_it() {
    let (_d, ws, ctx) = tool_workspace();
    std::fs::write(ws.join("latin1.txt"), b"caf\xe9 cr\xe8me\nplain line\n").unwrap();
    let out = read(&ctx, json!({ "path": "latin1.txt" })).await;
    assert!(
        out.content.contains("     1\tcaf\u{FFFD} cr\u{FFFD}me\n"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("     2\tplain line\n"),
        "{}",
        out.content
    );
    assert!(out.content.contains("not UTF-8"), "{}", out.content);
    assert!(!out.content.contains("binary"), "{}", out.content);
    let edit = call(
        &ctx,
        "edit",
        json!({ "path": "latin1.txt", "old_string": "plain", "new_string": "other" }),
    )
    .await;
    let refused = match edit {
        Ok(out) => {
            assert_ne!(out.status, ToolStatus::Succeeded, "{}", out.content);
            out.content
        }
        Err(message) => message,
    };
    assert!(refused.contains("UTF-8"), "{refused}");
    assert_eq!(
        std::fs::read(ws.join("latin1.txt")).unwrap(),
        b"caf\xe9 cr\xe8me\nplain line\n"
    );
}

#[tokio::test]
async fn read_refuses_directories() {
    let (_d, ws, ctx) = tool_workspace();
    std::fs::create_dir(ws.join("sub")).unwrap();
    let out = call(&ctx, "read", json!({ "path": "sub" })).await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("directory"), "{}", out.content);
}

#[tokio::test]
async fn read_streams_a_huge_file_window() {
    let (_d, ws, ctx) = tool_workspace();
    // Over the whole-file limit (16 MiB), so it is streamed, not loaded.
    let line = format!("{}\n", "y".repeat(99));
    let mut text = String::with_capacity(18 * 1024 * 1024);
    for _ in 0..180_000 {
        text.push_str(&line);
    }
    text.push_str("the end\n");
    write_file(&ws.join("huge.txt"), &text);
    let out = read(&ctx, json!({ "path": "huge.txt", "offset": 180_001 })).await;
    assert_eq!(out.content, "180001\tthe end\n");
    let head = read(&ctx, json!({ "path": "huge.txt", "limit": 1 })).await;
    assert!(head.content.contains("use offset=2 to continue"));
    // Too large to edit, and the refusal says so.
    let edit = call(
        &ctx,
        "edit",
        json!({ "path": "huge.txt", "old_string": "the end", "new_string": "x" }),
    )
    .await;
    assert!(edit.unwrap_err().contains("too large"));
}

#[tokio::test]
async fn read_rejects_bad_arguments() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("a.txt"), "a\n");
    for args in [
        json!({}),
        json!({ "path": "a.txt", "lines": 3 }),
        json!({ "path": 7 }),
        json!({ "path": "a.txt", "offset": "2" }),
        json!({ "path": "a.txt", "offset": -1 }),
        json!({ "path": "a.txt", "limit": 0 }),
    ] {
        let err = prepare(&ctx, "read", args.clone()).unwrap_err();
        assert!(!err.is_empty(), "{args}");
        assert_eq!(
            run_only(&ctx, "read", args).await.status,
            ToolStatus::Failed
        );
    }
}

// ---------- path safety (all three file tools) ----------

fn refused(result: Result<ToolOutput, String>) -> String {
    match result {
        Err(e) => e,
        Ok(out) => {
            assert_ne!(out.status, ToolStatus::Succeeded, "{}", out.content);
            out.content
        }
    }
}

#[tokio::test]
async fn file_tools_refuse_paths_outside_the_workspace() {
    let (dir, ws, ctx) = tool_workspace();
    let root = dir.path().canonicalize().unwrap();
    write_file(&root.join("secret.txt"), "top secret\n");
    let evil = root.join("p-evil");
    std::fs::create_dir(&evil).unwrap();
    write_file(&evil.join("x.txt"), "evil\n");
    std::os::unix::fs::symlink(root.join("secret.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&root, ws.join("up")).unwrap();
    let outside_paths = [
        "../secret.txt".to_string(),
        root.join("secret.txt").display().to_string(),
        "link.txt".to_string(),
        "up/secret.txt".to_string(),
        "../p-evil/x.txt".to_string(),
        evil.join("x.txt").display().to_string(),
        "sub/../../secret.txt".to_string(),
        "/etc/passwd".to_string(),
    ];
    for path in &outside_paths {
        let msg = refused(call(&ctx, "read", json!({ "path": path })).await);
        assert!(msg.contains("outside the workspace"), "{path}: {msg}");
        let msg = refused(call(&ctx, "write", json!({ "path": path, "content": "pwned" })).await);
        assert!(msg.contains("outside the workspace"), "{path}: {msg}");
        let msg = refused(
            call(
                &ctx,
                "edit",
                json!({ "path": path, "old_string": "e", "new_string": "x" }),
            )
            .await,
        );
        assert!(msg.contains("outside the workspace"), "{path}: {msg}");
    }
    // Nothing outside changed, nothing new appeared.
    assert_eq!(
        std::fs::read_to_string(root.join("secret.txt")).unwrap(),
        "top secret\n"
    );
    assert_eq!(
        std::fs::read_to_string(evil.join("x.txt")).unwrap(),
        "evil\n"
    );
    // Writing a new file through a symlinked folder out of the workspace is refused too.
    let msg = refused(
        call(
            &ctx,
            "write",
            json!({ "path": "up/new.txt", "content": "x" }),
        )
        .await,
    );
    assert!(msg.contains("outside the workspace"), "{msg}");
    assert!(!root.join("new.txt").exists());
}

#[tokio::test]
async fn file_tools_refuse_empty_and_nul_paths() {
    let (_d, _ws, ctx) = tool_workspace();
    let args = |tool: &str, path: &str| match tool {
        "read" => json!({ "path": path }),
        "write" => json!({ "path": path, "content": "x" }),
        _ => json!({ "path": path, "old_string": "a", "new_string": "b" }),
    };
    for tool in ["read", "write", "edit"] {
        let e = refused(call(&ctx, tool, args(tool, "")).await);
        assert!(e.contains("empty"), "{tool}: {e}");
        let e = refused(call(&ctx, tool, args(tool, "a\0b")).await);
        assert!(e.contains("NUL"), "{tool}: {e}");
    }
}

#[tokio::test]
async fn symlinks_inside_the_workspace_and_a_symlinked_workspace_work() {
    let (dir, ws, ctx) = tool_workspace();
    write_file(&ws.join("real.txt"), "real\n");
    std::os::unix::fs::symlink(ws.join("real.txt"), ws.join("alias.txt")).unwrap();
    let out = read(&ctx, json!({ "path": "alias.txt" })).await;
    assert_eq!(out.content, "     1\treal\n");
    // The workspace reached through a symlink: an absolute path via the link resolves inside.
    let link = dir.path().canonicalize().unwrap().join("ws-link");
    std::os::unix::fs::symlink(&ws, &link).unwrap();
    let via_link = link.join("real.txt").display().to_string();
    let out = read(&ctx, json!({ "path": via_link })).await;
    assert_eq!(out.content, "     1\treal\n");
    // And a context built from the symlinked path still accepts its own files.
    let ctx2 = ToolCtx::new(link.clone(), Duration::from_secs(60), Vec::new());
    let out = read(&ctx2, json!({ "path": "real.txt" })).await;
    assert_eq!(out.content, "     1\treal\n");
}

// ---------- write ----------

#[tokio::test]
async fn write_creates_parents_and_shows_an_all_added_diff() {
    let (_d, ws, ctx) = tool_workspace();
    let args = json!({ "path": "deep/er/new.txt", "content": "hello\nworld\n" });
    let p = prepare(&ctx, "write", args.clone()).unwrap();
    match p.approval {
        Some(ApprovalRequest::Diff { path, diff }) => {
            assert_eq!(path, "deep/er/new.txt");
            assert!(diff.contains("--- /dev/null"), "{diff}");
            assert!(diff.contains("+++ b/deep/er/new.txt"), "{diff}");
            assert!(diff.contains("+hello\n+world\n"), "{diff}");
        }
        other => panic!("expected a diff approval, got {other:?}"),
    }
    assert!(!ws.join("deep").exists(), "prepare must not write");
    let out = call(&ctx, "write", args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert!(
        out.content.contains("12 bytes") && out.content.contains("2 lines"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("deep/er/new.txt")).unwrap(),
        "hello\nworld\n"
    );
}

#[tokio::test]
async fn write_keeps_the_mode_of_an_existing_file_and_diffs_against_it() {
    let (_d, ws, ctx) = tool_workspace();
    let path = ws.join("run.sh");
    write_file(&path, "echo old\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    let args = json!({ "path": "run.sh", "content": "echo new\n" });
    let p = prepare(&ctx, "write", args.clone()).unwrap();
    let Some(ApprovalRequest::Diff { diff, .. }) = p.approval else {
        panic!("no diff")
    };
    assert!(diff.contains("-echo old\n+echo new\n"), "{diff}");
    assert!(diff.contains("--- a/run.sh"), "{diff}");
    let out = call(&ctx, "write", args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "echo new\n");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o750
    );
    // No temp files left behind (`.minicode/` holds the emptied temp-file journal).
    let names: Vec<_> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != ".minicode")
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[tokio::test]
async fn write_refuses_a_directory_and_bad_arguments() {
    let (_d, ws, ctx) = tool_workspace();
    std::fs::create_dir(ws.join("sub")).unwrap();
    let e = prepare(&ctx, "write", json!({ "path": "sub", "content": "x" })).unwrap_err();
    assert!(e.contains("directory"), "{e}");
    for args in [
        json!({ "path": "a.txt" }),
        json!({ "content": "x" }),
        json!({ "path": "a.txt", "content": 5 }),
        json!({ "path": "a.txt", "content": "x", "mode": "0777" }),
    ] {
        assert!(prepare(&ctx, "write", args.clone()).is_err(), "{args}");
        assert_eq!(
            run_only(&ctx, "write", args).await.status,
            ToolStatus::Failed
        );
    }
    assert!(!ws.join("a.txt").exists());
}

// ---------- edit ----------

fn edit_args(path: &str, old: &str, new: &str) -> serde_json::Value {
    json!({ "path": path, "old_string": old, "new_string": new })
}

#[tokio::test]
async fn edit_after_read_replaces_once_and_shows_a_diff() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(
        &ws.join("main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    read(&ctx, json!({ "path": "main.rs" })).await;
    let args = edit_args("main.rs", "\"hi\"", "\"hello\"");
    let p = prepare(&ctx, "edit", args.clone()).unwrap();
    let Some(ApprovalRequest::Diff { path, diff }) = p.approval else {
        panic!("no diff")
    };
    assert_eq!(path, "main.rs");
    assert!(
        diff.contains("-    println!(\"hi\");\n+    println!(\"hello\");\n"),
        "{diff}"
    );
    let out = call(&ctx, "edit", args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert!(
        out.content.contains("+    println!(\"hello\");"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("main.rs")).unwrap(),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    // The new content is remembered: a second edit needs no re-read.
    let out = call(&ctx, "edit", edit_args("main.rs", "hello", "bye"))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
}

#[tokio::test]
async fn edit_without_read_is_refused_with_the_content_which_counts_as_read() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("a.txt"), "one\n");
    let out = run_only(&ctx, "edit", edit_args("a.txt", "one", "two")).await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("read it first"), "{}", out.content);
    assert!(out.content.contains("     1\tone"), "{}", out.content);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n");
    // The refusal showed the file: the next edit needs no `read`.
    prepare(&ctx, "edit", edit_args("a.txt", "one", "two")).unwrap();
}

#[tokio::test]
async fn edit_after_an_external_change_is_refused() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("a.txt"), "one\n");
    read(&ctx, json!({ "path": "a.txt" })).await;
    // Same length, so only the content hash can tell.
    write_file(&ws.join("a.txt"), "One\n");
    let e = prepare(&ctx, "edit", edit_args("a.txt", "One", "two")).unwrap_err();
    assert!(
        e.contains("changed on disk") && e.contains("read it again"),
        "{e}"
    );
    // After reading again it works.
    read(&ctx, json!({ "path": "a.txt" })).await;
    let out = call(&ctx, "edit", edit_args("a.txt", "One", "two"))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded);
}

#[tokio::test]
async fn edit_after_write_needs_no_read() {
    let (_d, ws, ctx) = tool_workspace();
    call(&ctx, "write", json!({ "path": "w.txt", "content": "a\n" }))
        .await
        .unwrap();
    let out = call(&ctx, "edit", edit_args("w.txt", "a", "b"))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert_eq!(std::fs::read_to_string(ws.join("w.txt")).unwrap(), "b\n");
}

#[tokio::test]
async fn edit_reports_the_number_of_matches() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("a.txt"), "x = 1\ny = 1\n");
    read(&ctx, json!({ "path": "a.txt" })).await;
    let none = prepare(&ctx, "edit", edit_args("a.txt", "z = 1", "z = 2")).unwrap_err();
    assert!(
        none.contains("not found") && none.contains("0 matches"),
        "{none}"
    );
    let two = prepare(&ctx, "edit", edit_args("a.txt", "= 1", "= 2")).unwrap_err();
    assert!(
        two.contains("found 2 matches") && two.contains("replace_all"),
        "{two}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "x = 1\ny = 1\n"
    );
}

#[tokio::test]
async fn edit_replace_all_replaces_every_match() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("a.txt"), "x = 1\ny = 1\nz = 3\n");
    read(&ctx, json!({ "path": "a.txt" })).await;
    let args =
        json!({ "path": "a.txt", "old_string": "= 1", "new_string": "= 2", "replace_all": true });
    let out = call(&ctx, "edit", args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert!(out.content.contains("2 replacements"), "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "x = 2\ny = 2\nz = 3\n"
    );
}

#[tokio::test]
async fn edit_keeps_the_file_mode() {
    let (_d, ws, ctx) = tool_workspace();
    let path = ws.join("tool.sh");
    write_file(&path, "echo a\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    read(&ctx, json!({ "path": "tool.sh" })).await;
    call(&ctx, "edit", edit_args("tool.sh", "a", "b"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o700
    );
}

#[tokio::test]
async fn edit_result_diff_is_capped() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("many.txt"), &"same\n".repeat(500));
    read(&ctx, json!({ "path": "many.txt" })).await;
    let args = json!({ "path": "many.txt", "old_string": "same", "new_string": "diff", "replace_all": true });
    let out = call(&ctx, "edit", args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded);
    assert!(out.content.contains("500 replacements"));
    assert!(
        out.content.lines().count() < 80,
        "{} lines",
        out.content.lines().count()
    );
    assert!(out.content.contains("diff cut"), "{}", out.content);
}

#[tokio::test]
async fn edit_rejects_bad_arguments_and_pointless_edits() {
    let (_d, ws, ctx) = tool_workspace();
    write_file(&ws.join("a.txt"), "one\n");
    read(&ctx, json!({ "path": "a.txt" })).await;
    for args in [
        json!({ "path": "a.txt", "old_string": "one" }),
        json!({ "path": "a.txt", "old_string": "one", "new_string": "two", "force": true }),
        json!({ "path": "a.txt", "old_string": "one", "new_string": "two", "replace_all": "yes" }),
        json!({ "path": "a.txt", "old_string": 1, "new_string": "two" }),
        edit_args("a.txt", "", "two"),
        edit_args("a.txt", "one", "one"),
        edit_args("missing.txt", "one", "two"),
    ] {
        assert!(prepare(&ctx, "edit", args.clone()).is_err(), "{args}");
        assert_eq!(
            run_only(&ctx, "edit", args).await.status,
            ToolStatus::Failed
        );
    }
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n");
}

#[tokio::test]
async fn read_refuses_missing_files_and_fifos_without_blocking() {
    let (_d, ws, ctx) = tool_workspace();
    let out = call(&ctx, "read", json!({ "path": "nope.txt" }))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("nope.txt"), "{}", out.content);
    let fifo = ws.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let out = call(&ctx, "read", json!({ "path": "pipe" })).await.unwrap();
    assert!(
        out.content.contains("not a regular file"),
        "{}",
        out.content
    );
    let e = prepare(&ctx, "write", json!({ "path": "pipe", "content": "x" })).unwrap_err();
    assert!(e.contains("not a regular file"), "{e}");
}

// ---------- modes and names (nothing is lost) ----------

fn mode_bits(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test]
async fn a_file_with_a_255_byte_name_is_written_and_edited() {
    let (_d, ws, ctx) = tool_workspace();
    let name = "n".repeat(255);
    let out = call(&ctx, "write", json!({"path": name, "content": "one\n"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    let out = call(
        &ctx,
        "edit",
        json!({"path": name, "old_string": "one", "new_string": "two"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert_eq!(std::fs::read_to_string(ws.join(&name)).unwrap(), "two\n");
    let names: Vec<_> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "only the file and .minicode: {names:?}");
}

#[tokio::test]
async fn write_and_edit_refuse_a_read_only_file() {
    let (_d, ws, ctx) = tool_workspace();
    let path = ws.join("locked.txt");
    std::fs::write(&path, "keep me\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    call(&ctx, "read", json!({"path": "locked.txt"}))
        .await
        .unwrap();

    let refused = call(
        &ctx,
        "write",
        json!({"path": "locked.txt", "content": "new\n"}),
    )
    .await
    .unwrap_err();
    assert!(
        refused.contains("read-only") && refused.contains("0444"),
        "{refused}"
    );
    let refused = call(
        &ctx,
        "edit",
        json!({"path": "locked.txt", "old_string": "keep", "new_string": "lose"}),
    )
    .await
    .unwrap_err();
    assert!(refused.contains("read-only"), "{refused}");
    // `run` checks again: the file may have been made read-only during the approval.
    let out = run_only(&ctx, "write", json!({"path": "locked.txt", "content": "x"})).await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("read-only"), "{}", out.content);
    let out = run_only(
        &ctx,
        "edit",
        json!({"path": "locked.txt", "old_string": "keep", "new_string": "lose"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Failed);

    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me\n");
    assert_eq!(mode_bits(&path), 0o444);
}

#[tokio::test]
async fn a_rewritten_file_loses_setuid_setgid_and_sticky_bits() {
    let (_d, ws, ctx) = tool_workspace();
    for (name, before) in [("suid", 0o4755), ("sgid", 0o2755), ("sticky", 0o1755)] {
        let path = ws.join(name);
        std::fs::write(&path, "#!/bin/sh\necho old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(before)).unwrap();
        assert_eq!(mode_bits(&path), before, "the test could set {before:o}");
        let out = call(
            &ctx,
            "write",
            json!({"path": name, "content": "#!/bin/sh\necho new\n"}),
        )
        .await
        .unwrap();
        assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
        assert_eq!(mode_bits(&path), 0o755, "write of a {before:o} file");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(before)).unwrap();
        call(&ctx, "read", json!({"path": name})).await.unwrap();
        let out = call(
            &ctx,
            "edit",
            json!({"path": name, "old_string": "new", "new_string": "newer"}),
        )
        .await
        .unwrap();
        assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
        assert_eq!(mode_bits(&path), 0o755, "edit of a {before:o} file");
    }
}

#[tokio::test]
async fn a_new_file_follows_the_umask_and_an_existing_one_keeps_its_mode() {
    // The umask is process-global: set it only in a child process of our own.
    let name = "tools_files::a_new_file_follows_the_umask_and_an_existing_one_keeps_its_mode";
    if !crate::support::isolated::in_child(name, &[], &[]) {
        return;
    }
    // SAFETY: umask only changes this (child) process's file-creation mask.
    unsafe { libc::umask(0o077) };
    let (_d, ws, ctx) = tool_workspace();
    let out = call(
        &ctx,
        "write",
        json!({"path": "new.txt", "content": "private\n"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert_eq!(mode_bits(&ws.join("new.txt")), 0o600);
    let shared = ws.join("shared.txt");
    std::fs::write(&shared, "x\n").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o664)).unwrap();
    call(
        &ctx,
        "write",
        json!({"path": "shared.txt", "content": "y\n"}),
    )
    .await
    .unwrap();
    assert_eq!(
        mode_bits(&shared),
        0o664,
        "the umask never narrows a kept mode"
    );
}
