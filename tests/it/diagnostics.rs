//! The compiler's word after an edit (issue 36, item 4): the built binary in one-shot mode,
//! its `write`/`edit` calls scripted by the mock model, asking a REAL language server
//! (pyright, from the npm registry) about the file it changed. The pyright tests are ignored
//! by default: `.ci/run` installs a pinned pyright into a cache folder, exports
//! `MINICODE_TEST_PYRIGHT` (the `pyright-langserver` path) and runs them with `--ignored`;
//! run by hand without it they fail saying so. The others need no server at all.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::binary::{command, write_config};
use crate::support::kernel::require_working_sandbox;
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
use crate::support::user_config;

const PYRIGHT_ENV: &str = "MINICODE_TEST_PYRIGHT";

/// The pyright language server `.ci/run` installed; fails the test when it is not there.
/// Runs a one-shot `--yes` turn with `prompt` in `dir` and checks it succeeded.
fn run_yes(dir: &Path, prompt: &str) {
    let out = command(dir).args(["--yes", prompt]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pyright() -> String {
    let path = std::env::var(PYRIGHT_ENV).unwrap_or_else(|_| {
        panic!(
            "{PYRIGHT_ENV} is not set: run `bash .ci/run`, or `npm install --prefix DIR \
             pyright@1.1.408` and set it to DIR/node_modules/.bin/pyright-langserver"
        )
    });
    assert!(
        Path::new(&path).is_file(),
        "{PYRIGHT_ENV}={path} is no file"
    );
    path
}

/// A trusted workspace pointing at `server`, with `lsp` (TOML) in the user's config.
fn setup(server: &MockServer, lsp: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), server);
    user_config::write_trusting(&dir.path().join("home"), dir.path(), lsp);
    dir
}

/// `[lsp]` with pyright as the python server and generous waits (a cold start on a busy
/// 2-core machine).
fn pyright_config() -> String {
    format!(
        "[lsp]\nstart_timeout_ms = 60000\ntimeout_ms = 30000\n\
         [lsp.servers.python]\ncommand = {:?}\nargs = [\"--stdio\"]\n",
        pyright()
    )
}

fn write_call(id: &'static str, path: &str, content: &str) -> (&'static str, &'static str, String) {
    let args = serde_json::json!({ "path": path, "content": content }).to_string();
    (id, "write", args)
}

fn edit_call(
    id: &'static str,
    path: &str,
    old: &str,
    new: &str,
) -> (&'static str, &'static str, String) {
    let args = serde_json::json!({ "path": path, "old_string": old, "new_string": new });
    (id, "edit", args.to_string())
}

fn reply(call: &(&str, &str, String)) -> crate::support::mock_openai::MockReply {
    tool_calls_reply(&[(call.0, call.1, call.2.as_str())], 40)
}

/// The tool results the model was sent in request `n`, in order.
fn tool_results(server: &MockServer, n: usize) -> Vec<String> {
    let body: serde_json::Value = serde_json::from_str(&server.requests()[n].raw_body).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The processes whose working folder is `dir` or below it (the servers run in the
/// workspace).
fn processes_in(dir: &Path) -> Vec<PathBuf> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&dir)))
        .map(|e| e.path())
        .collect()
}

fn no_process_left(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = processes_in(dir);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = processes_in(dir);
    }
    let named: Vec<String> = left
        .iter()
        .map(|p| {
            std::fs::read_to_string(p.join("cmdline"))
                .unwrap_or_default()
                .replace('\0', " ")
        })
        .collect();
    assert!(
        left.is_empty(),
        "processes left in the workspace: {named:?}"
    );
}

#[test]
#[ignore = "needs pyright: .ci/run installs it and sets MINICODE_TEST_PYRIGHT"]
fn an_edit_introducing_a_type_error_gets_the_error_with_its_line_and_the_server_ends_with_the_session()
 {
    let good = "def double(n: int) -> int:\n    return n * 2\n\n\nresult: int = double(2)\n";
    let first = write_call("c1", "calc.py", good);
    let second = edit_call("c2", "calc.py", "double(2)", "double(\"two\")");
    let server =
        MockServer::start_in_thread(vec![reply(&first), reply(&second), text_reply("done", 8)]);
    let dir = setup(&server, &pyright_config());
    require_working_sandbox(dir.path());
    run_yes(dir.path(), "write calc.py");
    // The correct write: nothing appended.
    let results = tool_results(&server, 1);
    assert!(!results[0].contains("language server"), "{results:?}");
    // The edit: the error on line 5, with the file's name, once.
    let results = tool_results(&server, 2);
    let edited = &results[1];
    assert!(
        edited.contains("The python language server reports 1 new error after this change:"),
        "{edited}"
    );
    assert!(edited.contains("\ncalc.py:5:"), "{edited}");
    assert!(edited.contains(": error: "), "{edited}");
    assert!(
        std::fs::read_to_string(dir.path().join("calc.py"))
            .unwrap()
            .contains("\"two\""),
        "the edit itself was made"
    );
    no_process_left(dir.path());
}

