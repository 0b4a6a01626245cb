//! The prompt cache: every request of a session extends the one before it byte for byte (the
//! `messages` array only grows at its end, the `tools` array stays the same), through tool
//! rounds, an instruction file edited mid-session, plan mode switched on and off and a
//! `/model` switch; only a compaction starts a new prefix. Local servers reuse their cache
//! only then. Also the cached share the server reports, in the stats, and `/model` itself.

use crate::support::events::{first, next, shutdown, turn};
use crate::support::mock_openai::{MockReply, MockServer, Recorded, text_reply, tool_calls_reply};
use minicode::agent::Options;
use minicode::protocol::{Event, Op, TurnEnd, WindowSource};
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use serde_json::{Value, json};

/// The raw JSON text of `field`'s value in a request body, exactly as it was sent.
fn raw_field<'a>(body: &'a str, field: &str) -> Option<&'a str> {
    let key = format!("\"{field}\":");
    let start = body.find(&key)? + key.len();
    let mut values = serde_json::Deserializer::from_str(&body[start..]).into_iter::<Value>();
    values.next()?.ok()?;
    Some(&body[start..start + values.byte_offset()])
}

/// Answers a summary request with a summary, a prompt with a `read` call, a tool result with
/// text.
fn respond(request: &Recorded) -> Option<MockReply> {
    if request.body["stream"] == json!(false) {
        let reply = json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "the summary"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
        });
        return Some(MockReply::json(200, &reply));
    }
    let messages = request.body["messages"].as_array()?;
    let last = messages.last()?;
    if last["role"] == "tool" {
        return Some(text_reply("read it", 4));
    }
    let id = format!("call{}", messages.len());
    Some(tool_calls_reply(
        &[(id.as_str(), "read", r#"{"path":"notes.txt"}"#)],
        5,
    ))
}

pub(crate) fn provider(server: &MockServer, model: &str) -> OpenAi {
    OpenAi::new(OpenAiOptions {
        base_url: server.base_url(),
        model: model.into(),
        max_attempts: 1,
        ..OpenAiOptions::default()
    })
    .unwrap()
}

/// Waits for the profile event that follows a plan switch.
async fn switched(handle: &mut minicode::protocol::AgentHandle) {
    while !matches!(next(handle).await, Event::SandboxChanged { .. }) {}
}

#[tokio::test]
async fn every_request_extends_the_previous_one_byte_for_byte_except_after_compaction() {
    let (_tmp, ws) = crate::support::workspace();
    std::fs::write(ws.join("notes.txt"), "some notes\n").unwrap();
    std::fs::write(ws.join("MiniCode.md"), "# Memory\nuse spaces\n").unwrap();
    let server = MockServer::start(Vec::new()).await;
    server.respond_with(respond);
    server.route("/v1/models", models_reply());
    let options = Options {
        auto_approve: true,
        context_window: 200_000,
        ..Options::default()
    };
    let mut handle = crate::support::agent::spawn(&ws, provider(&server, "m1"), options);
    // The first main request after the compaction starts a new prefix.
    let mut fresh_prefix = Vec::new();
    for round in 0..20 {
        match round {
            5 => std::fs::write(ws.join("MiniCode.md"), "# Memory\nuse tabs, always\n").unwrap(),
            8 => {
                handle.send(Op::SetPlan { on: true });
                switched(&mut handle).await;
            }
            10 => {
                handle.send(Op::SetPlan { on: false });
                switched(&mut handle).await;
            }
            14 => {
                handle.send(Op::Compact(None));
                loop {
                    if let Event::TurnEnded { end, .. } = next(&mut handle).await {
                        assert_eq!(end, TurnEnd::Completed);
                        break;
                    }
                }
                fresh_prefix.push(main_requests(&server).len());
            }
            17 => {
                handle.send(Op::Model {
                    name: Some("m2".into()),
                });
                while !matches!(next(&mut handle).await, Event::ModelSwitched { .. }) {}
            }
            _ => {}
        }
        let (events, end, _) = turn(&mut handle, &format!("task {round}")).await;
        assert_eq!(end, TurnEnd::Completed, "{events:?}");
    }
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 40);
    for (i, pair) in requests.windows(2).enumerate() {
        if fresh_prefix.contains(&(i + 1)) {
            continue;
        }
        let (before, after) = (&pair[0].raw_body, &pair[1].raw_body);
        let old = raw_field(before, "messages").unwrap();
        let new = raw_field(after, "messages").unwrap();
        assert!(
            new.starts_with(&old[..old.len() - 1]) && new.len() > old.len(),
            "request {} does not extend request {i}:\n{old}\n---\n{new}",
            i + 1
        );
        assert_eq!(
            raw_field(before, "tools"),
            raw_field(after, "tools"),
            "request {}",
            i + 1
        );
        let model = if i + 1 >= 34 { "m2" } else { "m1" };
        assert_eq!(pair[1].body["model"], model, "request {}", i + 1);
    }
    assert!(
        requests[34]
            .raw_body
            .contains("The model answering from here on is m2")
    );
    // The edit and the switches were told, after everything sent before them.
    let edited = &requests[10].raw_body;
    assert!(edited.contains("use tabs, always") && edited.contains("use spaces"));
    assert!(!requests[9].raw_body.contains("use tabs, always"));
    let first = &requests[0].raw_body;
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("Plan mode"), "{system}");
    assert!(first.contains("use spaces"));
    let plan_on = requests[16].body["messages"].to_string();
    assert!(plan_on.contains("Plan mode is on"), "{plan_on}");
    let plan_off = requests[20].body["messages"].to_string();
    assert!(plan_off.contains("Plan mode is off"), "{plan_off}");
    // After the compaction the memory message carries the file as it is now.
    let compacted = requests[28].body["messages"][1]["content"]
        .as_str()
        .unwrap();
    assert!(compacted.contains("use tabs, always") && !compacted.contains("use spaces"));
}

