//! The probe at session start: each server family's self-description endpoint (and its
//! absence), the bound in time, the cache (hit, expiry, corruption, privacy), and how the core
//! adopts a probed window (a configured one always wins) and reports its source.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::agent::spawn;
use crate::support::binary::{command, write_config};
use crate::support::events::{next, run_turn, until};
use crate::support::mock_openai::*;
use minicode::agent::Options;
use minicode::protocol::{Event, TurnEnd, WindowSource};
use minicode::provider::Provider;
use minicode::provider::openai::OpenAi;
use minicode::provider::probe::cache::Cache;
use minicode::provider::probe::server_root;
use serde_json::{Value, json};

const KEY: &str = "sk-probe-secret-0123456789";

fn provider(server: &MockServer, model: &str, cache: Option<&Path>) -> OpenAi {
    crate::support::provider::provider_with(server, |o| {
        o.api_key = Some(KEY.into());
        o.model = model.into();
        o.cache_dir = cache.map(Path::to_path_buf);
    })
}

async fn probe(server: &MockServer, model: &str) -> Option<(u64, String)> {
    let info = provider(server, model, None).probe().await.unwrap();
    info.context_window.zip(info.via)
}

#[tokio::test]
async fn llama_cpp_props_gives_the_per_slot_context() {
    let server = MockServer::start(vec![]).await;
    // Newer builds: under default_generation_settings; the model list says the total.
    server.route(
        "/props",
        MockReply::json(
            200,
            &json!({"default_generation_settings": {"n_ctx": 4096, "params": {}},
            "chat_template_caps": {"supports_tools": false}}),
        ),
    );
    server.route(
        "/v1/models",
        MockReply::json(200, &json!({"object": "list", "data": [{"id": "model.gguf", "meta": {"n_ctx": 16384, "n_ctx_train": 32768}}]})),
    );
    let info = provider(&server, "anything", None).probe().await.unwrap();
    assert_eq!(info.context_window, Some(4096));
    assert!(info.via.unwrap().contains("/props"));
    assert_eq!(info.supports_tools, Some(false));
    assert_eq!(info.models, Some(vec!["model.gguf".to_string()]));
    // Older builds: n_ctx at the top.
    let old = MockServer::start(vec![]).await;
    old.route("/props", MockReply::json(200, &json!({"n_ctx": 2048})));
    assert_eq!(probe(&old, "m").await.map(|w| w.0), Some(2048));
    // Without /props, the single model's meta.n_ctx counts whatever its name.
    let list = MockServer::start(vec![]).await;
    list.route(
        "/v1/models",
        MockReply::json(
            200,
            &json!({"data": [{"id": "model.gguf", "meta": {"n_ctx": 8192}}]}),
        ),
    );
    assert_eq!(probe(&list, "smollm2").await.map(|w| w.0), Some(8192));
}

#[tokio::test]
async fn vllm_model_list_gives_max_model_len() {
    let server = MockServer::start(vec![]).await;
    server.route(
        "/v1/models",
        MockReply::json(200, &json!({"object": "list", "data": [
            {"id": "other", "object": "model", "max_model_len": 1024},
            {"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": "vllm", "max_model_len": 32768}]})),
    );
    let (tokens, via) = probe(&server, "Qwen/Qwen3-8B").await.unwrap();
    assert_eq!(tokens, 32768);
    assert!(via.contains("max_model_len"), "{via}");
    // vLLM answered: the other families' endpoints are not asked.
    let paths: Vec<String> = server
        .other_requests()
        .iter()
        .map(|r| r.path.clone())
        .collect();
    assert!(!paths.iter().any(|p| p.starts_with("/api/")), "{paths:?}");
}

#[tokio::test]
async fn openrouter_model_list_gives_context_length() {
    let server = MockServer::start(vec![]).await;
    server.route(
        "/v1/models",
        MockReply::json(200, &json!({"data": [
            {"id": "qwen/qwen3-coder", "context_length": 262144, "top_provider": {"context_length": 262144}},
            {"id": "openai/gpt-4o", "top_provider": {"context_length": 128000}}]})),
    );
    assert_eq!(
        probe(&server, "qwen/qwen3-coder").await.map(|w| w.0),
        Some(262144)
    );
    assert_eq!(
        probe(&server, "openai/gpt-4o").await.map(|w| w.0),
        Some(128000)
    );
}

