//! Hooks (issue 24) with real scripts against a scripted model: the built binary in one-shot
//! mode, its hooks in the test's own user config (or the workspace's file), each script
//! written into the workspace by the test. They prove Claude Code's contract (the JSON on
//! stdin, exit 2 blocking, the JSON decisions), that a timeout kills the hook's group, that a
//! workspace's unapproved hook is skipped with a notice, and that hooks run confined like
//! `bash`. Hooks run under the sandbox: on a kernel without one these tests fail saying why.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::binary::{command, write_config};
use crate::support::kernel::require_working_sandbox;
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply, wait_until_blocking};
use crate::support::user_config;

/// A workspace pointing at `server`, trusted, with `hooks` (TOML) in the user's config and
/// each `(name, body)` script written to `hooks/<name>` in the workspace.
fn setup(server: &MockServer, hooks: &str, scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), server);
    user_config::write_trusting(&dir.path().join("home"), dir.path(), hooks);
    std::fs::create_dir_all(dir.path().join("hooks")).unwrap();
    for (name, body) in scripts {
        std::fs::write(dir.path().join("hooks").join(name), body).unwrap();
    }
    dir
}

fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn bash_call(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

#[test]
fn pre_tool_use_exit_2_blocks_the_bash_call_and_the_model_reads_the_reason() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &bash_call("touch made.txt"))], 7),
        text_reply("ok", 4),
    ]);
    let hooks = "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"bash hooks/pre.sh\"\n";
    let script = "cat > pre-input.json\necho 'touching files is not allowed here' >&2\nexit 2\n";
    let dir = setup(&server, hooks, &[("pre.sh", script)]);
    require_working_sandbox(dir.path());
    let out = run(dir.path(), &["--yes", "make a file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !dir.path().join("made.txt").exists(),
        "the call was blocked"
    );
    let second = &server.requests()[1].raw_body;
    assert!(
        second.contains("touching files is not allowed here"),
        "{second}"
    );
    let input = read_json(&dir.path().join("pre-input.json"));
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert_eq!(input["tool_input"]["command"], "touch made.txt");
    assert!(input["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(input["transcript_path"].as_str().is_some());
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(input["cwd"], cwd.to_str().unwrap());
}

#[test]
fn json_permission_decisions_deny_one_call_and_allow_another_but_never_past_a_deny_rule() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[
                ("c1", "bash", &bash_call("touch denied.txt")),
                ("c2", "bash", &bash_call("touch allowed.txt")),
                ("c3", "bash", &bash_call("touch ruled.txt")),
            ],
            9,
        ),
        text_reply("ok", 4),
    ]);
    let hooks = "[permissions]\ndeny = [\"bash(touch ruled*)\"]\n\
        [[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"bash hooks/decide.sh\"\n";
    let script = r#"input=$(cat)
case "$input" in
  *denied.txt*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy says no"}}' ;;
  *) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}' ;;
esac
"#;
    let dir = setup(&server, hooks, &[("decide.sh", script)]);
    require_working_sandbox(dir.path());
    // No --yes and no terminal: only the hook's allow lets a call run.
    let out = run(dir.path(), &["make files"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dir.path().join("denied.txt").exists());
    assert!(dir.path().join("allowed.txt").exists(), "{}", stderr(&out));
    assert!(!dir.path().join("ruled.txt").exists(), "a deny rule wins");
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("policy says no"), "{second}");
    assert!(second.contains("denied by the permission rule"), "{second}");
}

#[test]
fn post_tool_use_receives_the_tool_response_and_its_exit_2_reason_reaches_the_model() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &bash_call("echo hello-from-bash"))], 7),
        text_reply("ok", 4),
    ]);
    let hooks = "[[hooks.PostToolUse]]\ncommand = \"bash hooks/post.sh\"\n";
    let script = "cat > post-input.json\necho 'remember to run the linter' >&2\nexit 2\n";
    let dir = setup(&server, hooks, &[("post.sh", script)]);
    require_working_sandbox(dir.path());
    let out = run(dir.path(), &["--yes", "say hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let input = read_json(&dir.path().join("post-input.json"));
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_name"], "bash");
    let response = input["tool_response"]["content"].as_str().unwrap();
    assert!(response.contains("hello-from-bash"), "{input}");
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("remember to run the linter"), "{second}");
}

