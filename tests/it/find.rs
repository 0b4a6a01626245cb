//! Black-box tests of the read-only `find` tool through the public registry: ranking by a
//! description that shares no identifier, per-language definitions, the kind filter, limits
//! and caps, what is never indexed (ignored files, `.minicode`, links out, big and binary files,
//! denied reads), the incremental index (edit, delete, rename), a corrupt index, and one call
//! made by a scripted model through the agent loop.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{put, tool_workspace};
use minicode::chat::ToolStatus;
use minicode::permissions::{Action, Rule, Rules};
use minicode::tools::{Registry, ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn call(ctx: &ToolCtx, args: serde_json::Value) -> Result<ToolOutput, String> {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve("find", &args.to_string())?;
    let prepared = tool.prepare(&value, ctx)?;
    assert!(prepared.approval.is_none(), "find needs no approval");
    Ok(tool.run(value, ctx, CancellationToken::new()).await)
}

async fn ok(ctx: &ToolCtx, args: serde_json::Value) -> String {
    let out = call(ctx, args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    out.content
}

/// The `path:start-end symbol` heads of the results, in rank order.
fn heads(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .map(|l| {
            let rest = l.split_once(". ").unwrap().1;
            rest.split(" score ").next().unwrap().to_string()
        })
        .collect()
}

fn first(out: &str) -> String {
    heads(out)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no result in\n{out}"))
}

/// A small polyglot project whose interesting functions are named unlike the questions.
fn project(ws: &Path) {
    put(
        ws,
        "src/config.rs",
        "//! Settings.\n\nuse std::path::Path;\n\n/// Reads the settings file from disk and fills defaults.\n\
         pub fn load_settings_file(path: &Path) -> Settings {\n    let text = std::fs::read_to_string(path).unwrap();\n    \
         toml::from_str(&text).unwrap()\n}\n\npub struct Settings {\n    pub model: String,\n}\n\n\
         impl Settings {\n    pub fn model_name(&self) -> &str {\n        &self.model\n    }\n}\n",
    );
    put(
        ws,
        "src/net.rs",
        "/// Sends the request, waiting longer after each failed attempt.\n\
         pub fn send_with_backoff(req: Request) -> Response {\n    let mut delay = 100;\n    \
         loop {\n        match send(&req) {\n            Ok(r) => return r,\n            \
         Err(_) => { sleep(delay); delay *= 2; }\n        }\n    }\n}\n\n\
         fn send(req: &Request) -> Result<Response, Error> {\n    transport(req)\n}\n",
    );
    put(
        ws,
        "tools/cleanup.py",
        "import os\n\n\nclass TempJanitor:\n    \"\"\"Keeps the scratch area tidy.\"\"\"\n\n    \
         def purge_stale_entries(self, folder):\n        \"\"\"Deletes old temporary files.\"\"\"\n        \
         for name in os.listdir(folder):\n            os.unlink(os.path.join(folder, name))\n",
    );
    put(
        ws,
        "web/app.ts",
        "export interface UserRecord {\n  id: number;\n}\n\nexport async function fetchUserProfile(id: number) {\n  \
         return await http.get(`/users/${id}`);\n}\n\nclass Cart {\n  computeTotalPrice(items) {\n    \
         return items.reduce((a, b) => a + b.price, 0);\n  }\n}\n",
    );
    put(
        ws,
        "server/main.go",
        "package main\n\n// ListenAndServeForever starts the HTTP listener.\nfunc ListenAndServeForever(addr string) error {\n\t\
         return http.ListenAndServe(addr, nil)\n}\n\ntype Handler struct {\n\tname string\n}\n",
    );
    put(
        ws,
        "lib/hash.c",
        "#include <stdint.h>\n\n/* Computes a checksum over a buffer. */\nuint32_t crc32_digest(const uint8_t *buf, size_t len) {\n    \
         uint32_t c = 0;\n    for (size_t i = 0; i < len; i++) c ^= buf[i];\n    return c;\n}\n",
    );
    put(
        ws,
        "java/Queue.java",
        "package q;\n\npublic class JobQueue {\n    /** Takes the next job off the queue. */\n    \
         public synchronized Job dequeueNext() {\n        return items.remove(0);\n    }\n}\n",
    );
    put(
        ws,
        "README.md",
        "# Demo\n\nA demo project with settings, retries and a cart.\n",
    );
}

#[tokio::test]
async fn find_ranks_a_definition_first_by_a_description_sharing_no_identifier() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let cases = [
        (
            "where is the configuration parsed",
            "src/config.rs:5-9 load_settings_file (function)",
        ),
        (
            "retry sending after a failure",
            "src/net.rs:1-10 send_with_backoff (function)",
        ),
        (
            "remove old temp files in a directory",
            "tools/cleanup.py:7-10 purge_stale_entries (function in TempJanitor)",
        ),
        (
            "fetch a user's profile over http",
            "web/app.ts:5-7 fetchUserProfile (function)",
        ),
        (
            "sum of the prices in the cart",
            "web/app.ts:10-12 computeTotalPrice (function in Cart)",
        ),
        (
            "start the http server listener",
            "server/main.go:3-6 ListenAndServeForever (function)",
        ),
        (
            "checksum digest of a buffer",
            "lib/hash.c:3-8 crc32_digest (function)",
        ),
        (
            "take the next job from the queue",
            "java/Queue.java:4-7 dequeueNext (function in JobQueue)",
        ),
    ];
    for (query, want) in cases {
        let out = ok(&ctx, json!({"query": query})).await;
        assert_eq!(first(&out), want, "query {query:?}:\n{out}");
        assert!(out.contains(" = symbol "), "score parts shown: {out}");
    }
}

#[tokio::test]
async fn find_shows_a_preview_of_the_definition_head() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let out = ok(&ctx, json!({"query": "settings file", "limit": 1})).await;
    assert!(
        out.contains("      6 | pub fn load_settings_file(path: &Path) -> Settings {"),
        "{out}"
    );
    assert_eq!(heads(&out).len(), 1);
}

