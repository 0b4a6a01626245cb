//! MCP servers through the built binary: servers from the user's config, a workspace's
//! `.mcp.json` and the trust rule, approvals (never by `--yes`), a call end to end, secrets
//! kept out of a server's environment, `minicode mcp list`, a slow server that does not delay
//! the first request, and no server left running after minicode exits.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::mcp::{alive, pids};
use crate::support::binary;
use crate::support::mcp_server::{command, ready_servers, toml_table};
use crate::support::mock_openai::{
    Gate, MockServer, text_reply, tool_calls_reply, wait_until_blocking,
};
use crate::support::user_config;

const WAIT: Duration = Duration::from_secs(30);

/// A workspace whose user config (under `<ws>/home`) points at `server` and holds `rest`;
/// trusted when `trusted`.
fn configured_workspace(
    server: &MockServer,
    trusted: bool,
    rest: &str,
) -> (tempfile::TempDir, PathBuf) {
    let (tmp, ws) = crate::support::workspace();
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    write_user_config(&ws, trusted, &format!("{rest}\n{model}"));
    (tmp, ws)
}

fn write_user_config(ws: &Path, trusted: bool, text: &str) {
    let home = ws.join("home");
    if trusted {
        user_config::write_trusting(&home, ws, text);
    } else {
        let file = user_config::path(&home);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
}

/// How many servers minicode's log says are ready (the run sets `MINICODE_LOG=info`).
fn run_when_ready(
    ws: &Path,
    args: &[&str],
    gate: &Gate,
    ready: usize,
    envs: &[(&str, &str)],
) -> (std::process::ExitStatus, String, String) {
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let ok = wait_until_blocking(WAIT, || ready_servers(ws) >= ready);
            gate.open();
            assert!(ok, "the MCP servers never became ready");
        });
        let mut cmd = binary::command(ws);
        cmd.args(args).env("MINICODE_LOG", "info");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
}

pub(crate) fn declared_tools(server: &MockServer, index: usize) -> Vec<String> {
    server.requests()[index].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_yes_run_calls_a_tool_of_a_configured_server_end_to_end() {
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "mcp_t__echo", r#"{"text":"hello","times":2}"#)], 7).after(&gate),
        text_reply("done", 4),
    ]);
    let (_tmp, ws) = crate::support::workspace();
    let record = ws.join("calls");
    let table = toml_table(
        "t",
        &[
            ("IT_MCP_MODE", "paged"),
            ("IT_MCP_RECORD", record.to_str().unwrap()),
        ],
        "",
    );
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    write_user_config(&ws, true, &format!("{model}\n{table}"));
    let (status, stdout, stderr) = run_when_ready(&ws, &["--yes", "echo hello"], &gate, 1, &[]);
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "done");
    assert!(stderr.contains("mcp_t__echo"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&record).unwrap().trim(),
        r#"echo {"text":"hello","times":2}"#
    );
    // The result went back to the model like any tool result.
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("hellohello"), "{second}");
}

#[test]
fn no_server_outlives_minicode_even_one_that_ignores_sigterm() {
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![text_reply("done", 4).after(&gate)]);
    let (_tmp, ws) = crate::support::workspace();
    let polite = ws.join("polite.pid");
    let stubborn = ws.join("stubborn.pid");
    let mut tables = toml_table("polite", &[("IT_MCP_PID", polite.to_str().unwrap())], "");
    tables.push_str(&toml_table(
        "stubborn",
        &[
            ("IT_MCP_PID", stubborn.to_str().unwrap()),
            ("IT_MCP_IGNORE_TERM", "1"),
        ],
        "",
    ));
    let tables = tables.replace("env = { ", "env = { IT_MCP_MODE = \"paged\", ");
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    write_user_config(&ws, true, &format!("{model}\n{tables}"));
    let (status, _, stderr) = run_when_ready(&ws, &["hi"], &gate, 2, &[]);
    assert!(status.success(), "{stderr}");
    let files = [pids(&polite), pids(&stubborn)];
    assert!(files.iter().all(|f| f.len() == 2), "{files:?}");
    // minicode waited for the servers themselves: gone once it has exited.
    let servers: Vec<u32> = files.iter().map(|f| f[0]).collect();
    let left: Vec<&u32> = servers.iter().filter(|p| alive(**p)).collect();
    assert!(
        left.is_empty(),
        "servers still running after exit: {left:?}"
    );
    // Their own children got SIGKILL with the process group; a killed process needs to be
    // scheduled once to die, which a loaded machine may delay by a moment.
    let grandchildren: Vec<u32> = files.iter().map(|f| f[1]).collect();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while grandchildren.iter().any(|p| alive(*p)) && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left: Vec<&u32> = grandchildren.iter().filter(|p| alive(**p)).collect();
    assert!(left.is_empty(), "grandchildren outlived minicode: {left:?}");
}

