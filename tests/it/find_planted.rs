//! A `.minicode/index/find.idx` planted by a cloned repository: a link to `/dev/zero`, a FIFO
//! and a link to a file outside the workspace. The first `find` call neither grows without
//! bound nor hangs, leaves the outside file alone, and rebuilds the index as a plain file.

use std::path::Path;
use std::time::Duration;

use crate::support::{put, tool_workspace};
use minicode::chat::ToolStatus;
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// One `find` call on a thread of its own; fails the test instead of hanging or eating the
/// machine's memory for good.
fn find_within_deadline(ctx: ToolCtx) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let out = runtime.block_on(async {
            let registry = Registry::builtin();
            let args = json!({"query": "settings"}).to_string();
            let (tool, value) = registry.resolve("find", &args).unwrap();
            tool.run(value, &ctx, CancellationToken::new()).await
        });
        let _ = tx.send(out);
    });
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the find call did not finish within 30 s");
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    out.content
}

/// A workspace with one definition and `.minicode/index/` made, and the index path.
fn planted_workspace() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    ToolCtx,
    std::path::PathBuf,
) {
    let (dir, ws, ctx) = tool_workspace();
    put(&ws, "src/settings.rs", "pub fn load_settings() {}\n");
    std::fs::create_dir_all(ws.join(".minicode/index")).unwrap();
    let index = ws.join(".minicode/index/find.idx");
    (dir, ws, ctx, index)
}

fn rebuilt_as_a_plain_file(out: &str, index: &Path) {
    assert!(out.contains("load_settings"), "{out}");
    assert!(out.contains("rebuilt"), "{out}");
    assert!(std::fs::symlink_metadata(index).unwrap().is_file(), "{out}");
}

#[test]
fn an_index_linked_to_dev_zero_is_rebuilt_not_read() {
    let (_d, _ws, ctx, index) = planted_workspace();
    std::os::unix::fs::symlink("/dev/zero", &index).unwrap();
    let out = find_within_deadline(ctx);
    rebuilt_as_a_plain_file(&out, &index);
}

#[test]
fn an_index_that_is_a_fifo_does_not_hang_the_call() {
    let (_d, _ws, ctx, index) = planted_workspace();
    nix::unistd::mkfifo(&index, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let out = find_within_deadline(ctx);
    rebuilt_as_a_plain_file(&out, &index);
}

#[test]
fn an_index_linked_to_a_file_outside_is_neither_read_nor_written() {
    let (dir, _ws, ctx, index) = planted_workspace();
    let outside = dir.path().join("outside.idx");
    std::fs::write(&outside, "the user's file\n").unwrap();
    std::os::unix::fs::symlink(&outside, &index).unwrap();
    let out = find_within_deadline(ctx);
    rebuilt_as_a_plain_file(&out, &index);
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "the user's file\n"
    );
}
