//! Optional checks against a real OpenAI-compatible server (the llama.cpp build of
//! `../shared/tools/realserver.sh`): probing, streaming and usage, a real context-overflow
//! error body, `doctor` and a one-shot run against real bytes. They check mechanics, not
//! answers (the model is tiny). Every test is `#[ignore]`d, so a plain `cargo test` neither
//! needs a model nor counts them as passed; with `--ignored` they fail when no server answers.
//! `MINICODE_TEST_REALSERVER_URL` moves the server (default `http://127.0.0.1:18080/v1`) and
//! `MINICODE_TEST_REALSERVER_MODEL` names the model (default `smollm2`).
//!
//! `realserver.sh serve 18080 8192 &`, then `cargo test --test it realserver:: -- --ignored`

use std::time::Duration;

use crate::support::binary::command;
use futures_util::StreamExt;
use minicode::chat::Message;
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::provider::{ChatRequest, Provider, ProviderError, StreamEvent};
use serde_json::Value;

/// The server's base URL and model: the port `realserver.sh serve 18080` listens on unless
/// the variables say otherwise.
fn target() -> (String, String) {
    let url = std::env::var("MINICODE_TEST_REALSERVER_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:18080/v1".to_string());
    let model =
        std::env::var("MINICODE_TEST_REALSERVER_MODEL").unwrap_or_else(|_| "smollm2".to_string());
    (url, model)
}

fn provider(url: &str, model: &str) -> OpenAi {
    OpenAi::new(OpenAiOptions {
        base_url: url.to_string(),
        api_key: Some("none".into()),
        model: model.to_string(),
        request_timeout: Duration::from_secs(300),
        ..OpenAiOptions::default()
    })
    .unwrap()
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server (realserver.sh serve 18080 8192): run with --ignored"]
async fn real_server_states_its_context_window() {
    let (url, model) = target();
    let info = provider(&url, &model)
        .probe_now(Duration::from_secs(10))
        .await
        .unwrap();
    let window = info.context_window.expect("llama.cpp states its window");
    assert!(window >= 512, "{window}");
    assert!(info.via.unwrap().contains("llama.cpp"));
    assert!(info.models.is_some_and(|m| !m.is_empty()));
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server (realserver.sh serve 18080 8192): run with --ignored"]
async fn real_server_streams_text_and_reports_usage() {
    let (url, model) = target();
    let user = Message::user("Say hello.");
    let messages = [&user];
    let p = provider(&url, &model);
    let mut stream = p.stream(&ChatRequest {
        messages: &messages,
        tools: &[],
        max_tokens: 8,
        statuses: &[],
    });
    let (mut deltas, mut reply) = (0, None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Text(_) => deltas += 1,
            StreamEvent::Done(r) => reply = Some(*r),
            _ => {}
        }
    }
    let reply = reply.unwrap();
    assert!(deltas > 1, "text arrives in pieces");
    assert!(!reply.text.is_empty());
    let usage = reply
        .usage
        .expect("usage with stream_options.include_usage");
    assert!(
        usage.output_tokens > 0 && usage.output_tokens <= 8,
        "{usage:?}"
    );
    assert!(
        p.quirks().describe().is_empty(),
        "llama.cpp accepts every parameter"
    );
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server (realserver.sh serve 18080 8192): run with --ignored"]
async fn real_context_overflow_names_the_servers_window() {
    let (url, model) = target();
    let p = provider(&url, &model);
    let window = p
        .probe_now(Duration::from_secs(10))
        .await
        .and_then(|i| i.context_window)
        .unwrap();
    let huge = Message::user("word ".repeat(window as usize * 2));
    let messages = [&huge];
    let mut stream = p.stream(&ChatRequest {
        messages: &messages,
        tools: &[],
        max_tokens: 8,
        statuses: &[],
    });
    let mut error = None;
    while let Some(event) = stream.next().await {
        if let Err(e) = event {
            error = Some(e);
        }
    }
    match error {
        Some(ProviderError::ContextLength {
            window: Some(w), ..
        }) => assert_eq!(w, window),
        other => panic!("expected a context-length error naming the window: {other:?}"),
    }
}

fn run(url: &str, model: &str, args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let out = command(&ws)
        .args(args)
        .env("MINICODE_BASE_URL", url)
        .env("MINICODE_MODEL", model)
        .env("MINICODE_API_KEY", "none")
        .output()
        .unwrap();
    drop(dir);
    out
}

#[test]
#[ignore = "needs a real llama.cpp server (realserver.sh serve 18080 8192): run with --ignored"]
fn real_doctor_reports_the_server() {
    let (url, model) = target();
    let out = run(&url, &model, &["doctor", "--output-format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let status = |name: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    for name in ["reachable", "auth", "streaming", "usage", "context window"] {
        assert_eq!(status(name), "ok", "{name}: {v}");
    }
    assert_eq!(v["context_window"]["source"], "probe");
    // SmolLM2's template cannot render tools: doctor must say so (and exit 1).
    if status("tools") == "fail" {
        assert_eq!(out.status.code(), Some(1));
    } else {
        assert_eq!(out.status.code(), Some(0));
    }
}

#[test]
#[ignore = "needs a real llama.cpp server (realserver.sh serve 18080 8192): run with --ignored"]
fn real_one_shot_without_tools_answers_with_the_probed_window() {
    let (url, model) = target();
    let out = run(
        &url,
        &model,
        &["--no-tools", "--output-format", "json", "Say hi."],
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(v["context_window"]["source"], "probe", "{v}");
    assert!(v["stats"]["tokens"]["output_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
#[ignore = "needs a real llama.cpp server (realserver.sh serve 18080 8192): run with --ignored"]
async fn real_server_evaluates_only_the_new_tokens_of_the_second_turn() {
    use crate::support::events::turn;
    use minicode::protocol::TurnEnd;
    let (url, model) = target();
    let (_tmp, ws) = crate::support::workspace();
    let options = minicode::agent::Options {
        max_tokens: 16,
        ..minicode::agent::Options::default()
    };
    let mut handle = crate::support::agent::spawn(&ws, provider(&url, &model), options);
    let (_, end, first) = turn(&mut handle, "Say hello.").await;
    assert_eq!(end, TurnEnd::Completed);
    let (_, end, second) = turn(&mut handle, "Say goodbye.").await;
    assert_eq!(end, TurnEnd::Completed);
    let (first, second) = (first.tokens, second.tokens);
    // The second request starts with every byte of the first: llama.cpp serves that part from
    // its cache (`timings.cache_n`) and evaluates only what was added (`timings.prompt_n`).
    assert!(second.cached_percent.is_some(), "{second:?}");
    assert!(
        second.cached_tokens + 16 >= first.input_tokens,
        "first {first:?}, second {second:?}"
    );
}
