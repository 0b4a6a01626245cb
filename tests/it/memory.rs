//! Project memory (`minicode::memory`): loading MiniCode.md, its limits, detail files, and the
//! injected wrapper message.

use crate::support::workspace;
use minicode::chat::Role;
use minicode::memory::{
    self, FILE_NAME, MAX_BYTES, MAX_TOKENS, MemoryError, PROMPT_RULES, is_detail_file,
    is_root_file, validate_detail,
};

#[test]
fn missing_memory_file_means_no_memory() {
    let (_dir, ws) = workspace();
    assert!(memory::load(&ws).unwrap().is_none());
}

#[test]
fn empty_memory_file_injects_nothing() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join(FILE_NAME), "").unwrap();
    assert!(memory::load(&ws).unwrap().is_none());
    std::fs::write(ws.join(FILE_NAME), " \n\t\n").unwrap();
    assert!(memory::load(&ws).unwrap().is_none());
}

#[test]
fn memory_is_loaded_verbatim_and_wrapped_with_precedence_rules() {
    let (_dir, ws) = workspace();
    let text = "# Project\n- build: `cargo build`\n- 中文说明\n";
    std::fs::write(ws.join(FILE_NAME), text).unwrap();
    let m = memory::load(&ws).unwrap().unwrap();
    assert_eq!(m.text, text);
    assert_eq!(m.path, ws.join(FILE_NAME));
    let message = m.message();
    assert_eq!(message.role, Role::User);
    let body = message.text();
    assert!(body.starts_with("<project-memory"));
    assert!(body.trim_end().ends_with("</project-memory>"));
    assert!(body.contains(text));
    assert!(body.contains("system rules and the user's explicit current request take precedence"));
    assert_eq!(m.tokens, minicode::chat::estimate_message(&message));
}

#[test]
fn memory_is_read_fresh_on_every_load() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join(FILE_NAME), "old rule").unwrap();
    assert_eq!(memory::load(&ws).unwrap().unwrap().text, "old rule");
    std::fs::write(ws.join(FILE_NAME), "new rule").unwrap();
    assert_eq!(memory::load(&ws).unwrap().unwrap().text, "new rule");
    std::fs::remove_file(ws.join(FILE_NAME)).unwrap();
    assert!(memory::load(&ws).unwrap().is_none());
}

#[test]
fn memory_over_the_size_limit_is_an_error_naming_file_and_limit() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join(FILE_NAME), "a".repeat(MAX_BYTES as usize + 1)).unwrap();
    let err = memory::load(&ws).unwrap_err();
    assert!(matches!(err, MemoryError::TooLarge { .. }));
    let message = err.to_string();
    assert!(
        message.contains(FILE_NAME) && message.contains("65536"),
        "{message}"
    );
}

#[test]
fn memory_over_the_token_limit_is_an_error() {
    let (_dir, ws) = workspace();
    // 5000 ideographs: ~15 KB, under the byte limit but ~5000 tokens.
    std::fs::write(ws.join(FILE_NAME), "记".repeat(5000)).unwrap();
    let err = memory::load(&ws).unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::TooManyTokens {
                tokens: 5000,
                limit: MAX_TOKENS,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("4096"));
}

#[test]
fn memory_at_the_token_limit_is_accepted() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join(FILE_NAME), "a".repeat(MAX_TOKENS as usize * 4)).unwrap();
    assert!(memory::load(&ws).unwrap().is_some());
}

#[test]
fn memory_that_is_not_utf8_is_an_error() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join(FILE_NAME), b"ok\xff\xfe").unwrap();
    let err = memory::load(&ws).unwrap_err();
    assert!(
        matches!(err, MemoryError::NotUtf8 { offset: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("utf-8"));
}

#[test]
fn memory_with_a_nul_byte_is_an_error() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join(FILE_NAME), "rule\0hidden").unwrap();
    let err = memory::load(&ws).unwrap_err();
    assert!(matches!(err, MemoryError::Nul { offset: 4, .. }), "{err:?}");
}

#[test]
fn unreadable_memory_is_an_error_never_stale_content() {
    let (_dir, ws) = workspace();
    std::fs::create_dir(ws.join(FILE_NAME)).unwrap();
    let err = memory::load(&ws).unwrap_err();
    assert!(matches!(err, MemoryError::NotAFile { .. }), "{err:?}");
}

