//! Starting minicode in a real repository: a service's own `config/config.toml` is not
//! minicode's (the workspace's file is `.minicode/config.toml`), an unquoted prompt is the
//! words after the options, a `/word` that names no command is refused, and the files a team
//! shares under `.minicode/` are not git-ignored.

use std::path::Path;
use std::process::Output;

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockServer, text_reply};
use crate::support::user_config;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The user's config choosing `server` (the workspace is trusted, by path).
fn user_model(ws: &Path, server: &MockServer) {
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    user_config::write_trusting(&ws.join("home"), ws, &model);
}

/// The text of the last user message of request `i`.
fn sent_prompt(server: &MockServer, i: usize) -> String {
    let body = &server.requests()[i].body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[test]
fn a_services_own_config_toml_is_ignored_without_a_word() {
    let server = MockServer::start_in_thread(vec![text_reply("fine", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    user_model(&ws, &server);
    std::fs::create_dir_all(ws.join("config")).unwrap();
    std::fs::write(
        ws.join("config/config.toml"),
        "[server]\nport = 8080\n\n[database]\nurl = \"postgres://db\"\n",
    )
    .unwrap();
    let out = command(&ws).arg("hello").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("config/config.toml"), "{err}");
    assert!(!err.contains("database"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fine");
}

#[test]
fn a_minicode_only_config_toml_is_still_read_with_a_note_to_move_it() {
    let server = MockServer::start_in_thread(vec![text_reply("read", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    std::fs::create_dir_all(ws.join("config")).unwrap();
    std::fs::write(
        ws.join("config/config.toml"),
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"legacy-model\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    user_config::write_trusting(&ws.join("home"), &ws, "");
    let out = command(&ws).arg("hello").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.requests()[0].body["model"], "legacy-model");
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("move it to")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains(".minicode/config.toml"), "{err}");
}

#[test]
fn the_workspace_file_in_dot_minicode_keeps_the_trust_rule() {
    let server = MockServer::start_in_thread(vec![text_reply("trusted now", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    std::fs::write(
        ws.join(".minicode/config.toml"),
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let out = command(&ws).arg("hello").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(".minicode/config.toml") && err.contains("not trusted"),
        "{err}"
    );
    assert_eq!(server.request_count(), 0);
    let trust = command(&ws).arg("trust").output().unwrap();
    assert_eq!(trust.status.code(), Some(0), "{}", stderr(&trust));
    let out = command(&ws).arg("hello").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "trusted now");
}

#[test]
fn doctor_names_the_files_it_read_and_the_one_it_ignored() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = crate::support::workspace();
    write_config(&ws, &server);
    std::fs::create_dir_all(ws.join("config")).unwrap();
    std::fs::write(ws.join("config/config.toml"), "[database]\nurl = \"x\"\n").unwrap();
    let out = command(&ws)
        .args(["doctor", "--output-format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // One section says where settings came from: no separate `config` row repeats it.
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["name"] != "config"), "{v:#}");
    let files = v["config_files"].as_array().unwrap();
    let with = |state: &str, path: &str| {
        files
            .iter()
            .any(|f| f["state"] == state && f["path"].as_str().is_some_and(|p| p.ends_with(path)))
    };
    assert!(with("read", ".minicode/config.toml"), "{v:#}");
    assert!(with("ignored", "config/config.toml"), "{v:#}");
    let text = command(&ws).arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let ignored = text
        .lines()
        .find(|l| l.contains("config/config.toml"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        ignored.contains("ignored") && ignored.contains('('),
        "{text}"
    );
}

#[test]
fn unquoted_words_after_the_options_are_the_prompt() {
    let server = MockServer::start_in_thread(vec![text_reply("fixed", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = command(&ws)
        .args(["--no-tools", "fix", "the", "bug", "in", "calc.py"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        sent_prompt(&server, 0).contains("fix the bug in calc.py"),
        "{}",
        sent_prompt(&server, 0)
    );
}

#[test]
fn a_first_word_that_is_a_subcommand_still_runs_it_and_double_dash_sends_it() {
    let server = MockServer::start_in_thread(vec![text_reply("sent", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = command(&ws).args(["sessions"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.request_count(), 0);
    let out = command(&ws)
        .args(["--", "sessions", "of", "today"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(sent_prompt(&server, 0).contains("sessions of today"));
}

#[test]
fn dash_p_runs_one_shot_as_claude_code_does() {
    let server = MockServer::start_in_thread(vec![text_reply("printed", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = command(&ws).args(["-p", "say", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "printed");
    assert!(sent_prompt(&server, 0).contains("say hi"));
}

#[test]
fn a_slash_word_that_names_no_command_exits_2_and_lists_the_commands() {
    let server = MockServer::start_in_thread(vec![text_reply("should not be asked", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    write_config(&ws, &server);
    std::fs::create_dir_all(ws.join(".minicode/commands")).unwrap();
    std::fs::write(
        ws.join(".minicode/commands/review.md"),
        "Review $ARGUMENTS\n",
    )
    .unwrap();
    let out = command(&ws).args(["/revew", "main.rs"]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/revew") && err.contains("/review"), "{err}");
    assert_eq!(server.request_count(), 0);
    // A path is not a command.
    let out = command(&ws)
        .args(["/etc/hosts", "what is it"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_teams_commands_and_config_under_dot_minicode_can_be_committed() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 8)]);
    let (_tmp, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = command(&ws).arg("hello").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ignore = std::fs::read_to_string(ws.join(".minicode/.gitignore")).unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap()
    };
    assert!(git(&["init", "-q"]).status.success());
    std::fs::create_dir_all(ws.join(".minicode/commands")).unwrap();
    std::fs::write(ws.join(".minicode/commands/review.md"), "Review\n").unwrap();
    for shared in [".minicode/commands/review.md", ".minicode/config.toml"] {
        let check = git(&["check-ignore", "-q", shared]);
        assert_eq!(
            check.status.code(),
            Some(1),
            "{shared} is ignored:\n{ignore}"
        );
    }
    let private = git(&["check-ignore", "-q", ".minicode/sessions/x.json"]);
    assert_eq!(private.status.code(), Some(0), "{ignore}");
}
