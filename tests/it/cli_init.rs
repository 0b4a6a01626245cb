//! `minicode init`: the user config written where minicode reads it (XDG respected), from
//! flags or from answers on stdin, never over an existing file without `--force`, then
//! `doctor`.

use std::path::Path;
use std::process::{Output, Stdio};

use crate::support::binary::command;
use crate::support::mock_openai::MockServer;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `minicode init ARGS` in `ws` with XDG_CONFIG_HOME at `<ws>/xdg`, `input` piped on stdin.
fn init(ws: &Path, args: &[&str], input: Option<&str>) -> Output {
    let mut cmd = command(ws);
    cmd.arg("init")
        .args(args)
        .env("XDG_CONFIG_HOME", ws.join("xdg"));
    let Some(input) = input else {
        return cmd.output().unwrap();
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn init_with_flags_writes_the_user_config_where_minicode_reads_it_then_runs_doctor() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = crate::support::workspace();
    let url = server.base_url();
    let out = init(&ws, &["--base-url", &url, "--model", "mock-model"], None);
    let file = ws.join("xdg/minicode/config.toml");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|_| stderr(&out));
    assert!(text.contains(&format!("base_url = \"{url}\"")), "{text}");
    assert!(text.contains("name = \"mock-model\""), "{text}");
    assert!(!text.contains("api_key"), "{text}");
    assert!(
        stderr(&out).contains(file.to_str().unwrap()),
        "{}",
        stderr(&out)
    );
    // doctor ran against what was written.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("minicode doctor:"), "{stdout}");
    assert!(server.request_count() + server.other_requests().len() > 0);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the file is private: {mode:o}");
}

#[test]
fn init_refuses_to_overwrite_an_existing_config_without_force() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = crate::support::workspace();
    let file = ws.join("xdg/minicode/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mine = "trusted_workspaces = []\n\n[model]\nbase_url = \"http://old/v1\"\nname = \"old\"\n";
    std::fs::write(&file, mine).unwrap();
    let url = server.base_url();
    let out = init(&ws, &["--base-url", &url, "--model", "new"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), mine);
    // --force replaces [model] and keeps the rest.
    init(
        &ws,
        &["--base-url", &url, "--model", "new", "--force"],
        None,
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("trusted_workspaces = []"), "{text}");
    assert!(
        text.contains("name = \"new\"") && !text.contains("old"),
        "{text}"
    );
}

#[test]
fn init_asks_for_what_the_flags_leave_out() {
    let (_tmp, ws) = crate::support::workspace();
    // OpenAI (its usual key variable is taken on Enter), then the model.
    let out = init(&ws, &[], Some("5\ngpt-test\n\n"));
    let file = ws.join("xdg/minicode/config.toml");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|_| stderr(&out));
    assert!(
        text.contains("base_url = \"https://api.openai.com/v1\""),
        "{text}"
    );
    assert!(text.contains("name = \"gpt-test\""), "{text}");
    assert!(text.contains("api_key_env = \"OPENAI_API_KEY\""), "{text}");
    assert!(
        stderr(&out).contains("Which model server?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn init_without_flags_or_anything_to_read_asks_nothing_and_writes_nothing() {
    let (_tmp, ws) = crate::support::workspace();
    let out = init(&ws, &[], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--base-url"), "{}", stderr(&out));
    assert!(!ws.join("xdg/minicode/config.toml").exists());
}