#[test]
fn unreadable_permissions_are_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, ws) = workspace();
    let path = ws.join(FILE_NAME);
    std::fs::write(&path, "rule").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&path).is_ok() {
        return; // running as root: permissions do not apply
    }
    let err = memory::load(&ws).unwrap_err();
    assert!(matches!(err, MemoryError::Unreadable { .. }), "{err:?}");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn detail_files_have_byte_utf8_and_nul_limits_but_no_token_limit() {
    let path = std::path::Path::new(".minicode/memory/db.md");
    let big_cjk = "记".repeat(6000);
    assert_eq!(validate_detail(path, big_cjk.as_bytes()).unwrap(), big_cjk);
    let too_big = vec![b'a'; MAX_BYTES as usize + 1];
    assert!(matches!(
        validate_detail(path, &too_big),
        Err(MemoryError::TooLarge { .. })
    ));
    assert!(matches!(
        validate_detail(path, b"\xff"),
        Err(MemoryError::NotUtf8 { .. })
    ));
    assert!(matches!(
        validate_detail(path, b"a\0"),
        Err(MemoryError::Nul { .. })
    ));
    let message = validate_detail(path, b"a\0").unwrap_err().to_string();
    assert!(message.contains("db.md"), "{message}");
}

#[test]
fn root_and_detail_files_are_recognised() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join(FILE_NAME), "x").unwrap();
    assert!(is_root_file(&ws, &ws.join(FILE_NAME)));
    assert!(!is_root_file(&ws, &ws.join("README.md")));
    assert!(is_detail_file(&ws, &ws.join(".minicode/memory/topic.md")));
    assert!(!is_detail_file(&ws, &ws.join(".minicode/memory/topic.txt")));
    assert!(!is_detail_file(
        &ws,
        &ws.join(".minicode/sessions/topic.md")
    ));
}

#[test]
fn prompt_rules_state_when_and_how_to_change_memory() {
    for needle in [
        "only when the user asks",
        "secrets",
        "transient",
        "read the whole file",
        "unrelated content",
        ".minicode/memory/",
    ] {
        assert!(PROMPT_RULES.contains(needle), "rules lack {needle:?}");
    }
}

mod tools {
    //! `write`, `edit` and `read` keep memory files within their limits.

    use std::time::Duration;

    use minicode::chat::ToolStatus;
    use minicode::memory::{FILE_NAME, MAX_BYTES, stamp};
    use minicode::tools::{Registry, ToolCtx, ToolOutput};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    fn ctx() -> (tempfile::TempDir, ToolCtx) {
        let (dir, ws) = super::workspace();
        (dir, ToolCtx::new(ws, Duration::from_secs(30), Vec::new()))
    }

    /// prepare, then run, as the agent does; a prepare error comes back as `Err`.
    async fn call(
        ctx: &ToolCtx,
        tool: &str,
        args: serde_json::Value,
    ) -> Result<ToolOutput, String> {
        let registry = Registry::builtin();
        let (tool, value) = registry.resolve(tool, &args.to_string())?;
        tool.prepare(&value, ctx)?;
        Ok(tool.run(value, ctx, CancellationToken::new()).await)
    }

