//! A confined `bash` call's record holds only what the command's own calls named (the
//! sandbox's attribution filter): the user's edits during a long call are kept by a rewind,
//! as uncertain, unless forced; what the command did through relative paths, a subfolder and
//! descriptors of folders is all its own; reading commands trap nothing.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

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

fn run(ws: &Path, args: &[&str]) -> Output {
    command(ws).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn report(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(out)))
}

fn read(ws: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(rel)).ok()
}

/// The `end` lines of the workspace's one journal.
fn ends(ws: &Path) -> Vec<serde_json::Value> {
    let dir = ws.join(".minicode/checkpoints/sessions");
    let journal = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["kind"] == "end")
        .collect()
}

#[test]
fn a_users_edit_during_a_long_confined_call_is_kept_by_the_rewind_unless_forced() {
    let server = MockServer::start_in_thread(vec![
        bash(
            "b1",
            "echo agent > agent.txt && touch started && \
             while [ ! -e go ]; do sleep 0.05; done; echo later > later.txt",
        ),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::write(ws.join("user.txt"), "before\n").unwrap();
    let mut child = command(ws).args(["--yes", "work"]).spawn().unwrap();
    assert!(wait_until_blocking(Duration::from_secs(60), || ws
        .join("started")
        .exists()));
    // The user, while the command runs: an edit of their own file and a new file.
    std::fs::write(ws.join("user.txt"), "the user's\n").unwrap();
    std::fs::write(ws.join("go"), "").unwrap();
    assert!(child.wait().unwrap().success());
    let ended = ends(ws);
    assert!(ended[0]["notified"].as_u64().unwrap() >= 3, "{ended:?}");

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
    let kept = report(&out);
    assert_eq!(
        kept["uncertain"],
        serde_json::json!(["go", "user.txt"]),
        "{kept}"
    );
    for gone in ["agent.txt", "started", "later.txt"] {
        assert_eq!(read(ws, gone), None, "{gone}: {kept}");
    }
    assert_eq!(read(ws, "user.txt").as_deref(), Some("the user's\n"));
    assert_eq!(read(ws, "go").as_deref(), Some(""));

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
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(read(ws, "user.txt").as_deref(), Some("before\n"));
    assert_eq!(read(ws, "go"), None);
}

#[test]
fn what_a_command_does_from_a_subfolder_and_through_folder_descriptors_is_all_its_own() {
    let script = "cd sub && echo new > new.txt && mv new.txt renamed.txt && rm gone.txt \
                  && chmod 600 mode.txt && mkdir made \
                  && touch -d 2001-01-01 old.txt && ln old.txt hard.txt && rm -r tree \
                  && find tree2 -name '*.tmp' -delete && mv moved ../moved-out \
                  && /usr/bin/python3 -c \"import os; d = os.open('.', os.O_RDONLY); \
                  f = os.open('fd.txt', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d); \
                  os.write(f, b'x'); os.mkdir('fdmade', dir_fd=d)\"";
    let server = MockServer::start_in_thread(vec![bash("b1", script), text_reply("done", 8)]);
    let dir = workspace(&server);
    let ws = dir.path();
    let sub = ws.join("sub");
    for folder in ["tree/deep", "tree2", "moved"] {
        std::fs::create_dir_all(sub.join(folder)).unwrap();
    }
    for file in [
        "gone.txt",
        "mode.txt",
        "old.txt",
        "tree/a",
        "tree/deep/b",
        "tree2/x.tmp",
        "tree2/keep",
        "moved/m",
    ] {
        std::fs::write(sub.join(file), format!("{file}\n")).unwrap();
    }
    let out = run(ws, &["--yes", "work"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(ws.join("moved-out/m").exists(), "{}", text(&out));
    assert!(sub.join("fd.txt").exists(), "{}", text(&out));
    let ended = ends(ws);
    assert_eq!(ended[0].get("uncertain"), None, "{ended:?}");

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
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let done = report(&out);
    assert_eq!(done["uncertain"], serde_json::json!([]), "{done}");
    for back in [
        "gone.txt",
        "tree/a",
        "tree/deep/b",
        "tree2/x.tmp",
        "moved/m",
    ] {
        assert!(sub.join(back).exists(), "{back}: {done}");
    }
    for gone in [
        "renamed.txt",
        "made",
        "link",
        "hard.txt",
        "fd.txt",
        "fdmade",
    ] {
        assert!(
            std::fs::symlink_metadata(sub.join(gone)).is_err(),
            "{gone}: {done}"
        );
    }
    assert!(!ws.join("moved-out").exists(), "{done}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(sub.join("mode.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o777, 0o600, "{done}");
}

#[test]
fn read_only_commands_trap_no_call() {
    // `bash` itself opens /dev/tty read-write once as it starts (and fails: the call has no
    // terminal): `true` measures that, and reading commands add nothing to it.
    let server = MockServer::start_in_thread(vec![
        bash("b1", "true"),
        bash(
            "b2",
            "cat a.txt && grep -r hello . && ls -la sub && head -c 10 sub/b.txt",
        ),
        text_reply("done", 8),
    ]);
    let dir = workspace(&server);
    let ws = dir.path();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("a.txt"), "hello\n").unwrap();
    std::fs::write(ws.join("sub/b.txt"), "hello too\n").unwrap();
    let out = run(ws, &["--yes", "look"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ended = ends(ws);
    assert_eq!(ended.len(), 2, "{ended:?}");
    let shell = ended[0]["notified"].as_u64().unwrap();
    assert!(shell <= 1, "{ended:?}");
    assert_eq!(ended[1]["notified"].as_u64(), Some(shell), "{ended:?}");
}
