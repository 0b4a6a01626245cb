//! Black-box tests of the read-only `list` and `search` tools through the public registry:
//! ignore rules (.gitignore, .ignore, git's exclude, negation), globs, sorting and caps, binary
//! files, long lines and redaction, confinement (paths out, links out, .git and .minicode),
//! hostile entries (a FIFO as a file or as an ignore file) and cancellation.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{put, tool_workspace};
use minicode::chat::ToolStatus;
use minicode::tools::{Registry, Secrets, ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// prepare, then run, as the agent does; a prepare error comes back as `Err`.
async fn call_with(
    ctx: &ToolCtx,
    tool: &str,
    args: serde_json::Value,
    cancel: CancellationToken,
) -> Result<ToolOutput, String> {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve(tool, &args.to_string())?;
    let prepared = tool.prepare(&value, ctx)?;
    assert!(
        prepared.approval.is_none(),
        "read-only tools need no approval"
    );
    Ok(tool.run(value, ctx, cancel).await)
}

async fn call(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> Result<ToolOutput, String> {
    call_with(ctx, tool, args, CancellationToken::new()).await
}

async fn ok(ctx: &ToolCtx, tool: &str, args: serde_json::Value) -> String {
    let out = call(ctx, tool, args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    out.content
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A tree with every kind of ignore rule.
fn ignored_tree(ws: &Path) {
    put(ws, "src/main.rs", "fn main() { needle(); }\n");
    put(ws, "src/lib.rs", "pub fn needle() {}\n");
    put(ws, "README.md", "needle in the readme\n");
    put(ws, ".gitignore", "target/\n*.log\n!keep.log\n");
    put(ws, "target/debug/out.rs", "needle built\n");
    put(ws, "debug.log", "needle logged\n");
    put(ws, "keep.log", "needle kept\n");
    put(ws, "docs/.ignore", "drafts/\n");
    put(ws, "docs/guide.md", "needle guide\n");
    put(ws, "docs/drafts/wip.md", "needle draft\n");
    put(ws, ".git/info/exclude", "local-only.txt\n");
    put(ws, ".git/config", "needle in git\n");
    put(ws, "local-only.txt", "needle local\n");
    put(ws, ".minicode/sessions/x.json", "needle session\n");
    put(ws, ".github/workflows/ci.yml", "needle ci\n");
}

#[tokio::test]
async fn list_honours_gitignore_ignore_files_and_git_excludes() {
    let (_d, ws, ctx) = tool_workspace();
    ignored_tree(&ws);
    let out = ok(&ctx, "list", json!({})).await;
    assert_eq!(
        lines(&out),
        [
            ".github/workflows/ci.yml",
            ".gitignore",
            "README.md",
            "docs/.ignore",
            "docs/guide.md",
            "keep.log",
            "src/lib.rs",
            "src/main.rs",
            "[8 files: 2 .md, 2 .rs, 2 no extension, 1 .log, 1 .yml]",
        ],
        "{out}"
    );
}

#[tokio::test]
async fn list_of_a_subfolder_applies_the_ignore_files_above_it() {
    let (_d, ws, ctx) = tool_workspace();
    put(&ws, ".gitignore", "*.gen.rs\n");
    put(&ws, "crate/src/a.rs", "");
    put(&ws, "crate/src/a.gen.rs", "");
    let out = ok(&ctx, "list", json!({"path": "crate"})).await;
    assert_eq!(lines(&out), ["crate/src/a.rs"], "{out}");
}

#[tokio::test]
async fn list_filters_by_glob_anchored_or_at_any_depth() {
    let (_d, ws, ctx) = tool_workspace();
    for f in [
        "a.rs",
        "src/b.rs",
        "src/deep/c.rs",
        "src/d.md",
        "tests/e.rs",
    ] {
        put(&ws, f, "");
    }
    let any = ok(&ctx, "list", json!({"pattern": "*.rs"})).await;
    assert_eq!(
        lines(&any),
        [
            "a.rs",
            "src/b.rs",
            "src/deep/c.rs",
            "tests/e.rs",
            "[4 files: 4 .rs]"
        ]
    );
    let anchored = ok(&ctx, "list", json!({"pattern": "src/**/*.rs"})).await;
    assert_eq!(
        lines(&anchored),
        ["src/b.rs", "src/deep/c.rs", "[2 files: 2 .rs]"]
    );
    let within = ok(&ctx, "list", json!({"path": "src", "pattern": "*.md"})).await;
    assert_eq!(lines(&within), ["src/d.md"]);
    let excluded = ok(&ctx, "list", json!({"pattern": "!*.rs"})).await;
    assert_eq!(lines(&excluded), ["src/d.md"]);
    let none = ok(&ctx, "list", json!({"pattern": "*.py"})).await;
    assert_eq!(none.trim(), "no files matching *.py under .");
    let bad = call(&ctx, "list", json!({"pattern": "src/[a"})).await;
    assert!(bad.unwrap_err().contains("invalid pattern"));
}

#[tokio::test]
async fn list_reads_a_regular_expression_that_matched_nothing_as_the_glob_it_means() {
    let (_d, ws, ctx) = tool_workspace();
    for f in [
        "data/s1.txt",
        "data/s2.txt",
        "data/index.md",
        "data/test_a.py",
    ] {
        put(&ws, f, "");
    }
    let regex = ok(&ctx, "list", json!({"path": "data", "pattern": "\\.txt$"})).await;
    assert_eq!(
        lines(&regex),
        [
            "[`\\.txt$` is a regular expression, not a glob: listed the glob `*.txt` instead]",
            "data/s1.txt",
            "data/s2.txt",
            "[2 files: 2 .txt]"
        ]
    );
    let anchored = ok(&ctx, "list", json!({"path": "data", "pattern": "^test_"})).await;
    assert!(
        anchored.contains("glob `test_*`") && anchored.contains("data/test_a.py"),
        "{anchored}"
    );
    // Still nothing: said as before, after the note; a class is no glob and stays as it was.
    let none = ok(&ctx, "list", json!({"pattern": ".*\\.rs$"})).await;
    assert!(none.ends_with("no files matching *.rs under .\n"), "{none}");
    let class = ok(&ctx, "list", json!({"pattern": "s[0-9]\\.txt$"})).await;
    assert_eq!(class.trim(), "no files matching s[0-9]\\.txt$ under .");
}

#[tokio::test]
async fn list_is_sorted_and_capped_with_a_more_line() {
    let (_d, ws, ctx) = tool_workspace();
    for i in (0..30).rev() {
        put(&ws, &format!("f{i:02}.txt"), "");
    }
    let out = ok(&ctx, "list", json!({"limit": 10})).await;
    let l = lines(&out);
    assert_eq!(l.len(), 11, "{out}");
    assert_eq!(l[0], "f00.txt");
    assert_eq!(l[9], "f09.txt");
    assert!(l[10].contains("20 more files (30 in all)"), "{out}");
    assert!(l[10].contains("raise limit"), "{out}");
    // The output also fits the window's share for one result.
    let (_d2, ws2, ctx2) = tool_workspace();
    for i in 0..2000 {
        put(&ws2, &format!("some/long/folder/name/file-{i:05}.txt"), "");
    }
    ctx2.set_output_limit(4096);
    let out = ok(&ctx2, "list", json!({"limit": 2000})).await;
    assert!(out.len() <= 4096, "{} bytes", out.len());
    assert!(out.contains("more files (2000 in all)"), "{out}");
}

#[tokio::test]
async fn list_and_search_refuse_paths_outside_the_workspace() {
    let (_d, ws, ctx) = tool_workspace();
    let outside = ws.parent().unwrap().join("outside");
    put(&outside, "secret.txt", "needle outside\n");
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    for path in ["..", "../outside", "/etc", "out", "out/secret.txt"] {
        for (tool, mut args) in [
            ("list", json!({})),
            ("search", json!({"pattern": "needle"})),
        ] {
            args["path"] = json!(path);
            let err = call(&ctx, tool, args).await.unwrap_err();
            assert!(
                err.contains("outside the workspace"),
                "{tool} {path}: {err}"
            );
        }
    }
}

#[tokio::test]
async fn links_are_shown_but_never_followed_out_of_the_workspace() {
    let (_d, ws, ctx) = tool_workspace();
    let outside = ws.parent().unwrap().join("outside");
    put(&outside, "secret.txt", "needle outside\n");
    put(&ws, "real/inside.txt", "needle inside\n");
    std::os::unix::fs::symlink(&outside, ws.join("out-dir")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("out-file.txt")).unwrap();
    std::os::unix::fs::symlink(ws.join("real"), ws.join("in-dir")).unwrap();
    std::os::unix::fs::symlink(ws.join("missing"), ws.join("dangling")).unwrap();
    let out = ok(&ctx, "list", json!({})).await;
    assert_eq!(
        lines(&out),
        [
            "dangling (broken symbolic link)",
            "in-dir -> real",
            "out-dir (symbolic link leading outside the workspace, not followed)",
            "out-file.txt (symbolic link leading outside the workspace, not followed)",
            "real/inside.txt",
            "[5 files: 3 no extension, 2 .txt]",
        ],
        "{out}"
    );
    let found = ok(&ctx, "search", json!({"pattern": "needle"})).await;
    assert_eq!(
        lines(&found),
        ["real/inside.txt:1: needle inside"],
        "{found}"
    );
}

#[tokio::test]
async fn git_and_minicode_folders_are_never_listed_or_searched() {
    let (_d, ws, ctx) = tool_workspace();
    ignored_tree(&ws);
    put(&ws, "sub/.git/HEAD", "needle sub git\n");
    put(&ws, "sub/code.txt", "needle code\n");
    let out = ok(&ctx, "search", json!({"pattern": "needle", "path": "sub"})).await;
    assert_eq!(lines(&out), ["sub/code.txt:1: needle code"]);
    for path in [".git", ".minicode/sessions", "sub/.git"] {
        let err = call(&ctx, "list", json!({"path": path})).await.unwrap_err();
        assert!(err.contains("never listed or searched"), "{path}: {err}");
    }
}

#[tokio::test]
async fn search_reports_path_line_text_sorted_and_honours_ignore_rules() {
    let (_d, ws, ctx) = tool_workspace();
    ignored_tree(&ws);
    put(
        &ws,
        "src/main.rs",
        "fn main() {\n    needle();\n}\nfn other() { needle() }\n",
    );
    let out = ok(&ctx, "search", json!({"pattern": "needle"})).await;
    assert_eq!(
        lines(&out),
        [
            ".github/workflows/ci.yml:1: needle ci",
            "README.md:1: needle in the readme",
            "docs/guide.md:1: needle guide",
            "keep.log:1: needle kept",
            "src/lib.rs:1: pub fn needle() {}",
            "src/main.rs:2:     needle();",
            "src/main.rs:4: fn other() { needle() }",
        ],
        "{out}"
    );
    let globbed = ok(&ctx, "search", json!({"pattern": "needle", "glob": "*.rs"})).await;
    assert_eq!(lines(&globbed).len(), 3, "{globbed}");
    let one_file = ok(
        &ctx,
        "search",
        json!({"pattern": "fn \\w+\\(", "path": "src/main.rs"}),
    )
    .await;
    assert_eq!(
        lines(&one_file),
        [
            "src/main.rs:1: fn main() {",
            "src/main.rs:4: fn other() { needle() }"
        ]
    );
}

#[tokio::test]
async fn search_is_case_sensitive_unless_asked_otherwise() {
    let (_d, ws, ctx) = tool_workspace();
    put(&ws, "a.txt", "Needle\nneedle\nNEEDLE\n");
    let exact = ok(&ctx, "search", json!({"pattern": "needle"})).await;
    assert_eq!(lines(&exact), ["a.txt:2: needle"]);
    let any = ok(
        &ctx,
        "search",
        json!({"pattern": "needle", "case_sensitive": false}),
    )
    .await;
    assert_eq!(lines(&any).len(), 3, "{any}");
    let none = ok(&ctx, "search", json!({"pattern": "haystack"})).await;
    assert_eq!(
        none.trim(),
        "no matches for \"haystack\" in . (1 files searched)"
    );
}

#[tokio::test]
async fn search_skips_binary_files() {
    let (_d, ws, ctx) = tool_workspace();
    put(&ws, "text.txt", "needle in text\n");
    let mut bin = b"needle before the nul\n".to_vec();
    bin.extend_from_slice(&[0, 1, 2, 3]);
    bin.extend_from_slice(b"\nneedle after\n");
    std::fs::write(ws.join("blob.bin"), bin).unwrap();
    let out = ok(&ctx, "search", json!({"pattern": "needle"})).await;
    assert_eq!(
        lines(&out),
        ["text.txt:1: needle in text", "[1 binary files skipped]"],
        "{out}"
    );
}

#[tokio::test]
async fn search_caps_matches_with_a_note_and_the_same_answer_every_time() {
    let (_d, ws, ctx) = tool_workspace();
    for i in 0..50 {
        put(
            &ws,
            &format!("f{i:02}.txt"),
            "needle\nhay\nneedle\nneedle\n",
        );
    }
    let first = ok(&ctx, "search", json!({"pattern": "needle", "limit": 10})).await;
    let l = lines(&first);
    assert_eq!(l.len(), 11, "{first}");
    assert_eq!(l[0], "f00.txt:1: needle");
    assert_eq!(l[3], "f01.txt:1: needle");
    assert_eq!(l[9], "f03.txt:1: needle");
    assert!(
        l[10].contains("showing 10 of 150 matching lines in 50 files"),
        "{first}"
    );
    for _ in 0..3 {
        let again = ok(&ctx, "search", json!({"pattern": "needle", "limit": 10})).await;
        assert_eq!(again, first);
    }
    // The window's share for one result caps it too.
    ctx.set_output_limit(2048);
    let small = ok(&ctx, "search", json!({"pattern": "needle", "limit": 1000})).await;
    assert!(small.len() <= 2048, "{} bytes", small.len());
    assert!(small.contains("of 150 matching lines"), "{small}");
}

#[tokio::test]
async fn search_cuts_long_lines_around_the_match_after_redacting() {
    let (_d, ws, mut ctx) = tool_workspace();
    let key = "sk-test-0123456789abcdef";
    ctx.secrets = Secrets::new([key.to_string()]);
    let line = format!("{}needle {key}{}\n", "a".repeat(5000), "b".repeat(5000));
    put(&ws, "long.txt", &line);
    let out = ok(&ctx, "search", json!({"pattern": "needle"})).await;
    let shown = out.lines().next().unwrap();
    assert!(shown.starts_with("long.txt:1: …"), "{shown}");
    assert!(shown.contains("needle [redacted]"), "{shown}");
    assert!(shown.ends_with("… [line cut]"), "{shown}");
    assert!(shown.chars().count() < 300, "{}", shown.chars().count());
    assert!(!out.contains("sk-test"), "{out}");
    // A key straddling the cut is still gone whole.
    let (_d2, ws2, mut ctx2) = tool_workspace();
    ctx2.secrets = Secrets::new([key.to_string()]);
    put(&ws2, "k.txt", &format!("needle{}{key}\n", "c".repeat(230)));
    let out = ok(&ctx2, "search", json!({"pattern": "needle"})).await;
    assert!(!out.contains("sk-test"), "{out}");
    assert!(!out.contains("0123"), "{out}");
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_anything_runs() {
    let (_d, _ws, ctx) = tool_workspace();
    let err = call(&ctx, "search", json!({"pattern": "fn main("})).await;
    assert!(err.unwrap_err().contains("invalid regular expression"));
    let err = call(&ctx, "search", json!({"pattern": ""})).await;
    assert!(err.unwrap_err().contains("must not be empty"));
    let err = call(&ctx, "search", json!({"pattern": "x", "limit": 0})).await;
    assert!(err.unwrap_err().contains("limit"));
    let err = call(&ctx, "search", json!({"pattern": "x", "glob": "[z"})).await;
    assert!(err.unwrap_err().contains("invalid glob"));
    let err = call(&ctx, "list", json!({"path": "missing"})).await;
    assert!(err.unwrap_err().contains("does not exist"));
    let err = call(&ctx, "list", json!({"recursive": true})).await;
    assert!(err.unwrap_err().contains("unknown field"));
}

#[tokio::test]
async fn a_fifo_is_never_opened_and_a_fifo_ignore_file_skips_its_folder() {
    let (_d, ws, ctx) = tool_workspace();
    put(&ws, "a.txt", "needle a\n");
    mkfifo(&ws.join("pipe.txt"));
    put(&ws, "trap/b.txt", "needle trapped\n");
    mkfifo(&ws.join("trap/.gitignore"));
    let started = Instant::now();
    let out = ok(&ctx, "search", json!({"pattern": "needle"})).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        lines(&out),
        [
            "a.txt:1: needle a",
            "[skipped trap: its .gitignore is not a regular file inside the workspace]"
        ],
        "{out}"
    );
    let listed = ok(&ctx, "list", json!({})).await;
    assert!(
        listed.starts_with("a.txt\npipe.txt\n[2 files: 2 .txt]\n[skipped trap"),
        "{listed}"
    );
    // An ignore file linking out of the workspace is not read either.
    let (_d2, ws2, ctx2) = tool_workspace();
    let outside = ws2.parent().unwrap().join("rules");
    put(&outside, "ignore", "*\n");
    put(&ws2, "c/d.txt", "needle d\n");
    std::os::unix::fs::symlink(outside.join("ignore"), ws2.join("c/.gitignore")).unwrap();
    let err = call(&ctx2, "list", json!({"path": "c"})).await.unwrap();
    assert_eq!(err.status, ToolStatus::Failed, "{}", err.content);
    assert!(
        err.content.contains("not a regular file inside"),
        "{}",
        err.content
    );
}

#[tokio::test]
async fn a_cancelled_search_returns_at_once_as_interrupted() {
    let (_d, ws, ctx) = tool_workspace();
    for i in 0..2000 {
        put(&ws, &format!("d{}/f{i}.txt", i % 20), "hay\nhay\nneedle\n");
    }
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = call_with(&ctx, "search", json!({"pattern": "needle"}), cancel)
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Interrupted);
    // Cancelled while it runs: the call comes back promptly.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::task::yield_now().await;
        trigger.cancel();
    });
    let started = Instant::now();
    let out = call_with(&ctx, "search", json!({"pattern": "needle"}), cancel)
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(out.status, ToolStatus::Interrupted | ToolStatus::Succeeded),
        "{:?}",
        out.status
    );
    let out = call_with(&ctx, "list", json!({}), {
        let c = CancellationToken::new();
        c.cancel();
        c
    })
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Interrupted);
}

