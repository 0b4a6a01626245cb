//! A hostile or broken model server cannot hang or exhaust the agent: each test points the real
//! OpenAI-compatible client (or the agent, or the built binary) at the mock server over TCP and
//! makes the server misbehave — heartbeats forever, thousands of tool calls, huge names and ids,
//! endless lines and fields, errors inside a 200 stream, `[DONE]` with nothing before it,
//! redirects to another host, the key echoed where a message is cut.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::mock_openai::*;
use minicode::agent::Options;
use minicode::chat::Message;
use minicode::protocol::{Event, TurnEnd};
use minicode::provider::http_error::redact_prefix;
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::provider::sse::ReplyLimits;
use minicode::provider::{ChatRequest, Provider, ProviderError, StreamEvent};
use serde_json::{Value, json};

use crate::support::events::turn;
use crate::support::stream::run;

const KEY: &str = "sk-QX7h2Lm9Vb4Nc8Zr1Tw";

/// The client with the key, quick retries, and `tune` applied.
fn client(server: &MockServer, tune: impl FnOnce(&mut OpenAiOptions)) -> OpenAi {
    let mut opts = OpenAiOptions {
        base_url: server.base_url(),
        api_key: Some(KEY.into()),
        model: "mock-model".into(),
        retry_base_delay: Duration::from_millis(5),
        ..OpenAiOptions::default()
    };
    tune(&mut opts);
    OpenAi::new(opts).unwrap()
}

/// Streams one request against a single scripted reply and returns the events and the error.
async fn stream_one(
    reply: MockReply,
    tune: impl FnOnce(&mut OpenAiOptions),
) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let server = MockServer::start(vec![reply]).await;
    let out = run(&client(&server, tune)).await;
    assert_eq!(server.request_count(), 1, "never sent again");
    out
}

fn protocol_message(err: Option<ProviderError>) -> String {
    match err {
        Some(ProviderError::Protocol(m)) => m,
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

/// `n` tool calls named `name` with ids `id(i)` and `args`, as one SSE byte string.
fn many_calls(n: usize, id: impl Fn(usize) -> String, name: &str, args: &str) -> Vec<u8> {
    let ids: Vec<String> = (0..n).map(id).collect();
    let calls: Vec<(&str, &str, &str)> = ids.iter().map(|i| (i.as_str(), name, args)).collect();
    sse_bytes(&tool_call_payloads(&calls, usize::MAX))
}

// ---- time: the request deadline ----

#[tokio::test]
async fn heartbeats_forever_fail_at_the_request_deadline_not_never() {
    let comment = b": keep-alive\n\n".to_vec();
    let empty_chunk = sse_event(&json!({"choices": []}));
    for heartbeat in [comment, empty_chunk] {
        let started_at = Instant::now();
        let reply = MockReply::endless(
            vec![sse_event(&chunk_text("thinking"))],
            heartbeat,
            Duration::from_millis(5),
        );
        let (events, err) = stream_one(reply, |o| {
            o.request_timeout = Duration::from_millis(800);
            o.stream_idle_timeout = Duration::from_secs(20);
        })
        .await;
        let elapsed = started_at.elapsed();
        assert!(
            matches!(&err, Some(ProviderError::Timeout(m)) if m.contains("request deadline")),
            "{err:?}"
        );
        assert!(
            elapsed >= Duration::from_millis(800) && elapsed < Duration::from_secs(10),
            "{elapsed:?}"
        );
        assert_eq!(events, [StreamEvent::Text("thinking".into())]);
    }
}

#[tokio::test]
async fn the_deadline_also_bounds_a_server_that_never_answers() {
    let started_at = Instant::now();
    let (_, err) = stream_one(MockReply::Stall, |o| {
        o.request_timeout = Duration::from_millis(500);
        o.stream_idle_timeout = Duration::from_secs(20);
    })
    .await;
    assert!(matches!(err, Some(ProviderError::Timeout(_))), "{err:?}");
    assert!(started_at.elapsed() < Duration::from_secs(10));
}

// ---- memory: tool calls, names, ids, the reply limit ----

#[tokio::test]
async fn ten_thousand_tool_calls_are_refused_past_the_cap_of_64() {
    let bytes = many_calls(10_000, |i| format!("call_{i}"), "read", "{}");
    let (events, err) = stream_one(MockReply::sse_split(&bytes, 64 * 1024), |_| {}).await;
    let message = protocol_message(err);
    assert!(message.contains("more than 64 tool calls"), "{message}");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done(_))));
}