#[test]
fn user_prompt_submit_exit_2_refuses_the_prompt_before_the_model_sees_it() {
    let server = MockServer::start_in_thread(vec![text_reply("never", 4)]);
    let hooks = "[[hooks.UserPromptSubmit]]\ncommand = \"bash hooks/prompt.sh\"\n";
    let script = "grep -q secret-project && { echo 'prompts about secret-project are refused' >&2; exit 2; }\nexit 0\n";
    let dir = setup(&server, hooks, &[("prompt.sh", script)]);
    require_working_sandbox(dir.path());
    let out = run(dir.path(), &["tell me about secret-project"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("prompts about secret-project are refused"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn user_prompt_submit_stdout_is_added_as_context() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4)]);
    let hooks =
        "[[hooks.UserPromptSubmit]]\ncommand = \"echo 'the build is broken since Monday'\"\n";
    let dir = setup(&server, hooks, &[]);
    require_working_sandbox(dir.path());
    let out = run(dir.path(), &["what now"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = &server.requests()[0].raw_body;
    assert!(
        first.contains("the build is broken since Monday"),
        "{first}"
    );
}

#[test]
fn session_start_stdout_reaches_the_first_prompt_as_context() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4)]);
    let hooks = "[[hooks.SessionStart]]\ncommand = \"bash hooks/start.sh\"\n";
    let script = "cat > start-input.json\necho 'on-call this week: Ada'\n";
    let dir = setup(&server, hooks, &[("start.sh", script)]);
    require_working_sandbox(dir.path());
    let out = run(dir.path(), &["who is on call"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let input = read_json(&dir.path().join("start-input.json"));
    assert_eq!(input["hook_event_name"], "SessionStart");
    assert_eq!(input["source"], "startup");
    let first = &server.requests()[0].raw_body;
    assert!(first.contains("on-call this week: Ada"), "{first}");
}

#[test]
fn stop_exit_2_makes_the_model_continue_once() {
    let server = MockServer::start_in_thread(vec![
        text_reply("done", 4),
        text_reply("tests run, really done", 4),
    ]);
    let hooks = "[[hooks.Stop]]\ncommand = \"bash hooks/stop.sh\"\n";
    let script =
        "grep -q '\"stop_hook_active\":true' && exit 0\necho 'run the tests first' >&2\nexit 2\n";
    let dir = setup(&server, hooks, &[("stop.sh", script)]);
    require_working_sandbox(dir.path());
    let out = run(dir.path(), &["finish the work"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.request_count(), 2, "{}", stderr(&out));
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("run the tests first"), "{second}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("really done"), "{stdout}");
}

/// A `Stop` hook that always blocks, run against a model that always answers.
fn always_blocked(max_blocks: Option<u32>) -> (MockServer, Output) {
    let server = MockServer::start_in_thread((0..20).map(|_| text_reply("done", 4)).collect());
    let limit = max_blocks.map_or(String::new(), |n| format!("max_blocks = {n}\n"));
    let hooks = format!("[[hooks.Stop]]\ncommand = \"bash hooks/stop.sh\"\n{limit}");
    let script = "cat > /dev/null\necho 'not yet' >&2\nexit 2\n";
    let dir = setup(&server, &hooks, &[("stop.sh", script)]);
    let out = run(dir.path(), &["finish the work"]);
    (server, out)
}

#[test]
fn a_stop_hook_that_always_blocks_ends_the_turn_after_a_few_blocks_saying_so() {
    let (server, out) = always_blocked(None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The first answer and one more per allowed block (3 by default), then the turn ends.
    assert_eq!(server.request_count(), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("blocked the end of this turn 3 times in a row"),
        "{}",
        stderr(&out)
    );
    let (server, out) = always_blocked(Some(1));
    assert_eq!(server.request_count(), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("blocked the end of this turn once;"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_hook_past_its_timeout_is_killed_with_its_process_group() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4)]);
    let hooks = "[[hooks.UserPromptSubmit]]\ncommand = \"bash hooks/slow.sh\"\ntimeout = 1\n";
    // The job's pid would be one inside the hook's PID namespace: a marker it would touch
    // later tells instead whether it survived.
    let script = "sh -c 'sleep 4; touch survived' &\nsleep 120\n";
    let dir = setup(&server, hooks, &[("slow.sh", script)]);
    require_working_sandbox(dir.path());
    let started = Instant::now();
    let out = run(dir.path(), &["hello"]);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("timed out"), "{}", stderr(&out));
    // The prompt still went on: a timeout is an error shown to the user, not a block.
    assert_eq!(server.request_count(), 1);
    std::thread::sleep(Duration::from_secs(5));
    let gone = !dir.path().join("survived").exists();
    assert!(gone, "the hook's background job survived its timeout");
}

#[test]
fn an_unapproved_workspace_hook_is_skipped_with_a_notice_and_an_approved_one_runs() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4), text_reply("ok", 4)]);
    let dir = setup(&server, "", &[]);
    require_working_sandbox(dir.path());
    let workspace = std::fs::read_to_string(dir.path().join(".minicode/config.toml")).unwrap();
    let hook = "[[hooks.UserPromptSubmit]]\ncommand = \"touch ran.txt\"\n";
    std::fs::write(
        dir.path().join(".minicode/config.toml"),
        format!("{workspace}{hook}"),
    )
    .unwrap();
    let out = run(dir.path(), &["hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dir.path().join("ran.txt").exists());
    let err = stderr(&out);
    assert!(
        err.contains("touch ran.txt") && err.contains("skipped"),
        "{err}"
    );
    assert!(err.contains("approve"), "{err}");

    // The approval minicode would record after a yes on the terminal: this exact definition.
    let approved = minicode::hooks::Hook {
        event: minicode::hooks::HookEvent::UserPromptSubmit,
        matcher: None,
        command: "touch ran.txt".into(),
        timeout: Duration::from_secs(60),
        origin: dir.path().join(".minicode/config.toml"),
        from_workspace: true,
        max_blocks: minicode::hooks::DEFAULT_STOP_MAX_BLOCKS,
        unconfined: false,
    };
    let canonical = dir.path().canonicalize().unwrap();
    let record = format!(
        "[[approved_hooks]]\nworkspace = {:?}\nevent = \"UserPromptSubmit\"\nsha256 = \"{}\"\n",
        canonical.to_str().unwrap(),
        approved.definition_hash()
    );
    user_config::write_trusting(&dir.path().join("home"), dir.path(), &record);
    let out = run(dir.path(), &["hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(dir.path().join("ran.txt").exists(), "{}", stderr(&out));
}

#[test]
fn an_untrusted_workspaces_hooks_are_ignored_with_a_notice() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4)]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".minicode")).unwrap();
    std::fs::write(
        dir.path().join(".minicode/config.toml"),
        "[[hooks.UserPromptSubmit]]\ncommand = \"touch ran.txt\"\n",
    )
    .unwrap();
    let user = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    let file = user_config::path(&dir.path().join("home"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, user).unwrap();
    let out = run(dir.path(), &["hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dir.path().join("ran.txt").exists());
    assert!(
        stderr(&out).contains("[hooks] are ignored"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn hooks_run_confined_without_the_key_so_a_write_outside_the_workspace_fails() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4)]);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let hooks = format!(
        "[[hooks.UserPromptSubmit]]\ncommand = \"env > env.txt; echo x > {}\"\n",
        target.display()
    );
    let dir = setup(&server, &hooks, &[]);
    require_working_sandbox(dir.path());
    let out = command(dir.path())
        .env("MINICODE_API_KEY", "sk-hook-must-not-see")
        .arg("hello")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!target.exists(), "the hook wrote outside the workspace");
    // The failed write is the sandbox's doing, shown to the user without blocking the prompt.
    assert!(
        stderr(&out).contains("stopped by the sandbox"),
        "{}",
        stderr(&out)
    );
    let env = std::fs::read_to_string(dir.path().join("env.txt")).unwrap();
    assert!(!env.contains("sk-hook-must-not-see"), "{env}");
    assert!(!env.contains("MINICODE_"), "{env}");
}