#[tokio::test]
async fn find_filters_by_kind_and_path_and_rejects_unknown_kinds() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let out = ok(
        &ctx,
        json!({"query": "settings user record handler job queue", "kind": "type", "limit": 20}),
    )
    .await;
    let got = heads(&out);
    assert!(!got.is_empty(), "{out}");
    assert!(
        got.iter()
            .all(|h| h.ends_with("(type)") || h.contains("(type in ")),
        "{got:?}"
    );
    assert!(got.iter().any(|h| h.contains("Settings (type)")), "{got:?}");
    let out = ok(&ctx, json!({"query": "settings", "path": "web"})).await;
    assert!(heads(&out).iter().all(|h| h.starts_with("web/")), "{out}");
    let err = call(&ctx, json!({"query": "x", "kind": "banana"}))
        .await
        .unwrap_err();
    assert!(
        err.contains("unknown kind \"banana\"") && err.contains("function"),
        "{err}"
    );
    let err = call(&ctx, json!({"query": "  "})).await.unwrap_err();
    assert!(err.contains("query must not be empty"), "{err}");
    let err = call(&ctx, json!({"query": "x", "path": "../"}))
        .await
        .unwrap_err();
    assert!(err.contains("cannot find"), "{err}");
}

#[tokio::test]
async fn find_honours_limit_and_the_output_cap() {
    let (_d, ws, ctx) = tool_workspace();
    for i in 0..40 {
        put(
            &ws,
            &format!("src/m{i}.rs"),
            &format!(
                "/// Parses widget number {i}.\npub fn parse_widget_{i}() {{\n{}}}\n",
                "    let widget = 1;\n".repeat(8)
            ),
        );
    }
    let err = call(&ctx, json!({"query": "widget", "limit": 0}))
        .await
        .unwrap_err();
    assert!(err.contains("limit must be at least 1"), "{err}");
    assert_eq!(
        heads(&ok(&ctx, json!({"query": "parse widget"})).await).len(),
        8
    );
    assert_eq!(
        heads(&ok(&ctx, json!({"query": "parse widget", "limit": 3})).await).len(),
        3
    );
    assert_eq!(
        heads(&ok(&ctx, json!({"query": "parse widget", "limit": 500})).await).len(),
        20
    );
    ctx.set_output_limit(1);
    let small = ctx.output_limit();
    let out = ok(&ctx, json!({"query": "parse widget", "limit": 20})).await;
    assert!(out.len() <= small, "{} > {small}", out.len());
    assert!(out.contains("output cap"), "{out}");
    let none = ok(&ctx, json!({"query": "zebra giraffe"})).await;
    assert!(none.starts_with("no code matches"), "{none}");
}