#[tokio::test]
async fn the_tool_call_cap_is_configurable() {
    let three = many_calls(3, |i| format!("c{i}"), "read", "{}");
    let (events, err) = stream_one(MockReply::sse(vec![three.clone()]), |o| {
        o.limits.max_tool_calls = 3;
    })
    .await;
    assert!(err.is_none(), "{err:?}");
    assert!(matches!(events.last(), Some(StreamEvent::Done(r)) if r.tool_calls.len() == 3));
    let (_, err) = stream_one(MockReply::sse(vec![three]), |o| {
        o.limits.max_tool_calls = 2;
    })
    .await;
    assert!(protocol_message(err).contains("more than 2 tool calls"));
}

#[tokio::test]
async fn tool_call_names_of_a_megabyte_are_refused() {
    let name = "n".repeat(1024 * 1024);
    let bytes = many_calls(3, |i| format!("c{i}"), &name, "{}");
    let (events, err) = stream_one(MockReply::sse_split(&bytes, 64 * 1024), |_| {}).await;
    let message = protocol_message(err);
    assert!(message.contains("name longer than 256 bytes"), "{message}");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done(_))));
}

#[tokio::test]
async fn tool_call_ids_over_256_bytes_are_refused_and_256_are_accepted() {
    let ok = many_calls(1, |_| "i".repeat(256), &"n".repeat(256), "{}");
    let (events, err) = stream_one(MockReply::sse(vec![ok]), |_| {}).await;
    assert!(err.is_none(), "{err:?}");
    assert!(matches!(events.last(), Some(StreamEvent::Done(r)) if r.tool_calls[0].id.len() == 256));
    let long = many_calls(1, |_| "i".repeat(257), "read", "{}");
    let (_, err) = stream_one(MockReply::sse(vec![long]), |_| {}).await;
    let message = protocol_message(err);
    assert!(message.contains("id longer than 256 bytes"), "{message}");
}

#[tokio::test]
async fn ids_and_names_count_toward_the_reply_limit() {
    // 1,000 calls: the arguments alone (700 kB) fit in 1 MiB, with ids and names they do not.
    let args = format!("{{\"path\":\"{}\"}}", "p".repeat(690));
    let bytes = many_calls(1000, |i| format!("{i:0>200}"), &"n".repeat(200), &args);
    let limits = |o: &mut OpenAiOptions| {
        o.limits = ReplyLimits {
            max_bytes: 1024 * 1024,
            max_tool_calls: 10_000,
        };
    };
    let (_, err) = stream_one(MockReply::sse_split(&bytes, 64 * 1024), limits).await;
    let message = protocol_message(err);
    assert!(message.contains("reply larger than 1 MiB"), "{message}");
}

#[tokio::test]
async fn a_reply_over_32_mib_made_of_many_tool_calls_is_refused() {
    // 2,100 calls of ~16 kB each: 34 MB in all, every call well under the event limit.
    let args = format!("{{\"content\":\"{}\"}}", "x".repeat(16_000));
    let bytes = many_calls(2100, |i| format!("call_{i}"), "write", &args);
    let (events, err) = stream_one(MockReply::sse_split(&bytes, 256 * 1024), |o| {
        o.limits.max_tool_calls = 5000;
    })
    .await;
    let message = protocol_message(err);
    assert!(message.contains("reply larger than 32 MiB"), "{message}");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done(_))));
}

#[tokio::test]
async fn reasoning_counts_toward_the_reply_limit() {
    let thought =
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "r".repeat(60_000)}}]});
    let reply = MockReply::endless(Vec::new(), sse_event(&thought), Duration::ZERO);
    let (_, err) = stream_one(reply, |o| {
        o.limits.max_bytes = 1024 * 1024;
    })
    .await;
    assert!(protocol_message(err).contains("reply larger than 1 MiB"));
}

/// Every way a stream can try to make the parser buffer without end is refused at the 4 MiB
/// event limit, long before the deadline.
#[tokio::test]
async fn endless_lines_and_fields_are_refused_at_the_event_limit() {
    let block = |unit: &str| unit.repeat(64 * 1024 / unit.len());
    let cases: Vec<(&str, Vec<Vec<u8>>, String)> = vec![
        ("a line with no end", vec![b"data: ".to_vec()], block("a")),
        (
            "an event field of gigabytes",
            vec![b"event: ".to_vec()],
            block("e"),
        ),
        (
            "an id field of gigabytes",
            vec![b"id: ".to_vec()],
            block("i"),
        ),
        ("a comment of gigabytes", vec![b": ".to_vec()], block("c")),
        ("many tiny data lines", Vec::new(), block("data: x\n")),
        (
            "one data line per chunk, no blank line",
            Vec::new(),
            format!("data: {}\n", "d".repeat(60_000)),
        ),
    ];
    for (what, first, repeat) in cases {
        let reply = MockReply::endless(first, repeat, Duration::ZERO);
        let (events, err) = stream_one(reply, |o| {
            o.request_timeout = Duration::from_secs(60);
        })
        .await;
        assert!(events.is_empty(), "{what}: {events:?}");
        assert!(
            matches!(&err, Some(ProviderError::Protocol(m)) if m.contains("4 MiB")),
            "{what}: {err:?}"
        );
    }
}