#[tokio::test]
async fn a_search_or_find_scoped_to_a_path_that_does_not_exist_looks_everywhere_and_says_so() {
    let (_d, ws, ctx) = tool_workspace();
    std::fs::create_dir_all(ws.join("src/net")).unwrap();
    std::fs::write(
        ws.join("src/net/headers.rs"),
        "pub fn parse_header(line: &str) {}\n",
    )
    .unwrap();
    // What Qwen2.5-Coder 1.5B passed as the path of a search for a function.
    let out = call(
        &ctx,
        "search",
        json!({"pattern": "parse_header", "path": "MiniCode.md"}),
    )
    .await
    .unwrap()
    .content;
    assert!(
        out.starts_with("[MiniCode.md does not exist; looked in the whole workspace instead]\n"),
        "{out}"
    );
    assert!(out.contains("src/net/headers.rs:1:"), "{out}");
    let out = call(
        &ctx,
        "search",
        json!({"pattern": "parse_header", "path": "/"}),
    )
    .await
    .unwrap()
    .content;
    assert!(
        out.contains("workspace's root") && out.contains("headers.rs"),
        "{out}"
    );
    let out = call(
        &ctx,
        "find",
        json!({"query": "parse a header line", "path": "src/http"}),
    )
    .await
    .unwrap()
    .content;
    assert!(out.starts_with("[src/http does not exist;"), "{out}");
    // Outside the workspace is still refused, and `list` still says a folder is missing.
    let err = call(&ctx, "search", json!({"pattern": "x", "path": "/etc"})).await;
    assert!(err.is_err());
    let err = call(&ctx, "list", json!({"path": "missing"})).await;
    assert!(err.unwrap_err().contains("does not exist"));
}

