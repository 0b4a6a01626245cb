//! Parameters a server refuses, learned from its own 400 answer once and then remembered
//! (in memory, and in the cache for the next run); servers and models without tool support
//! and `--no-tools`.

use std::path::Path;

use crate::support::agent::spawn;
use crate::support::binary::{command, write_config};
use crate::support::events::run_turn;
use crate::support::mock_openai::*;
use futures_util::StreamExt;
use minicode::agent::Options;
use minicode::chat::{Message, ToolSpec};
use minicode::protocol::TurnEnd;
use minicode::provider::compat::TokenLimit;
use minicode::provider::openai::{Extras, OpenAi};
use minicode::provider::{ChatRequest, EventStream, Provider, ProviderError, StreamEvent};
use serde_json::{Value, json};

fn provider(server: &MockServer, cache: Option<&Path>) -> OpenAi {
    crate::support::provider::provider_with(server, |o| o.cache_dir = cache.map(Path::to_path_buf))
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "ping".into(),
        description: "ping".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }]
}

async fn drain(mut s: EventStream) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut events = Vec::new();
    while let Some(item) = s.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

async fn ask(p: &OpenAi, extras: Extras) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let user = Message::user("hi");
    let messages = [&user];
    let tools = tools();
    let request = ChatRequest {
        messages: &messages,
        tools: &tools,
        max_tokens: 100,
        statuses: &[],
    };
    drain(p.stream_with(&request, extras)).await
}

fn refusal(message: &str) -> MockReply {
    MockReply::json(
        400,
        &json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "unsupported_parameter"}}),
    )
}

fn retries(events: &[StreamEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                delay_ms, reason, ..
            } => Some((*delay_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

fn keys(body: &Value) -> Vec<String> {
    body.as_object().unwrap().keys().cloned().collect()
}

#[tokio::test]
async fn a_refused_max_tokens_becomes_max_completion_tokens_and_is_remembered() {
    let cache = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        refusal("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."),
        text_reply("ok", 2),
        text_reply("again", 2),
        text_reply("next run", 2),
    ])
    .await;
    let p = provider(&server, Some(cache.path()));
    let (events, err) = ask(&p, Extras::default()).await;
    assert!(err.is_none(), "{err:?}");
    let announced = retries(&events);
    assert_eq!(announced.len(), 1, "{events:?}");
    assert_eq!(announced[0].0, 0, "an adapted resend does not wait");
    assert!(
        announced[0].1.contains("max_completion_tokens"),
        "{}",
        announced[0].1
    );
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.body.clone()).collect();
    assert_eq!(bodies[0]["max_tokens"], 100);
    assert_eq!(bodies[1]["max_completion_tokens"], 100);
    assert!(!keys(&bodies[1]).contains(&"max_tokens".to_string()));
    assert_eq!(
        bodies[1]["messages"], bodies[0]["messages"],
        "the same conversation"
    );
    // Remembered: the next call sends the right one at once.
    let (events, _) = ask(&p, Extras::default()).await;
    assert!(retries(&events).is_empty());
    assert_eq!(server.requests()[2].body["max_completion_tokens"], 100);
    assert_eq!(p.quirks().token_limit, TokenLimit::MaxCompletionTokens);
    // And in the cache: the next run (a new client) too.
    let next_run = provider(&server, Some(cache.path()));
    assert_eq!(
        next_run.quirks().token_limit,
        TokenLimit::MaxCompletionTokens
    );
    ask(&next_run, Extras::default()).await;
    assert_eq!(server.requests()[3].body["max_completion_tokens"], 100);
    assert_eq!(server.request_count(), 4);
}

#[tokio::test]
async fn a_refused_stream_options_is_left_out() {
    // vLLM's pydantic validation, as a flat body.
    let server = MockServer::start(vec![
        MockReply::json(400, &json!({"object": "error", "type": "BadRequestError", "code": 400,
            "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted'}]"})),
        text_reply("ok", 2),
    ])
    .await;
    let p = provider(&server, None);
    let (events, err) = ask(&p, Extras::default()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(retries(&events).len(), 1);
    let second = &server.requests()[1].body;
    assert!(
        !keys(second).contains(&"stream_options".to_string()),
        "{second}"
    );
    assert_eq!(
        second["max_tokens"], 100,
        "only the refused parameter changes"
    );
    assert!(p.quirks().no_stream_options);
}

#[tokio::test]
async fn refused_parallel_tool_calls_and_tool_choice_are_left_out() {
    let server = MockServer::start(vec![
        refusal("parallel_tool_calls is not supported with this model"),
        MockReply::json(422, &json!({"detail": "Failed to deserialize the JSON body into the target type: unknown field `tool_choice`"})),
        text_reply("ok", 2),
    ])
    .await;
    let p = provider(&server, None);
    let extras = Extras {
        tool_choice: Some("ping".into()),
        parallel_tool_calls: Some(false),
        ..Extras::default()
    };
    let (events, err) = ask(&p, extras).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(retries(&events).len(), 2, "{events:?}");
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.body.clone()).collect();
    assert_eq!(
        bodies[0]["tool_choice"],
        json!({"type": "function", "function": {"name": "ping"}})
    );
    assert_eq!(bodies[0]["parallel_tool_calls"], false);
    assert!(
        bodies[1].get("parallel_tool_calls").is_none() && bodies[1].get("tool_choice").is_some()
    );
    assert!(
        bodies[2].get("parallel_tool_calls").is_none() && bodies[2].get("tool_choice").is_none()
    );
    assert!(bodies[2].get("tools").is_some(), "the tools stay");
    let q = p.quirks();
    assert!(q.no_parallel_tool_calls && q.no_tool_choice);
}

