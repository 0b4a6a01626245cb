//! Streaming through the OpenAI-compatible provider against the mock server: text, tool calls
//! split anywhere, usage after finish_reason, SSE framing variants, the request shape, and
//! cancellation by drop. Framing details are also checked on the pure decoder.

use std::time::Duration;

use crate::support::mock_openai::*;
use futures_util::StreamExt;
use minicode::chat::{Message, ToolSpec, Usage};
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::provider::sse::{Decoder, MAX_EVENT_BYTES, Parser};
use minicode::provider::{ChatRequest, FinishReason, Provider, ProviderError, Reply, StreamEvent};
use serde_json::json;

const KEY: &str = "sk-test-secret-0123456789";

fn provider(server: &MockServer) -> OpenAi {
    crate::support::provider::provider_with(server, |o| o.api_key = Some(KEY.into()))
}

use crate::support::stream::run;

fn done(events: &[StreamEvent]) -> &Reply {
    match events.last() {
        Some(StreamEvent::Done(r)) => r,
        other => panic!("expected Done last, got {other:?}"),
    }
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| {
            if let StreamEvent::Text(t) = e {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect()
}

fn args() -> String {
    json!({"path": "src/main.rs", "note": "é ✓ \"quoted\" \\ back"}).to_string()
}

#[tokio::test]
async fn streamed_text_arrives_in_pieces_and_completes_with_usage() {
    let text = "Hello, streaming world! Ünïcödé too.";
    let server = MockServer::start(vec![text_reply(text, 4)]).await;
    let (events, err) = run(&provider(&server)).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Text(_)))
            .count()
            > 1,
        "text should stream in pieces"
    );
    assert_eq!(text_of(&events), text);
    let reply = done(&events);
    assert_eq!(reply.text, text);
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        reply.usage,
        Some(Usage::new(USAGE_PROMPT_TOKENS, USAGE_COMPLETION_TOKENS, 0))
    );
    assert!(reply.tool_calls.is_empty());
}

#[tokio::test]
async fn tool_call_split_every_one_to_seven_bytes_assembles_the_same_call() {
    let arguments = args();
    let bytes = sse_bytes(&tool_call_payloads(&[("call_abc", "read", &arguments)], 3));
    let script = (1..=7).map(|n| MockReply::sse_split(&bytes, n)).collect();
    let server = MockServer::start(script).await;
    let p = provider(&server);
    for n in 1..=7 {
        let (events, err) = run(&p).await;
        assert!(err.is_none(), "split {n}: {err:?}");
        let reply = done(&events);
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.tool_calls[0].id, "call_abc");
        assert_eq!(reply.tool_calls[0].name, "read");
        assert_eq!(reply.tool_calls[0].arguments, arguments, "split {n}");
        assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    }
    assert_eq!(server.request_count(), 7);
}

#[test]
fn decoder_gives_the_same_reply_for_every_split_position() {
    let arguments = args();
    let mut payloads = text_payloads("hi there", 3);
    payloads.splice(
        1..1,
        tool_call_payloads(&[("c1", "bash", &arguments)], 5)
            .into_iter()
            .take(3),
    );
    let bytes = sse_bytes(&payloads);
    let whole = Decoder::decode_all(&bytes).unwrap();
    let expected = done(&whole).clone();
    for a in 0..bytes.len() {
        for b in [a + 1, a + 2, bytes.len()] {
            let mut d = Decoder::new();
            let mut out = Vec::new();
            for part in split_at_positions(&bytes, &[a, b]) {
                d.feed(&part, &mut out).unwrap();
            }
            d.end().unwrap();
            assert_eq!(done(&out), &expected, "split at {a},{b}");
        }
    }
}