#[tokio::test]
async fn find_never_indexes_ignored_private_linked_big_binary_or_denied_files() {
    let (d, ws, mut ctx) = tool_workspace();
    put(&ws, ".gitignore", "target/\n");
    put(&ws, "src/lib.rs", "pub fn visible_quokka() {}\n");
    put(&ws, "target/gen.rs", "pub fn ignored_quokka() {}\n");
    put(&ws, ".minicode/notes.rs", "pub fn private_quokka() {}\n");
    let outside = d.path().join("outside.rs");
    std::fs::write(&outside, "pub fn linked_quokka() {}\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("src/link.rs")).unwrap();
    std::os::unix::fs::symlink(d.path(), ws.join("up")).unwrap();
    let big = format!(
        "pub fn big_quokka() {{}}\n{}",
        "// filler line\n".repeat(80_000)
    );
    put(&ws, "src/big.rs", &big);
    std::fs::write(ws.join("src/blob.rs"), b"pub fn binary_quokka() {}\0\0\0").unwrap();
    put(&ws, "secret/keys.rs", "pub fn denied_quokka() {}\n");
    let rule = Rule::parse("read(secret/**)", Action::Deny, "test").unwrap();
    ctx.permissions = Some(Arc::new(Rules::new(vec![rule])));
    let out = ok(&ctx, json!({"query": "quokka", "limit": 20})).await;
    assert_eq!(
        heads(&out),
        ["src/lib.rs:1-1 visible_quokka (function)"],
        "{out}"
    );
    assert!(out.contains("[1 files over 1024 KiB not indexed]"), "{out}");
    assert!(out.contains("1 file withheld"), "{out}");
    let index = std::fs::read(ws.join(".minicode/index/find.idx")).unwrap();
    let index = String::from_utf8_lossy(&index);
    for name in ["ignored", "private", "linked", "big_", "binary", "denied"] {
        assert!(
            !index.contains(&format!("{name}quokka")) && !index.contains(&format!("{name}_quokka")),
            "{name} indexed"
        );
    }
}

#[tokio::test]
async fn find_keeps_its_index_private() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    ok(&ctx, json!({"query": "settings"})).await;
    let dir = std::fs::metadata(ws.join(".minicode/index")).unwrap();
    let file = std::fs::metadata(ws.join(".minicode/index/find.idx")).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    assert_eq!(file.permissions().mode() & 0o777, 0o600);
}

#[tokio::test]
async fn find_updates_its_index_after_an_edit_a_delete_and_a_rename() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let out = ok(&ctx, json!({"query": "settings file"})).await;
    assert!(first(&out).contains("load_settings_file"), "{out}");
    assert!(out.contains("[index: 8 files,"), "{out}");
    put(
        &ws,
        "src/config.rs",
        "/// Opens the preferences document.\npub fn open_preferences_document() {}\n",
    );
    let out = ok(&ctx, json!({"query": "preferences document", "limit": 20})).await;
    assert_eq!(
        first(&out),
        "src/config.rs:1-2 open_preferences_document (function)",
        "{out}"
    );
    let out = ok(&ctx, json!({"query": "load settings file", "limit": 20})).await;
    assert!(
        !out.contains("load_settings_file"),
        "stale chunk kept:\n{out}"
    );
    std::fs::rename(ws.join("src/config.rs"), ws.join("src/prefs.rs")).unwrap();
    let out = ok(&ctx, json!({"query": "preferences document"})).await;
    assert!(first(&out).starts_with("src/prefs.rs:1-2"), "{out}");
    assert!(!out.contains("src/config.rs"), "{out}");
    std::fs::remove_file(ws.join("src/prefs.rs")).unwrap();
    let out = ok(&ctx, json!({"query": "preferences document"})).await;
    assert!(!out.contains("open_preferences_document"), "{out}");
    assert!(out.contains("[index: 7 files,"), "{out}");
}

