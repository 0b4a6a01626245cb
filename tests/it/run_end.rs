//! What a one-shot run prints when it ends: the stats line counts in good English (`1 model
//! call`, `2 model calls`), and a failed run's error is said once, not again in the closing line.

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{
    MockReply, MockServer, chunk_finish, chunk_tool_args, chunk_tool_start, error_reply,
    sse_events, text_reply, tool_calls_reply,
};
use serde_json::json;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_stats_line_says_one_call_in_the_singular_and_more_in_the_plural() {
    let server = MockServer::start_in_thread(vec![text_reply("one", 4)]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    let out = command(dir.path()).arg("q").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(" · 1 model call · 0 tool calls · "), "{err}");

    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "read", r#"{"path":"a.txt"}"#)], 8),
        text_reply("two", 4),
    ]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let out = command(dir.path()).arg("q").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(" · 2 model calls · 1 tool call · "), "{err}");
}

const REFUSAL: &str = "model mock-model-x7 is not loaded";

#[test]
fn a_failed_run_prints_its_error_once() {
    let server = MockServer::start_in_thread(vec![error_reply(400, REFUSAL)]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    let out = command(dir.path()).arg("q").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches(REFUSAL).count(), 1, "{err}");
}

#[test]
fn a_failed_goal_run_prints_its_error_once() {
    let server = MockServer::start_in_thread(vec![error_reply(400, REFUSAL)]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    let out = command(dir.path())
        .args(["--goal", "do the thing"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches(REFUSAL).count(), 1, "{err}");
    assert!(err.contains("execution-failed"), "{err}");
    // The closing line still says how it ended.
    let closing = err
        .lines()
        .find(|l| l.contains("· disarmed ·"))
        .unwrap_or_else(|| panic!("no closing line in {err}"));
    assert!(closing.contains("blocked"), "{err}");
    assert!(closing.contains("1 model call "), "{err}");
}

#[test]
fn a_reply_cut_at_the_output_limit_inside_a_tool_call_fails_saying_so() {
    // What a server streams when max_tokens runs out halfway through a call's arguments.
    let cut = MockReply::sse(sse_events(&[
        chunk_tool_start(0, "call_1", "write"),
        chunk_tool_args(0, r#"{"path":"a.txt","content":"hello wor"#),
        chunk_finish("length"),
    ]));
    // What a non-streaming resend would get, and the model's answer after it: never asked for.
    let whole = MockReply::json(
        200,
        &json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "length",
            "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
            "type": "function", "function": {"name": "write", "arguments": "{\"path\""}}]}}]}),
    );
    let server = MockServer::start_in_thread(vec![cut, whole, text_reply("done", 4)]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server);
    let out = command(dir.path()).arg("write a.txt").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("output limit"), "{err}");
    assert!(!err.contains("without streaming"), "{err}");
    assert_eq!(server.request_count(), 1, "{err}");
    assert!(!dir.path().join("a.txt").exists(), "nothing ran");
}
