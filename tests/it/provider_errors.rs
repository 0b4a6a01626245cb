//! Error answers and retries of the OpenAI-compatible provider against the mock server: body
//! shapes, status classes, context-length wordings, Retry-After, backoff limits, broken
//! connections, and the API key never leaking into error text.

use std::time::Duration;

use crate::support::mock_openai::*;
use minicode::chat::Message;
use minicode::provider::http_error::{error_from_response, parse_retry_after};
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::provider::retry::Policy;
use minicode::provider::{ChatRequest, Provider, ProviderError, StreamEvent};
use serde_json::json;

const KEY: &str = "sk-test-secret-0123456789";

fn provider_with(server_url: String, max_attempts: u32) -> OpenAi {
    OpenAi::new(OpenAiOptions {
        base_url: server_url,
        api_key: Some(KEY.into()),
        model: "mock-model".into(),
        max_attempts,
        retry_base_delay: Duration::from_millis(5),
        ..OpenAiOptions::default()
    })
    .unwrap()
}

fn provider(server: &MockServer) -> OpenAi {
    provider_with(server.base_url(), 4)
}

use crate::support::stream::run;

fn retries(events: &[StreamEvent]) -> Vec<(u32, u32, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                ..
            } => Some((*attempt, *max_attempts, *delay_ms)),
            _ => None,
        })
        .collect()
}

/// Runs one scripted error answer and returns the error, checking it was not retried.
async fn error_for(reply: MockReply) -> ProviderError {
    let server = MockServer::start(vec![reply]).await;
    let (events, err) = run(&provider(&server)).await;
    assert!(retries(&events).is_empty(), "{events:?}");
    assert_eq!(server.request_count(), 1);
    let err = err.expect("an error");
    assert!(!err.to_string().contains(KEY), "key leaked: {err}");
    err
}

#[tokio::test]
async fn unauthorized_with_nested_body_is_auth_and_never_shows_the_key() {
    let err = error_for(error_reply(
        401,
        &format!("Incorrect API key provided: {KEY}."),
    ))
    .await;
    match &err {
        ProviderError::Auth {
            status: 401,
            message,
        } => {
            assert!(
                message.starts_with("Incorrect API key provided"),
                "{message}"
            );
            assert!(message.contains("[redacted]"), "{message}");
        }
        other => panic!("expected auth error, got {other:?}"),
    }
}

#[tokio::test]
async fn unauthorized_with_flat_body_keeps_its_message() {
    let flat = MockReply::json(
        401,
        &json!({"message": "token expired", "type": "auth_error"}),
    );
    let err = error_for(flat).await;
    assert_eq!(
        err,
        ProviderError::Auth {
            status: 401,
            message: "token expired".into()
        }
    );
    let text = MockReply::json(403, &json!({"error": "forbidden for this model"}));
    let err = error_for(text).await;
    assert_eq!(
        err,
        ProviderError::Auth {
            status: 403,
            message: "forbidden for this model".into()
        }
    );
}