#[test]
fn hooks_config_checks_events_matchers_and_timeouts() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let load = |text: &str| {
        let file = user_config::path(&home);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let home = home.to_str().unwrap().to_string();
        let env = move |name: &str| (name == "HOME").then(|| home.clone());
        minicode::config::load(
            dir.path(),
            &env,
            &minicode::config::Overrides {
                demo: true,
                ..Default::default()
            },
        )
    };
    let ok = load("[[hooks.PreToolUse]]\nmatcher = \"Edit|Write\"\ncommand = \"true\"\n").unwrap();
    assert_eq!(ok.hooks.len(), 1);
    assert_eq!(ok.hooks[0].timeout, Duration::from_secs(60));
    assert!(ok.hooks[0].matches(Some("write")));
    assert!(!ok.hooks[0].matches(Some("bash")));
    assert!(!ok.hooks[0].from_workspace);
    let err = load("[[hooks.BeforeTool]]\ncommand = \"true\"\n").unwrap_err();
    assert!(
        err.to_string().contains("unknown event `BeforeTool`"),
        "{err}"
    );
    let err = load("[[hooks.Stop]]\nmatcher = \"bash\"\ncommand = \"true\"\n").unwrap_err();
    assert!(err.to_string().contains("take no matcher"), "{err}");
    let err = load("[[hooks.Stop]]\ncommand = \"true\"\ntimeout = 0\n").unwrap_err();
    assert!(err.to_string().contains("hooks.timeout"), "{err}");
    let err = load("[[hooks.PreToolUse]]\ncommand = \"true\"\nmax_blocks = 2\n").unwrap_err();
    assert!(err.to_string().contains("only Stop hooks"), "{err}");
    let err = load("[[hooks.Stop]]\ncommand = \"true\"\nmax_blocks = 0\n").unwrap_err();
    assert!(err.to_string().contains("hooks.max_blocks"), "{err}");
    let ok = load("[[hooks.Stop]]\ncommand = \"true\"\nmax_blocks = 7\n").unwrap();
    assert_eq!(ok.hooks[0].max_blocks, 7);
}