#[test]
fn secrets_never_reach_a_servers_environment() {
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "mcp_t__env", "{}")], 7).after(&gate),
        text_reply("done", 4),
    ]);
    let (_tmp, ws) = configured_workspace(
        &server,
        true,
        &toml_table("t", &[("IT_MCP_MODE", "paged"), ("EXTRA", "given")], ""),
    );
    let (status, _, stderr) = run_when_ready(
        &ws,
        &["--yes", "show the environment"],
        &gate,
        1,
        &[
            ("MINICODE_API_KEY", "sk-minicode-secret-1234"),
            ("OPENAI_API_KEY", "sk-openai-secret-5678"),
            ("MINICODE_OTHER", "x"),
        ],
    );
    assert!(status.success(), "{stderr}");
    let result = &server.requests()[1].raw_body;
    // The server ran with its configured variables…
    assert!(result.contains("IT_MCP_MODE=paged") && result.contains("EXTRA=given"));
    // …and without any key or MINICODE_* variable (not even redacted: absent).
    for absent in ["MINICODE_", "OPENAI_API_KEY", "sk-", "[redacted]"] {
        assert!(
            !result.contains(absent),
            "{absent} reached the server: {result}"
        );
    }
}

#[test]
fn the_first_request_does_not_wait_for_a_slow_server() {
    let server = MockServer::start_in_thread(vec![text_reply("done", 4)]);
    let (_tmp, ws) = crate::support::workspace();
    let gate_file = ws.join("gate");
    let pid = ws.join("slow.pid");
    let table = toml_table(
        "slow",
        &[
            ("IT_MCP_MODE", "slow"),
            ("IT_MCP_GATE", gate_file.to_str().unwrap()),
            ("IT_MCP_PID", pid.to_str().unwrap()),
        ],
        "startup_timeout_secs = 60",
    );
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    write_user_config(&ws, true, &format!("{model}\n{table}"));
    let started = Instant::now();
    let out = std::thread::scope(|scope| {
        // The server cannot answer before the gate file exists, and the test creates it only
        // after the first request reached the model server: that request did not wait.
        scope.spawn(|| {
            let ok = wait_until_blocking(WAIT, || server.request_count() >= 1);
            std::fs::write(&gate_file, "").unwrap();
            assert!(ok, "no request arrived");
        });
        binary::command(&ws).arg("hi").output().unwrap()
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !declared_tools(&server, 0)
            .iter()
            .any(|t| t.starts_with("mcp_"))
    );
    assert!(started.elapsed() < WAIT);
    // And it was stopped with the rest (a server stopped before it even wrote its pid file
    // left nothing to check; the orphan tests cover that path in full).
    if pid.exists() {
        let all = pids(&pid);
        assert!(all.iter().all(|p| !alive(*p)), "{all:?}");
    }
}

#[test]
fn a_workspace_mcp_json_is_ignored_in_an_untrusted_workspace() {
    let server = MockServer::start_in_thread(vec![text_reply("done", 4)]);
    let (_tmp, ws) = configured_workspace(&server, false, "");
    let pid = ws.join("server.pid");
    write_mcp_json(&ws, "t", &[("IT_MCP_PID", pid.to_str().unwrap())]);
    let out = binary::command(&ws).arg("hi").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(".mcp.json was not read: the workspace is not trusted"),
        "{stderr}"
    );
    assert!(
        !declared_tools(&server, 0)
            .iter()
            .any(|t| t.starts_with("mcp_"))
    );
    assert!(!pid.exists(), "the server was started");
}

fn mcp_json_server(env: &[(&str, &str)]) -> serde_json::Value {
    let (command, args) = command();
    let mut vars = serde_json::Map::new();
    vars.insert("IT_MCP_MODE".into(), "paged".into());
    for (k, v) in env {
        vars.insert(k.to_string(), v.to_string().into());
    }
    serde_json::json!({"command": command, "args": args, "env": vars})
}

