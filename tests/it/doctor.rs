//! `minicode doctor` as a process against the mock server: a healthy server (exit 0, table
//! and JSON), one without tool support, one that refuses the key, one that is down (exit 1),
//! and a configuration error (exit 2).

use std::process::Output;

use crate::support::binary::output_text as text;
use crate::support::binary::{command, write_config};
use crate::support::mock_openai::*;
use serde_json::{Value, json};

const KEY: &str = "sk-doctor-secret-0123456789";

fn doctor(ws: &std::path::Path, args: &[&str]) -> Output {
    command(ws)
        .arg("doctor")
        .args(args)
        .env("MINICODE_API_KEY", KEY)
        .output()
        .unwrap()
}

/// The row of check `name` in the table (its status word and the rest).
fn row<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.contains(&format!("  {name}  ")) && !l.trim_start().starts_with("fix:"))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"))
}

fn healthy(server: &MockServer) {
    server.route(
        "/v1/models",
        MockReply::json(
            200,
            &json!({"object": "list", "data": [{"id": "mock-model", "max_model_len": 32768}]}),
        ),
    );
}

/// Streaming check, forced tool call, the answer after the result.
fn healthy_script() -> Vec<MockReply> {
    let mut first = vec![
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "easy"}, "finish_reason": null}]}),
    ];
    first.extend(text_payloads("ok", 1));
    vec![
        MockReply::sse(sse_events(&first)),
        tool_calls_reply(&[("call_p", "ping", "{}")], 4),
        text_reply("done", 2),
    ]
}