// ---- errors inside a 200 stream ----

#[tokio::test]
async fn errors_inside_a_200_stream_keep_the_server_message_and_are_classified() {
    let nested = json!({"error": {"message": "Rate limit reached for requests", "type": "tokens",
        "code": "rate_limit_exceeded"}});
    let plain = json!({"error": "upstream model crashed"});
    let vllm_context = json!({"object": "error", "type": "BadRequestError", "param": null,
        "code": 400, "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."});
    let vllm_missing = json!({"object": "error", "type": "NotFoundError", "code": 404,
        "message": "The model `mock-model` does not exist."});
    for (payload, check) in [
        (
            nested,
            (|e: &ProviderError| matches!(e, ProviderError::RateLimited { message, .. } if message == "Rate limit reached for requests"))
                as fn(&ProviderError) -> bool,
        ),
        (
            plain,
            |e| matches!(e, ProviderError::Server { status: 500, message, .. } if message == "upstream model crashed"),
        ),
        (
            vllm_context,
            |e| matches!(e, ProviderError::ContextLength { window: Some(4096), message } if message.starts_with("This model's maximum context length")),
        ),
        (
            vllm_missing,
            |e| matches!(e, ProviderError::Request { status: 404, message } if message.contains("does not exist")),
        ),
    ] {
        let chunks = vec![sse_event(&chunk_text("partial ")), sse_event(&payload)];
        let (events, err) = stream_one(MockReply::sse(chunks), |_| {}).await;
        let err = err.expect("an error");
        assert!(check(&err), "{payload}: {err:?}");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::Retrying { .. })),
            "no retry once the stream began"
        );
    }
}

#[tokio::test]
async fn an_error_event_with_an_overloaded_type_is_a_server_error() {
    let chunks = vec![
        b"event: error\ndata: {\"error\":{\"message\":\"overloaded, try later\",\"type\":\"overloaded_error\"}}\n\n"
            .to_vec(),
    ];
    let (_, err) = stream_one(MockReply::sse(chunks), |_| {}).await;
    assert!(
        matches!(&err, Some(ProviderError::Server { status: 503, message, .. }) if message == "overloaded, try later"),
        "{err:?}"
    );
}

/// vLLM's context-length error inside a 200 stream, on a history compaction cannot shorten
/// (one short prompt): the turn fails quoting the server's message beside our explanation.
#[tokio::test]
async fn an_in_stream_context_length_error_compaction_cannot_help_quotes_the_server() {
    let said = "This model's maximum context length is 8192 tokens. However, you requested \
                9000 tokens (8000 in the messages, 1000 in the completion).";
    let overflow = json!({"object": "error", "message": said, "type": "BadRequestError",
        "code": 400});
    let server = MockServer::start(vec![MockReply::sse(vec![sse_event(&overflow)])]).await;
    let dir = tempfile::tempdir().unwrap();
    let provider = client(&server, |_| {});
    let options = Options {
        context_window: 8192,
        ..Options::default()
    };
    let mut handle = crate::support::agent::spawn(dir.path(), provider, options);
    let (events, end, _) = turn(&mut handle, "hello").await;
    let TurnEnd::Failed { error } = end else {
        panic!("{end:?} {events:?}");
    };
    assert!(error.contains("nothing to compact"), "{error}");
    assert!(error.contains(said), "{error}");
    assert_eq!(server.request_count(), 1, "nothing was sent again");
}