#[test]
fn each_hook_run_is_a_hook_event_in_stream_json_a_line_on_stderr_and_a_traced_span() {
    let receiver =
        crate::support::otlp_receiver::Receiver::start(crate::support::otlp_receiver::Mode::Answer);
    let script = vec![
        tool_calls_reply(&[("c1", "bash", &bash_call("touch made.txt"))], 7),
        text_reply("ok", 4),
    ];
    let server = MockServer::start_in_thread(script);
    let hooks = "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"bash hooks/pre.sh\"\n\
        [[hooks.Stop]]\ncommand = \"true\"\n";
    let pre = "cat > /dev/null\necho 'no files today' >&2\nexit 2\n";
    let dir = setup(&server, hooks, &[("pre.sh", pre)]);
    require_working_sandbox(dir.path());
    let config = dir.path().join(".minicode/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\n",
        receiver.endpoint()
    ));
    std::fs::write(&config, text).unwrap();
    let out = run(
        dir.path(),
        &["--yes", "--output-format", "stream-json", "make a file"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "hook")
        .collect();
    assert_eq!(events.len(), 2, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(events[0]["event"], "PreToolUse");
    assert_eq!(events[0]["outcome"], "blocked");
    assert!(
        events[0]["hook"]
            .as_str()
            .unwrap()
            .contains("bash hooks/pre.sh"),
        "{}",
        events[0]
    );
    assert!(events[0]["ms"].as_u64().is_some());
    assert_eq!(events[1]["event"], "Stop");
    assert_eq!(events[1]["outcome"], "ok");

    // Text mode: one line per run on stderr.
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &bash_call("touch made.txt"))], 7),
        text_reply("ok", 4),
    ]);
    crate::support::binary::write_config(dir.path(), &server);
    user_config::write_trusting(&dir.path().join("home"), dir.path(), hooks);
    let out = run(dir.path(), &["--yes", "make a file"]);
    let err = stderr(&out);
    assert!(
        err.contains("PreToolUse (bash) hook `bash hooks/pre.sh`: blocked in "),
        "{err}"
    );

    // The first run's hooks were traced as `hook` spans with their event and outcome.
    assert!(
        wait_until_blocking(Duration::from_secs(30), || receiver
            .spans()
            .iter()
            .filter(|s| s.name == "hook")
            .count()
            >= 2),
        "no hook spans: {:#?}",
        receiver.spans()
    );
    let spans = receiver.spans();
    let pre = spans
        .iter()
        .find(|s| s.name == "hook" && s.attr("event") == Some("PreToolUse"))
        .unwrap();
    assert_eq!(pre.attr("hook.outcome"), Some("blocked"));
    assert_eq!(pre.attr("hook.matcher"), Some("bash"));
}

/// A hook ported from Claude Code that logs outside the workspace: appends its input to
/// `log`, and blocks (exit 2) when it cannot, as such scripts often do.
fn logging_hook(log: &Path, sandbox: &str) -> String {
    format!(
        "[[hooks.UserPromptSubmit]]\ncommand = \"cat >> {} || exit 2\"\n{sandbox}",
        log.display()
    )
}

#[test]
fn a_hook_the_sandbox_stops_is_reported_as_stopped_not_as_its_verdict() {
    let server = MockServer::start_in_thread(vec![text_reply("answered", 4)]);
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("hook.log");
    let dir = setup(&server, &logging_hook(&log, ""), &[]);
    let out = command(dir.path())
        .args(["--output-format", "stream-json", "hello"])
        .output()
        .unwrap();
    let err = stderr(&out);
    // Its exit 2 came from the sandbox's refusal: the prompt is not refused with that error.
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.request_count(), 1, "{err}");
    assert!(
        !log.exists(),
        "the confined hook wrote outside the workspace"
    );
    // In stream-json the warning and the hook's outcome are events on stdout.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("was stopped by the sandbox"), "{stdout}");
    assert!(stdout.contains("sandbox = \\\"off\\\""), "{stdout}");
    assert!(
        stdout.contains("\"outcome\":\"stopped_by_sandbox\""),
        "{stdout}"
    );
}