#[tokio::test]
async fn unauthorized_with_html_body_keeps_status_and_a_short_clean_excerpt() {
    let html = format!(
        "<html>\r\n<head><title>401 Authorization Required</title></head>\n<body>\t{KEY} {}</body></html>",
        "padding ".repeat(100)
    );
    let err =
        error_for(MockReply::status(401, html).with_header("content-type", "text/html")).await;
    let ProviderError::Auth {
        status: 401,
        message,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(
        message.starts_with("<html> <head><title>401 Authorization Required"),
        "{message}"
    );
    assert!(
        message.chars().count() <= 201,
        "{} chars",
        message.chars().count()
    );
    assert!(!message.chars().any(char::is_control), "{message:?}");
}

#[tokio::test]
async fn rate_limit_then_success_is_retried_and_announced() {
    let server = MockServer::start(vec![
        error_reply(429, "slow down").with_header("retry-after", "0"),
        text_reply("finally", 3),
    ])
    .await;
    let (events, err) = run(&provider(&server)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(retries(&events), [(1, 4, 0)]);
    assert!(
        matches!(&events[0], StreamEvent::Retrying { reason, .. } if reason.contains("slow down"))
    );
    assert!(matches!(events.last(), Some(StreamEvent::Done(r)) if r.text == "finally"));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body, reqs[1].body, "the same request is sent again");
}

#[tokio::test]
async fn exhausted_quota_is_not_retried() {
    let body = json!({"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "code": "insufficient_quota"}});
    let err = error_for(MockReply::json(429, &body).with_header("retry-after", "1")).await;
    assert!(
        matches!(
            err,
            ProviderError::RateLimited {
                quota_exhausted: true,
                retry_after_ms: Some(1000),
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn server_errors_are_retried_up_to_max_attempts_then_reported() {
    let server = MockServer::start(vec![
        error_reply(500, "boom 1"),
        error_reply(502, "boom 2"),
        error_reply(503, "boom 3"),
        text_reply("never reached", 2),
    ])
    .await;
    let (events, err) = run(&provider_with(server.base_url(), 3)).await;
    let attempts: Vec<u32> = retries(&events).iter().map(|r| r.0).collect();
    assert_eq!(attempts, [1, 2]);
    assert!(retries(&events).iter().all(|r| r.1 == 3));
    assert!(
        matches!(&err, Some(ProviderError::Server { status: 503, message, .. }) if message == "boom 3"),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let err = error_for(error_reply(400, "bad tool schema")).await;
    assert_eq!(
        err,
        ProviderError::Request {
            status: 400,
            message: "bad tool schema".into()
        }
    );
}

#[tokio::test]
async fn context_overflow_is_recognised_in_openai_llama_cpp_and_vllm_wordings() {
    let openai = json!({"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let llama = json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}});
    let vllm = json!({"object": "error", "type": "BadRequestError", "param": null, "code": 400,
        "message": "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the messages, 1000 in the completion)."});
    for (body, window) in [(openai, 128_000), (llama, 4096), (vllm, 32_768)] {
        let err = error_for(MockReply::json(400, &body)).await;
        assert!(
            matches!(err, ProviderError::ContextLength { window: Some(w), .. } if w == window),
            "{err:?}"
        );
    }
    let no_number = error_from_response(
        400,
        None,
        br#"{"error":{"message":"context length exceeded"}}"#,
        None,
    );
    assert!(
        matches!(no_number, ProviderError::ContextLength { window: None, .. }),
        "{no_number:?}"
    );
}

#[tokio::test]
async fn oversized_event_from_the_server_is_refused() {
    let mut body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec();
    body.extend(std::iter::repeat_n(b'a', 4 * 1024 * 1024 + 10));
    body.extend_from_slice(b"\"}}]}\n\ndata: [DONE]\n\n");
    let server = MockServer::start(vec![MockReply::sse_split(&body, 64 * 1024)]).await;
    let (events, err) = run(&provider(&server)).await;
    assert!(events.is_empty(), "{} events", events.len());
    assert!(
        matches!(&err, Some(ProviderError::Protocol(m)) if m.contains("4 MiB")),
        "{err:?}"
    );
}

fn announced_a_retry(events: &[StreamEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, StreamEvent::Retrying { .. }))
}

#[tokio::test]
async fn a_connection_closed_without_an_answer_is_sent_again_at_once_unannounced() {
    let server = MockServer::start(vec![MockReply::DropBeforeAnswer, text_reply("ok", 1)]).await;
    let (events, err) = run(&provider(&server)).await;
    assert!(err.is_none(), "{err:?}");
    assert!(!announced_a_retry(&events), "{events:?}");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_second_close_without_an_answer_is_an_announced_retry() {
    let server = MockServer::start(vec![
        MockReply::DropBeforeAnswer,
        MockReply::DropBeforeAnswer,
        text_reply("ok", 1),
    ])
    .await;
    let (events, err) = run(&provider(&server)).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        matches!(&events[0], StreamEvent::Retrying { attempt: 1, reason, .. } if reason == CLOSED),
        "{events:?}"
    );
    assert_eq!(server.request_count(), 3);
}

/// What a close without an answer is called, in a retry notice and in the final error.
const CLOSED: &str = "the server closed the connection without answering";

#[tokio::test]
async fn a_server_closing_every_connection_gets_one_resend_per_call_and_retries_counted_from_one() {
    let server = MockServer::start(vec![]).await;
    server.respond_with(|_| Some(MockReply::DropBeforeAnswer));
    let (events, err) = run(&provider(&server)).await;
    // 4 attempts and the one unannounced resend of the whole call.
    assert_eq!(server.request_count(), 5);
    let announced: Vec<(u32, u32)> = retries(&events).iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(announced, [(1, 4), (2, 4), (3, 4)], "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| matches!(e, StreamEvent::Retrying { reason, .. } if reason == CLOSED)),
        "{events:?}"
    );
    let err = err.expect("an error");
    assert!(matches!(err, ProviderError::Closed), "{err:?}");
    assert_eq!(err.to_string(), CLOSED);
}

/// llama.cpp's server closes a connection after a streamed answer although it announced
/// keep-alive: the next request may go out on that connection and meet the close.
#[tokio::test]
async fn a_keep_alive_connection_the_server_dropped_costs_no_retry() {
    let server = MockServer::start(vec![
        text_reply("one", 2),
        MockReply::DropBeforeAnswer,
        text_reply("two", 2),
    ])
    .await;
    let p = provider(&server);
    let (_, err) = run(&p).await;
    assert!(err.is_none(), "{err:?}");
    let (events, err) = run(&p).await;
    assert!(err.is_none(), "{err:?}");
    assert!(!announced_a_retry(&events), "{events:?}");
    assert_eq!(server.request_count(), 3);
    // The second request went out on the first connection, the third on a new one.
    assert_eq!(server.connections_accepted(), 2);
}

#[tokio::test]
async fn connection_dropped_mid_stream_is_a_network_error_and_not_retried() {
    let bytes = sse_bytes(&text_payloads("some text that breaks off", 2));
    let server = MockServer::start(vec![
        MockReply::DropAfter {
            body: bytes,
            after: 150,
        },
        text_reply("no", 1),
    ])
    .await;
    let (events, err) = run(&provider(&server)).await;
    assert!(matches!(err, Some(ProviderError::Network(_))), "{err:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Done(_) | StreamEvent::Retrying { .. }))
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn unreachable_server_fails_with_connect_after_retries() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = provider_with(format!("http://127.0.0.1:{port}/v1"), 2);
    let (events, err) = run(&p).await;
    assert_eq!(retries(&events).len(), 1);
    assert!(
        matches!(&err, Some(ProviderError::Connect(m)) if m.contains("refused")),
        "{err:?}"
    );
}

#[tokio::test]
async fn non_streaming_chat_maps_errors_and_times_out() {
    let server = MockServer::start(vec![error_reply(401, "bad key"), MockReply::Stall]).await;
    let p = OpenAi::new(OpenAiOptions {
        base_url: server.base_url(),
        model: "m".into(),
        request_timeout: Duration::from_millis(300),
        ..OpenAiOptions::default()
    })
    .unwrap();
    let user = Message::user("hi");
    let request = ChatRequest {
        messages: &[&user],
        tools: &[],
        max_tokens: 0,
        statuses: &[],
    };
    assert!(matches!(
        p.chat(&request).await,
        Err(ProviderError::Auth { status: 401, .. })
    ));
    assert!(matches!(
        p.chat(&request).await,
        Err(ProviderError::Timeout(_))
    ));
}

#[test]
fn invalid_base_url_or_key_is_refused_without_echoing_the_key() {
    let bad_url = OpenAi::new(OpenAiOptions {
        base_url: "localhost:8080".into(),
        ..OpenAiOptions::default()
    });
    assert!(bad_url.is_err());
    let bad_key = OpenAi::new(OpenAiOptions {
        base_url: "http://127.0.0.1:1/v1".into(),
        api_key: Some("sk-abc\ndef".into()),
        ..OpenAiOptions::default()
    });
    let err = bad_key.unwrap_err().to_string();
    assert!(!err.contains("sk-abc"), "{err}");
}

#[test]
fn retry_after_accepts_seconds_and_http_dates() {
    assert_eq!(parse_retry_after("2"), Some(2000));
    assert_eq!(parse_retry_after(" 0.5 "), Some(500));
    assert_eq!(
        parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
        Some(0),
        "a past date means now"
    );
    let future = parse_retry_after("Fri, 01 Jan 2100 00:00:00 GMT").unwrap();
    assert!(future > 365 * 24 * 3600 * 1000);
    assert_eq!(parse_retry_after("soon"), None);
    assert_eq!(parse_retry_after("-3"), None);
}

#[test]
fn backoff_doubles_with_jitter_and_caps_retry_after() {
    let policy = Policy::default();
    for _ in 0..50 {
        let first = policy.delay(1, None);
        assert!(
            first >= Duration::from_millis(375) && first <= Duration::from_millis(625),
            "{first:?}"
        );
        let third = policy.delay(3, None);
        assert!(
            third >= Duration::from_millis(1500) && third <= Duration::from_millis(2500),
            "{third:?}"
        );
    }
    assert_eq!(policy.delay(1, Some(3_600_000)), Duration::from_secs(60));
    assert_eq!(policy.delay(1, Some(1200)), Duration::from_millis(1200));
}
