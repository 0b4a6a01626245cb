//! Goal mode and fork through the built binary against the mock server: `--goal` runs to
//! completion (exit 0) or to the `--goal-rounds` limit (exit 1), refused goal commands exit 2
//! and send nothing, `--output-format json` carries the goal, `stream-json` its events,
//! `--session ID --fork` copies a session (listed as a fork), and a run killed mid-round resumes
//! from the last saved state without starting work by itself.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{
    MockReply, MockServer, Recorded, text_reply, tool_calls_reply, wait_until_blocking,
};
use crate::support::workspace;
use minicode::agent::goal::Goals;
use minicode::protocol::GoalPhase;
use minicode::session::Session;

/// The round number of the latest goal round instruction in a request.
fn round_of(r: &Recorded) -> Option<u32> {
    let messages = r.body["messages"].as_array()?;
    messages.iter().rev().find_map(|m| {
        let text = m["content"].as_str()?;
        let rest = text.strip_prefix("<goal_round ")?;
        let at = rest.find("round=\"")? + 7;
        rest[at..].split('"').next()?.parse().ok()
    })
}

/// Whether a tool result follows the latest goal round instruction (the round's call ran).
fn called_in_round(r: &Recorded) -> bool {
    let Some(messages) = r.body["messages"].as_array() else {
        return false;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| {
            !m["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("<goal_round "))
        })
        .any(|m| m["role"] == "tool")
}

/// A model that works for `n - 1` rounds and reports the goal complete in round `n`.
fn completing_in(n: u32) -> MockServer {
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(move |r| {
        Some(if called_in_round(r) {
            text_reply("all done: the parser is ported", 8)
        } else if round_of(r) == Some(n) {
            tool_calls_reply(&[("c1", "goal_update", r#"{"status":"complete"}"#)], 8)
        } else {
            text_reply("working on it", 8)
        })
    });
    server
}

fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn session_id(stderr: &str) -> String {
    let at = stderr.rfind("session ").unwrap() + 8;
    stderr[at..at + 36].to_string()
}

#[test]
fn a_one_shot_goal_completes_in_n_rounds() {
    let (_dir, ws) = workspace();
    let server = completing_in(3);
    write_config(&ws, &server);
    let out = run(&ws, &["--goal", "port the parser", "--yes"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for round in 1..=3 {
        assert!(
            stderr.contains(&format!("goal round {round}/256")),
            "{stderr}"
        );
    }
    assert!(!stderr.contains("goal round 4/"), "{stderr}");
    assert!(stderr.contains("completed"), "{stderr}");
    assert_eq!(text(&out.stdout).trim(), "all done: the parser is ported");
    assert_eq!(server.request_count(), 4, "{stderr}");
    let id = session_id(&stderr);
    let goals = Goals::replay(Session::open(&ws, &id).unwrap().messages());
    let goal = goals.current().unwrap().unwrap();
    assert_eq!((goal.phase, goal.rounds_used), (GoalPhase::Complete, 3));
}

#[test]
fn a_goal_blocks_at_its_round_limit_with_exit_1_and_json_carries_it() {
    let (_dir, ws) = workspace();
    let server = completing_in(99);
    write_config(&ws, &server);
    let out = run(
        &ws,
        &[
            "--goal",
            "never done",
            "--goal-rounds",
            "3",
            "--output-format",
            "json",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("goal round 3/3"), "{stderr}");
    assert!(stderr.contains("round-limit"), "{stderr}");
    assert_eq!(server.request_count(), 3);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["status"], "blocked");
    assert_eq!(json["goal"]["phase"], "blocked");
    assert_eq!(json["goal"]["rounds_used"], 3);
    assert_eq!(json["goal"]["reason"]["code"], "round-limit");
    assert_eq!(json["stats"]["model_calls"], 3);
    // Resuming at the limit is refused (exit 2) and sends nothing; a higher limit continues.
    let id = json["session_id"].as_str().unwrap().to_string();
    let out = run(&ws, &["--session", &id, "--goal-resume"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("rounds"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.request_count(), 3);
    let out = run(
        &ws,
        &["--session", &id, "--goal-resume", "--goal-rounds", "4"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("goal round 4/4"), "{stderr}");
    assert_eq!(server.request_count(), 4);
}

#[test]
fn refused_goal_commands_exit_2_and_send_nothing() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("hi", 4)]);
    write_config(&ws, &server);
    let out = run(&ws, &["hello"]);
    assert_eq!(out.status.code(), Some(0));
    let id = session_id(&text(&out.stderr));
    // No goal to resume.
    let out = run(&ws, &["--session", &id, "--goal-resume"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no goal"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.request_count(), 1);
    // Flags that need a session, or an objective.
    for args in [
        &["--goal-resume"][..],
        &["--fork"][..],
        &["--goal", "  "][..],
        &["--goal-rounds", "3", "hi"][..],
        &["--goal", "x", "--goal-rounds", "0"][..],
    ] {
        let out = run(&ws, args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(server.request_count(), 1);
}

#[test]
fn a_corrupt_goal_record_refuses_goal_commands_but_the_session_still_runs() {
    let (_dir, ws) = workspace();
    let server = completing_in(1);
    write_config(&ws, &server);
    let out = run(&ws, &["--goal", "first goal", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    // Tamper with the creation record: its revision no longer starts at 1.
    let path = minicode::session::sessions_dir(&ws).join(format!("{id}.json"));
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let messages = file["messages"].as_array_mut().unwrap();
    let at = messages
        .iter()
        .position(|m| {
            m["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("<goal_state>"))
        })
        .unwrap();
    let content = messages[at]["content"]
        .as_str()
        .unwrap()
        .replace("\"revision\":1", "\"revision\":7");
    messages[at]["content"] = content.into();
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let before = server.request_count();
    let out = run(&ws, &["--session", &id, "--goal-resume"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("message {at}")), "{stderr}");
    assert_eq!(server.request_count(), before);
    // A normal turn still works in that session.
    let out = run(&ws, &["--session", &id, "what now?"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("goal unavailable"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn stream_json_has_goal_events() {
    let (_dir, ws) = workspace();
    let server = completing_in(2);
    write_config(&ws, &server);
    let out = run(
        &ws,
        &["--goal", "two rounds", "--output-format", "stream-json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let types: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
        .collect();
    let count = |t: &str| types.iter().filter(|x| x.trim_matches('"') == t).count();
    assert_eq!(count("goal_round_started"), 2, "{types:?}");
    assert_eq!(count("goal_changed"), 2, "{types:?}");
}

#[test]
fn fork_copies_a_session_and_sessions_lists_the_parent() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("first", 4), text_reply("second", 4)]);
    write_config(&ws, &server);
    let out = run(&ws, &["hello"]);
    let id = session_id(&text(&out.stderr));
    let path = minicode::session::sessions_dir(&ws).join(format!("{id}.json"));
    let original = std::fs::read(&path).unwrap();
    let out = run(&ws, &["--session", &id, "--fork", "and then?"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let fork = session_id(&stderr);
    assert_ne!(fork, id);
    assert_eq!(std::fs::read(&path).unwrap(), original);
    // The fork's request carried the original history.
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("hello") && body.contains("first"), "{body}");
    let list = text(&run(&ws, &["sessions"]).stdout);
    let line = list.lines().find(|l| l.starts_with(&fork)).unwrap();
    assert!(line.contains(&format!("(fork of {id})")), "{list}");
}

#[test]
fn a_run_killed_mid_round_resumes_from_the_last_saved_state_without_working() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(|r| {
        Some(match round_of(r) {
            Some(1) => text_reply("round one", 8),
            // Round two never finishes.
            _ => MockReply::endless(
                Vec::new(),
                b": keep-alive\n\n".to_vec(),
                Duration::from_millis(50),
            ),
        })
    });
    write_config(&ws, &server);
    let mut child = command(&ws).args(["--goal", "long job"]).spawn().unwrap();
    assert!(wait_until_blocking(Duration::from_secs(30), || server
        .request_count()
        >= 2));
    child.kill().unwrap();
    child.wait().unwrap();
    let ids: Vec<String> = Session::list(&ws)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids.len(), 1);
    let goals = Goals::replay(Session::open(&ws, &ids[0]).unwrap().messages());
    let goal = goals.current().unwrap().unwrap().clone();
    assert_eq!(goal.phase, GoalPhase::Active);
    assert!((1..=2).contains(&goal.rounds_used), "{goal:?}");
    // A normal turn in the resumed session runs once and leaves the goal where it was.
    server.respond_with(|_| Some(text_reply("just an answer", 8)));
    let before = server.request_count();
    let out = run(&ws, &["--session", &ids[0], "status?"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("disarmed"), "{stderr}");
    assert!(!stderr.contains("goal round"), "{stderr}");
    assert_eq!(server.request_count(), before + 1);
    let after = Goals::replay(Session::open(&ws, &ids[0]).unwrap().messages());
    assert_eq!(
        after.current().unwrap().unwrap().rounds_used,
        goal.rounds_used
    );
}
