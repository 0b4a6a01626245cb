//! Wire quirks of real server families, each against the mock server with the shape that
//! family sends: arguments as a JSON object, whole tool calls without `index`,
//! `finish_reason: stop` beside tool calls, usage only in the last chunk or absent,
//! Mistral-style 9-character ids, and an id repeated across replies.

use crate::support::agent::spawn;
use crate::support::events::run_turn;
use crate::support::mock_openai::*;
use crate::support::stream::run;
use minicode::agent::Options;
use minicode::agent::validate::unique_call_ids;
use minicode::chat::{ToolCall, Usage};
use minicode::protocol::{Event, TurnEnd};
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::provider::sse::Decoder;
use minicode::provider::{Provider, Reply, StreamEvent};
use serde_json::{Value, json};

use crate::support::provider::provider;

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn reply_of(payloads: &[Value]) -> Reply {
    let events = Decoder::decode_all(&sse_bytes(payloads)).unwrap();
    match events.last() {
        Some(StreamEvent::Done(r)) => (**r).clone(),
        other => panic!("expected Done, got {other:?}"),
    }
}

#[test]
fn tool_arguments_sent_as_an_object_become_json_text() {
    let call = json!({"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "read", "arguments": {"path": "src/lib.rs", "offset": 3}}});
    let reply = reply_of(&[
        chunk(json!({"tool_calls": [call]}), Value::Null),
        chunk(json!({}), json!("tool_calls")),
    ]);
    assert_eq!(reply.tool_calls.len(), 1);
    let args: Value = serde_json::from_str(&reply.tool_calls[0].arguments).unwrap();
    assert_eq!(args, json!({"path": "src/lib.rs", "offset": 3}));
}

#[tokio::test]
async fn a_whole_completion_with_object_arguments_is_accepted_too() {
    let body = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null,
        "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "read", "arguments": {"path": "a"}}}]}}]});
    let server = MockServer::start(vec![MockReply::json(200, &body)]).await;
    let user = minicode::chat::Message::user("hi");
    let messages = [&user];
    let reply = provider(&server)
        .chat(&minicode::provider::ChatRequest {
            messages: &messages,
            tools: &[],
            max_tokens: 0,
            statuses: &[],
        })
        .await
        .unwrap();
    assert_eq!(reply.tool_calls[0].id, "c9");
    assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a"}"#);
}

#[test]
fn whole_tool_calls_without_index_are_told_apart() {
    let whole = |id: Option<&str>, name: &str, args: &str| {
        let mut call = json!({"type": "function", "function": {"name": name, "arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        call
    };
    // One call per chunk, with ids (Gemini's OpenAI endpoint, some proxies).
    let reply = reply_of(&[
        chunk(
            json!({"tool_calls": [whole(Some("a1"), "read", r#"{"path":"x"}"#)]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [whole(Some("b2"), "bash", r#"{"command":"ls"}"#)]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ]);
    let names: Vec<&str> = reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["read", "bash"]);
    assert_eq!(reply.tool_calls[1].arguments, r#"{"command":"ls"}"#);
    // Two whole calls in one chunk, without ids: each name starts a call.
    let reply = reply_of(&[
        chunk(
            json!({"tool_calls": [whole(None, "read", r#"{"path":"x"}"#), whole(None, "read", r#"{"path":"y"}"#)]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ]);
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(reply.tool_calls[1].arguments, r#"{"path":"y"}"#);
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
    // Without index, later pieces without a name still continue the call they belong to.
    let reply = reply_of(&[
        chunk(
            json!({"tool_calls": [whole(Some("c1"), "read", "{\"pa")]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"function": {"arguments": "th\":\"z\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ]);
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"z"}"#);
}

#[test]
fn usage_only_in_the_last_chunk_or_absent_is_handled() {
    // llama.cpp and others put usage on the final chunk beside finish_reason.
    let mut last = chunk(json!({}), json!("stop"));
    last["usage"] = json!({"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7});
    let reply = reply_of(&[chunk(json!({"content": "hi"}), Value::Null), last]);
    assert_eq!(reply.usage, Some(Usage::new(5, 2, 7)));
    // OpenAI sends `"usage": null` on every chunk before the usage chunk.
    let mut early = chunk(json!({"content": "hi"}), Value::Null);
    early["usage"] = Value::Null;
    let reply = reply_of(&[early, chunk_usage(3, 1)]);
    assert_eq!(reply.usage, Some(Usage::new(3, 1, 4)));
    // No usage anywhere.
    let reply = reply_of(&[
        chunk(json!({"content": "hi"}), Value::Null),
        chunk(json!({}), json!("stop")),
    ]);
    assert_eq!(reply.usage, None);
    assert_eq!(reply.text, "hi");
}

#[tokio::test]
async fn finish_reason_stop_beside_tool_calls_still_runs_the_calls() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("note.txt"), "hello\n").unwrap();
    let mut payloads = vec![chunk_tool_start(0, "call_r", "read")];
    payloads.push(chunk_tool_args(0, r#"{"path":"note.txt"}"#));
    payloads.push(chunk_finish("stop"));
    let server = MockServer::start(vec![
        MockReply::sse(sse_events(&payloads)),
        text_reply("read it", 3),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (events, end, _) = run_turn(&mut handle, "read note.txt", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCallEnded { call, .. } if call == "call_r"))
    );
    let second = &server.requests()[1].body["messages"];
    let last = second.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_r");
}

#[tokio::test]
async fn mistral_style_nine_character_ids_are_sent_back_unchanged() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("aB3dE5fG7", "read", r#"{"path":"a.txt"}"#)], 5),
        text_reply("done", 3),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_, end, _) = run_turn(&mut handle, "read a.txt", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    let messages = server.requests()[1].body["messages"].clone();
    let messages = messages.as_array().unwrap();
    let asked = &messages[messages.len() - 2];
    assert_eq!(asked["tool_calls"][0]["id"], "aB3dE5fG7");
    assert_eq!(messages[messages.len() - 1]["tool_call_id"], "aB3dE5fG7");
}

#[test]
fn a_repeated_nine_character_id_is_renamed_to_another_nine_character_id() {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: "{}".into(),
    };
    let mut calls = vec![
        call("aB3dE5fG7"),
        call("aB3dE5fG7"),
        call("call_x"),
        call("call_x"),
    ];
    assert_eq!(unique_call_ids(&mut calls), 2);
    assert_eq!(calls[0].id, "aB3dE5fG7");
    assert_eq!(calls[1].id.len(), 9, "{}", calls[1].id);
    assert!(calls[1].id.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert_ne!(calls[1].id, calls[0].id);
    assert_eq!(calls[3].id, "call_x_4");
}

#[tokio::test]
async fn an_id_repeated_across_replies_pairs_each_result_with_its_call() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "first\n").unwrap();
    std::fs::write(ws.join("b.txt"), "second\n").unwrap();
    // Some local servers number calls per reply: every reply's first call is `call_0`.
    let server = MockServer::start(vec![
        tool_calls_reply(&[("call_0", "read", r#"{"path":"a.txt"}"#)], 4),
        tool_calls_reply(&[("call_0", "read", r#"{"path":"b.txt"}"#)], 4),
        text_reply("both read", 3),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (events, end, _) = run_turn(&mut handle, "read both", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    let outputs: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnded { output, .. } => Some(output.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs.len(), 2);
    assert!(
        outputs[0].contains("first") && outputs[1].contains("second"),
        "{outputs:?}"
    );
    // The last request carries both pairs, each result right after its call.
    let messages = server.requests()[2].body["messages"].clone();
    let tail: Vec<(String, String)> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(tail.len(), 2);
    assert!(tail[0].1.contains("first") && tail[1].1.contains("second"));
}

#[tokio::test]
async fn object_arguments_through_the_provider_stream() {
    let call = json!({"index": 0, "id": "c1", "type": "function",
        "function": {"name": "bash", "arguments": {"command": "ls"}}});
    let payloads = [
        chunk(json!({"tool_calls": [call]}), Value::Null),
        chunk(json!({}), json!("tool_calls")),
    ];
    let server = MockServer::start(vec![MockReply::sse(sse_events(&payloads))]).await;
    let (events, err) = run(&provider(&server)).await;
    assert!(err.is_none(), "{err:?}");
    match events.last() {
        Some(StreamEvent::Done(r)) => assert_eq!(r.tool_calls[0].arguments, r#"{"command":"ls"}"#),
        other => panic!("{other:?}"),
    }
}

/// A streamed tool call whose arguments are not valid JSON once the stream ended (vLLM's Hermes
/// parser with a 1.5B model cuts or garbles them).
fn broken_stream(id: &str, args: &str) -> MockReply {
    MockReply::sse(sse_events(&[
        chunk_tool_start(0, id, "bash"),
        chunk_tool_args(0, args),
        chunk_finish("tool_calls"),
    ]))
}

/// The same call as one whole completion (no streaming).
fn whole_completion(id: &str, args: &str) -> MockReply {
    MockReply::json(
        200,
        &json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "bash", "arguments": args}}]}}]}),
    )
}

fn approve_all(_tool: &str) -> Option<minicode::protocol::Decision> {
    Some(minicode::protocol::Decision::Approve)
}

#[tokio::test]
async fn broken_streamed_arguments_are_asked_again_without_streaming_before_anything_runs() {
    let (_dir, ws) = crate::support::workspace();
    let good = json!({"command": "echo ran >> log.txt"}).to_string();
    let server = MockServer::start(vec![
        broken_stream("call_b", r#"{"command": "echo ran >> log.txt"#),
        whole_completion("call_b", &good),
        text_reply("done", 3),
    ])
    .await;
    let cache = tempfile::tempdir().unwrap();
    let counted = || {
        OpenAi::new(OpenAiOptions {
            base_url: server.base_url(),
            model: "mock-model".into(),
            cache_dir: Some(cache.path().to_path_buf()),
            ..OpenAiOptions::default()
        })
        .unwrap()
    };
    let mut handle = spawn(&ws, counted(), Options::default());
    let (events, end, stats) = run_turn(&mut handle, "log it", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    // The fallback is announced before any call begins, and the call runs once.
    let notice = events
        .iter()
        .position(
            |e| matches!(e, Event::Warning { message } if message.contains("without streaming")),
        )
        .unwrap_or_else(|| panic!("no fallback notice in {events:?}"));
    let began: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Event::ToolCallBegan { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(began.len(), 1, "{events:?}");
    assert!(notice < began[0], "announced before the call: {events:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("log.txt")).unwrap(),
        "ran\n",
        "the call ran once, with the good arguments"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(requests[1].body["stream"], false);
    // The same conversation both times: the broken reply never entered history.
    assert_eq!(requests[0].body["messages"], requests[1].body["messages"]);
    assert_eq!(stats.model_calls, 3);
    let history = requests[2].body["messages"].as_array().unwrap().clone();
    let asked = &history[history.len() - 2];
    assert_eq!(asked["tool_calls"][0]["function"]["arguments"], good);
    // Counted for this model beside its quirks.
    assert_eq!(counted().tally().stream_fallbacks, 1);
}

#[tokio::test]
async fn broken_arguments_again_without_streaming_are_refused_with_a_clear_error() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![
        broken_stream("call_b", r#"{"command": "echo ran >> log.txt"#),
        whole_completion("call_b", r#"{"command": "echo ran >> log.txt""#),
        text_reply("sorry", 3),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (events, end, _) = run_turn(&mut handle, "log it", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(
        events.iter().any(|e| matches!(e, Event::Warning { message }
            if message.contains("not valid JSON without streaming either"))),
        "{events:?}"
    );
    assert!(!ws.join("log.txt").exists(), "nothing ran");
    // Asked once without streaming, never more; the model reads the parse error.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["stream"], true);
    let history = requests[2].body["messages"].as_array().unwrap().clone();
    let result = history.last().unwrap();
    assert_eq!(result["role"], "tool");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("invalid arguments: not valid JSON"),
        "{content}"
    );
}

#[tokio::test]
async fn good_streamed_arguments_are_never_asked_again() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "bash", r#"{"command":"echo ran >> log.txt"}"#)], 5),
        // An empty argument string reads as `{}`: not broken either.
        tool_calls_reply(&[("c2", "list", "")], 5),
        text_reply("done", 3),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (events, end, _) = run_turn(&mut handle, "log it", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::Warning { message } if message.contains("streaming"))),
        "{events:?}"
    );
    assert!(server.requests().iter().all(|r| r.body["stream"] == true));
}
