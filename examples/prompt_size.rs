//! The size of the first request a session sends, per model profile: the built `minicode`
//! binary runs one one-shot task against a local mock server, which records the request.
//! Printed per profile: the tools offered, the bytes of the whole body, of the system prompt
//! and of the tool declarations, and the project's token estimate of the prompt and the tools
//! (`chat::estimate_text` / `estimate_tools`, about four ASCII characters a token). Run with
//! `cargo build && cargo run --example prompt_size` (it runs the `minicode` built beside it,
//! or `MINICODE_BENCH_BINARY`); figures go to `docs/performance.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

#[path = "../benches/support/scenario.rs"]
#[allow(dead_code)]
mod scenario;

use std::process::{Command, Stdio};

use minicode::chat::{ToolSpec, estimate_text, estimate_tools};
use mock_openai::{MockServer, text_reply};

/// The first chat request of a one-shot run with `model_extra` in its `[model]` table.
fn first_request(model_extra: &str) -> serde_json::Value {
    let server = MockServer::start_in_thread(vec![text_reply("done", 8)]);
    let dir = scenario::trusted_workspace(&server, model_extra);
    let home = dir.path();
    let binary = std::env::var_os("MINICODE_BENCH_BINARY")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(beside_this_example);
    let status = Command::new(binary)
        .arg("say done")
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env_remove("MINICODE_BASE_URL")
        .env_remove("MINICODE_MODEL")
        .env_remove("MINICODE_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "minicode failed: {status}");
    let request = server.requests().remove(0);
    serde_json::from_str(&request.raw_body).unwrap()
}

/// `target/<profile>/minicode`, from `target/<profile>/examples/prompt_size`.
fn beside_this_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("minicode")
}

fn report(label: &str, body: &serde_json::Value) {
    let text = serde_json::to_string(body).unwrap();
    let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let specs: Vec<ToolSpec> = tools
        .iter()
        .map(|t| ToolSpec {
            name: t["function"]["name"].as_str().unwrap().to_string().into(),
            description: t["function"]["description"]
                .as_str()
                .unwrap_or_default()
                .to_string()
                .into(),
            parameters: t["function"]["parameters"].clone(),
        })
        .collect();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
    let tools_bytes = serde_json::to_string(&body["tools"]).unwrap().len();
    println!(
        "{label:<44} {} tools ({}): body {} B; system prompt {} B ≈ {} tokens; tools {} B ≈ {} \
         tokens",
        specs.len(),
        names.join(", "),
        text.len(),
        prompt.len(),
        estimate_text(prompt),
        tools_bytes,
        estimate_tools(&specs),
    );
}

fn main() {
    report(
        "full (context_window = 131072)",
        &first_request("context_window = 131072\n"),
    );
    report(
        "small (context_window = 32768)",
        &first_request("context_window = 32768\n"),
    );
    report(
        "small (profile = \"small\", tools = [\"find\"])",
        &first_request("profile = \"small\"\ntools = [\"find\"]\n"),
    );
}