#[tokio::test]
async fn two_tool_calls_in_one_reply_keep_their_order() {
    let server = MockServer::start(vec![tool_calls_reply(
        &[
            ("call_1", "read", r#"{"path":"a.txt"}"#),
            ("call_2", "bash", r#"{"command":"ls -la"}"#),
        ],
        2,
    )])
    .await;
    let (events, err) = run(&provider(&server)).await;
    assert!(err.is_none(), "{err:?}");
    let calls = &done(&events).tool_calls;
    assert_eq!(
        calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["call_1", "call_2"]
    );
    assert_eq!(calls[0].arguments, r#"{"path":"a.txt"}"#);
    assert_eq!(calls[1].arguments, r#"{"command":"ls -la"}"#);
}

#[tokio::test]
async fn finish_reasons_are_typed_and_unknown_ones_kept_as_sent() {
    for (sent, expected) in [
        ("length", FinishReason::Length),
        ("content_filter", FinishReason::ContentFilter),
        ("abort", FinishReason::Other("abort".into())),
    ] {
        let chunks = vec![
            sse_event(&chunk_text("ok")),
            sse_event(&chunk_finish(sent)),
            b"data: [DONE]\n\n".to_vec(),
        ];
        let server = MockServer::start(vec![MockReply::sse(chunks)]).await;
        let (events, err) = run(&provider(&server)).await;
        assert!(err.is_none(), "{sent}: {err:?}");
        let reply = done(&events);
        assert_eq!(reply.finish_reason.as_ref(), Some(&expected), "{sent}");
        assert_eq!(expected.as_str(), sent);
    }
}

#[tokio::test]
async fn usage_sent_after_finish_reason_is_kept() {
    let chunks = vec![
        sse_event(&chunk_text("ok")),
        sse_event(&chunk_finish("stop")),
        b": keep-alive\n\n".to_vec(),
        sse_event(&chunk_usage(100, 20)),
        b"data: [DONE]\n\n".to_vec(),
    ];
    let server = MockServer::start(vec![
        MockReply::sse(chunks).with_delay(Duration::from_millis(20)),
    ])
    .await;
    let (events, err) = run(&provider(&server)).await;
    assert!(err.is_none(), "{err:?}");
    let reply = done(&events);
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 100,
            output_tokens: 20,
            total_tokens: 120,
            cached_tokens: None
        })
    );
}

#[tokio::test]
async fn stream_ending_before_done_is_an_error_and_yields_no_reply() {
    let mut bytes = sse_bytes(&tool_call_payloads(
        &[("c1", "bash", r#"{"command":"rm -rf x"}"#)],
        4,
    ));
    bytes.truncate(bytes.len() - b"data: [DONE]\n\n".len());
    let server = MockServer::start(vec![MockReply::sse(vec![bytes])]).await;
    let (events, err) = run(&provider(&server)).await;
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done(_))));
    match err {
        Some(ProviderError::Protocol(m)) => assert!(m.contains("[DONE]"), "{m}"),
        other => panic!("expected protocol error, got {other:?}"),
    }
    assert_eq!(
        server.request_count(),
        1,
        "a stream that started is never retried"
    );
}

#[tokio::test]
async fn malformed_chunk_json_is_a_protocol_error() {
    let chunks = vec![
        sse_event(&chunk_text("a")),
        b"data: {\"choices\": [\n\n".to_vec(),
        b"data: [DONE]\n\n".to_vec(),
    ];
    let server = MockServer::start(vec![MockReply::sse(chunks)]).await;
    let (events, err) = run(&provider(&server)).await;
    assert_eq!(text_of(&events), "a");
    assert!(
        matches!(&err, Some(ProviderError::Protocol(m)) if m.contains("malformed")),
        "{err:?}"
    );
}

#[tokio::test]
async fn crlf_cr_bom_comments_and_multiline_data_are_understood() {
    let stream = concat!(
        "\u{feff}: a comment\r\n",
        ":heartbeat\r\n\r\n",
        "event: message\r\n",
        "data: {\"choices\":[{\"index\":0,\r\n",
        "data: \"delta\":{\"content\":\"one \"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"two \"}}]}\r\r",
        "id: 7\n",
        "data:{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"ignored\"}},",
        "{\"index\":0,\"delta\":{\"content\":\"three\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\r\n\r\n",
    )
    .as_bytes();
    // Split right after every CR so that CR and LF land in different chunks.
    let cuts: Vec<usize> = stream
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\r')
        .map(|(i, _)| i + 1)
        .collect();
    let server = MockServer::start(vec![
        MockReply::sse(split_at_positions(stream, &cuts)),
        MockReply::sse(split_every(stream, 1)),
    ])
    .await;
    let p = provider(&server);
    for _ in 0..2 {
        let (events, err) = run(&p).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(done(&events).text, "one two three");
    }
}

