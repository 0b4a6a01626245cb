//! The key's variables leave every entry point's own environment at start (`serve`, `acp`
//! even in a folder whose config is refused, `doctor`, `mcp list`; the one-shot run is in
//! `secrets`), read from `/proc/<pid>/environ` while the process runs; no child of `mcp list`
//! or of a `--demo` session gets the configured `api_key_env` variable; and `doctor` never
//! prints a key the server echoes.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::binary::command;
use crate::support::mcp_server::toml_table;
use crate::support::mock_openai::{
    Gate, MockReply, MockServer, error_reply, text_reply, wait_until_blocking,
};
use crate::support::user_config;

const KEY: &str = "sk-envkey-Qw3Rt7Yu9Io1Pa5Sd";
const OTHER: &str = "sk-openai-Zx8Cv6Bn4Mm2Lk0J";
/// The variable the user's config names in `api_key_env`.
const VAR: &str = "IT_USER_KEY_VARIABLE";
const WAIT: Duration = Duration::from_secs(30);

/// The environment block of a running process (the tests run as root, or as the same user).
fn environ(pid: u32) -> String {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    String::from_utf8_lossy(&bytes).replace('\0', "\n")
}

/// No key value in `text` (a process's own block keeps the wiped variable's name, emptied).
fn assert_no_key(what: &str, text: &str) {
    for secret in [KEY, OTHER] {
        assert!(!text.contains(secret), "{what} holds a key:\n{text}");
    }
}

/// Neither a key nor the key's variables in a child's environment.
fn assert_no_key_variable(what: &str, text: &str) {
    assert_no_key(what, text);
    for name in [VAR, "OPENAI_API_KEY"] {
        assert!(!text.contains(name), "{what} holds {name}:\n{text}");
    }
}

/// A user config (under `<ws>/home`, trusting `ws`) naming [`VAR`] as the key's variable.
fn user_config_with_key_variable(ws: &Path, server: Option<&MockServer>, rest: &str) {
    let base = server
        .map(|s| format!("base_url = \"{}\"\nname = \"mock-model\"\n", s.base_url()))
        .unwrap_or_default();
    let text = format!("{rest}\n[model]\n{base}api_key_env = \"{VAR}\"\n");
    user_config::write_trusting(&ws.join("home"), ws, &text);
}

fn kill(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn serve_forgets_the_key_variables_at_start() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, dir) = crate::support::workspace();
    user_config_with_key_variable(&dir, Some(&server), "");
    let socket = dir.join("run/d.sock");
    let mut child = command(&dir)
        .args(["serve", "--socket"])
        .arg(&socket)
        .env(VAR, KEY)
        .env("OPENAI_API_KEY", OTHER)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening"), "{line}");
    let env = environ(child.id());
    kill(child);
    assert_no_key("serve's environ", &env);
}

#[test]
fn acp_in_a_folder_whose_config_is_refused_still_forgets_the_key_variables() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = crate::support::workspace();
    // The user's own config names the variable; the untrusted workspace's file wants another
    // server, so loading the launch folder's configuration is refused.
    let home = ws.join("home");
    let text = format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\napi_key_env = \"{VAR}\"\n",
        server.base_url()
    );
    let file = user_config::path(&home);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    std::fs::write(
        ws.join(".minicode/config.toml"),
        "[model]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let mut child = command(&ws)
        .arg("acp")
        .env(VAR, KEY)
        .env("OPENAI_API_KEY", OTHER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("\"result\""), "{line}");
    let env = environ(child.id());
    drop(stdin);
    kill(child);
    assert_no_key("acp's environ", &env);
}

#[test]
fn doctor_forgets_the_key_variables_while_it_runs() {
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![text_reply("ok", 2).after(&gate)]);
    server.route(
        "/v1/models",
        MockReply::json(200, &json!({"data": [{"id": "mock-model"}]})),
    );
    let (_tmp, ws) = crate::support::workspace();
    user_config_with_key_variable(&ws, Some(&server), "");
    let child = command(&ws)
        .arg("doctor")
        .env(VAR, KEY)
        .env("OPENAI_API_KEY", OTHER)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The streaming check is held on the server: doctor is running, its key already sent.
    assert!(wait_until_blocking(WAIT, || server.request_count() >= 1));
    let env = environ(child.id());
    gate.open();
    kill(child);
    assert_no_key("doctor's environ", &env);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn doctor_never_prints_a_key_the_server_echoes() {
    let server = MockServer::start_in_thread(vec![error_reply(
        400,
        &format!("the key {KEY} is not valid for this model"),
    )]);
    // A model list that carries the key back, as a careless proxy might.
    server.route(
        "/v1/models",
        MockReply::json(200, &json!({"data": [{"id": format!("echo-{KEY}")}]})),
    );
    let (_tmp, ws) = crate::support::workspace();
    user_config_with_key_variable(&ws, Some(&server), "");
    for format in ["text", "json"] {
        let out = command(&ws)
            .args(["doctor", "--output-format", format])
            .env(VAR, KEY)
            .output()
            .unwrap();
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{shown}");
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}

#[test]
fn mcp_list_gives_no_server_the_key_variable_and_forgets_it_itself() {
    let (_tmp, ws) = crate::support::workspace();
    let dump = ws.join("dump");
    let table = toml_table(
        "t",
        &[
            ("IT_MCP_MODE", "paged"),
            ("IT_MCP_ENV_DUMP", dump.to_str().unwrap()),
        ],
        "",
    );
    user_config_with_key_variable(&ws, None, &table);
    let out = command(&ws)
        .args(["mcp", "list"])
        .env(VAR, KEY)
        .env("OPENAI_API_KEY", OTHER)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("t — ready"), "{stdout}");
    let read = |ext: &str| {
        let bytes = std::fs::read(format!("{}.{ext}", dump.display())).unwrap();
        String::from_utf8_lossy(&bytes).replace('\0', "\n")
    };
    assert_no_key_variable("the server's environment", &read("env"));
    let parent = read("parent");
    assert!(
        parent.contains("HOME="),
        "the parent's environ was read: {parent}"
    );
    assert_no_key("mcp list's environ", &parent);
}

#[test]
fn a_demo_sessions_bash_child_does_not_get_the_key_variable() {
    let (_tmp, ws) = crate::support::workspace();
    user_config_with_key_variable(&ws, None, "");
    // A `bash` first on PATH that records the environment it was started with.
    let bin = ws.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let dump = ws.join("bash-env.txt");
    let real = ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap();
    let script = format!(
        "#!/bin/sh\nenv >> '{}'\nexec {real} \"$@\"\n",
        dump.display()
    );
    std::fs::write(bin.join("bash"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("bash"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = command(&ws)
        .args(["--demo", "--yes", "summarise this project"])
        .env("PATH", path)
        .env(VAR, KEY)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = std::fs::read_to_string(&dump).expect("the demo ran bash");
    assert!(env.contains("HOME="), "{env}");
    assert_no_key_variable("the demo's bash child", &env);
}