#[tokio::test]
async fn lm_studio_gives_the_loaded_context_length() {
    let server = MockServer::start(vec![]).await;
    server.route(
        "/v1/models",
        MockReply::json(
            200,
            &json!({"data": [{"id": "qwen2.5-7b-instruct", "object": "model"}]}),
        ),
    );
    server.route(
        "/api/v0/models",
        MockReply::json(200, &json!({"object": "list", "data": [
            {"id": "qwen2.5-7b-instruct", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 8192},
            {"id": "llama-3.2-1b", "state": "not-loaded", "max_context_length": 131072}]})),
    );
    let (tokens, via) = probe(&server, "qwen2.5-7b-instruct").await.unwrap();
    assert_eq!(tokens, 8192);
    assert!(via.contains("LM Studio"), "{via}");
}

#[tokio::test]
async fn ollama_show_gives_num_ctx_else_the_architecture_length() {
    let server = MockServer::start(vec![]).await;
    server.route(
        "/api/show",
        MockReply::json(
            200,
            &json!({"parameters": "stop \"<|eot_id|>\"\nnum_ctx                        16384",
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
            "capabilities": ["completion", "tools"]}),
        ),
    );
    let info = provider(&server, "llama3.2", None).probe().await.unwrap();
    assert_eq!(info.context_window, Some(16384));
    assert_eq!(info.supports_tools, Some(true));
    let show = server
        .other_requests()
        .into_iter()
        .find(|r| r.path == "/api/show")
        .unwrap();
    assert_eq!(show.method, "POST");
    assert_eq!(show.body, json!({"model": "llama3.2"}));
    let arch = MockServer::start(vec![]).await;
    arch.route(
        "/api/show",
        MockReply::json(200, &json!({"parameters": "", "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}})),
    );
    assert_eq!(probe(&arch, "qwen3").await.map(|w| w.0), Some(40960));
}

#[tokio::test]
async fn a_server_without_any_endpoint_states_no_window_and_only_it_is_asked() {
    let server = MockServer::start(vec![]).await;
    let info = provider(&server, "m", None).probe().await.unwrap();
    assert_eq!(info.context_window, None);
    let others = server.other_requests();
    let mut paths: Vec<&str> = others.iter().map(|r| r.path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        ["/api/show", "/api/v0/models", "/props", "/v1/models"]
    );
    for r in &others {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert!(r.header("user-agent").unwrap().starts_with("minicode/"));
    }
    assert_eq!(server.request_count(), 0, "no chat request");
}

#[test]
fn the_server_root_drops_only_a_trailing_v1() {
    assert_eq!(
        server_root("http://127.0.0.1:8080/v1"),
        "http://127.0.0.1:8080"
    );
    assert_eq!(
        server_root("http://127.0.0.1:8080/v1/"),
        "http://127.0.0.1:8080"
    );
    assert_eq!(
        server_root("https://openrouter.ai/api/v1"),
        "https://openrouter.ai/api"
    );
    assert_eq!(server_root("http://h:8080"), "http://h:8080");
    assert_eq!(server_root("http://h/v2"), "http://h/v2");
    assert_eq!(server_root("http://h/notv1"), "http://h/notv1");
}

#[tokio::test]
async fn a_redirect_on_a_probe_endpoint_is_not_followed() {
    let server = MockServer::start(vec![]).await;
    let elsewhere = MockServer::start(vec![]).await;
    server.route(
        "/props",
        MockReply::status(307, "")
            .with_header("location", &format!("{}/props", elsewhere.base_url())),
    );
    let info = provider(&server, "m", None).probe().await.unwrap();
    assert_eq!(info.context_window, None);
    assert!(
        elsewhere.other_requests().is_empty(),
        "the key never left the server"
    );
}

#[tokio::test]
async fn the_probe_is_bounded_in_time() {
    let server = MockServer::start(vec![]).await;
    let never = Gate::new();
    server.route("/v1/models", MockReply::status(200, "{}").after(&never));
    let started = Instant::now();
    let info = provider(&server, "m", None).probe().await;
    let took = started.elapsed();
    assert!(info.is_none(), "{info:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_cached_window_is_used_without_asking_again_until_it_expires() {
    let cache = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![]).await;
    server.route("/props", MockReply::json(200, &json!({"n_ctx": 4096})));
    let first = provider(&server, "m", Some(cache.path()))
        .probe()
        .await
        .unwrap();
    assert_eq!((first.context_window, first.cached), (Some(4096), false));
    let asked = server.other_requests().len();
    // Another run (a new client) reads the cache and asks nothing.
    let second = provider(&server, "m", Some(cache.path()))
        .probe()
        .await
        .unwrap();
    assert_eq!((second.context_window, second.cached), (Some(4096), true));
    assert_eq!(server.other_requests().len(), asked);
    // Another model on the same server has its own entry.
    let other = provider(&server, "n", Some(cache.path()))
        .probe()
        .await
        .unwrap();
    assert!(!other.cached);
    // An entry older than an hour is probed again.
    let path = Cache::new(Some(cache.path()), &server.base_url(), "m")
        .path()
        .unwrap()
        .to_path_buf();
    let mut entry: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    entry["window"]["at"] = json!(now() - 2 * 3600);
    std::fs::write(&path, entry.to_string()).unwrap();
    let again = provider(&server, "m", Some(cache.path()))
        .probe()
        .await
        .unwrap();
    assert!(!again.cached);
    assert_eq!(again.context_window, Some(4096));
}

#[tokio::test]
async fn a_corrupt_cache_file_is_ignored_and_rewritten() {
    let cache = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![]).await;
    server.route("/props", MockReply::json(200, &json!({"n_ctx": 4096})));
    let path = Cache::new(Some(cache.path()), &server.base_url(), "m")
        .path()
        .unwrap()
        .to_path_buf();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    for garbage in [
        &b"{\"version\": 1, \"key\": "[..],
        b"\xff\xfe not json",
        b"[]",
    ] {
        std::fs::write(&path, garbage).unwrap();
        let info = provider(&server, "m", Some(cache.path()))
            .probe()
            .await
            .unwrap();
        assert_eq!((info.context_window, info.cached), (Some(4096), false));
        let rewritten: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(rewritten["window"]["tokens"], 4096);
    }
}

#[tokio::test]
async fn the_cache_is_private_and_holds_no_url_or_key() {
    let cache = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![]).await;
    server.route("/props", MockReply::json(200, &json!({"n_ctx": 4096})));
    provider(&server, "m", Some(cache.path()))
        .probe()
        .await
        .unwrap();
    let path = Cache::new(Some(cache.path()), &server.base_url(), "m")
        .path()
        .unwrap()
        .to_path_buf();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("127.0.0.1") && !text.contains(KEY), "{text}");
}