#[test]
fn cr_then_lf_across_chunks_is_one_line_end() {
    let mut p = Parser::new();
    let mut seen = Vec::new();
    let mut on = |ev: minicode::provider::sse::SseEvent<'_>| {
        seen.push(ev.data.to_string());
        Ok(true)
    };
    for part in ["data: a\r", "\ndata: b\r", "\n\r", "\ndata: c\r", "\r"] {
        p.feed(part.as_bytes(), &mut on).unwrap();
    }
    assert_eq!(seen, ["a\nb", "c"]);
}

#[test]
fn oversized_event_is_refused_even_when_split() {
    let mut p = Parser::new();
    let mut on = |_: minicode::provider::sse::SseEvent<'_>| Ok(true);
    let piece = vec![b'a'; 1024 * 1024];
    p.feed(b"data: ", &mut on).unwrap();
    let mut result = Ok(());
    for _ in 0..=(MAX_EVENT_BYTES / piece.len()) {
        result = p.feed(&piece, &mut on);
        if result.is_err() {
            break;
        }
    }
    assert!(
        matches!(&result, Err(ProviderError::Protocol(m)) if m.contains("4 MiB")),
        "{result:?}"
    );
}

#[test]
fn tool_call_that_changes_its_id_is_a_protocol_error() {
    let mut payloads = tool_call_payloads(&[("call_1", "read", "{}")], 1);
    payloads.insert(
        1,
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_2"}]}}]}),
    );
    let err = Decoder::decode_all(&sse_bytes(&payloads)).unwrap_err();
    assert!(
        matches!(&err, ProviderError::Protocol(m) if m.contains("id")),
        "{err:?}"
    );
}