    /// `run` alone must refuse too (the file may change between approval and run).
    async fn run_only(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> ToolOutput {
        let registry = Registry::builtin();
        let (tool, value) = registry.resolve(tool, &args.to_string()).unwrap();
        tool.run(value, ctx, CancellationToken::new()).await
    }

    #[tokio::test]
    async fn write_refuses_a_root_memory_file_over_its_limits() {
        let (_dir, ctx) = ctx();
        let path = ctx.workspace.join(FILE_NAME);
        let too_many_tokens = "word ".repeat(4000); // 20,000 bytes, about 5,000 tokens
        for (content, limit) in [
            ("x".repeat(MAX_BYTES as usize + 1), "65536 bytes"),
            (too_many_tokens, "4096"),
            ("bad\0byte".to_string(), "nul"),
        ] {
            let args = json!({"path": FILE_NAME, "content": content});
            let err = call(&ctx, "write", args.clone()).await.unwrap_err();
            assert!(err.contains(FILE_NAME) && err.contains(limit), "{err}");
            let out = run_only(&ctx, "write", args).await;
            assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
            assert!(!path.exists(), "nothing may be written");
        }
        let ok = call(
            &ctx,
            "write",
            json!({"path": FILE_NAME, "content": "# rules\n"}),
        )
        .await
        .unwrap();
        assert_eq!(ok.status, ToolStatus::Succeeded, "{}", ok.content);
    }

    #[tokio::test]
    async fn edit_refuses_to_take_the_root_memory_file_over_its_limits() {
        let (_dir, ctx) = ctx();
        let path = ctx.workspace.join(FILE_NAME);
        let before = "# rules\nTOKEN\n";
        std::fs::write(&path, before).unwrap();
        call(&ctx, "read", json!({"path": FILE_NAME}))
            .await
            .unwrap();
        let args =
            json!({"path": FILE_NAME, "old_string": "TOKEN", "new_string": "word ".repeat(4000)});
        let err = call(&ctx, "edit", args).await.unwrap_err();
        assert!(err.contains(FILE_NAME) && err.contains("4096"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }

    #[tokio::test]
    async fn detail_memory_files_are_checked_on_write_edit_and_read() {
        let (_dir, ctx) = ctx();
        let dir = ctx.workspace.join(".minicode/memory");
        std::fs::create_dir_all(&dir).unwrap();
        let rel = ".minicode/memory/build.md";
        // Detail files have no token limit, only bytes, UTF-8 and NUL.
        let long = format!("{}END", "word ".repeat(6000));
        let ok = call(&ctx, "write", json!({"path": rel, "content": long}))
            .await
            .unwrap();
        assert_eq!(ok.status, ToolStatus::Succeeded, "{}", ok.content);
        let err = call(
            &ctx,
            "write",
            json!({"path": rel, "content": "x".repeat(MAX_BYTES as usize + 1)}),
        )
        .await
        .unwrap_err();
        assert!(err.contains("build.md") && err.contains("65536"), "{err}");
        call(&ctx, "read", json!({"path": rel})).await.unwrap();
        let err = call(
            &ctx,
            "edit",
            json!({"path": rel, "old_string": "END", "new_string": "a\0b"}),
        )
        .await
        .unwrap_err();
        assert!(err.contains("nul"), "{err}");
        // A file over the limit that got there another way is refused, not shown in part.
        std::fs::write(dir.join("big.md"), "y\n".repeat(40_000)).unwrap();
        let out = call(&ctx, "read", json!({"path": ".minicode/memory/big.md"}))
            .await
            .unwrap();
        assert_eq!(out.status, ToolStatus::Failed);
        assert!(out.content.contains("65536"), "{}", out.content);
        // Other files keep the ordinary rules.
        std::fs::write(ctx.workspace.join("big.md"), "y\n".repeat(40_000)).unwrap();
        let out = call(&ctx, "read", json!({"path": "big.md"})).await.unwrap();
        assert_eq!(out.status, ToolStatus::Succeeded);
    }

    #[test]
    fn stamp_changes_with_any_write_removal_or_permission_change() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, ws) = super::workspace();
        let path = ws.join(FILE_NAME);
        let missing = stamp(&ws);
        assert!(missing.unchanged_since(&stamp(&ws)));
        std::fs::write(&path, "one").unwrap();
        let one = stamp(&ws);
        assert!(!one.unchanged_since(&missing));
        assert!(stamp(&ws).unchanged_since(&one));
        std::fs::write(&path, "two!").unwrap();
        let two = stamp(&ws);
        assert!(!two.unchanged_since(&one));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        assert!(!stamp(&ws).unchanged_since(&two));
        std::fs::remove_file(&path).unwrap();
        assert!(stamp(&ws).unchanged_since(&missing));
    }
}

#[test]
fn this_repositorys_own_memory_is_within_the_limits_and_indexes_every_detail_file() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let index_path = root.join(FILE_NAME);
    let index_bytes = std::fs::read(&index_path).unwrap();
    let index = memory::validate_root(&index_path, &index_bytes).unwrap();
    let mut details: Vec<_> = std::fs::read_dir(root.join(memory::DETAIL_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    details.sort();
    assert!(details.len() >= 3, "{details:?}");
    for path in details {
        assert!(is_detail_file(root, &path), "{}", path.display());
        validate_detail(&path, &std::fs::read(&path).unwrap()).unwrap();
        let name = format!(
            ".minicode/memory/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        assert!(index.contains(&name), "MiniCode.md does not list {name}");
    }
}
