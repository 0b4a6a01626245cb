//! Hardening of the checkpoint store on the built binary: a planted journal line or blob never
//! makes `rewind` write a protected path or fail an undo; a file holding the configured key is
//! never stored; rewinds get numbers of their own; a rewind with nothing recorded says so; and
//! a rewind keeps what the agent did not surely do (another session's writes, edits made
//! after a crash).

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{
    MockReply, MockServer, text_reply, tool_calls_reply, wait_until_blocking,
};

fn workspace(server: &MockServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), server);
    std::fs::write(dir.path().join(".gitignore"), "home/\n").unwrap();
    dir
}

fn bash(id: &str, command: &str) -> MockReply {
    let args = serde_json::json!({ "command": command }).to_string();
    tool_calls_reply(&[(id, "bash", &args)], 16)
}

fn write(id: &str, path: &str, content: &str) -> MockReply {
    let args = serde_json::json!({ "path": path, "content": content }).to_string();
    tool_calls_reply(&[(id, "write", &args)], 16)
}

fn run(ws: &Path, args: &[&str]) -> Output {
    command(ws).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", text(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn listing(ws: &Path, session: &[&str]) -> serde_json::Value {
    let mut args = vec!["rewind", "--list", "--output-format", "json"];
    args.extend_from_slice(session);
    serde_json::from_slice(&run(ws, &args).stdout).unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn blob_path(ws: &Path, hash: &str) -> std::path::PathBuf {
    ws.join(".minicode/checkpoints/blobs")
        .join(&hash[..2])
        .join(&hash[2..])
}

/// The one journal of the workspace (a single session ran).
fn journal(ws: &Path) -> std::path::PathBuf {
    let dir = ws.join(".minicode/checkpoints/sessions");
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

#[test]
fn a_planted_journal_line_never_makes_rewind_write_a_git_hook() {
    let server = MockServer::start_in_thread(vec![
        write("w1", "notes.txt", "hello\n"),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    ok(&run(ws, &["--yes", "write the notes"]));
    // A hostile edit: a call of turn 1 "deleted" an executable pre-commit hook, whose
    // content sits in the store under its right name.
    let hook = b"#!/bin/sh\necho owned > /tmp/owned\n";
    let hash = sha256(hook);
    std::fs::create_dir_all(blob_path(ws, &hash).parent().unwrap()).unwrap();
    std::fs::write(blob_path(ws, &hash), hook).unwrap();
    let state = serde_json::json!({"h": hash, "m": 0o755, "s": hook.len(), "t": 0, "c": 0, "i": 0});
    let lines = [
        serde_json::json!({"kind": "begin", "seq": 90, "turn": 1, "call": "x", "tool": "bash"}),
        serde_json::json!({"kind": "end", "seq": 90, "changes": {
            ".git/hooks/pre-commit": {"before": state, "after": null}
        }}),
    ];
    let mut text_lines = std::fs::read_to_string(journal(ws)).unwrap();
    for line in lines {
        text_lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(journal(ws), text_lines).unwrap();

    let out = run(
        ws,
        &[
            "rewind",
            "--continue",
            "--to",
            "1",
            "--force",
            "--output-format",
            "json",
        ],
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["protected"],
        serde_json::json!([".git/hooks/pre-commit"])
    );
    assert_eq!(report["restored"], serde_json::json!(["notes.txt"]));
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_blob_planted_under_a_files_hash_is_replaced_and_the_undo_works() {
    let server = MockServer::start_in_thread(vec![
        bash("b1", "echo after > a.txt"),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::write(ws.join("a.txt"), "before\n").unwrap();
    let hash = sha256(b"before\n");
    std::fs::create_dir_all(blob_path(ws, &hash).parent().unwrap()).unwrap();
    std::fs::write(blob_path(ws, &hash), "not the content its name says\n").unwrap();
    ok(&run(ws, &["--yes", "change a"]));
    assert_eq!(std::fs::read(blob_path(ws, &hash)).unwrap(), b"before\n");
    ok(&run(ws, &["rewind", "--continue", "--to", "1"]));
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "before\n"
    );
}

/// Every byte under the checkpoint store.
fn store_bytes(ws: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![ws.join(".minicode/checkpoints")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.extend(std::fs::read(path).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_file_holding_the_configured_key_is_never_stored_and_is_listed() {
    const KEY: &str = "sk-test-ckpt-5e1f0a9b77c3";
    let server = MockServer::start_in_thread(vec![
        bash(
            "b1",
            "cp .minicode/config.toml copy.toml && echo x > plain.txt",
        ),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    let config = std::fs::read_to_string(ws.join(".minicode/config.toml")).unwrap();
    let config = config.replace("[model]\n", &format!("[model]\napi_key = \"{KEY}\"\n"));
    std::fs::write(ws.join(".minicode/config.toml"), config).unwrap();
    ok(&run(ws, &["--yes", "copy the config"]));
    let stored = store_bytes(ws);
    assert!(
        !stored.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
        "the key is in the checkpoint store"
    );
    let listed = listing(ws, &[]);
    let turn = &listed["turns"][0];
    assert_eq!(
        turn["withheld"],
        serde_json::json!(["copy.toml"]),
        "{listed}"
    );
    assert_eq!(turn["files"], serde_json::json!([["plain.txt", "created"]]));
    let out = run(ws, &["rewind", "--list"]);
    assert!(ok(&out).contains("! copy.toml (holds a configured secret"));
}

#[test]
fn rewinds_get_numbers_of_their_own_and_undoing_one_undoes_it_alone() {
    let server = MockServer::start_in_thread(vec![
        write("w1", "a.txt", "a\n"),
        text_reply("one", 8),
        write("w2", "b.txt", "b\n"),
        text_reply("two", 8),
        write("w3", "c.txt", "c\n"),
        text_reply("three", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    ok(&run(ws, &["--yes", "turn 1"]));
    ok(&run(ws, &["--yes", "--continue", "turn 2"]));
    ok(&run(ws, &["rewind", "--continue", "--to", "2"]));
    ok(&run(ws, &["rewind", "--continue", "--to", "1"]));
    assert!(!ws.join("a.txt").exists() && !ws.join("b.txt").exists());
    let listed = listing(ws, &["--continue"]);
    let numbers: Vec<u64> = listed["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers.len(), 4, "{listed}");
    let (second, first) = (numbers[0], numbers[1]);
    assert!(second > first && first > 2, "{listed}");
    assert_eq!(
        listed["turns"][0]["files"],
        serde_json::json!([["a.txt", "deleted"]])
    );
    // Undoing the second rewind brings back a.txt only.
    ok(&run(
        ws,
        &["rewind", "--continue", "--to", &second.to_string()],
    ));
    assert!(ws.join("a.txt").exists() && !ws.join("b.txt").exists());
    // The next user turn is turn 3, and its listing shows its own change only.
    ok(&run(ws, &["--yes", "--continue", "turn 3"]));
    let listed = listing(ws, &["--continue"]);
    let three = listed["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["turn"] == 3)
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(three["files"], serde_json::json!([["c.txt", "created"]]));
}

#[test]
fn a_rewind_to_a_turn_with_nothing_recorded_says_so() {
    let server = MockServer::start_in_thread(vec![text_reply("just words", 8)]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    ok(&run(ws, &["--yes", "say something"]));
    let out = ok(&run(ws, &["rewind", "--continue", "--to", "1"]));
    assert!(out.contains("nothing was recorded from turn 1 on"), "{out}");
}

/// The id of the session whose file holds `prompt`.
fn session_with(ws: &Path, prompt: &str) -> String {
    for entry in std::fs::read_dir(ws.join(".minicode/sessions")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json")
            && std::fs::read_to_string(&path).unwrap().contains(prompt)
        {
            return path.file_stem().unwrap().to_string_lossy().into_owned();
        }
    }
    panic!("no session holds {prompt:?}");
}

#[test]
fn a_change_another_session_recorded_is_not_reverted_with_this_sessions_turn() {
    let slow = MockServer::start_in_thread(vec![
        bash(
            "a1",
            "touch a-started; while [ ! -e go ]; do sleep 0.05; done; rm go; echo a > a.txt",
        ),
        text_reply("a done", 8),
    ]);
    let quick =
        MockServer::start_in_thread(vec![write("b1", "b.txt", "b\n"), text_reply("b done", 8)]);
    let dir = workspace(&slow);
    let ws = dir.path();
    let mut a = command(ws).args(["--yes", "task a"]).spawn().unwrap();
    assert!(wait_until_blocking(Duration::from_secs(60), || ws
        .join("a-started")
        .exists()));
    // The second session talks to its own server (a flag overrides the workspace's).
    let b = command(ws)
        .args(["--yes", "--base-url", &quick.base_url(), "task b"])
        .output()
        .unwrap();
    ok(&b);
    std::fs::write(ws.join("go"), "").unwrap();
    assert!(a.wait().unwrap().success());
    let id = session_with(ws, "task a");
    let out = run(ws, &["rewind", "--session", &id, "--to", "1"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).unwrap(),
        "b\n",
        "{}",
        text(&out)
    );
    assert!(!ws.join("a.txt").exists(), "{}", text(&out));
    ok(&out);
}

/// Waits until the only journal was touched after `mark` changed (a heartbeat after it).
fn wait_for_heartbeat(ws: &Path, mark: &Path) {
    use std::os::unix::fs::MetadataExt;
    let marked = std::fs::metadata(mark).unwrap();
    let marked = (marked.ctime(), marked.ctime_nsec());
    let beat = wait_until_blocking(Duration::from_secs(30), || {
        std::fs::metadata(journal(ws)).is_ok_and(|m| (m.mtime(), m.mtime_nsec()) > marked)
    });
    assert!(beat, "no heartbeat after the call's changes");
}

#[test]
fn edits_made_after_a_crash_are_kept_by_the_rewind_of_the_crashed_call() {
    let server = MockServer::start_in_thread(vec![
        bash("b1", "echo agent > a.txt && touch started && sleep 60"),
        text_reply("never", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::write(ws.join("a.txt"), "before\n").unwrap();
    let mut child = command(ws).args(["--yes", "change a"]).spawn().unwrap();
    assert!(wait_until_blocking(Duration::from_secs(60), || ws
        .join("started")
        .exists()));
    wait_for_heartbeat(ws, &ws.join("started"));
    child.kill().unwrap();
    child.wait().unwrap();
    // The user, after the crash: a file of their own, and an edit of one the call made.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(ws.join("mine.txt"), "the user's\n").unwrap();
    std::fs::write(ws.join("started"), "the user's too\n").unwrap();
    let out = run(
        ws,
        &[
            "rewind",
            "--continue",
            "--to",
            "1",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["restored"], serde_json::json!(["a.txt"]), "{report}");
    assert_eq!(
        report["uncertain"],
        serde_json::json!(["mine.txt", "started"]),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "before\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("mine.txt")).unwrap(),
        "the user's\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("started")).unwrap(),
        "the user's too\n"
    );
}

#[test]
fn calls_that_ran_unrecorded_warn_each_and_are_listed_under_their_turn() {
    let server = MockServer::start_in_thread(vec![
        bash("b1", "echo one > one.txt"),
        bash("b2", "echo two > two.txt"),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    // A FIFO as the root ignore file makes every scan fail: the calls run unrecorded.
    let fifo = ws.join(".gitignore");
    std::fs::remove_file(&fifo).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo only reads the NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = run(ws, &["--yes", "make two files"]);
    let said = text(&out);
    assert_eq!(
        said.matches("could not record a checkpoint").count(),
        2,
        "{said}"
    );
    let listed = listing(ws, &["--continue"]);
    let caveats = listed["turns"][0]["caveats"].to_string();
    assert!(caveats.contains("2 call(s) ran unrecorded"), "{listed}");
    let out = run(ws, &["rewind", "--continue", "--to", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("nothing was recorded from turn 1 on: 2 call(s) ran unrecorded"),
        "{}",
        text(&out)
    );
}