#[tokio::test]
async fn error_inside_the_stream_becomes_a_provider_error() {
    let chunks = vec![
        sse_event(&chunk_text("partial")),
        sse_event(&json!({"error": {"message": "model overloaded", "type": "server_error"}})),
    ];
    let server = MockServer::start(vec![MockReply::sse(chunks)]).await;
    let (_, err) = run(&provider(&server)).await;
    assert!(
        matches!(&err, Some(ProviderError::Server { message, .. }) if message == "model overloaded"),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn request_body_has_streaming_fields_tools_and_auth_but_no_strict() {
    let server = MockServer::start(vec![text_reply("ok", 2), text_reply("ok", 2)]).await;
    let p = provider(&server);
    let system = Message::system("be brief");
    let user = Message::user("list files");
    let messages = [&system, &user];
    let tools = [ToolSpec {
        name: "bash".into(),
        description: "run a command".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    }];
    let mut s = p.stream(&ChatRequest {
        messages: &messages,
        tools: &tools,
        max_tokens: 321,
        statuses: &[],
    });
    while s.next().await.is_some() {}
    drop(s);
    let mut s = p.stream(&ChatRequest {
        messages: &messages,
        tools: &[],
        max_tokens: 0,
        statuses: &[],
    });
    while s.next().await.is_some() {}

    let reqs = server.requests();
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body["model"], "mock-model");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(r.body["max_tokens"], 321);
    assert_eq!(
        r.body["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "list files"}])
    );
    assert_eq!(r.body["tools"][0]["type"], "function");
    assert_eq!(r.body["tools"][0]["function"]["name"], "bash");
    assert_eq!(
        r.body["tools"][0]["function"]["description"],
        "run a command"
    );
    assert_eq!(
        r.body["tools"][0]["function"]["parameters"]["required"],
        json!(["command"])
    );
    assert!(!r.raw_body.contains("strict"));

    let bare = reqs[1].body.as_object().unwrap();
    assert!(
        !bare.contains_key("tools") && !bare.contains_key("max_tokens"),
        "{bare:?}"
    );
    assert_eq!(
        server.connections_accepted(),
        1,
        "the connection is kept alive between calls"
    );
}

#[tokio::test]
async fn no_authorization_header_without_a_key() {
    let server = MockServer::start(vec![text_reply("ok", 2)]).await;
    let p = OpenAi::new(OpenAiOptions {
        base_url: format!("{}/", server.base_url()),
        model: "m".into(),
        ..OpenAiOptions::default()
    })
    .unwrap();
    let (_, err) = run(&p).await;
    assert!(err.is_none());
    let r = &server.requests()[0];
    assert_eq!(
        r.path, "/v1/chat/completions",
        "a trailing slash in base_url is trimmed"
    );
    assert_eq!(r.header("authorization"), None);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let slow = text_reply(&"x".repeat(200), 1).with_delay(Duration::from_millis(100));
    let server = MockServer::start(vec![slow]).await;
    let p = provider(&server);
    let user = Message::user("hi");
    let messages = [&user];
    let mut stream = p.stream(&ChatRequest {
        messages: &messages,
        tools: &[],
        max_tokens: 0,
        statuses: &[],
    });
    assert!(matches!(
        stream.next().await,
        Some(Ok(StreamEvent::Text(_)))
    ));
    assert_eq!(server.open_connections(), 1);
    drop(stream);
    assert!(
        wait_until(Duration::from_secs(10), || server.open_connections() == 0).await,
        "connection still open"
    );
}

#[tokio::test]
async fn silent_stream_times_out() {
    let server = MockServer::start(vec![MockReply::Stall]).await;
    let p = OpenAi::new(OpenAiOptions {
        base_url: server.base_url(),
        model: "m".into(),
        stream_idle_timeout: Duration::from_millis(300),
        ..OpenAiOptions::default()
    })
    .unwrap();
    let (_, err) = run(&p).await;
    assert!(matches!(err, Some(ProviderError::Timeout(_))), "{err:?}");
    assert_eq!(server.request_count(), 1);
}

/// The idle limit counts each silence on its own, however long the stream lasts: one timer
/// serves the whole body, and it must neither cut a stream that keeps arriving nor miss a
/// silence that starts late.
#[tokio::test]
async fn the_idle_limit_counts_each_silence_not_the_stream_length() {
    let idle = Duration::from_millis(400);
    // 12 pieces 100 ms apart: the stream lasts three times the idle limit.
    let text = "abcdefghijklmnopqrstuvwx";
    let steady = text_reply(text, 2).with_delay(Duration::from_millis(100));
    // Then a stream that sends its first pieces and falls silent.
    let payloads = text_payloads("hello", 1);
    let start = payloads[..3].iter().map(sse_event).collect();
    let silent = MockReply::endless(start, b": still here\n\n".to_vec(), Duration::from_secs(30));
    let server = MockServer::start(vec![steady, silent]).await;
    let p = crate::support::provider::provider_with(&server, |o| o.stream_idle_timeout = idle);
    let (events, err) = run(&p).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(done(&events).text, text);
    let started = std::time::Instant::now();
    let (events, err) = run(&p).await;
    assert!(matches!(err, Some(ProviderError::Timeout(_))), "{err:?}");
    assert_eq!(text_of(&events), "hel");
    assert!(started.elapsed() >= idle);
}

#[tokio::test]
async fn chat_returns_a_whole_reply_without_streaming() {
    let body = json!({
        "id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "let me look",
            "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 0}
    });
    let server = MockServer::start(vec![MockReply::json(200, &body)]).await;
    let p = provider(&server);
    let user = Message::user("hi");
    let reply = p
        .chat(&ChatRequest {
            messages: &[&user],
            tools: &[],
            max_tokens: 0,
            statuses: &[],
        })
        .await
        .unwrap();
    assert_eq!(reply.text, "let me look");
    assert_eq!(reply.tool_calls[0].name, "read");
    assert_eq!(reply.tool_calls[0].arguments, "{\"path\":\"a\"}");
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 5,
            output_tokens: 3,
            total_tokens: 8,
            cached_tokens: None
        })
    );
    let r = &server.requests()[0];
    assert_eq!(r.body["stream"], false);
    assert!(r.body.get("stream_options").is_none());
}

