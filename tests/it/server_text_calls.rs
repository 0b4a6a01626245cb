//! Tool calls small local models write as text (issue 34): recovered and run like native
//! calls, kept in history in native form, counted; JSON that is no call stays text; a turn
//! that ends on an announcement gets one nudge; small windows bound replies and stop runaway
//! repetition; edits of unread files are counted. The first fixture is the exact bytes
//! llama.cpp (`--jinja`) sent for Qwen2.5-Coder-1.5B-Instruct Q4_K_M.

use std::time::Duration;

use crate::support::agent::spawn;
use crate::support::events::run_turn;
use crate::support::mock_openai::*;
use minicode::agent::Options;
use minicode::agent::small::Settings;
use minicode::protocol::{Decision, Event, TurnEnd, WindowSource};
use serde_json::{Value, json};

/// Captured from llama.cpp's server with the 1.5B model, asked to create CHANGELOG.md with
/// read/write/list/bash offered: the call came as a fenced JSON object in `content`.
const FENCED_CALL: &[u8] = include_bytes!("fixtures/llamacpp_qwen25_coder_fenced_call.sse");

fn approve_all(_: &str) -> Option<Decision> {
    Some(Decision::Approve)
}

use crate::support::provider::provider;

fn small_window() -> Options {
    Options {
        context_window: 8192,
        context_window_source: WindowSource::Config,
        ..Options::default()
    }
}

fn warned(events: &[Event], needle: &str) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::Warning { message } if message.contains(needle)))
}

/// A llama.cpp-shaped stream of `pieces` of content, then `stop`.
fn content_stream(pieces: &[&str], split: usize) -> MockReply {
    let mut payloads: Vec<Value> = pieces.iter().map(|p| chunk_text(p)).collect();
    payloads.push(chunk_finish("stop"));
    MockReply::sse_split(&sse_bytes(&payloads), split)
}

#[tokio::test]
async fn a_fenced_call_captured_from_llama_cpp_runs_as_a_native_call_at_every_split() {
    for split in [1, 5, 97, FENCED_CALL.len()] {
        let (_dir, ws) = crate::support::workspace();
        std::fs::write(ws.join("CHANGELOG.md"), "# Changelog\n").unwrap();
        let server = MockServer::start(vec![
            MockReply::sse_split(FENCED_CALL, split),
            text_reply("It has a heading.", 4),
        ])
        .await;
        let mut handle = spawn(&ws, provider(&server), Options::default());
        let (events, end, stats) = run_turn(&mut handle, "Create CHANGELOG.md", approve_all).await;
        assert_eq!(end, TurnEnd::Completed, "split {split}: {events:?}");
        assert_eq!(stats.recovered_calls, 1, "split {split}");
        assert_eq!(stats.tool_calls, 1, "split {split}");
        let began = events.iter().find_map(|e| match e {
            Event::ToolCallBegan {
                tool, arguments, ..
            } => Some((tool.clone(), arguments.clone())),
            _ => None,
        });
        assert_eq!(
            began,
            Some(("read".to_string(), json!({"path": "CHANGELOG.md"}))),
            "split {split}"
        );
        assert!(warned(&events, "as text"), "split {split}: {events:?}");
        // The next request shows the call in native form, its result, and the format once.
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "split {split}");
        let messages = requests[1].body["messages"].as_array().unwrap();
        let asked = messages
            .iter()
            .find(|m| m["role"] == "assistant")
            .expect("the assistant message");
        assert_eq!(asked["content"], Value::Null, "the call's text is gone");
        let call = &asked["tool_calls"][0];
        assert_eq!(call["function"]["name"], "read");
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"path": "CHANGELOG.md"}));
        let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(result["tool_call_id"], call["id"]);
        assert!(result["content"].as_str().unwrap().contains("# Changelog"));
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "user");
        assert!(
            last["content"]
                .as_str()
                .unwrap()
                .contains("tool-call interface"),
            "{last}"
        );
    }
}

#[tokio::test]
async fn qwen_tool_call_tags_split_inside_the_tag_and_a_string_write_the_file() {
    for split in [1, 3, 11] {
        let (_dir, ws) = crate::support::workspace();
        let server = MockServer::start(vec![
            content_stream(
                &[
                    "<tool",
                    "_call>\n{\"name\": \"write\", \"argu",
                    "ments\": {\"path\": \"no",
                    "tes.txt\", \"content\": \"hel",
                    "lo\\nworld\"}}\n</tool_",
                    "call>",
                ],
                split,
            ),
            text_reply("Written.", 3),
        ])
        .await;
        let mut handle = spawn(&ws, provider(&server), Options::default());
        let (events, end, stats) = run_turn(&mut handle, "write notes", approve_all).await;
        assert_eq!(end, TurnEnd::Completed, "{events:?}");
        assert_eq!(stats.recovered_calls, 1);
        assert_eq!(
            std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
            "hello\nworld"
        );
    }
}

