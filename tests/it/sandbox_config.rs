//! `[sandbox]` configuration and the flags that choose the profile: the user's file sets it, a
//! trusted workspace's file may narrow it but never widen it (a widening value is ignored with
//! a notice naming it), a relative writable root is a usage error, and the flags apply last.
//! The binary's `--output-format json` names the profile the run used.

use std::path::{Path, PathBuf};
use std::process::Output;

use minicode::config::{self, ConfigError, Overrides};
use minicode::protocol::SandboxMode;

use crate::support::mock_openai::{MockServer, text_reply};

struct Dirs {
    _tmp: tempfile::TempDir,
    launch: PathBuf,
    home: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let launch = tmp.path().join("project");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&launch).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let launch = launch.canonicalize().unwrap();
    Dirs {
        launch,
        home,
        _tmp: tmp,
    }
}

/// The user's file (trusting the workspace when `trusted`) and the workspace's file.
fn write_files(d: &Dirs, user: &str, workspace: Option<&str>, trusted: bool) {
    let user_file = d.home.join(".config/minicode/config.toml");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    let trust = if trusted {
        format!("trusted_workspaces = [{:?}]\n", d.launch.to_str().unwrap())
    } else {
        String::new()
    };
    std::fs::write(&user_file, format!("{trust}{user}")).unwrap();
    if let Some(text) = workspace {
        std::fs::create_dir_all(d.launch.join(".minicode")).unwrap();
        std::fs::write(d.launch.join(".minicode/config.toml"), text).unwrap();
    }
}

fn load(d: &Dirs, overrides: Overrides) -> Result<config::Config, ConfigError> {
    let home = d.home.to_str().unwrap().to_string();
    let env = move |name: &str| (name == "HOME").then(|| home.clone());
    config::load(
        &d.launch,
        &env,
        &Overrides {
            demo: true,
            ..overrides
        },
    )
}

fn roots(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

#[test]
fn default_sandbox_is_workspace_write_without_network() {
    let d = dirs();
    let c = load(&d, Overrides::default()).unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert!(!c.sandbox.network);
    assert!(c.sandbox.writable_roots.is_empty());
}

#[test]
fn user_config_chooses_mode_network_and_roots() {
    let d = dirs();
    let user =
        "[sandbox]\nmode = \"read-only\"\nnetwork = true\nwritable_roots = [\"/opt/cache\"]\n";
    write_files(&d, user, None, false);
    let c = load(&d, Overrides::default()).unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::ReadOnly);
    assert!(c.sandbox.network);
    assert_eq!(c.sandbox.writable_roots, roots(&["/opt/cache"]));
}

#[test]
fn relative_writable_root_is_a_config_error_naming_it() {
    let d = dirs();
    write_files(
        &d,
        "[sandbox]\nwritable_roots = [\"build/out\"]\n",
        None,
        false,
    );
    let err = load(&d, Overrides::default()).unwrap_err().to_string();
    assert!(err.contains("sandbox.writable_roots"), "{err}");
    assert!(err.contains("build/out"), "{err}");
    assert!(err.contains("absolute"), "{err}");
}

#[test]
fn unknown_sandbox_mode_is_a_config_error() {
    let d = dirs();
    write_files(&d, "[sandbox]\nmode = \"everything\"\n", None, false);
    let err = load(&d, Overrides::default()).unwrap_err().to_string();
    assert!(err.contains("mode"), "{err}");
}

#[test]
fn trusted_workspace_narrows_the_sandbox() {
    let d = dirs();
    let user = "[sandbox]\nmode = \"workspace-write\"\nnetwork = true\n\
                writable_roots = [\"/opt/a\", \"/opt/b\"]\n";
    let workspace =
        "[sandbox]\nmode = \"read-only\"\nnetwork = false\nwritable_roots = [\"/opt/a\"]\n";
    write_files(&d, user, Some(workspace), true);
    let c = load(&d, Overrides::default()).unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::ReadOnly);
    assert!(!c.sandbox.network);
    assert_eq!(c.sandbox.writable_roots, roots(&["/opt/a"]));
    assert!(
        !c.notices.iter().any(|n| n.contains("sandbox")),
        "{:?}",
        c.notices
    );
}

#[test]
fn trusted_workspace_cannot_widen_the_sandbox_and_is_told_which_value() {
    let d = dirs();
    let user = "[sandbox]\nmode = \"read-only\"\nwritable_roots = [\"/opt/a\"]\n";
    let workspace = "[sandbox]\nmode = \"off\"\nnetwork = true\n\
                     writable_roots = [\"/opt/a\", \"/home/elsewhere\"]\n";
    write_files(&d, user, Some(workspace), true);
    let c = load(&d, Overrides::default()).unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::ReadOnly);
    assert!(!c.sandbox.network);
    assert_eq!(c.sandbox.writable_roots, roots(&["/opt/a"]));
    let notices = c.notices.join("\n");
    assert!(notices.contains("sandbox.mode = \"off\""), "{notices}");
    assert!(notices.contains("sandbox.network = true"), "{notices}");
    assert!(notices.contains("/home/elsewhere"), "{notices}");
    assert!(!notices.contains("\"/opt/a\""), "{notices}");
}

