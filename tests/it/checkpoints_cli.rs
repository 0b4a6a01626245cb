//! `minicode rewind` on the built binary: one-shot turns against the mock server change the
//! workspace with `write`, `edit` and `bash`; rewinding to each turn gives back the tree a
//! walk independent of the implementation saw before it, byte for byte and mode for mode.
//! Conflicts, `--force` and its undo, a SIGKILL during a call, and the usage errors.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{
    MockReply, MockServer, text_reply, tool_calls_reply, wait_until_blocking,
};
use crate::support::tree::{self, Tree};

/// Every file under `dir` but minicode's data, the test's HOME and the config folder:
/// content and permission bits; folders as entries of their own.
fn snapshot(dir: &Path) -> Tree {
    tree::snapshot(dir, &[".minicode", "home", "config"])
}

/// A workspace whose config points at `server`; the test's HOME is ignored by git rules, so
/// the caches and logs the binary writes there are not part of the tree.
fn workspace(server: &MockServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), server);
    std::fs::write(dir.path().join(".gitignore"), "home/\n").unwrap();
    dir
}

fn call(id: &str, tool: &str, args: serde_json::Value) -> MockReply {
    tool_calls_reply(&[(id, tool, &args.to_string())], 16)
}

fn bash(id: &str, command: &str) -> MockReply {
    call(id, "bash", serde_json::json!({ "command": command }))
}

fn run(ws: &Path, args: &[&str]) -> Output {
    command(ws).args(args).output().unwrap()
}

fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A one-shot turn: the first starts the session, the next ones continue it.
fn turn(ws: &Path, n: usize) {
    let prompt = format!("turn {n}");
    let mut args = vec!["--yes"];
    if n > 1 {
        args.push("--continue");
    }
    args.push(&prompt);
    ok(&run(ws, &args));
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn rewinding_to_each_turn_gives_back_the_tree_byte_for_byte() {
    let server = MockServer::start_in_thread(vec![
        call(
            "w1",
            "write",
            serde_json::json!({ "path": "new1.txt", "content": "written\n" }),
        ),
        text_reply("one", 8),
        call("r2", "read", serde_json::json!({ "path": "a.txt" })),
        call(
            "e2",
            "edit",
            serde_json::json!({ "path": "a.txt", "old_string": "alpha", "new_string": "ALPHA" }),
        ),
        text_reply("two", 8),
        bash(
            "b3",
            "sed -i s/bee/BEE/ b.txt && chmod +x s.sh && touch new && mkdir -p dir/sub",
        ),
        text_reply("three", 8),
        bash(
            "b4",
            "rm old.txt && mv a.txt dir/sub/a.txt && echo more >> new1.txt && touch dir/empty",
        ),
        text_reply("four", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.join("b.txt"), "bee\n").unwrap();
    std::fs::write(ws.join("s.sh"), "echo s\n").unwrap();
    std::fs::set_permissions(ws.join("s.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(ws.join("old.txt"), "old\n").unwrap();
    let mut before = Vec::new();
    for n in 1..=4 {
        before.push(snapshot(ws));
        turn(ws, n);
    }
    assert!(ws.join("dir/sub/a.txt").exists() && ws.join("new").exists());
    let listed = json(&run(ws, &["rewind", "--list", "--output-format", "json"]));
    let turns: Vec<u64> = listed["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [4, 3, 2, 1]);
    for n in (1..=4).rev() {
        let to = n.to_string();
        ok(&run(ws, &["rewind", "--continue", "--to", &to]));
        assert_eq!(snapshot(ws), before[n - 1], "the tree before turn {n}");
    }
}

#[test]
fn an_edited_file_is_a_conflict_and_force_then_a_second_rewind_gives_it_back() {
    let server = MockServer::start_in_thread(vec![
        bash("b1", "echo agent > x.txt && echo agent > y.txt"),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    turn(ws, 1);
    std::fs::write(ws.join("x.txt"), "the user's bytes\n").unwrap();

    let out = run(ws, &["rewind", "--to", "1", "--output-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    assert_eq!(report["conflicts"], serde_json::json!(["x.txt"]));
    assert_eq!(report["restored"], serde_json::json!(["y.txt"]));
    assert_eq!(
        std::fs::read_to_string(ws.join("x.txt")).unwrap(),
        "the user's bytes\n"
    );
    assert!(!ws.join("y.txt").exists());

    let forced = run(
        ws,
        &["rewind", "--to", "1", "--force", "--output-format", "json"],
    );
    assert_eq!(json(&forced)["overwritten"], serde_json::json!(["x.txt"]));
    ok(&forced);
    assert!(!ws.join("x.txt").exists());

    // The forced rewind is recorded under a number of its own, apart from the user turns;
    // undoing it gives the bytes back.
    let listed = json(&run(ws, &["rewind", "--output-format", "json"]));
    let number = listed["turns"][0]["turn"].as_u64().unwrap();
    assert_eq!(json(&forced)["record"], number, "{listed}");
    assert!(number > 1_000_000, "{listed}");
    ok(&run(ws, &["rewind", "--to", &number.to_string()]));
    assert_eq!(
        std::fs::read_to_string(ws.join("x.txt")).unwrap(),
        "the user's bytes\n"
    );
}

#[test]
fn a_dry_run_changes_nothing_and_bad_requests_are_usage_errors() {
    let server = MockServer::start_in_thread(vec![
        bash("b1", "echo agent > x.txt"),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    turn(ws, 1);
    let out = run(ws, &["rewind", "--to", "1", "--dry-run"]);
    assert!(ok(&out).contains("would restore: x.txt"));
    assert!(ws.join("x.txt").exists());
    assert_eq!(run(ws, &["rewind", "--to", "7"]).status.code(), Some(2));
    assert_eq!(run(ws, &["rewind", "--force"]).status.code(), Some(2));
    assert_eq!(
        run(ws, &["rewind", "--session", "nosuchsession"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn a_call_killed_with_the_process_is_undone_by_rewind_continue() {
    let server = MockServer::start_in_thread(vec![
        bash(
            "b1",
            "echo changed > a.txt && echo new > n.txt && touch started && sleep 60",
        ),
        text_reply("never", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::write(ws.join("a.txt"), "before\n").unwrap();
    let before = snapshot(ws);
    let mut child = command(ws).args(["--yes", "change a"]).spawn().unwrap();
    assert!(
        wait_until_blocking(Duration::from_secs(60), || ws.join("started").exists()),
        "the call never started"
    );
    // Only changes older than the last sign of life are surely the call's: wait for a
    // heartbeat after them.
    wait_for_heartbeat(ws, &ws.join("started"));
    child.kill().unwrap();
    child.wait().unwrap();
    ok(&run(ws, &["rewind", "--continue", "--to", "1"]));
    assert_eq!(snapshot(ws), before);
}

/// Waits until the session's checkpoint journal was touched after `mark` changed.
fn wait_for_heartbeat(ws: &Path, mark: &Path) {
    use std::os::unix::fs::MetadataExt;
    let ctime = |m: &std::fs::Metadata| (m.ctime(), m.ctime_nsec());
    let mtime = |m: &std::fs::Metadata| (m.mtime(), m.mtime_nsec());
    let marked = ctime(&std::fs::metadata(mark).unwrap());
    let beat = wait_until_blocking(Duration::from_secs(30), || {
        let Ok(dir) = std::fs::read_dir(ws.join(".minicode/checkpoints/sessions")) else {
            return false;
        };
        dir.flatten()
            .any(|e| e.metadata().is_ok_and(|m| mtime(&m) > marked))
    });
    assert!(beat, "no heartbeat after the call's changes");
}

#[test]
fn the_daemons_session_rewind_restores_the_code_and_says_so_on_the_stream() {
    use crate::support::daemon::{Daemon, layout};
    use serde_json::json;
    let server = MockServer::start_in_thread(vec![
        bash("call_1", "echo agent > made.txt && echo agent >> kept.txt"),
        text_reply("Done.", 5),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("kept.txt"), "mine\n").unwrap();
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    client.start_run(&session, "make a file");
    client.events_until("approval_requested");
    let answer = client.decide(&session, "call_1", json!({"decision": "approve"}));
    assert!(answer.get("result").is_some(), "{answer}");
    client.events_until("run_ended");
    assert!(ws.join("made.txt").exists());
    client.op_ok(&session, json!({"type": "list_rewind"}));
    let listed = client.events_until("rewind_list");
    let turns = &listed.last().unwrap()["event"]["turns"];
    assert_eq!(turns[0]["turn"], 1, "{turns}");
    client.op_ok(
        &session,
        json!({"type": "rewind", "turn": 1, "scope": "code", "force": false}),
    );
    let rewound = client.events_until("rewound");
    let event = &rewound.last().unwrap()["event"];
    assert_eq!(
        event["restored"],
        json!(["kept.txt", "made.txt"]),
        "{event}"
    );
    assert!(!ws.join("made.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("kept.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        client.op_error(
            &session,
            json!({"type": "rewind", "turn": 0, "scope": "code", "force": false})
        ),
        -32602
    );
}

/// Makes `path` a FIFO, as a hostile repository can: reading it would block forever.
fn plant_fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo only reads the NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs a one-shot turn and fails the test, instead of hanging, if it takes over 30 s.
fn run_within_deadline(ws: &Path, args: &[&str]) -> Output {
    let mut child = command(ws)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let done = wait_until_blocking(Duration::from_secs(30), || {
        child.try_wait().unwrap().is_some()
    });
    if !done {
        let _ = child.kill();
        panic!("the run blocked");
    }
    child.wait_with_output().unwrap()
}

/// A model that writes `notes.txt` once and then answers "done".
fn notes_server() -> MockServer {
    MockServer::start_in_thread(vec![
        call(
            "w1",
            "write",
            serde_json::json!({"path": "notes.txt", "content": "hello\n"}),
        ),
        text_reply("done", 8),
    ])
}

#[test]
fn a_fifo_planted_as_the_root_ignore_file_leaves_the_call_unrecorded_not_blocked() {
    // A command, whose record walks the tree (a `write`'s looks at its own file only).
    let server = MockServer::start_in_thread(vec![
        call(
            "b1",
            "bash",
            serde_json::json!({"command": "echo hello > notes.txt"}),
        ),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    plant_fifo(&ws.join(".gitignore"));
    let out = run_within_deadline(ws, &["--yes", "write the notes"]);
    let text = ok(&out) + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "hello\n"
    );
    assert!(
        text.contains("could not record a checkpoint; this call cannot be undone"),
        "{text}"
    );
    assert!(text.contains("is not a regular file"), "{text}");
}

#[test]
fn a_folder_with_a_fifo_ignore_file_is_skipped_and_the_rest_is_recorded() {
    let server = notes_server();
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("trap")).unwrap();
    std::fs::write(ws.join("trap/AGENTS.md"), "planted\n").unwrap();
    plant_fifo(&ws.join("trap/.ignore"));
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(ws.join("docs/AGENTS.md"), "docs rules\n").unwrap();
    ok(&run_within_deadline(ws, &["--yes", "write the notes"]));
    // The nested instructions offered to the model name the safe folder only.
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("docs/AGENTS.md"), "{system}");
    assert!(!system.contains("trap/AGENTS.md"), "{system}");
    // The write was recorded: rewinding removes the file again.
    ok(&run(ws, &["rewind", "--continue", "--to", "1", "--code"]));
    assert!(!ws.join("notes.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("docs/AGENTS.md")).unwrap(),
        "docs rules\n"
    );
}