#[tokio::test]
async fn mock_server_serves_scripted_replies_over_one_keep_alive_connection() {
    let server =
        MockServer::start(vec![text_reply("hello world", 3), error_reply(401, "nope")]).await;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.base_url());
    let first = client.post(&url).body(r#"{"a":1}"#).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let text = first.text().await.unwrap();
    assert!(text.contains(r#""content":"hel""#), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"));
    let second = client.post(&url).body("x").send().await.unwrap();
    assert_eq!(second.status(), 401);
    let third = client.post(&url).body("x").send().await.unwrap();
    assert_eq!(third.status(), 500);
    assert!(third.text().await.unwrap().contains("script exhausted"));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].body["a"], 1);
    assert_eq!(server.connections_accepted(), 1);
}

#[test]
fn mock_server_in_thread_answers_blocking_clients() {
    let server = MockServer::start_in_thread(vec![MockReply::status(503, "busy")]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let status = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("{}/chat/completions", server.base_url()))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(status, 503);
    assert!(wait_until_blocking(Duration::from_secs(5), || server
        .request_count()
        == 1));
}

/// A mock server answering three requests with short texts.
async fn three_text_replies() -> MockServer {
    MockServer::start(vec![
        text_reply("one", 3),
        text_reply("two", 3),
        text_reply("three", 3),
    ])
    .await
}

/// The contents of the messages of recorded request `i`.
fn sent_contents(server: &MockServer, i: usize) -> Vec<String> {
    server.requests()[i].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn consecutive_requests_send_exactly_their_own_messages() {
    use crate::support::stream::run_messages;
    let server = three_text_replies().await;
    let p = provider(&server);
    let system = Message::system("sys");
    let first = Message::user("first question");
    let answer = Message::assistant(Some("an answer".into()), vec![]);
    let next = Message::user("next question");
    // Grown by one message: the earlier ones go out as before.
    assert!(
        run_messages(&p, &[&system, &first, &answer])
            .await
            .1
            .is_none()
    );
    assert!(
        run_messages(&p, &[&system, &first, &answer, &next])
            .await
            .1
            .is_none()
    );
    // A different message at a position encoded before (a compaction, another caller) is
    // sent as it is now, never as it was.
    let changed = Message::user("a summary instead");
    assert!(run_messages(&p, &[&system, &changed]).await.1.is_none());

    assert_eq!(
        sent_contents(&server, 0),
        ["sys", "first question", "an answer"]
    );
    assert_eq!(
        sent_contents(&server, 1),
        ["sys", "first question", "an answer", "next question"]
    );
    assert_eq!(sent_contents(&server, 2), ["sys", "a summary instead"]);
}

#[tokio::test]
async fn a_request_body_goes_out_whole_with_its_length_never_chunked() {
    use crate::support::stream::run_messages;
    let server = three_text_replies().await;
    let p = provider(&server);
    let system = Message::system("sys");
    let first = Message::user("first \"question\"\nwith a newline");
    let answer = Message::assistant(Some("an answer".into()), vec![]);
    // Grown, then cut back to a shorter prefix, then grown again: the cached array is cut
    // and extended, never sent stale or half-closed.
    for messages in [
        &[&system, &first, &answer][..],
        &[&system, &first][..],
        &[&system, &first, &answer][..],
    ] {
        assert!(run_messages(&p, messages).await.1.is_none());
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        let header = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header("transfer-encoding"), None);
        assert_eq!(header("content-length"), Some(r.raw_body.len().to_string()));
        assert!(r.body.is_object(), "{}", r.raw_body);
    }
    let expected = |texts: &[&str]| texts.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    let full = expected(&["sys", "first \"question\"\nwith a newline", "an answer"]);
    assert_eq!(sent_contents(&server, 0), full);
    assert_eq!(sent_contents(&server, 1), full[..2]);
    assert_eq!(sent_contents(&server, 2), full);
}