#[test]
fn untrusted_workspace_sandbox_table_is_ignored_with_a_notice() {
    let d = dirs();
    write_files(
        &d,
        "[sandbox]\nnetwork = true\n",
        Some("[sandbox]\nmode = \"off\"\n"),
        false,
    );
    let c = load(&d, Overrides::default()).unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert!(c.sandbox.network);
    assert!(
        c.notices.iter().any(|n| n.contains("not trusted")),
        "{:?}",
        c.notices
    );
}

#[test]
fn flags_apply_after_the_files_and_may_widen() {
    let d = dirs();
    write_files(
        &d,
        "[sandbox]\nmode = \"read-only\"\n",
        Some("[sandbox]\nnetwork = false\n"),
        true,
    );
    let c = load(
        &d,
        Overrides {
            sandbox: Some(SandboxMode::Off),
            network: true,
            ..Overrides::default()
        },
    )
    .unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::Off);
    assert!(c.sandbox.network);
}

fn workspace_with_server(server: &MockServer, user: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), server);
    if !user.is_empty() {
        crate::support::user_config::write_trusting(&dir.path().join("home"), dir.path(), user);
    }
    dir
}

fn run(dir: &Path, args: &[&str]) -> Output {
    crate::support::binary::command(dir)
        .args(args)
        .output()
        .unwrap()
}

fn json_sandbox(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout} / {}", String::from_utf8_lossy(&out.stderr)));
    value["sandbox"].clone()
}

#[test]
fn json_output_names_the_default_profile() {
    let server = MockServer::start_in_thread(vec![text_reply("hi", 4)]);
    let dir = workspace_with_server(&server, "");
    let out = run(dir.path(), &["--output-format", "json", "hello"]);
    assert_eq!(out.status.code(), Some(0));
    let sandbox = json_sandbox(&out);
    assert_eq!(sandbox["mode"], "workspace-write", "{sandbox}");
    assert_eq!(sandbox["network"], false, "{sandbox}");
    assert!(sandbox.get("plan_file").is_none(), "{sandbox}");
}