/// A context-length error delivered inside a 200 stream makes the agent compact and send the
/// request again, exactly as a 400 does.
#[tokio::test]
async fn an_in_stream_context_length_error_starts_overflow_recovery() {
    let overflow = json!({"object": "error", "type": "BadRequestError", "code": 400,
        "message": "This model's maximum context length is 6000 tokens. However, you requested 9000 tokens."});
    let summary = json!({"id": "s", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": "## Goal\nport the parser"}, "finish_reason": "stop"}]});
    let server = MockServer::start(vec![
        text_reply(&"a".repeat(12_000), 4000),
        MockReply::sse(vec![sse_event(&overflow)]),
        MockReply::json(200, &summary),
        text_reply("done after compaction", 5),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let provider = client(&server, |_| {});
    let mut handle = crate::support::agent::spawn(
        dir.path(),
        provider,
        Options {
            context_window: 8192,
            auto_approve: true,
            ..Options::default()
        },
    );
    let (_, end, _) = turn(&mut handle, "First request: port the parser to Rust.").await;
    assert_eq!(end, TurnEnd::Completed);
    let (events, end, _) = turn(&mut handle, "second").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Warning { message } if message.contains("6000")))
    );
    // The window the server named is reported with its source.
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ContextWindowSet {
            tokens: 6000,
            source: minicode::protocol::WindowSource::ServerError
        }
    )));
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[2].body["stream"], false, "the summary call");
    assert_eq!(requests[3].body["stream"], true, "the same request again");
    assert!(requests[3].raw_body.contains("port the parser"));
}

// ---- redirects and headers ----

#[tokio::test]
async fn redirects_are_not_followed_and_name_only_the_host() {
    for status in [301, 302, 303, 307, 308] {
        let elsewhere = MockServer::start(vec![text_reply("stolen", 2)]).await;
        let target = format!("{}/chat/completions?token=tok-LEAKME", elsewhere.base_url());
        let port = target
            .trim_start_matches("http://127.0.0.1:")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let first = MockServer::start(vec![
            MockReply::status(status, "").with_header("location", &target),
        ])
        .await;
        let (_, err) = run(&client(&first, |_| {})).await;
        let err = err.expect("a redirect is an error");
        let text = err.to_string();
        assert!(
            matches!(&err, ProviderError::Request { status: s, .. } if *s == status),
            "{err:?}"
        );
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        assert!(!text.contains("LEAKME") && !text.contains("/v1"), "{text}");
        assert_eq!(first.request_count(), 1, "not retried");
        assert_eq!(elsewhere.request_count(), 0, "the other host got nothing");
    }
}

#[tokio::test]
async fn requests_carry_the_minicode_user_agent() {
    let completion = json!({"choices": [{"index": 0, "message": {"content": "ok"}}]});
    let server =
        MockServer::start(vec![text_reply("ok", 2), MockReply::json(200, &completion)]).await;
    let p = client(&server, |_| {});
    let (_, err) = run(&p).await;
    assert!(err.is_none(), "{err:?}");
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
    assert_eq!(reply.text, "ok");
    let expected = format!("minicode/{}", env!("CARGO_PKG_VERSION"));
    for request in server.requests() {
        assert_eq!(request.header("user-agent"), Some(expected.as_str()));
    }
}

// ---- the key in error text ----

/// No piece of the key (4 characters or more) survives anywhere in the error.
fn assert_no_key_piece(text: &str) {
    for len in 4..=KEY.len() {
        for start in 0..=KEY.len() - len {
            let piece = &KEY[start..start + len];
            assert!(!text.contains(piece), "{piece:?} survived in {text:?}");
        }
    }
}

#[tokio::test]
async fn the_key_in_an_error_body_is_redacted_even_where_the_message_is_cut() {
    let filler = |n: usize| "z".repeat(n);
    // The excerpt of a non-JSON body stops at 200 characters: the key straddles it.
    let html = format!("<html>{}{KEY} and more</html>", filler(190));
    // A JSON message stops at 1000 characters: the key straddles that too.
    let nested =
        json!({"error": {"message": format!("{}{KEY} tail", filler(995)), "type": "server_error"}});
    let cases = [
        MockReply::status(401, html).with_header("content-type", "text/html"),
        MockReply::json(500, &nested),
        MockReply::json(401, &json!({"error": format!("{}{KEY}", filler(997))})),
    ];
    for reply in cases {
        let (_, err) = stream_one(reply, |o| o.max_attempts = 1).await;
        let err = err.expect("an error");
        assert_no_key_piece(&err.to_string());
        assert_no_key_piece(&format!("{err:?}"));
    }
    // The same inside a 200 stream.
    let chunks = vec![sse_event(&nested)];
    let (_, err) = stream_one(MockReply::sse(chunks), |_| {}).await;
    let err = err.expect("an error");
    assert!(matches!(err, ProviderError::Server { .. }), "{err:?}");
    assert_no_key_piece(&err.to_string());
}