#[tokio::test]
async fn a_second_refusal_of_the_token_limit_sends_none() {
    let server = MockServer::start(vec![
        refusal("Unsupported parameter: 'max_tokens'"),
        refusal("Unrecognized request argument supplied: max_completion_tokens"),
        text_reply("ok", 2),
    ])
    .await;
    let p = provider(&server, None);
    let (events, err) = ask(&p, Extras::default()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(retries(&events).len(), 2);
    let last = &server.requests()[2].body;
    assert!(last.get("max_tokens").is_none() && last.get("max_completion_tokens").is_none());
}

#[tokio::test]
async fn other_400s_are_not_mistaken_for_a_refused_parameter() {
    let server = MockServer::start(vec![refusal(
        "max_tokens is too large: 90000. This model supports at most 4096 completion tokens",
    )])
    .await;
    let p = provider(&server, None);
    let (events, err) = ask(&p, Extras::default()).await;
    assert!(retries(&events).is_empty());
    assert!(
        matches!(err, Some(ProviderError::Request { status: 400, .. })),
        "{err:?}"
    );
    // A parameter we did not send is never learned either.
    let server = MockServer::start(vec![refusal("tool_choice is not supported")]).await;
    let p = provider(&server, None);
    let (_, err) = ask(&p, Extras::default()).await;
    assert!(err.is_some());
    assert!(!p.quirks().no_tool_choice);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn the_non_streamed_summary_call_adapts_too() {
    let completion = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "summary"}}]});
    let server = MockServer::start(vec![
        refusal("Unsupported parameter: 'max_tokens' is not supported with this model."),
        MockReply::json(200, &completion),
    ])
    .await;
    let p = provider(&server, None);
    let user = Message::user("summarise");
    let messages = [&user];
    let reply = p
        .chat(&ChatRequest {
            messages: &messages,
            tools: &[],
            max_tokens: 50,
            statuses: &[],
        })
        .await
        .unwrap();
    assert_eq!(reply.text, "summary");
    assert_eq!(server.requests()[1].body["max_completion_tokens"], 50);
}

#[tokio::test]
async fn servers_without_tool_support_get_one_clear_message() {
    let bodies = [
        // Ollama, a model without the tools capability.
        (
            400,
            json!({"error": {"message": "registry.ollama.ai/library/gemma2:2b does not support tools", "type": "api_error"}}),
        ),
        // vLLM started without tool parsing.
        (
            400,
            json!({"object": "error", "type": "BadRequestError", "code": 400,
            "message": "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"}),
        ),
        // llama.cpp without --jinja (an older build answered 500).
        (
            500,
            json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}}),
        ),
        // OpenRouter, no provider of the model supports tools.
        (
            404,
            json!({"error": {"message": "No endpoints found that support tool use.", "code": 404}}),
        ),
    ];
    for (status, body) in bodies {
        let (_dir, ws) = crate::support::workspace();
        let server = MockServer::start(vec![MockReply::json(status, &body)]).await;
        let mut handle = spawn(&ws, provider(&server, None), Options::default());
        let (_, end, _) = run_turn(&mut handle, "hello", |_| None).await;
        let TurnEnd::Failed { error } = end else {
            panic!("{end:?}")
        };
        assert!(
            error.starts_with("this model or server does not support tool calls"),
            "{error}"
        );
        assert!(error.contains("--no-tools"), "{error}");
        assert_eq!(server.request_count(), 1, "not retried: {body}");
    }
}

#[test]
fn no_tools_sends_plain_chat() {
    let server = MockServer::start_in_thread(vec![text_reply("just talk", 3)]);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = command(&ws).args(["--no-tools", "hello"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "just talk");
    let body = &server.requests()[0].body;
    assert!(body.get("tools").is_none(), "{body}");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("no tools"), "{system}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-tools --session"));
}