#[tokio::test]
async fn find_rebuilds_a_corrupt_or_foreign_index_instead_of_failing() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    ok(&ctx, json!({"query": "settings"})).await;
    let index = ws.join(".minicode/index/find.idx");
    let good = std::fs::read(&index).unwrap();
    // Cut short, then one byte flipped in the middle: both are caught and rebuilt.
    for bad in [good[..good.len() / 2].to_vec(), {
        let mut b = good.clone();
        let at = b.len() / 2;
        b[at] ^= 0x55;
        b
    }] {
        std::fs::write(&index, &bad).unwrap();
        let out = ok(&ctx, json!({"query": "settings file"})).await;
        assert!(out.contains("rebuilt"), "{out}");
        assert!(first(&out).contains("load_settings_file"), "{out}");
        assert_eq!(std::fs::read(&index).unwrap().len(), good.len());
    }
    // Another version's index (the version follows the 8-byte magic) is not trusted either.
    let mut foreign = good.clone();
    foreign[8..12].copy_from_slice(&999u32.to_le_bytes());
    std::fs::write(&index, &foreign).unwrap();
    let out = ok(&ctx, json!({"query": "settings file"})).await;
    assert!(
        out.contains("rebuilt") && first(&out).contains("load_settings_file"),
        "{out}"
    );
    let out = ok(&ctx, json!({"query": "settings file"})).await;
    assert!(
        !out.contains("rebuilt"),
        "the rebuilt index is trusted: {out}"
    );
}

#[tokio::test]
async fn find_answers_two_processes_while_a_file_changes() {
    // Two contexts stand for two processes sharing the workspace's index file.
    let (_d, ws, a) = tool_workspace();
    let b = ToolCtx::new(ws.clone(), Duration::from_secs(60), Vec::new());
    project(&ws);
    for round in 0..6 {
        put(
            &ws,
            "src/churn.rs",
            &format!("pub fn churn_round_{round}() {{}}\n"),
        );
        let (x, y) = tokio::join!(
            ok(&a, json!({"query": "settings file"})),
            ok(&b, json!({"query": "settings file"}))
        );
        assert!(first(&x).contains("load_settings_file"), "{x}");
        assert!(first(&y).contains("load_settings_file"), "{y}");
    }
    let out = ok(&a, json!({"query": "churn round"})).await;
    assert!(first(&out).contains("churn_round_5"), "{out}");
    assert!(!out.contains("rebuilt"), "{out}");
}

#[tokio::test]
async fn a_scripted_model_finds_code_and_reads_the_result() {
    use crate::support::events::run_turn;
    use crate::support::fake::{Fake, text_reply, tool_reply};
    use minicode::protocol::{Decision, Event};
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let model = Fake::new(vec![
        Ok(tool_reply(&[(
            "c1",
            "find",
            r#"{"query":"where is the configuration parsed"}"#,
        )])),
        Ok(text_reply("it is in src/config.rs")),
    ]);
    let mut handle = crate::support::agent::spawn(dir.path(), model.clone(), Default::default());
    let (events, _, _) = run_turn(
        &mut handle,
        "where is the config parsed?",
        |_| -> Option<Decision> { panic!("find must not ask for approval") },
    )
    .await;
    let output = events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .expect("the find call ended");
    assert_eq!(output.0, ToolStatus::Succeeded, "{}", output.1);
    assert!(
        output
            .1
            .starts_with("1. src/config.rs:5-9 load_settings_file"),
        "{}",
        output.1
    );
    let seen = model.main_requests();
    let system = &seen[0].messages[0].content;
    assert!(
        format!("{system:?}").contains("use `find`"),
        "the prompt tells when to use find"
    );
}

#[tokio::test]
async fn one_registry_keeps_its_index_in_memory_and_still_sees_each_change() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let registry = Registry::builtin();
    let ctx = &ctx;
    let registry = &registry;
    let run = |q: &'static str| async move {
        let (tool, value) = registry
            .resolve("find", &json!({"query": q}).to_string())
            .unwrap();
        tool.run(value, ctx, CancellationToken::new()).await.content
    };
    assert!(first(&run("settings file").await).contains("load_settings_file"));
    put(
        &ws,
        "src/extra.rs",
        "/// Tallies the votes.\npub fn tally_ballots() {}\n",
    );
    let out = run("count the votes").await;
    assert_eq!(
        first(&out),
        "src/extra.rs:1-2 tally_ballots (function)",
        "{out}"
    );
    std::fs::remove_file(ws.join("src/extra.rs")).unwrap();
    let out = run("count the votes").await;
    assert!(!out.contains("tally_ballots"), "{out}");
    assert!(out.contains("[index: 8 files,"), "{out}");
}

#[tokio::test]
async fn an_index_folder_linked_out_of_the_workspace_is_never_written_through() {
    let (d, ws, ctx) = tool_workspace();
    project(&ws);
    let outside = d.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(ws.join(".minicode")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join(".minicode/index")).unwrap();
    let out = ok(&ctx, json!({"query": "settings file"})).await;
    assert!(first(&out).contains("load_settings_file"), "{out}");
    assert!(out.contains("[index not saved: "), "{out}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}