#[test]
#[ignore = "needs pyright: .ci/run installs it and sets MINICODE_TEST_PYRIGHT"]
fn a_correct_edit_gets_nothing_and_a_fixed_error_is_not_reported_again() {
    let bad = "count: int = \"three\"\n";
    let first = write_call("c1", "fix.py", bad);
    let second = edit_call("c2", "fix.py", "\"three\"", "3");
    let third = edit_call("c3", "fix.py", "3\n", "3\nname: str = \"x\"\n");
    let server = MockServer::start_in_thread(vec![
        reply(&first),
        reply(&second),
        reply(&third),
        text_reply("done", 8),
    ]);
    let dir = setup(&server, &pyright_config());
    require_working_sandbox(dir.path());
    run_yes(dir.path(), "fix it");
    let results = tool_results(&server, 3);
    assert!(
        results[0].contains("\nfix.py:1:"),
        "the first write's error: {}",
        results[0]
    );
    assert!(!results[1].contains("language server"), "{}", results[1]);
    assert!(!results[2].contains("language server"), "{}", results[2]);
}

#[test]
fn a_file_no_server_is_for_gets_nothing_and_starts_nothing() {
    let call = write_call("c1", "notes.md", "# notes\n");
    let server = MockServer::start_in_thread(vec![reply(&call), text_reply("done", 8)]);
    // A python server that would hang for a minute if it were ever started.
    let lsp = "[lsp]\nstart_timeout_ms = 60000\n[lsp.servers.python]\ncommand = \"sleep\"\nargs = [\"60\"]\n";
    let dir = setup(&server, lsp);
    let started = Instant::now();
    run_yes(dir.path(), "write notes");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let results = tool_results(&server, 1);
    assert!(!results[0].contains("language server"), "{results:?}");
    assert!(!results[0].contains("[note"), "{results:?}");
    no_process_left(dir.path());
}

#[test]
fn a_missing_server_gives_one_note_and_the_edits_succeed() {
    let first = write_call("c1", "a.py", "x = 1\n");
    let second = write_call("c2", "b.py", "y = 2\n");
    let server =
        MockServer::start_in_thread(vec![reply(&first), reply(&second), text_reply("done", 8)]);
    let lsp = "[lsp.servers.python]\ncommand = \"/nonexistent/pyright-langserver\"\n";
    let dir = setup(&server, lsp);
    run_yes(dir.path(), "write two files");
    let results = tool_results(&server, 2);
    assert!(
        results[0].contains(
            "[note: the python language server `/nonexistent/pyright-langserver` was not found"
        ),
        "{}",
        results[0]
    );
    assert!(
        !results[1].contains("[note"),
        "one note only: {}",
        results[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.py")).unwrap(),
        "y = 2\n"
    );
}

#[test]
fn a_crashing_server_gives_one_note_and_leaves_nothing_running() {
    let first = write_call("c1", "a.py", "x = 1\n");
    let second = write_call("c2", "a.py", "x = 2\n");
    let server =
        MockServer::start_in_thread(vec![reply(&first), reply(&second), text_reply("done", 8)]);
    let dir = setup(&server, "");
    std::fs::write(
        dir.path().join("crash.sh"),
        "#!/bin/sh\necho boom >&2\nexit 3\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let script = dir.path().join("crash.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lsp = format!(
        "[lsp]\nstart_timeout_ms = 30000\n[lsp.servers.python]\ncommand = {:?}\n",
        script.to_str().unwrap()
    );
    user_config::write_trusting(&dir.path().join("home"), dir.path(), &lsp);
    require_working_sandbox(dir.path());
    run_yes(dir.path(), "write");
    let results = tool_results(&server, 2);
    assert!(
        results[0].contains("[note: the python language server"),
        "{}",
        results[0]
    );
    assert!(results[0].contains("stopped"), "{}", results[0]);
    assert!(!results[1].contains("[note"), "{}", results[1]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "x = 2\n"
    );
    no_process_left(dir.path());
}
