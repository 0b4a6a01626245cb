//! Model profiles: a session with a small window (configured or probed) or `[model] profile =
//! "small"` offers only the core tools, described briefly, under the short system prompt; a
//! large window (or `profile = "full"`) offers every tool; `[model] tools` adds an optional
//! tool back; the small profile's requests extend each other byte for byte; and a llama.cpp
//! server gets the request parameters its row of the table asks for.

use crate::support::events::{shutdown, turn};
use crate::support::mock_openai::{MockReply, MockServer, Recorded, text_reply, tool_calls_reply};
use minicode::agent::Options;
use minicode::protocol::{TurnEnd, WindowSource};
use serde_json::{Value, json};

const CORE: [&str; 6] = ["bash", "read", "write", "edit", "list", "search"];
/// A phrase only the short system prompt has.
const SHORT_PROMPT: &str = "You act in the user's project only by calling the tools";

/// Runs the one-shot binary against a server answering "done", with `extra` lines added to
/// the `[model]` table and `/props` answered with `props` when given; returns the first chat
/// request.
fn first_request(extra: &str, props: Option<Value>) -> Recorded {
    first_request_with_files(extra, props, &[])
}

/// [`first_request`] in a workspace holding `files` (name, content).
fn first_request_with_files(extra: &str, props: Option<Value>, files: &[(&str, &str)]) -> Recorded {
    let server = MockServer::start_in_thread(vec![text_reply("done", 8)]);
    if let Some(props) = props {
        server.route("/props", MockReply::json(200, &props));
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    crate::support::binary::write_config(dir.path(), &server);
    let file = dir.path().join(".minicode/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{}\n{extra}\n", text.trim_end())).unwrap();
    let out = crate::support::binary::command(dir.path())
        .args(["say done"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.requests().remove(0)
}

fn tool_names(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn system_prompt(request: &Recorded) -> String {
    request.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Asserts the request is the small profile's: the six core tools, briefly, the short prompt.
fn assert_small(request: &Recorded) {
    assert_eq!(tool_names(request), CORE);
    let prompt = system_prompt(request);
    assert!(prompt.contains(SHORT_PROMPT), "{prompt}");
    assert!(!prompt.contains("`find`"), "{prompt}");
    let read = &request.body["tools"][1]["function"];
    assert_eq!(read["description"], "Read a text file, with line numbers.");
    assert_eq!(
        read["parameters"]["properties"]["path"],
        json!({"type": "string"})
    );
}

/// Asserts the request is the full profile's: `find` offered, the full prompt.
fn assert_full(request: &Recorded) {
    let names = tool_names(request);
    assert!(names.contains(&"find".to_string()), "{names:?}");
    assert!(CORE.iter().all(|c| names.contains(&c.to_string())));
    let prompt = system_prompt(request);
    assert!(!prompt.contains(SHORT_PROMPT), "{prompt}");
    assert!(prompt.contains("`find`"), "{prompt}");
}

#[test]
fn a_small_window_offers_the_six_core_tools_and_the_short_prompt() {
    let small = first_request("context_window = 8192", None);
    assert_small(&small);
    let full = first_request("context_window = 131072", None);
    assert_full(&full);
    assert!(
        small.raw_body.len() * 2 < full.raw_body.len(),
        "small {} bytes, full {} bytes",
        small.raw_body.len(),
        full.raw_body.len()
    );
}

#[test]
fn the_small_prompt_names_project_memory_only_in_a_workspace_that_has_it() {
    let without = system_prompt(&first_request("context_window = 8192", None));
    assert!(without.contains(SHORT_PROMPT), "{without}");
    assert!(!without.contains("MiniCode.md"), "{without}");
    let with = first_request_with_files(
        "context_window = 8192",
        None,
        &[("MiniCode.md", "# Notes\nRun `make test`.\n")],
    );
    let prompt = system_prompt(&with);
    assert!(
        prompt.contains("`MiniCode.md` (in <project-memory>)"),
        "{prompt}"
    );
    let full = system_prompt(&first_request("context_window = 131072", None));
    assert!(
        full.contains("MiniCode.md"),
        "the full prompt keeps its rules: {full}"
    );
}

#[test]
fn the_configured_profile_wins_over_the_window_both_ways() {
    assert_small(&first_request(
        "context_window = 131072\nprofile = \"small\"",
        None,
    ));
    assert_full(&first_request(
        "context_window = 8192\nprofile = \"full\"",
        None,
    ));
}

#[test]
fn model_tools_offers_an_optional_tool_in_the_small_profile() {
    let request = first_request("context_window = 8192\ntools = [\"find\"]", None);
    let mut expected: Vec<String> = CORE.iter().map(|s| s.to_string()).collect();
    expected.push("find".to_string());
    assert_eq!(tool_names(&request), expected);
}

#[test]
fn model_tools_naming_a_core_tool_is_a_config_error() {
    let server = MockServer::start_in_thread(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), &server);
    let file = dir.path().join(".minicode/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{}\ntools = [\"bash\"]\n", text.trim_end())).unwrap();
    let out = crate::support::binary::command(dir.path())
        .args(["say done"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("model.tools"), "{stderr}");
}

#[test]
fn a_window_probed_from_llama_cpp_chooses_the_small_profile_and_its_parameters() {
    let props = json!({
        "default_generation_settings": {"n_ctx": 8192},
        "chat_template_caps": {"supports_tools": true}
    });
    let request = first_request("", Some(props));
    assert_small(&request);
    assert_eq!(request.body["parallel_tool_calls"], json!(false));
    assert_eq!(request.body["tool_choice"], json!("auto"));
    // Another server gets neither parameter.
    let other = first_request("context_window = 8192", None);
    assert!(other.body.get("parallel_tool_calls").is_none());
    assert!(other.body.get("tool_choice").is_none());
}

#[test]
fn a_small_model_gets_the_small_profile_whatever_its_window() {
    let server = MockServer::start_in_thread(vec![text_reply("done", 8)]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".minicode")).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"qwen2.5-coder-1.5b-instruct\"\ncontext_window = 131072\n",
        server.base_url()
    );
    std::fs::write(dir.path().join(".minicode/config.toml"), config).unwrap();
    crate::support::user_config::write_trusting(&dir.path().join("home"), dir.path(), "");
    let out = crate::support::binary::command(dir.path())
        .args(["say done"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_small(&server.requests()[0]);
}

/// The raw JSON text of `field`'s value in a request body, exactly as it was sent.
fn raw_field<'a>(body: &'a str, field: &str) -> Option<&'a str> {
    let key = format!("\"{field}\":");
    let start = body.find(&key)? + key.len();
    let mut values = serde_json::Deserializer::from_str(&body[start..]).into_iter::<Value>();
    values.next()?.ok()?;
    Some(&body[start..start + values.byte_offset()])
}

/// A prompt gets a `read` call, its result a text answer.
fn respond(request: &Recorded) -> Option<MockReply> {
    let messages = request.body["messages"].as_array()?;
    if messages.last()?["role"] == "tool" {
        return Some(text_reply("read it", 4));
    }
    let id = format!("call{}", messages.len());
    Some(tool_calls_reply(
        &[(id.as_str(), "read", r#"{"path":"notes.txt"}"#)],
        5,
    ))
}

#[tokio::test]
async fn the_small_profile_keeps_the_prefix_byte_stable_across_turns() {
    let (_tmp, ws) = crate::support::workspace();
    std::fs::write(ws.join("notes.txt"), "some notes\n").unwrap();
    let server = MockServer::start(Vec::new()).await;
    server.respond_with(respond);
    let options = Options {
        auto_approve: true,
        context_window: 16_384,
        context_window_source: WindowSource::Config,
        ..Options::default()
    };
    let provider = crate::prompt_cache::provider(&server, "m1");
    let mut handle = crate::support::agent::spawn(&ws, provider, options);
    for round in 0..4 {
        let (events, end, _) = turn(&mut handle, &format!("task {round}")).await;
        assert_eq!(end, TurnEnd::Completed, "{events:?}");
    }
    shutdown(&mut handle).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 8);
    assert_small(&requests[0]);
    for (i, pair) in requests.windows(2).enumerate() {
        let (before, after) = (&pair[0].raw_body, &pair[1].raw_body);
        let old = raw_field(before, "messages").unwrap();
        let new = raw_field(after, "messages").unwrap();
        assert!(
            new.starts_with(&old[..old.len() - 1]) && new.len() > old.len(),
            "request {} does not extend request {i}",
            i + 1
        );
        assert_eq!(raw_field(before, "tools"), raw_field(after, "tools"));
    }
}