fn write_mcp_json(ws: &Path, id: &str, env: &[(&str, &str)]) {
    let json = serde_json::json!({"mcpServers": {id: mcp_json_server(env)}});
    std::fs::write(ws.join(".mcp.json"), json.to_string()).unwrap();
}

#[test]
fn an_unapproved_mcp_json_server_is_not_started_without_a_terminal_even_with_yes() {
    let server = MockServer::start_in_thread(vec![text_reply("done", 4)]);
    let (_tmp, ws) = configured_workspace(&server, true, "");
    let pid = ws.join("server.pid");
    write_mcp_json(&ws, "t", &[("IT_MCP_PID", pid.to_str().unwrap())]);
    let out = binary::command(&ws).args(["--yes", "hi"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("MCP server `t` of .mcp.json was not started")
            && stderr.contains("--yes does not approve"),
        "{stderr}"
    );
    assert!(!pid.exists(), "the server was started");
}

#[test]
fn an_approved_mcp_json_server_starts_and_a_changed_definition_asks_again() {
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![
        text_reply("done", 4).after(&gate),
        text_reply("again", 4),
    ]);
    let (_tmp, ws) = crate::support::workspace();
    let pid = ws.join("server.pid");
    write_mcp_json(&ws, "t", &[("IT_MCP_PID", pid.to_str().unwrap())]);
    // The approval as minicode records it: workspace, id and the definition's hash.
    let definition = mcp_json_server(&[("IT_MCP_PID", pid.to_str().unwrap())]);
    let approved = minicode::config::McpServer {
        id: "t".into(),
        command: definition["command"].as_str().unwrap().into(),
        args: serde_json::from_value(definition["args"].clone()).unwrap(),
        env: serde_json::from_value(definition["env"].clone()).unwrap(),
        cwd: None,
        enabled: true,
        startup_timeout: Duration::from_secs(10),
        call_timeout: Duration::from_secs(10),
        origin: PathBuf::new(),
    };
    let approval = format!(
        "[[approved_mcp_servers]]\nworkspace = {:?}\nserver = \"t\"\nsha256 = {:?}\n",
        ws.to_str().unwrap(),
        approved.definition_hash()
    );
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    write_user_config(&ws, true, &format!("{model}\n{approval}"));
    let (status, _, stderr) = run_when_ready(&ws, &["hi"], &gate, 1, &[]);
    assert!(status.success(), "{stderr}");
    assert!(pid.exists(), "the approved server did not start: {stderr}");

    // The repository changes the definition: asked again (here: not started, no terminal).
    std::fs::remove_file(&pid).unwrap();
    write_mcp_json(
        &ws,
        "t",
        &[("IT_MCP_PID", pid.to_str().unwrap()), ("NEW", "1")],
    );
    let out = binary::command(&ws).arg("hi").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("needs your approval"), "{stderr}");
    assert!(!pid.exists());
}

#[test]
fn an_untrusted_workspace_config_may_not_define_mcp_servers() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = configured_workspace(&server, false, "");
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    std::fs::write(
        ws.join(".minicode/config.toml"),
        toml_table("t", &[("IT_MCP_MODE", "paged")], ""),
    )
    .unwrap();
    let out = binary::command(&ws).arg("hi").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`mcp_servers`") && stderr.contains("not trusted"),
        "{stderr}"
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn mcp_list_prints_each_servers_state_and_tools_and_fails_when_one_failed() {
    let (_tmp, ws) = crate::support::workspace();
    let mut tables = toml_table("t", &[("IT_MCP_MODE", "paged")], "");
    tables.push_str("[mcp_servers.broken]\ncommand = \"/nonexistent/server\"\n");
    tables.push_str(&toml_table(
        "off",
        &[("IT_MCP_MODE", "paged")],
        "enabled = false",
    ));
    write_user_config(&ws, true, &tables);
    let out = binary::command(&ws).args(["mcp", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // `broken` failed: the listing says so in its status too.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("t — ready, 8 tools"), "{stdout}");
    assert!(stdout.contains("  mcp_t__echo (echo)"), "{stdout}");
    assert!(
        stdout.contains("  mcp_t__odd_name_with_spaces (odd.name/with spaces)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("broken — failed: could not start `/nonexistent/server`"),
        "{stdout}"
    );
    assert!(stdout.contains("off — not started: disabled"), "{stdout}");
    assert!(stdout.contains("log: "), "{stdout}");
}
