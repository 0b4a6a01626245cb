//! The user's global git excludes file applies to the tools' walks as git applies it, whether
//! it is git's default (`$XDG_CONFIG_HOME/git/ignore`) or named by `core.excludesFile`, and
//! nothing is hidden without one: the built binary lists a workspace for the mock model under a
//! HOME of the test's own.

use std::path::Path;
use std::process::Command;

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};

/// What `list` showed the model, in a workspace holding `kept.txt` and `notes.scratch`, after
/// `prepare_home` set up the test's HOME.
fn listed_with(prepare_home: impl FnOnce(&Path)) -> String {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "list", "{}")], 16),
        text_reply("done", 8),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write_config(ws, &server);
    std::fs::write(ws.join(".gitignore"), "home/\nconfig/\n").unwrap();
    std::fs::write(ws.join("kept.txt"), "kept\n").unwrap();
    std::fs::write(ws.join("notes.scratch"), "scratch\n").unwrap();
    prepare_home(&ws.join("home"));
    let out = no_git_env(command(ws))
        .args(["--yes", "list the files"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_string()
}

/// The developer's own git settings must not reach the binary.
fn no_git_env(mut cmd: Command) -> Command {
    cmd.env_remove("GIT_CONFIG_GLOBAL")
        .env("GIT_CONFIG_SYSTEM", "/nonexistent/gitconfig");
    cmd
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn without_a_global_excludes_file_nothing_is_hidden() {
    let listed = listed_with(|_| {});
    assert!(listed.contains("kept.txt"), "{listed}");
    assert!(listed.contains("notes.scratch"), "{listed}");
}

#[test]
fn gits_default_global_excludes_file_hides_what_it_names() {
    let listed = listed_with(|home| put(&home.join(".config/git/ignore"), "*.scratch\n"));
    assert!(listed.contains("kept.txt"), "{listed}");
    assert!(!listed.contains("notes.scratch"), "{listed}");
}

#[test]
fn an_excludes_file_named_in_gitconfig_hides_what_it_names() {
    let listed = listed_with(|home| {
        put(
            &home.join(".gitconfig"),
            "[user]\n\tname = Test\n[core]\n\tExcludesFile = ~/my-ignores\n",
        );
        put(&home.join("my-ignores"), "*.scratch\n");
    });
    assert!(listed.contains("kept.txt"), "{listed}");
    assert!(!listed.contains("notes.scratch"), "{listed}");
}