#[test]
fn sandbox_and_network_flags_reach_the_json_output() {
    let server = MockServer::start_in_thread(vec![text_reply("hi", 4)]);
    let dir = workspace_with_server(&server, "[sandbox]\nmode = \"read-only\"\n");
    let out = run(
        dir.path(),
        &[
            "--sandbox",
            "off",
            "--network",
            "--output-format",
            "json",
            "hello",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let sandbox = json_sandbox(&out);
    assert_eq!(sandbox["mode"], "off", "{sandbox}");
    assert_eq!(sandbox["network"], true, "{sandbox}");
}

#[test]
fn user_config_profile_reaches_the_json_output() {
    let server = MockServer::start_in_thread(vec![text_reply("hi", 4)]);
    let dir = workspace_with_server(&server, "[sandbox]\nmode = \"read-only\"\n");
    let out = run(dir.path(), &["--output-format", "json", "hello"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_sandbox(&out)["mode"], "read-only");
}

#[test]
fn unknown_sandbox_flag_value_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--sandbox", "bogus", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("workspace-write"), "{err}");
}

#[test]
fn relative_writable_root_in_the_user_config_exits_2() {
    let server = MockServer::start_in_thread(vec![]);
    let dir = workspace_with_server(&server, "[sandbox]\nwritable_roots = [\"rel\"]\n");
    let out = run(dir.path(), &["hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sandbox.writable_roots"), "{err}");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn each_bash_call_record_in_the_session_names_its_profile() {
    let server = MockServer::start_in_thread(vec![
        crate::support::mock_openai::tool_calls_reply(
            &[("c1", "bash", r#"{"command":"true"}"#)],
            5,
        ),
        text_reply("done", 4),
    ]);
    let dir = workspace_with_server(&server, "");
    let out = run(dir.path(), &["--yes", "--output-format", "json", "run it"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = json["session_id"].as_str().unwrap();
    let file = dir.path().join(format!(".minicode/sessions/{id}.json"));
    let session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let tool = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result")
        .clone();
    assert_eq!(tool["sandbox"]["mode"], "workspace-write", "{tool}");
    assert_eq!(tool["sandbox"]["network"], false, "{tool}");
}

#[test]
fn one_shot_fails_a_call_the_sandbox_cannot_confine_with_the_reason_and_the_way_out() {
    let server = MockServer::start_in_thread(vec![
        crate::support::mock_openai::tool_calls_reply(
            &[("c1", "bash", r#"{"command":"echo hi > made.txt"}"#)],
            5,
        ),
        text_reply("done", 4),
    ]);
    let dir = workspace_with_server(&server, "");
    let out = crate::support::binary::command(dir.path())
        .env("MINICODE_TEST_SANDBOX_MISSING", "landlock")
        .args(["--yes", "make a file"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !dir.path().join("made.txt").exists(),
        "nothing ran unconfined"
    );
    let second = &server.requests()[1].raw_body;
    assert!(
        second.contains("Landlock"),
        "the missing layer is named: {second}"
    );
    assert!(
        second.contains("--sandbox off"),
        "the way out is given: {second}"
    );
    assert!(stderr.contains("Landlock"), "{stderr}");
}

#[test]
fn yes_never_runs_a_command_the_sandbox_denied_outside_it() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().canonicalize().unwrap().join("escaped.txt");
    let command = serde_json::json!({ "command": format!("echo hi > {}", target.display()) });
    let server = MockServer::start_in_thread(vec![
        crate::support::mock_openai::tool_calls_reply(&[("c1", "bash", &command.to_string())], 5),
        text_reply("done", 4),
    ]);
    let dir = workspace_with_server(&server, "");
    crate::support::kernel::require_working_sandbox(dir.path());
    let out = run(dir.path(), &["--yes", "write it"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!target.exists(), "--yes never escalates");
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("the sandbox denied write to"), "{second}");
    // The narrowest way out: the one folder, not the whole sandbox.
    let folder = outside.path().canonicalize().unwrap();
    let way_out = format!("add \\\"{}\\\" to writable_roots", folder.display());
    assert!(second.contains(&way_out), "the way out: {second}");
    // The user reads the same on stderr, not only the command's own error.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = format!(
        "sandbox: the sandbox denied write to {}; to allow it: add \"{}\" to writable_roots",
        target.display(),
        folder.display()
    );
    assert!(stderr.contains(&line), "{stderr}");
}

#[test]
fn one_shot_says_on_stderr_that_the_network_is_off_and_how_to_turn_it_on() {
    let command = serde_json::json!({ "command": "exec 3<>/dev/tcp/127.0.0.1/9" });
    let server = MockServer::start_in_thread(vec![
        crate::support::mock_openai::tool_calls_reply(&[("c1", "bash", &command.to_string())], 5),
        text_reply("done", 4),
    ]);
    let dir = workspace_with_server(&server, "");
    let out = run(dir.path(), &["--yes", "connect"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sandbox: the sandbox denied a connection beyond the call's own loopback"),
        "{stderr}"
    );
    assert!(
        stderr.contains("to allow it: run minicode with --network"),
        "{stderr}"
    );
    let second = &server.requests()[1].raw_body;
    assert!(
        second.contains("To allow it: run minicode with --network"),
        "{second}"
    );
}

#[test]
fn one_shot_removes_the_sessions_temporary_folder_when_it_ends() {
    let server = MockServer::start_in_thread(vec![
        crate::support::mock_openai::tool_calls_reply(
            &[(
                "c1",
                "bash",
                r#"{"command":"touch \"$TMPDIR/left\" && echo \"tmp=$TMPDIR=\""}"#,
            )],
            5,
        ),
        text_reply("done", 4),
    ]);
    let dir = workspace_with_server(&server, "");
    let out = run(dir.path(), &["--yes", "use the temporary folder"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let second = &server.requests()[1].raw_body;
    // The command's output (its text, `tmp=$TMPDIR=`, names no absolute path).
    let start = second
        .find("tmp=/")
        .unwrap_or_else(|| panic!("the command's output names no temporary folder: {second}"));
    let rest = &second[start + 4..];
    let tmpdir = Path::new(&rest[..rest.find('=').unwrap()]).to_path_buf();
    let runtime = dir.path().join("home/.run/minicode/tmp");
    assert!(tmpdir.starts_with(&runtime), "{}", tmpdir.display());
    assert!(runtime.is_dir(), "minicode's own folder stays");
    assert!(
        !tmpdir.exists(),
        "{} is left after the session",
        tmpdir.display()
    );
}

#[test]
fn a_writable_root_inside_a_git_directory_is_a_config_error_naming_it() {
    let server = MockServer::start_in_thread(vec![]);
    let dir = workspace_with_server(
        &server,
        "[sandbox]\nwritable_roots = [\"/srv/repo/.git/hooks\"]\n",
    );
    let out = run(dir.path(), &["hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sandbox.writable_roots"), "{err}");
    assert!(err.contains("/srv/repo/.git/hooks"), "{err}");
    assert!(err.contains("git directory"), "{err}");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_relative_cache_folder_is_a_config_error_naming_it() {
    let server = MockServer::start_in_thread(vec![]);
    let dir = workspace_with_server(&server, "[sandbox]\ncache = \"rel\"\n");
    let out = run(dir.path(), &["hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sandbox.cache"), "{err}");
}
