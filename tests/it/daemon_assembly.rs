//! A daemon session is assembled like every other session: the user's MCP servers start for
//! it (their tools offered to the model) and stop with the daemon, and a workspace's own
//! skills are offered only when that workspace is trusted, whatever folder the daemon
//! started in; and settings no session could use stop the daemon at start.

use std::path::Path;

use serde_json::json;

use crate::mcp::{alive, pids};
use crate::mcp_binary::declared_tools;
use crate::support::daemon::{DEADLINE, Daemon, layout};
use crate::support::mcp_server::{ready_servers, toml_table};
use crate::support::mock_openai::{MockServer, text_reply, wait_until_blocking};
use crate::support::user_config;

/// Writes the user config under `<dir>/home`: `trusted` in its trust list, then `rest`.
fn user_config(dir: &Path, trusted: &Path, rest: &str) {
    user_config::write_trusting(&dir.join("home"), trusted, rest);
}

/// The system prompt of the `index`th request the server received.
fn system_prompt(server: &MockServer, index: usize) -> String {
    server.requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_daemon_session_offers_the_users_mcp_tools_and_stops_the_server_with_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (_, ws) = layout(&dir);
    let server = MockServer::start_in_thread(vec![text_reply("done", 4)]);
    let pid_file = dir.join("server.pid");
    let table = toml_table(
        "t",
        &[
            ("IT_MCP_MODE", "paged"),
            ("IT_MCP_PID", pid_file.to_str().unwrap()),
        ],
        "",
    );
    user_config(&dir, &ws, &table);
    let mut daemon = Daemon::start_customized(&dir, &server.base_url(), &[], |cmd| {
        cmd.env("MINICODE_LOG", "info");
    });
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    assert!(
        wait_until_blocking(DEADLINE, || ready_servers(&dir) >= 1),
        "the session's MCP server never became ready"
    );
    client.subscribe(&session, 0);
    client.start_run(&session, "hi");
    client.events_until("run_ended");
    let tools = declared_tools(&server, 0);
    assert!(tools.iter().any(|t| t == "mcp_t__echo"), "{tools:?}");

    let started = pids(&pid_file);
    assert!(!started.is_empty());
    client.call("server.shutdown", json!({}));
    let status = daemon.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        wait_until_blocking(DEADLINE, || started.iter().all(|p| !alive(*p))),
        "an MCP server outlived the daemon: {started:?}"
    );
}

#[test]
fn a_daemon_offers_a_workspaces_own_skills_only_when_that_workspace_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (_, root) = layout(&dir);
    let (trusted, untrusted) = (root.join("trusted"), root.join("untrusted"));
    for ws in [&trusted, &untrusted] {
        let skill = ws.join(".minicode/skills/alpha");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: alpha\ndescription: Does alpha things.\n---\n# alpha\n",
        )
        .unwrap();
    }
    user_config(&dir, &trusted, "");
    let server = MockServer::start_in_thread(vec![text_reply("one", 2), text_reply("two", 2)]);
    let daemon = Daemon::start(&dir, &server, &[]);
    let mut client = daemon.client();
    for (index, ws) in [&trusted, &untrusted].into_iter().enumerate() {
        let session = client.open(ws, None);
        client.subscribe(&session, 0);
        client.start_run(&session, "hi");
        client.events_until("run_ended");
        let system = system_prompt(&server, index);
        let offered = system.contains("- alpha: Does alpha things.");
        assert_eq!(offered, ws == &trusted, "{}: {system}", ws.display());
    }
}

#[test]
fn serve_refuses_context_settings_no_session_could_use() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (socket, ws) = layout(&dir);
    // Each value passes on its own; together the reserve leaves no room in the window.
    user_config(
        &dir,
        &ws,
        "[model]\ncontext_window = 10000\n[context]\nreserve_tokens = 6000\n",
    );
    let mut child = crate::support::binary::command(&dir)
        .args(["serve", "--demo", "--socket"])
        .arg(&socket)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    let ended = wait_until_blocking(DEADLINE, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if !ended {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the daemon started with settings no session can use");
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.unwrap().code(), Some(2), "{stderr}");
    assert!(stderr.contains("invalid [context] settings"), "{stderr}");
    assert!(!socket.exists(), "it listened anyway");
}