#[test]
fn a_user_hook_with_sandbox_off_runs_outside_the_sandbox() {
    let server = MockServer::start_in_thread(vec![text_reply("answered", 4)]);
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("hook.log");
    let dir = setup(&server, &logging_hook(&log, "sandbox = \"off\"\n"), &[]);
    let out = run(dir.path(), &["hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(logged.contains("\"prompt\":\"hello\""), "{logged}");
}

#[test]
fn a_workspace_hook_may_not_turn_the_sandbox_off() {
    let server = MockServer::start_in_thread(vec![text_reply("never", 4)]);
    let dir = setup(&server, "", &[]);
    let workspace = std::fs::read_to_string(dir.path().join(".minicode/config.toml")).unwrap();
    let hook = "[[hooks.UserPromptSubmit]]\ncommand = \"true\"\nsandbox = \"off\"\n";
    std::fs::write(
        dir.path().join(".minicode/config.toml"),
        format!("{workspace}{hook}"),
    )
    .unwrap();
    let out = run(dir.path(), &["hello"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("hooks.sandbox") && err.contains("only in your user config"),
        "{err}"
    );
    assert_eq!(server.request_count(), 0);
}
#[test]
fn the_demo_model_reads_only_the_users_words_not_hook_context() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# Tiny\n\nA tiny project.\n").unwrap();
    user_config::write_trusting(
        &dir.path().join("home"),
        dir.path(),
        "[[hooks.UserPromptSubmit]]\ncommand = \"echo 'a test was added yesterday'\"\n",
    );
    let out = run(dir.path(), &["--demo", "--yes", "summarise this project"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The hook ran (its context went with the prompt), yet the demo did not turn the
    // summary into an edit because of its "added".
    assert!(!err.contains("edit"), "{err}");
    let sessions = std::fs::read_dir(dir.path().join(".minicode/sessions")).unwrap();
    let sent = sessions
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .any(|text| text.contains("a test was added yesterday"));
    assert!(sent, "the hook's context reached the conversation");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
        "# Tiny\n\nA tiny project.\n"
    );
}

/// Hooks' own logic (the JSON on stdin, exit 2, a JSON decision) does not depend on the
/// sandbox: a user hook with `sandbox = "off"` in front of a file tool exercises it on any
/// kernel.
#[test]
fn an_unsandboxed_hook_blocks_a_read_by_exit_2_and_the_model_reads_why() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "read", r#"{"path":"secret.txt"}"#)], 7),
        text_reply("ok", 4),
    ]);
    let hooks = "[[hooks.PreToolUse]]\nmatcher = \"read\"\ncommand = \"bash hooks/pre.sh\"\n\
                 sandbox = \"off\"\n";
    let script = "cat > pre-input.json\necho 'this file stays closed' >&2\nexit 2\n";
    let dir = setup(&server, hooks, &[("pre.sh", script)]);
    std::fs::write(dir.path().join("secret.txt"), "the-content\n").unwrap();
    let out = run(dir.path(), &["--yes", "read the file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("this file stays closed"), "{second}");
    assert!(!second.contains("the-content"), "{second}");
    let input = read_json(&dir.path().join("pre-input.json"));
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "read");
    assert_eq!(input["tool_input"]["path"], "secret.txt");
}

#[test]
fn an_unsandboxed_hooks_json_deny_stops_a_write_and_its_allow_lets_another_run() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[
                ("c1", "write", r#"{"path":"denied.txt","content":"x"}"#),
                ("c2", "write", r#"{"path":"allowed.txt","content":"y"}"#),
            ],
            9,
        ),
        text_reply("ok", 4),
    ]);
    let hooks = "[[hooks.PreToolUse]]\nmatcher = \"write\"\ncommand = \"bash hooks/decide.sh\"\n\
                 sandbox = \"off\"\n";
    let script = r#"input=$(cat)
case "$input" in
  *denied.txt*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy says no"}}' ;;
  *) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}' ;;
esac
"#;
    let dir = setup(&server, hooks, &[("decide.sh", script)]);
    // No --yes and no terminal: only the hook's allow lets a call run.
    let out = run(dir.path(), &["write files"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dir.path().join("denied.txt").exists());
    assert!(dir.path().join("allowed.txt").exists(), "{}", stderr(&out));
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("policy says no"), "{second}");
}