/// The streamed (main) requests, in order.
fn main_requests(server: &MockServer) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.body["stream"] == json!(true))
        .collect()
}

/// A streamed text reply whose last chunk carries `extra` fields (usage shapes).
fn reply_with(extra: Value) -> MockReply {
    use crate::support::mock_openai::{chunk_finish, chunk_text, sse_events};
    let mut last = json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock",
        "choices": []
    });
    for (key, value) in extra.as_object().unwrap() {
        last[key] = value.clone();
    }
    MockReply::sse(sse_events(&[
        chunk_text("hello"),
        chunk_finish("stop"),
        last,
    ]))
}

/// Runs one prompt in one-shot mode with `--output-format json`; the parsed result and stderr.
fn one_shot(reply: MockReply) -> (Value, String) {
    let server = MockServer::start_in_thread(vec![reply]);
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), &server);
    let out = crate::support::binary::command(dir.path())
        .args(["--output-format", "json", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json = serde_json::from_slice(&out.stdout).unwrap();
    (json, stderr)
}

#[test]
fn the_cached_share_comes_from_openai_style_prompt_tokens_details() {
    let (json, stderr) = one_shot(reply_with(json!({"usage": {
        "prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010,
        "prompt_tokens_details": {"cached_tokens": 800}
    }})));
    let tokens = &json["stats"]["tokens"];
    assert_eq!(tokens["cached_tokens"], 800, "{json}");
    assert_eq!(tokens["cached_percent"], 80, "{json}");
    assert!(
        stderr.contains("80% of the prompt from the cache"),
        "{stderr}"
    );
}

#[test]
fn the_cached_share_comes_from_llama_cpp_timings() {
    let (json, stderr) = one_shot(reply_with(json!({
        "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010},
        "timings": {"cache_n": 900, "prompt_n": 100, "predicted_n": 10}
    })));
    let tokens = &json["stats"]["tokens"];
    assert_eq!(tokens["cached_tokens"], 900, "{json}");
    assert_eq!(tokens["cached_percent"], 90, "{json}");
    assert!(
        stderr.contains("90% of the prompt from the cache"),
        "{stderr}"
    );
}

#[test]
fn no_cached_share_is_made_up_when_the_server_says_nothing() {
    let (json, stderr) = one_shot(reply_with(json!({"usage": {
        "prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010
    }})));
    assert_eq!(
        json["stats"]["tokens"]["cached_percent"],
        Value::Null,
        "{json}"
    );
    assert!(!stderr.contains("from the cache"), "{stderr}");
}

/// `GET /v1/models` of a server with two models, each stating its window (vLLM's shape).
fn models_reply() -> MockReply {
    MockReply::json(
        200,
        &json!({"object": "list", "data": [
            {"id": "m1", "object": "model", "max_model_len": 16384},
            {"id": "m2", "object": "model", "max_model_len": 32768}
        ]}),
    )
}

#[tokio::test]
async fn model_without_a_name_lists_the_servers_models_and_the_one_in_use() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start(Vec::new()).await;
    server.route("/v1/models", models_reply());
    let mut handle = crate::support::agent::spawn(&ws, provider(&server, "m1"), Options::default());
    handle.send(Op::Model { name: None });
    match first(&mut handle, |e| matches!(e, Event::ModelsListed { .. })).await {
        Event::ModelsListed { current, models } => {
            assert_eq!(current, "m1");
            assert_eq!(models, ["m1", "m2"]);
        }
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn model_switch_probes_the_window_again_and_is_recorded_in_the_session() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start(vec![text_reply("from m2", 4)]).await;
    server.route("/v1/models", models_reply());
    let mut handle = crate::support::agent::spawn(&ws, provider(&server, "m1"), Options::default());
    let probed = first(
        &mut handle,
        |e| matches!(e, Event::ContextWindowSet { source, .. } if *source == WindowSource::Probe),
    )
    .await;
    assert!(
        matches!(probed, Event::ContextWindowSet { tokens: 16384, .. }),
        "{probed:?}"
    );
    handle.send(Op::Model {
        name: Some("m2".into()),
    });
    let switched = first(&mut handle, |e| matches!(e, Event::ModelSwitched { .. })).await;
    assert!(
        matches!(&switched, Event::ModelSwitched { previous, model } if previous == "m1" && model == "m2"),
        "{switched:?}"
    );
    let (events, end, _) = turn(&mut handle, "hello").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::ContextWindowSet {
                tokens: 32768,
                source: WindowSource::Probe
            }
        )),
        "{events:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.last().unwrap().body["model"], "m2");
    shutdown(&mut handle).await;
    let saved = std::fs::read_dir(ws.join(".minicode/sessions"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(
        saved.contains("The model answering from here on is m2 (it was m1)"),
        "{saved}"
    );
    // A resumed transcript does not show minicode's notices as the user's words.
    let id = saved_id(&ws);
    let session = minicode::session::Session::open(&ws, &id).unwrap();
    let mut handle =
        crate::support::agent::spawn_session(session, provider(&server, "m1"), Options::default());
    match first(&mut handle, |e| matches!(e, Event::HistoryRestored { .. })).await {
        Event::HistoryRestored { entries } => {
            let shown = format!("{entries:?}");
            assert!(
                shown.contains("hello") && !shown.contains("session-notice"),
                "{shown}"
            );
        }
        _ => unreachable!(),
    }
}

/// The id of the one session saved in `ws`.
fn saved_id(ws: &std::path::Path) -> String {
    std::fs::read_dir(ws.join(".minicode/sessions"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.strip_suffix(".json").map(str::to_string)
        })
        .next()
        .unwrap()
}

#[tokio::test]
async fn model_switch_to_a_model_the_server_does_not_offer_is_refused() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start(vec![text_reply("still m1", 4)]).await;
    server.route("/v1/models", models_reply());
    let mut handle = crate::support::agent::spawn(&ws, provider(&server, "m1"), Options::default());
    handle.send(Op::Model {
        name: Some("nope".into()),
    });
    match first(&mut handle, |e| matches!(e, Event::Error { .. })).await {
        Event::Error { message } => assert!(message.contains("nope"), "{message}"),
        _ => unreachable!(),
    }
    let (_, end, _) = turn(&mut handle, "hello").await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(server.requests()[0].body["model"], "m1");
}
