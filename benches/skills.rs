//! What skills cost the first request: the size of the body the built binary sends to a local
//! mock server, with no skills, with three realistic skills (this repository's `add-a-tool` and
//! two of typical size), and with the same three when the prompt names a trigger (the body is
//! then loaded before the request). Issue 10's target: the first request with 3 skills (plus
//! one MCP server of 20 tools, measured with the MCP client) stays under 12 KB; this bench
//! fails (exit 1) when the skills case alone reaches 12,000 bytes.
//!
//! Run with `cargo bench --bench skills`. Sizes are deterministic, so one run of each is enough.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/it/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

use std::path::Path;
use std::process::{Command, Stdio};

use mock_openai::{MockServer, text_reply};

#[path = "support/sample_skills.rs"]
mod sample_skills;

/// The budget for the first request, in bytes (12 KB read as 12,000, the stricter).
const TARGET_BYTES: usize = 12_000;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A trusted workspace pointing at `server`, with the three skills when `skills` is set.
fn workspace(server: &MockServer, skills: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    write(
        &ws.join("home/.config/minicode/config.toml"),
        &format!(
            "trusted_workspaces = [{:?}]\n[model]\nbase_url = \"{}\"\nname = \"bench\"\n",
            ws.to_str().unwrap(),
            server.base_url()
        ),
    );
    if skills {
        sample_skills::write(&ws.join(".minicode/skills"));
    }
    dir
}

/// The first request's body bytes and its system prompt's bytes for one one-shot run.
fn first_request(skills: bool, prompt: &str) -> (usize, usize) {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 64)]);
    let dir = workspace(&server, skills);
    let status = Command::new(env!("CARGO_BIN_EXE_minicode"))
        .arg(prompt)
        .current_dir(dir.path())
        .env("HOME", dir.path().join("home"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("MINICODE_BASE_URL")
        .env_remove("MINICODE_MODEL")
        .env_remove("MINICODE_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "minicode failed: {status}");
    let request = server.requests().into_iter().next().expect("a request");
    let system = request.body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .len();
    (request.raw_body.len(), system)
}

fn main() {
    // `cargo bench` passes `--bench`; filters are not supported (three cheap cases).
    let (none, none_system) = first_request(false, "hello");
    let (three, three_system) = first_request(true, "hello");
    let (triggered, _) = first_request(true, "please review my change");
    println!("first request body, one-shot \"hello\" against the mock server:");
    println!("  no skills                      {none:>6} bytes (system prompt {none_system})");
    println!(
        "  3 skills listed                {three:>6} bytes (system prompt {three_system}; +{} for \
         the list and the skill tool)",
        three - none
    );
    println!(
        "  3 skills, a trigger word       {triggered:>6} bytes (the review skill's body loaded \
         before the request)"
    );
    println!("  target: 3 skills listed < {TARGET_BYTES} bytes (before MCP tools)");
    if three >= TARGET_BYTES {
        eprintln!("MISSED: {three} bytes >= {TARGET_BYTES}");
        std::process::exit(1);
    }
}
