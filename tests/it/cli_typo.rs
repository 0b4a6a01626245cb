//! A one-word prompt that is a near miss of a subcommand is refused before anything runs;
//! `--` marks it as a prompt and sends it.

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockServer, text_reply};

fn session_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join(".minicode/sessions"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn mistyped_subcommand_is_refused_with_a_suggestion_and_nothing_runs() {
    let server = MockServer::start_in_thread(vec![text_reply("should not be asked", 8)]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    for (typo, meant) in [
        ("doctr", "doctor"),
        ("sesions", "sessions"),
        ("skils", "skills"),
    ] {
        let out = command(dir.path()).arg(typo).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{typo}: {stderr}");
        assert!(
            stderr.contains(&format!("did you mean `{meant}`?")),
            "{typo}: {stderr}"
        );
        assert!(stderr.contains(&format!("minicode -- {typo}")), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(server.request_count(), 0);
    assert!(server.other_requests().is_empty());
    assert_eq!(session_files(dir.path()), 0);
}

#[test]
fn double_dash_sends_a_subcommand_lookalike_as_the_prompt() {
    let server = MockServer::start_in_thread(vec![text_reply("checked", 8)]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    let out = command(dir.path()).args(["--", "doctr"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "checked");
    let body = &server.requests()[0].body;
    assert!(body.to_string().contains("doctr"), "{body}");
}

#[test]
fn ordinary_one_word_prompts_are_sent() {
    let server = MockServer::start_in_thread(vec![text_reply("hi there", 8)]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    let out = command(dir.path()).arg("hello").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(server.request_count(), 1);
}

#[test]
fn a_mistyped_flag_gets_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let out = command(dir.path()).args(["--yse", "hi"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
}