/// Events until the `ContextWindowSet` with `source`.
async fn window_event(handle: &mut minicode::protocol::AgentHandle, source: WindowSource) -> u64 {
    let events = until(
        handle,
        |e| matches!(e, Event::ContextWindowSet { source: s, .. } if *s == source),
    )
    .await;
    match events.last() {
        Some(Event::ContextWindowSet { tokens, .. }) => *tokens,
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn a_probed_window_replaces_the_default_and_is_reported() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![text_reply("hi", 2)]).await;
    server.route("/props", MockReply::json(200, &json!({"n_ctx": 6000})));
    let mut handle = spawn(&ws, provider(&server, "m", None), Options::default());
    assert!(matches!(
        next(&mut handle).await,
        Event::SessionConfigured {
            context_window: 262_144,
            ..
        }
    ));
    assert!(matches!(
        next(&mut handle).await,
        Event::ContextWindowSet {
            tokens: 262_144,
            source: WindowSource::Default
        }
    ));
    assert_eq!(window_event(&mut handle, WindowSource::Probe).await, 6000);
    let (_, end, _) = run_turn(&mut handle, "hello", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    // The request fits the probed window, not the default one.
    let max = server.requests()[0].body["max_tokens"].as_u64().unwrap();
    assert!(max < 6000, "max_tokens {max}");
}

#[tokio::test]
async fn a_configured_window_wins_and_nothing_is_probed() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![text_reply("hi", 2)]).await;
    server.route("/props", MockReply::json(200, &json!({"n_ctx": 6000})));
    let options = Options {
        context_window: 100_000,
        context_window_source: WindowSource::Config,
        ..Options::default()
    };
    let mut handle = spawn(&ws, provider(&server, "m", None), options);
    next(&mut handle).await;
    assert!(matches!(
        next(&mut handle).await,
        Event::ContextWindowSet {
            tokens: 100_000,
            source: WindowSource::Config
        }
    ));
    let (events, end, _) = run_turn(&mut handle, "hello", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ContextWindowSet { .. }))
    );
    assert!(
        server.other_requests().is_empty(),
        "{:?}",
        server.other_requests()
    );
}

