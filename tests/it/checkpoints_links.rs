//! `minicode rewind` when a folder the turn wrote in was swapped for a link to a folder
//! outside the workspace between the call and the rewind: nothing outside is removed or
//! written, and the paths reached through the link are named as conflicts.

use std::path::Path;
use std::process::Output;

use crate::support::binary::output_text as text;
use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};

fn run(ws: &Path, args: &[&str]) -> Output {
    command(ws).args(args).output().unwrap()
}

/// Moves the folder `name` of `ws` to `outside` and leaves a link to it in its place.
fn swap_for_link(ws: &Path, outside: &Path, name: &str) {
    std::fs::rename(ws.join(name), outside.join(name)).unwrap();
    std::os::unix::fs::symlink(outside.join(name), ws.join(name)).unwrap();
}

#[test]
fn a_rewind_through_a_folder_swapped_for_a_link_touches_nothing_outside() {
    let command_text = "mkdir sub && echo agent > sub/a.txt && rm keep/b.txt";
    let args = serde_json::json!({ "command": command_text }).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("b1", "bash", &args)], 16),
        text_reply("done", 8),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write_config(ws, &server);
    std::fs::write(ws.join(".gitignore"), "home/\n").unwrap();
    std::fs::create_dir(ws.join("keep")).unwrap();
    std::fs::write(ws.join("keep/b.txt"), "bee\n").unwrap();
    let out = run(ws, &["--yes", "make and remove"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(ws.join("sub/a.txt").exists() && !ws.join("keep/b.txt").exists());

    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path();
    swap_for_link(ws, outside, "sub");
    swap_for_link(ws, outside, "keep");

    let out = run(ws, &["rewind", "--to", "1", "--output-format", "json"]);
    let all = text(&out);
    assert_eq!(
        std::fs::read_to_string(outside.join("sub/a.txt")).unwrap(),
        "agent\n",
        "{all}"
    );
    assert!(!outside.join("keep/b.txt").exists(), "{all}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let conflicts = report["conflicts"].as_array().unwrap();
    for path in ["keep/b.txt", "sub/a.txt"] {
        assert!(conflicts.iter().any(|c| c == path), "{path}: {all}");
    }
    assert_eq!(out.status.code(), Some(1), "{all}");
}