#[test]
fn a_key_straddling_the_read_cap_of_an_error_body_is_replaced_whole() {
    let mut body = vec![b'z'; 100];
    body.extend_from_slice(KEY.as_bytes());
    body.extend_from_slice(b" rest");
    for keep in [95, 100, 101, 110, 100 + KEY.len() - 1, 100 + KEY.len()] {
        let out = String::from_utf8(redact_prefix(&body, Some(KEY), keep)).unwrap();
        assert_no_key_piece(&out);
        assert!(out.len() <= keep.max(100 + "[redacted]".len()), "{out}");
        if keep > 100 {
            assert!(out.ends_with("[redacted]"), "{keep}: {out}");
        }
    }
}

// ---- an empty reply, through the binary ----

/// Runs the one-shot binary in a fresh workspace configured for `server`.
fn one_shot(server: &MockServer, extra_config: &str, args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), server, extra_config);
    let out = crate::support::binary::command(dir.path())
        .args(args)
        .output()
        .unwrap();
    (out, dir)
}

/// The server goes into the user's own config (under the test's HOME), which needs no trust.
fn write_config(dir: &Path, server: &MockServer, extra: &str) {
    let file = crate::support::user_config::path(&dir.join("home"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n{extra}",
        server.base_url()
    );
    std::fs::write(file, config).unwrap();
}

#[test]
fn done_alone_or_reasoning_alone_fails_the_one_shot_turn() {
    let reasoning_only = sse_bytes(&[
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "hmm, let me think"}}]}),
        chunk_finish("length"),
    ]);
    let server = MockServer::start_in_thread(vec![
        MockReply::sse(vec![b"data: [DONE]\n\n".to_vec()]),
        MockReply::sse(vec![b"data: [DONE]\n\n".to_vec()]),
        MockReply::sse(vec![reasoning_only]),
    ]);
    let (out, dir) = one_shot(&server, "", &["hello"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("failed: the model returned an empty reply"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    // Nothing empty is kept: the session holds the prompt alone.
    let sessions: Vec<_> = std::fs::read_dir(dir.path().join(".minicode/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    let session: Value =
        serde_json::from_str(&std::fs::read_to_string(&sessions[0]).unwrap()).unwrap();
    let roles: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user"]);

    let (out, _dir) = one_shot(&server, "", &["--output-format", "json", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["status"], "failed");
    assert_eq!(value["error"], "the model returned an empty reply");
    assert_eq!(value["result"], "");

    let (out, _dir) = one_shot(&server, "", &["hello"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(
            "the model returned only reasoning, with no answer and no tool call (finish_reason: length)"
        ),
        "reasoning alone is reported as such: {stderr}"
    );
}

#[test]
fn the_configured_deadline_and_tool_call_cap_reach_the_binary() {
    let server = MockServer::start_in_thread(vec![
        MockReply::endless(Vec::new(), b": ping\n\n".to_vec(), Duration::from_millis(5)),
        tool_calls_reply(
            &[
                ("a", "read", "{}"),
                ("b", "read", "{}"),
                ("c", "read", "{}"),
            ],
            10,
        ),
    ]);
    let started_at = Instant::now();
    let (out, _dir) = one_shot(&server, "request_timeout_secs = 1\n", &["hello"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("request deadline of 1 s"), "{stderr}");
    assert!(started_at.elapsed() < Duration::from_secs(20));
    let (out, _dir) = one_shot(&server, "max_tool_calls = 2\n", &["hello"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("more than 2 tool calls"), "{stderr}");
}

#[test]
fn the_client_defaults_are_the_shared_defaults() {
    use minicode::defaults;
    let options = OpenAiOptions::default();
    assert_eq!(options.request_timeout, defaults::REQUEST_TIMEOUT);
    assert_eq!(options.stream_idle_timeout, defaults::STREAM_IDLE_TIMEOUT);
    assert_eq!(options.limits.max_tool_calls, defaults::MAX_TOOL_CALLS);
    assert_eq!(options.max_attempts, defaults::RETRY_ATTEMPTS);
}

#[tokio::test]
async fn debug_output_of_the_client_never_shows_the_key() {
    let server = MockServer::start(Vec::new()).await;
    let p = client(&server, |_| {});
    let opts = OpenAiOptions {
        api_key: Some(KEY.into()),
        ..OpenAiOptions::default()
    };
    for text in [format!("{p:?}"), format!("{opts:?}")] {
        assert_no_key_piece(&text);
        assert!(text.contains("***"), "{text}");
    }
}