#[tokio::test]
async fn the_first_request_waits_for_a_slow_probe_only_briefly() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![text_reply("hi", 2)]).await;
    let never = Gate::new();
    server.route("/v1/models", MockReply::status(200, "{}").after(&never));
    let started = Instant::now();
    let mut handle = spawn(&ws, provider(&server, "m", None), Options::default());
    let (_, end, _) = run_turn(&mut handle, "hello", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn one_shot_json_reports_the_window_and_its_source() {
    let server = MockServer::start_in_thread(vec![text_reply("one", 2), text_reply("two", 2)]);
    server.route("/props", MockReply::json(200, &json!({"n_ctx": 5000})));
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = command(&ws)
        .args(["--output-format", "json", "hi"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["context_window"],
        json!({"tokens": 5000, "source": "probe"})
    );
    // The answer was cached under the user's cache folder (HOME/.cache without XDG_CACHE_HOME).
    assert!(
        ws.join("home/.cache/minicode/servers")
            .read_dir()
            .unwrap()
            .count()
            == 1
    );
    // A configured window wins.
    let config = std::fs::read_to_string(ws.join(".minicode/config.toml")).unwrap();
    std::fs::write(
        ws.join(".minicode/config.toml"),
        format!("{config}context_window = 9000\n"),
    )
    .unwrap();
    let out = command(&ws)
        .args(["--output-format", "json", "hi"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["context_window"],
        json!({"tokens": 9000, "source": "config"})
    );
}

#[test]
fn the_status_bar_says_where_the_window_came_from() {
    use minicode::tui::state::{Msg, State};
    let status = |s: &State| {
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 10)).unwrap();
        term.draw(|f| minicode::tui::view::render(s, f)).unwrap();
        let buf = term.backend().buffer().clone();
        (0..buf.area.width)
            .map(|x| buf[(x, buf.area.height - 1)].symbol())
            .collect::<String>()
    };
    let mut s = State::new("m", 262_144);
    s.update(Msg::Resize(120, 10));
    s.update(Msg::Agent(Event::ContextWindowSet {
        tokens: 262_144,
        source: WindowSource::Default,
    }));
    assert!(!status(&s).contains("window"), "{}", status(&s));
    s.update(Msg::Agent(Event::ContextWindowSet {
        tokens: 8192,
        source: WindowSource::Probe,
    }));
    assert!(status(&s).contains("window 8192 (probe)"), "{}", status(&s));
    s.update(Msg::Agent(Event::ContextWindowSet {
        tokens: 6000,
        source: WindowSource::ServerError,
    }));
    assert!(
        status(&s).contains("window 6000 (server-error)"),
        "{}",
        status(&s)
    );
}

#[test]
fn the_cache_goes_under_xdg_cache_home_when_it_is_set() {
    let server = MockServer::start_in_thread(vec![text_reply("one", 2)]);
    server.route("/props", MockReply::json(200, &json!({"n_ctx": 5000})));
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let cache = tempfile::tempdir().unwrap();
    let out = command(&ws)
        .env("XDG_CACHE_HOME", cache.path())
        .arg("hi")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<_> = cache
        .path()
        .join("minicode/servers")
        .read_dir()
        .unwrap()
        .collect();
    assert_eq!(files.len(), 1);
    assert!(!ws.join("home/.cache").exists());
}
