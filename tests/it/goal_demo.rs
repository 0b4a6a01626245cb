//! Goal mode on a first run: the offline demo completes a goal in one round without writing
//! protocol markers into files, and a goal round nobody could approve (no terminal) blocks the
//! goal `awaiting-human` instead of asking again round after round.

use std::process::Output;

use serde_json::Value;

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};

const README: &str = "# Tiny\n\nSome text.\n";

fn json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{e}: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn demo_goal_completes_in_one_round_with_one_clean_note() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), README).unwrap();
    let out = command(dir.path())
        .args(["--demo", "--yes", "--output-format", "json"])
        .args(["--goal", "add a note to README.md"])
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["status"], "completed", "{report}");
    assert_eq!(report["goal"]["phase"], "complete", "{report}");
    assert!(
        report["goal"]["rounds_used"].as_u64().unwrap() <= 3,
        "{report}"
    );
    let readme = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    let notes: Vec<&str> = readme
        .lines()
        .filter(|l| l.contains("minicode demo"))
        .collect();
    assert_eq!(notes.len(), 1, "{readme}");
    assert!(notes[0].contains("add a note to README.md"), "{readme}");
    for marker in ["<goal_round", "<goal_state", "goal=\"", "round=\""] {
        assert!(!readme.contains(marker), "{marker} leaked into: {readme}");
    }
    // A finished goal is not offered for --goal-resume (that would be refused).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("(resume with: minicode --demo --session "),
        "{stderr}"
    );
    assert!(!stderr.contains("--goal-resume"), "{stderr}");
}

#[test]
fn demo_goal_without_terminal_or_yes_blocks_awaiting_human_and_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), README).unwrap();
    let out = command(dir.path())
        .args(["--demo", "--output-format", "json"])
        .args(["--goal", "add a note to README.md"])
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(report["goal"]["phase"], "blocked", "{report}");
    assert_eq!(report["goal"]["reason"]["code"], "awaiting-human");
    assert_eq!(report["goal"]["rounds_used"], 1, "{report}");
    let readme = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    assert_eq!(readme, README);
}

#[test]
fn goal_round_whose_calls_were_all_refused_for_lack_of_a_terminal_blocks_awaiting_human() {
    // A model that only ever asks to run a command and never updates the goal.
    let bash = || tool_calls_reply(&[("call_1", "bash", r#"{"command":"touch x.txt"}"#)], 8);
    let server = MockServer::start_in_thread(vec![
        bash(),
        text_reply("I could not run it.", 8),
        bash(),
        text_reply("Still nothing.", 8),
    ]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    let out = command(dir.path())
        .args(["--output-format", "json", "--goal", "make x.txt"])
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(report["status"], "blocked", "{report}");
    assert_eq!(
        report["goal"]["reason"]["code"], "awaiting-human",
        "{report}"
    );
    assert!(
        report["goal"]["reason"]["message"]
            .as_str()
            .unwrap()
            .contains("--yes"),
        "{report}"
    );
    assert_eq!(report["goal"]["rounds_used"], 1, "{report}");
    assert_eq!(server.request_count(), 2, "a second round was started");
    assert!(!dir.path().join("x.txt").exists());
    // What the model read: nobody was asked, and --yes approves; not "the user denied".
    let result = server.requests()[1].raw_body.clone();
    assert!(result.contains("no terminal was available"), "{result}");
    assert!(result.contains("--yes"), "{result}");
    assert!(!result.contains("the user denied"), "{result}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no terminal was available"), "{stderr}");
    assert!(!stderr.contains("denied"), "{stderr}");
}