#[tokio::test]
async fn a_complete_listing_ends_with_its_files_counted_by_extension() {
    let (_d, ws, ctx) = tool_workspace();
    std::fs::create_dir_all(ws.join("data")).unwrap();
    for f in ["s1.txt", "s2.txt", "s3.txt", "index.md"] {
        std::fs::write(ws.join("data").join(f), "x\n").unwrap();
    }
    let out = call(&ctx, "list", json!({"path": "data"}))
        .await
        .unwrap()
        .content;
    assert!(out.ends_with("[4 files: 3 .txt, 1 .md]\n"), "{out}");
    // A cut listing says how many there are in all instead.
    let out = call(&ctx, "list", json!({"path": "data", "limit": 2}))
        .await
        .unwrap()
        .content;
    assert!(
        !out.contains("[4 files:") && out.contains("4 in all"),
        "{out}"
    );
}

#[tokio::test]
async fn a_search_whose_glob_matches_no_file_searches_every_file_and_says_so() {
    let (_d, ws, ctx) = tool_workspace();
    std::fs::create_dir_all(ws.join("src/net")).unwrap();
    std::fs::write(
        ws.join("src/net/headers.rs"),
        "pub fn parse_header(line: &str) {}\n",
    )
    .unwrap();
    std::fs::write(ws.join("notes.txt"), "nothing here\n").unwrap();
    // What Qwen2.5-Coder 1.5B sent for a Rust function in a tree with no Markdown file.
    let out = ok(
        &ctx,
        "search",
        json!({"pattern": "parse_header", "glob": "**/*.md"}),
    )
    .await;
    assert!(
        out.starts_with(
            "[the glob \"**/*.md\" matched no file here; searched every file instead]\n"
        ),
        "{out}"
    );
    assert!(out.contains("src/net/headers.rs:1:"), "{out}");
    // A glob that matches files keeps its scope, even when nothing in them matches.
    let out = ok(
        &ctx,
        "search",
        json!({"pattern": "parse_header", "glob": "*.txt"}),
    )
    .await;
    assert!(out.starts_with("no matches for \"parse_header\""), "{out}");
    assert!(out.contains("(1 files searched)"), "{out}");
}