#[test]
fn a_healthy_server_passes_with_a_table() {
    let server = MockServer::start_in_thread(healthy_script());
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = doctor(&ws, &[]);
    let table = text(&out);
    assert_eq!(out.status.code(), Some(0), "{table}");
    for name in [
        "reachable",
        "auth",
        "model",
        "streaming",
        "usage",
        "tools",
        "reasoning",
        "quirks",
        "latency",
        "speed",
    ] {
        let r = row(&table, name);
        assert!(r.trim_start().starts_with("ok"), "{r}");
    }
    assert!(
        row(&table, "context window").contains("32768 (probe"),
        "{table}"
    );
    assert!(
        row(&table, "reasoning").contains("reasoning_content"),
        "{table}"
    );
    assert!(table.contains("usable: this server can run the agent"));
    assert!(!table.contains(KEY));
    // The forced call and its result went out as the agent sends them.
    let reqs = server.requests();
    assert_eq!(
        reqs[1].body["tool_choice"],
        json!({"type": "function", "function": {"name": "ping"}})
    );
    let messages = reqs[2].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "call_p");
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn json_output_is_one_object_for_scripts() {
    let server = MockServer::start_in_thread(healthy_script());
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = doctor(&ws, &["--output-format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["usable"], true);
    assert_eq!(v["model"], "mock-model");
    assert_eq!(
        v["context_window"],
        json!({"tokens": 32768, "source": "probe"})
    );
    let checks = v["checks"].as_array().unwrap();
    let tools = checks.iter().find(|c| c["name"] == "tools").unwrap();
    assert_eq!(tools["status"], "ok");
    assert!(v["latency_ms"].is_u64());
}

#[test]
fn a_server_that_ignores_tools_is_not_usable_and_says_what_to_do() {
    // llama.cpp with a template that cannot render tools: it answers in text.
    let server =
        MockServer::start_in_thread(vec![text_reply("ok", 2), text_reply("I will ping.", 3)]);
    server.route(
        "/props",
        MockReply::json(
            200,
            &json!({"n_ctx": 8192, "chat_template_caps": {"supports_tools": false}}),
        ),
    );
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = doctor(&ws, &[]);
    let table = text(&out);
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert!(row(&table, "tools").contains("FAIL"), "{table}");
    assert!(
        table.contains("cannot render tools") && table.contains("--no-tools"),
        "{table}"
    );
    assert!(
        row(&table, "context window").contains("8192 (probe"),
        "{table}"
    );
    assert!(table.contains("not usable"));
}

#[test]
fn a_server_that_refuses_tools_outright_is_explained() {
    let server = MockServer::start_in_thread(vec![
        text_reply("ok", 2),
        MockReply::json(
            400,
            &json!({"error": {"message": "llama3:8b does not support tools", "type": "api_error"}}),
        ),
    ]);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = doctor(&ws, &[]);
    let table = text(&out);
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert!(
        row(&table, "tools").contains("does not support tools"),
        "{table}"
    );
}

#[test]
fn a_wrong_key_is_named_without_showing_it() {
    let server = MockServer::start_in_thread(vec![]);
    // The server echoes the key back, as some do.
    server.route(
        "/v1/models",
        MockReply::json(401, &json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error"}})),
    );
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = doctor(&ws, &[]);
    let table = text(&out);
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert!(row(&table, "auth").contains("FAIL"), "{table}");
    assert!(table.contains("MINICODE_API_KEY"), "{table}");
    assert!(!table.contains(KEY), "{table}");
    assert_eq!(
        server.request_count(),
        0,
        "no chat request after a refused key"
    );
}

#[test]
fn a_server_that_is_down_is_explained() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (_dir, ws) = crate::support::workspace();
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    std::fs::write(
        ws.join(".minicode/config.toml"),
        format!("[model]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nname = \"m\"\n"),
    )
    .unwrap();
    crate::support::user_config::write_trusting(&ws.join("home"), &ws, "");
    let out = doctor(&ws, &[]);
    let table = text(&out);
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert!(row(&table, "reachable").contains("FAIL"), "{table}");
    assert!(table.contains("is the server running"), "{table}");
    assert!(row(&table, "tools").contains("skip"), "{table}");
}

#[test]
fn a_configuration_error_exits_2() {
    let (_dir, ws) = crate::support::workspace();
    let out = doctor(&ws, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = command(&ws)
        .args(["doctor", "--base-url", "ftp://nowhere", "--model", "m"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn the_demo_model_has_no_server_to_check_and_exits_2() {
    let (_dir, ws) = crate::support::workspace();
    let out = doctor(&ws, &["--demo"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("there is no server to check"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_sandbox_section_names_the_landlock_abi_and_what_is_enforced() {
    let server = MockServer::start_in_thread(healthy_script());
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = doctor(&ws, &[]);
    let table = text(&out);
    assert!(table.contains("sandbox (bash commands):"), "{table}");
    for name in ["landlock", "seccomp", "user namespaces", "sandbox"] {
        row(&table, name);
    }
    match minicode::sandbox::probe::landlock_abi() {
        Ok(abi) => assert!(
            row(&table, "landlock").contains(&format!("ABI {abi}")),
            "{table}"
        ),
        Err(e) => eprintln!("the kernel has no Landlock ({e}): only the rows are checked"),
    }
    if row(&table, "sandbox").trim_start().starts_with("ok") {
        assert!(row(&table, "sandbox").contains("network off"), "{table}");
    }
}

#[test]
fn the_sandbox_section_lists_the_hidden_paths_in_text_and_json() {
    let server = MockServer::start_in_thread(healthy_script());
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let config = ws.join("home/.config/minicode/config.toml");
    let mut text_before = std::fs::read_to_string(&config).unwrap();
    text_before.push_str("\n[sandbox]\nhidden = [\"~/vault\"]\n");
    std::fs::write(&config, text_before).unwrap();
    let table = text(&doctor(&ws, &[]));
    let hidden = row(&table, "hidden");
    for part in [
        "/.ssh",
        "/.kube",
        "/.netrc",
        "/vault",
        "minicode/config.toml",
        ".run/minicode",
    ] {
        assert!(hidden.contains(part), "{part}: {table}");
    }
    let server = MockServer::start_in_thread(healthy_script());
    healthy(&server);
    write_config(&ws, &server);
    std::fs::write(
        &config,
        std::fs::read_to_string(&config).unwrap() + "\n[sandbox]\nhidden = [\"~/vault\"]\n",
    )
    .unwrap();
    let out = doctor(&ws, &["--output-format", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = json["sandbox"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hidden")
        .unwrap()
        .clone();
    assert!(row["detail"].as_str().unwrap().contains("/vault"), "{row}");
}

#[test]
fn a_missing_sandbox_layer_is_shown_with_its_fix_without_failing_the_server_check() {
    let server = MockServer::start_in_thread(healthy_script());
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = command(&ws)
        .arg("doctor")
        .args(["--output-format", "json"])
        .env("MINICODE_API_KEY", KEY)
        .env(minicode::sandbox::TEST_MISSING_ENV, "landlock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let trial = json["sandbox"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sandbox")
        .unwrap()
        .clone();
    assert_eq!(trial["status"], "fail", "{trial}");
    assert!(
        trial["detail"].as_str().unwrap().contains("Landlock"),
        "{trial}"
    );
    assert!(
        trial["fix"].as_str().unwrap().contains("--sandbox off"),
        "{trial}"
    );
}

/// One-shot runs count their edits per model in the server cache (under the test's own
/// XDG cache folder), and doctor shows the counts, in the table and in JSON.
#[test]
fn doctor_shows_the_edit_tiers_and_failures_earlier_runs_counted() {
    let edit = |old: &str, new: &str| {
        json!({ "path": "f.py", "old_string": old, "new_string": new }).to_string()
    };
    let read = json!({ "path": "f.py" }).to_string();
    let trailing = edit("def f():\n    return 1", "def f():\n    return 2");
    let missing = edit("def g():", "def h():");
    let curly = edit("msg = 'hi'", "msg = 'bye'");
    let mut script = vec![
        tool_calls_reply(&[("c1", "read", &read)], 7),
        tool_calls_reply(&[("c2", "edit", &trailing)], 7),
        tool_calls_reply(&[("c3", "edit", &missing)], 7),
        tool_calls_reply(&[("c4", "edit", &curly)], 7),
        text_reply("done", 2),
    ];
    script.extend(healthy_script());
    let server = MockServer::start_in_thread(script);
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    std::fs::write(
        ws.join("f.py"),
        "def f():  \n    return 1\nmsg = \u{2018}hi\u{2019}\n",
    )
    .unwrap();
    let run = command(&ws)
        .args(["--yes", "fix f.py"])
        .env("MINICODE_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    assert_eq!(
        std::fs::read_to_string(ws.join("f.py")).unwrap(),
        "def f():\n    return 2\nmsg = 'bye'\n"
    );
    // Kept under the isolated XDG cache, never the real one.
    let servers = ws.join("home/.cache/minicode/servers");
    assert!(servers.is_dir(), "no server cache in {}", servers.display());

    let out = doctor(&ws, &["--output-format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let edits = &v["edits"];
    assert_eq!(edits["edits_exact"], 0, "{v}");
    assert_eq!(edits["edits_trailing_whitespace"], 1, "{v}");
    assert_eq!(edits["edits_punctuation"], 1, "{v}");
    assert_eq!(edits["edit_failures"], 1, "{v}");
    assert_eq!(edits["stream_fallbacks"], 0, "{v}");
    let row = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "edits")
        .unwrap_or_else(|| panic!("no edits check in {v}"));
    let detail = row["detail"].as_str().unwrap();
    assert!(
        detail.contains("2 edits landed") && detail.contains("1 failed"),
        "{detail}"
    );
}

#[test]
fn with_no_model_configured_the_sandbox_and_the_config_files_are_shown_too() {
    let (_dir, ws) = crate::support::workspace();
    let out = doctor(&ws, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no model is configured"),
        "{}",
        text(&out)
    );
    assert!(stdout.contains("sandbox (bash commands):"), "{stdout}");
    assert!(row(&stdout, "landlock").contains("ABI") || stdout.contains("landlock"));
    let user = ws.join("home/.config/minicode/config.toml");
    assert!(stdout.contains("config files looked at:"), "{stdout}");
    assert!(stdout.contains(&user.display().to_string()), "{stdout}");
    assert!(
        stdout.contains(&ws.join(".minicode/config.toml").display().to_string()),
        "{stdout}"
    );

    let out = doctor(&ws, &["--output-format", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["usable"], false);
    assert!(
        json["setup"]
            .as_str()
            .unwrap()
            .contains("no model is configured")
    );
    let sandbox = json["sandbox"].as_array().unwrap();
    assert!(sandbox.iter().any(|c| c["name"] == "sandbox"), "{json:#}");
    let files = json["config_files"].as_array().unwrap();
    assert_eq!(files[0]["role"], "user", "{json:#}");
    assert_eq!(files[0]["path"], user.display().to_string());
    assert_eq!(files[0]["exists"], false);
    assert_eq!(files[1]["role"], "workspace");
}

#[test]
fn a_model_that_calls_as_text_is_told_apart_from_one_that_never_calls() {
    // Qwen2.5-Coder 1.5B on llama.cpp: the forced call comes back as a fenced JSON object.
    let fenced = "```json\n{\"name\": \"ping\", \"arguments\": {}}\n```";
    let server = MockServer::start_in_thread(vec![text_reply("ok", 2), text_reply(fenced, 4)]);
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let out = doctor(&ws, &[]);
    let table = text(&out);
    let tools = row(&table, "tools");
    assert!(tools.contains("calls as text: recovered"), "{table}");
    assert!(
        table.contains("--jinja"),
        "the fix for native calls: {table}"
    );

    let server =
        MockServer::start_in_thread(vec![text_reply("ok", 2), text_reply("I will ping.", 3)]);
    healthy(&server);
    write_config(&ws, &server);
    let out = doctor(&ws, &[]);
    let table = text(&out);
    assert!(row(&table, "tools").contains("never calls"), "{table}");
    assert_eq!(out.status.code(), Some(1), "{table}");
}

/// A folder holding an executable `name` that leaves `ran` behind if it is ever started.
fn fake_server(bin: &std::path::Path, name: &str, ran: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(bin).unwrap();
    let script = bin.join(name);
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'\nexit 1\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_language_servers_section_names_what_a_session_would_start_without_starting_it() {
    let server = MockServer::start_in_thread(healthy_script());
    healthy(&server);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let config = ws.join(".minicode/config.toml");
    let text_before = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text_before}\n[lsp.servers.go]\ncommand = \"my-gopls\"\n"),
    )
    .unwrap();
    let bin = ws.join("fake-bin");
    let ran = ws.join("server-ran");
    fake_server(&bin, "pyright-langserver", &ran);
    let out = command(&ws)
        .arg("doctor")
        .env("MINICODE_API_KEY", KEY)
        .env("PATH", &bin)
        .output()
        .unwrap();
    let table = text(&out);
    assert_eq!(out.status.code(), Some(0), "{table}");
    assert!(
        table.contains("language servers (diagnostics after write/edit"),
        "{table}"
    );
    let python = row(&table, "python");
    assert!(python.trim_start().starts_with("ok"), "{python}");
    assert!(
        python.contains(&format!(
            "found on PATH: {} --stdio",
            bin.join("pyright-langserver").display()
        )),
        "{python}"
    );
    let go = row(&table, "go");
    assert!(
        go.trim_start().starts_with("warn") && go.contains("configured `my-gopls` is not found"),
        "{go}"
    );
    assert!(row(&table, "typescript").contains("none found"), "{table}");
    assert!(
        table.contains("fix: `npm install -g typescript-language-server typescript`"),
        "{table}"
    );
    assert!(!ran.exists(), "doctor started a language server");
}

#[test]
fn with_an_empty_path_every_language_says_none_found_and_how_to_get_one() {
    let (_dir, ws) = crate::support::workspace();
    let empty = ws.join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = command(&ws)
        .args(["doctor", "--output-format", "json"])
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["language_servers"].as_array().unwrap();
    let names: Vec<_> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["python", "rust", "typescript", "go", "c"],
        "{json:#}"
    );
    for row in rows {
        assert_eq!(row["status"], "skip", "{row}");
        assert_eq!(row["detail"], "none found", "{row}");
        assert!(
            row["fix"].as_str().unwrap().contains("[lsp.servers."),
            "{row}"
        );
    }
    let out = command(&ws)
        .arg("doctor")
        .env("PATH", &empty)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(row(&table, "rust").contains("none found"), "{table}");
    assert!(
        table.contains("rustup component add rust-analyzer"),
        "{table}"
    );
}