#[tokio::test]
async fn doubled_braces_are_repaired_before_the_call_runs() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "x").unwrap();
    let server = MockServer::start(vec![
        content_stream(
            &["```json\n{{\"name\": \"list\", \"arguments\": {\"path\": \".\"}}}}\n```"],
            7,
        ),
        text_reply("One file.", 3),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_events, end, stats) = run_turn(&mut handle, "list", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.recovered_calls, 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn json_that_is_no_call_stays_text_and_ends_the_turn() {
    let (_dir, ws) = crate::support::workspace();
    let text = "Use this package.json:\n```json\n{\"name\": \"demo\", \"version\": \"1.0.0\"}\n```";
    let server = MockServer::start(vec![text_reply(text, 5)]).await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_events, end, stats) = run_turn(&mut handle, "how?", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(
        (stats.recovered_calls, stats.nudges, stats.tool_calls),
        (0, 0, 0)
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn recovery_turned_off_leaves_the_call_as_text() {
    let (_dir, ws) = crate::support::workspace();
    let text = "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"path\": \"x.txt\", \"content\": \"y\"}}\n</tool_call>";
    let server = MockServer::start(vec![text_reply(text, 5)]).await;
    let options = Options {
        small: Settings {
            recover_tool_calls: false,
            ..Settings::default()
        },
        ..Options::default()
    };
    let mut handle = spawn(&ws, provider(&server), options);
    let (_events, end, stats) = run_turn(&mut handle, "write", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.recovered_calls, 0);
    assert!(!ws.join("x.txt").exists());
}

#[tokio::test]
async fn an_announcement_without_a_call_gets_one_nudge_per_turn() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![
        text_reply("I'll read the file first.", 4),
        text_reply("Let me check the file.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (events, end, stats) = run_turn(&mut handle, "what is in it?", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.nudges, 1);
    assert!(warned(&events, "reminding it once"), "{events:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "once per turn");
    let nudge = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(nudge["role"], "user");
    let text = nudge["content"].as_str().unwrap();
    assert!(text.contains("read") && text.contains("bash"), "{text}");
}

#[tokio::test]
async fn a_call_to_an_unknown_tool_in_text_gets_a_nudge_naming_the_tools() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![
        text_reply(
            "```json\n{\"name\": \"open_file\", \"arguments\": {\"path\": \"a\"}}\n```",
            6,
        ),
        text_reply("The file is empty.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_events, end, stats) = run_turn(&mut handle, "open a", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!((stats.nudges, stats.recovered_calls), (1, 0));
    let requests = server.requests();
    let nudge = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        nudge["content"].as_str().unwrap().contains("\"open_file\""),
        "{nudge}"
    );
}

#[tokio::test]
async fn a_small_window_bounds_max_tokens() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![text_reply("ok", 2), text_reply("ok", 2)]).await;
    let mut handle = spawn(&ws, provider(&server), small_window());
    run_turn(&mut handle, "hi", approve_all).await;
    assert_eq!(server.requests()[0].body["max_tokens"], 1024);
    let configured = Options {
        small: Settings {
            bound_replies: false,
            ..Settings::default()
        },
        ..small_window()
    };
    let mut handle = spawn(&ws, provider(&server), configured);
    run_turn(&mut handle, "hi", approve_all).await;
    assert!(server.requests()[1].body["max_tokens"].as_u64().unwrap() > 1024);
}

#[tokio::test]
async fn a_runaway_reply_is_stopped_and_said_to_be_cut() {
    let (_dir, ws) = crate::support::workspace();
    let first = vec![sse_event(&chunk_text("Here is the plan.\n"))];
    let again = sse_event(&chunk_text(
        "The file has been updated with the new content.\n",
    ));
    // The cut reply claims a change that was never made, so the turn's one reminder follows.
    let server = MockServer::start(vec![
        MockReply::endless(first, again, Duration::ZERO),
        text_reply("There was nothing to update.", 8),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_window());
    let (events, end, stats) = tokio::time::timeout(
        Duration::from_secs(30),
        run_turn(&mut handle, "update it", approve_all),
    )
    .await
    .expect("the runaway reply was stopped");
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let shown = (streamed.len(), &streamed[..streamed.len().min(300)]);
    assert_eq!(end, TurnEnd::Completed, "{shown:?}");
    assert_eq!(stats.cut_replies, 1, "{shown:?}");
    assert!(warned(&events, "repeating itself"), "{events:?}");
    assert!(warned(&events, "described a change"), "{events:?}");
}

#[tokio::test]
async fn a_reply_cut_at_its_token_limit_is_said() {
    let (_dir, ws) = crate::support::workspace();
    let payloads = [chunk_text("The answer starts"), chunk_finish("length")];
    let server = MockServer::start(vec![MockReply::sse(sse_events(&payloads))]).await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (events, _end, stats) = run_turn(&mut handle, "long", approve_all).await;
    assert_eq!(stats.cut_replies, 1);
    assert!(warned(&events, "token limit"), "{events:?}");
}

#[tokio::test]
async fn an_edit_of_an_unread_file_is_refused_and_counted() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    let args = json!({"path": "a.txt", "old_string": "one", "new_string": "two"}).to_string();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("call_1", "edit", &args)], 8),
        text_reply("I need to read it.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_events, _end, stats) = run_turn(&mut handle, "edit", approve_all).await;
    assert_eq!(stats.unread_edits, 1);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n");
}
