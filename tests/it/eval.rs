//! `minicode eval` as a process: the shipped smoke suite with the demo model, each kind of
//! expectation failing against a scripted mock model with its reason in the report, malformed
//! task files (exit 2 naming the field), and `--parallel` runs that share nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::binary::command;
use crate::support::mock_openai::{
    Gate, MockServer, error_reply, text_reply, tool_calls_reply, wait_until_blocking,
};
use crate::support::workspace;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `minicode eval ARGS --output-format json --out <dir>/out` in `dir`.
fn eval(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = dir.join("out");
    let output = command(dir)
        .arg("eval")
        .args(args)
        .args(["--output-format", "json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let report = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (output.status.code().unwrap_or(-1), report, stderr)
}

/// A suite of one task `t.toml` with `body`, and a fixture holding `notes.txt`.
fn suite(dir: &Path, body: &str) -> PathBuf {
    let suite = dir.join("suite");
    std::fs::create_dir_all(suite.join("fixture")).unwrap();
    std::fs::write(suite.join("fixture/notes.txt"), "release day is Friday\n").unwrap();
    std::fs::write(suite.join("t.toml"), body).unwrap();
    suite
}

/// The mock model reads `notes.txt`, then answers "done".
fn read_then_done() -> MockServer {
    MockServer::start_in_thread(vec![
        tool_calls_reply(&[("call_1", "read", r#"{"path":"notes.txt"}"#)], 8),
        text_reply("done reading", 5),
    ])
}

/// Runs the one-task suite against `server` and returns the report's failures of run 1.
fn failures_of(body: &str, server: &MockServer) -> (i32, Vec<String>) {
    let (_tmp, dir) = workspace();
    let suite = suite(
        &dir,
        &format!(
            "prompt = \"what is in notes.txt?\"\nworkspace = \"fixture\"\ntimeout = 60\n{body}"
        ),
    );
    let url = server.base_url();
    let (code, report, stderr) = eval(
        &dir,
        &[
            suite.to_str().unwrap(),
            "--base-url",
            &url,
            "--model",
            "mock-model",
            "--parallel",
            "1",
        ],
    );
    let failures = report["tasks"][0]["results"][0]["failures"]
        .as_array()
        .unwrap_or_else(|| panic!("no report: {stderr}"))
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    (code, failures)
}

fn assert_one_failure(failures: &[String], starts: &str, contains: &str) {
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert!(
        failures[0].starts_with(starts) && failures[0].contains(contains),
        "{failures:#?}"
    );
}

#[test]
fn smoke_suite_passes_with_the_demo_model() {
    let (_tmp, dir) = workspace();
    let smoke = repo().join("evals/smoke");
    let (code, report, stderr) = eval(&dir, &[smoke.to_str().unwrap(), "--demo"]);
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    assert_eq!(report["all_met"], true);
    let tasks = report["tasks"].as_array().unwrap();
    assert!(tasks.len() >= 5, "{report:#}");
    for task in tasks {
        assert_eq!(task["passes"], 1, "{task:#}");
        let run = &task["results"][0];
        let folder = PathBuf::from(run["dir"].as_str().unwrap());
        assert!(folder.join("events.jsonl").is_file(), "{run:#}");
        let session: Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("session.json")).unwrap())
                .unwrap();
        assert!(session.is_object());
        assert!(run["model_calls"].as_u64().unwrap() >= 2);
        assert!(run["tokens"]["total"].as_u64().unwrap() > 0);
    }
    assert!(dir.join("out/report.json").is_file());
}

#[test]
fn the_smoke_suite_passes_with_the_demo_model_whatever_hooks_the_user_has() {
    let (_tmp, dir) = workspace();
    // A hook that refuses every prompt, and one that adds context saying "added".
    crate::support::user_config::write_trusting(
        &dir.join("home"),
        &dir,
        "[[hooks.UserPromptSubmit]]\ncommand = \"echo 'a helper was added last week'\"\n\n\
         [[hooks.UserPromptSubmit]]\ncommand = \"echo refused >&2; exit 2\"\n",
    );
    let smoke = repo().join("evals/smoke");
    let (code, report, stderr) = eval(&dir, &[smoke.to_str().unwrap(), "--demo"]);
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    assert_eq!(report["all_met"], true, "{report:#}");
}

#[test]
fn the_text_report_names_each_failing_runs_reason() {
    let (_tmp, dir) = workspace();
    let suite = suite(
        &dir,
        "prompt = \"Summarise notes.txt\"\nworkspace = \"fixture\"\nfinal_contains = \"zebra\"\n",
    );
    let output = command(&dir)
        .args([
            "eval",
            suite.to_str().unwrap(),
            "--demo",
            "--runs",
            "2",
            "--out",
        ])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("0/2"), "{text}");
    assert!(
        text.contains("[  0%,  66%]"),
        "the Wilson interval of 0 of 2: {text}"
    );
    assert!(
        text.contains("run 2: final_contains: the answer does not contain \"zebra\""),
        "{text}"
    );
}

#[test]
fn eval_reports_tools_called_in_the_wrong_order() {
    let server = read_then_done();
    let (code, failures) = failures_of("tools_in_order = [\"find\", \"read\"]\n", &server);
    assert_eq!(code, 1);
    assert_one_failure(&failures, "tools_in_order:", "calls were: read");
}

#[test]
fn eval_reports_a_forbidden_tool() {
    let server = read_then_done();
    let (code, failures) = failures_of("forbidden_tools = [\"read\"]\n", &server);
    assert_eq!(code, 1);
    assert_one_failure(&failures, "forbidden_tools:", "`read` was called 1 time");
}

#[test]
fn eval_reports_a_run_over_its_tool_call_budget() {
    let server = read_then_done();
    let (code, failures) = failures_of("max_tool_calls = 0\n", &server);
    assert_eq!(code, 1);
    assert_one_failure(
        &failures,
        "max_tool_calls:",
        "1 tool calls, over the budget of 0",
    );
}

#[test]
fn eval_reports_a_run_over_its_round_budget() {
    let server = read_then_done();
    let (code, failures) = failures_of("max_rounds = 1\n", &server);
    assert_eq!(code, 1);
    assert_one_failure(&failures, "max_rounds:", "2 model rounds");
}

#[test]
fn eval_reports_a_missing_approval() {
    let server = read_then_done();
    let body = "[[expect_approval]]\ntool = \"bash\"\nanswer = \"approve\"\n";
    let (code, failures) = failures_of(body, &server);
    assert_eq!(code, 1);
    assert_one_failure(
        &failures,
        "expect_approval:",
        "no approval was asked for `bash`",
    );
}

#[test]
fn eval_reports_a_final_answer_without_the_expected_text() {
    let server = read_then_done();
    let (code, failures) = failures_of(
        "final_contains = \"Friday\"\nfinal_matches = '^done'\n",
        &server,
    );
    assert_eq!(code, 1);
    assert_one_failure(&failures, "final_contains:", "\"done reading\"");
}

#[test]
fn eval_reports_a_run_that_ended_with_the_wrong_status() {
    let server = MockServer::start_in_thread(vec![error_reply(400, "model not loaded")]);
    let (code, failures) = failures_of("", &server);
    assert_eq!(code, 1);
    assert_one_failure(
        &failures,
        "expect_status: expected completed",
        "ended failed",
    );
}

#[test]
fn eval_reports_a_failing_check_command() {
    let server = read_then_done();
    let body = "checks = [\"test -f notes.txt\", \"echo missing answer >&2; exit 3\"]\n";
    let (code, failures) = failures_of(body, &server);
    assert_eq!(code, 1);
    assert_one_failure(&failures, "check `echo missing", "(exit 3): missing answer");
}

#[test]
fn a_task_that_meets_every_expectation_passes_against_the_mock() {
    let server = read_then_done();
    let body = "tools_in_order = [\"read\"]\nforbidden_tools = [\"bash\"]\nmax_tool_calls = 1\n\
                final_matches = '^done'\nchecks = [\"grep -q Friday notes.txt\"]\n";
    let (code, failures) = failures_of(body, &server);
    assert_eq!((code, failures), (0, Vec::<String>::new()));
}

#[test]
fn a_malformed_task_file_exits_2_naming_the_file_and_the_field() {
    let cases = [
        (
            "prompt = \"x\"\nmax_tool_calls = \"ten\"\n",
            "field `max_tool_calls`",
        ),
        (
            "prompt = \"x\"\nforbiden_tools = [\"bash\"]\n",
            "unknown field `forbiden_tools`",
        ),
        (
            "prompt = \"x\"\n[[expect_approval]]\ntool = \"bash\"\nanswer = \"maybe\"\n",
            "field `answer`",
        ),
        ("prompt = \"x\"\nmin_pass_rate = 2.0\n", "min_pass_rate"),
        ("prompt = \"x\"\nworkspace = \"nowhere\"\n", "workspace"),
        ("description = \"no prompt\"\n", "missing field `prompt`"),
    ];
    for (body, field) in cases {
        let (_tmp, dir) = workspace();
        let suite = suite(&dir, body);
        let (code, _, stderr) = eval(&dir, &[suite.to_str().unwrap(), "--demo"]);
        assert_eq!(code, 2, "{body}: {stderr}");
        assert!(
            stderr.contains("t.toml") && stderr.contains(field),
            "{body}: {stderr}"
        );
        assert!(!dir.join("out").exists(), "nothing ran: {body}");
    }
}

#[test]
fn parallel_runs_share_no_workspace_and_no_session() {
    let (_tmp, dir) = workspace();
    // Setup fails if another run's marker is already there: a shared workspace would show.
    let suite = suite(
        &dir,
        "prompt = \"hello\"\nworkspace = \"fixture\"\ntimeout = 120\n\
         setup = [\"test ! -e marker && echo $$ > marker\"]\nchecks = [\"test -f marker\"]\n",
    );
    let server = MockServer::start_in_thread(Vec::new());
    let gate = Gate::new();
    let held = gate.clone();
    server.respond_with(move |_| Some(text_reply("hi", 2).after(&held)));
    let mut child = command(&dir)
        .args([
            "eval",
            suite.to_str().unwrap(),
            "--runs",
            "4",
            "--parallel",
            "4",
        ])
        .args([
            "--base-url",
            &server.base_url(),
            "--model",
            "mock-model",
            "--output-format",
            "json",
            "--out",
        ])
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let all_waiting = wait_until_blocking(Duration::from_secs(120), || server.in_flight() == 4);
    for _ in 0..4 {
        gate.open();
    }
    let mut stdout = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert!(child.wait().unwrap().success(), "{stdout}");
    assert!(all_waiting, "the four runs were never in flight at once");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let runs = report["tasks"][0]["results"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let mut sessions: Vec<&str> = runs
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    let mut dirs: Vec<&str> = runs.iter().map(|r| r["dir"].as_str().unwrap()).collect();
    sessions.sort();
    sessions.dedup();
    dirs.sort();
    dirs.dedup();
    assert_eq!((sessions.len(), dirs.len()), (4, 4), "{report:#}");
}

#[test]
fn the_basics_suite_loads_and_every_task_runs_to_its_checks() {
    let (_tmp, dir) = workspace();
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(|_| Some(text_reply("I am not sure.", 4)));
    let basics = repo().join("evals/basics");
    let (code, report, stderr) = eval(
        &dir,
        &[
            basics.to_str().unwrap(),
            "--base-url",
            &server.base_url(),
            "--model",
            "m",
        ],
    );
    assert_eq!(code, 1, "a model that does nothing fails: {stderr}");
    let tasks = report["tasks"].as_array().unwrap();
    assert!(tasks.len() >= 10, "{report:#}");
    for task in tasks {
        let run = &task["results"][0];
        // Every run reached the model: setup worked and the agent started.
        assert_eq!(run["status"], "completed", "{task:#}");
        assert_eq!(run["model_calls"], 1, "{task:#}");
    }
}

#[test]
fn approval_answers_decide_scripted_tools_and_keep_the_question_recorded() {
    let (_tmp, dir) = workspace();
    std::fs::write(dir.join("notes.txt"), "release day is Friday\n").unwrap();
    let output = command(&dir)
        .args(["--demo", "--output-format", "stream-json"])
        .args([
            "--approval-answer",
            "edit=deny",
            "--approval-answer",
            "*=approve",
        ])
        .arg("fix notes.txt")
        .output()
        .unwrap();
    assert!(output.status.success());
    let events: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let asked: Vec<&str> = of("approval_requested")
        .iter()
        .map(|e| e["tool"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["bash", "edit"]);
    let decided = of("approval_decided");
    assert_eq!(decided[0]["decision"]["decision"], "approve");
    assert_eq!(decided[1]["decision"]["decision"], "deny");
    assert!(
        decided[1]["decision"]["reason"]
            .as_str()
            .unwrap()
            .contains("approval script")
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "release day is Friday\n"
    );

    let bad = command(&dir)
        .args(["--demo", "--approval-answer", "edit=maybe", "hello"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("neither approve nor deny"));
}

/// The processes whose command line holds `marker` (the agent runs carry it in their prompt).
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// The scratch workspaces evaluator `pid` made.
fn scratch_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("minicode-eval-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// `minicode eval` on two runs of a task whose agent hangs on a model that never answers,
/// started and waited for until the first agent is asking the model.
fn hanging_eval(dir: &Path, server: &MockServer, marker: &str) -> std::process::Child {
    let held = Gate::new();
    server.respond_with(move |_| Some(text_reply("never", 2).after(&held)));
    let suite = suite(
        dir,
        &format!("prompt = \"{marker}\"\nworkspace = \"fixture\"\ntimeout = 600\n"),
    );
    let child = command(dir)
        .arg("eval")
        .arg(&suite)
        .args(["--base-url", &server.base_url(), "--model", "mock-model"])
        .args([
            "--runs",
            "2",
            "--parallel",
            "1",
            "--output-format",
            "json",
            "--out",
        ])
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let asking = wait_until_blocking(Duration::from_secs(60), || server.request_count() >= 1);
    assert!(asking, "the agent never asked the model");
    assert!(!scratch_of(child.id()).is_empty(), "no scratch workspace");
    child
}

fn interrupted_eval_stops_its_runs(signal: i32, code: i32) {
    let (_tmp, dir) = workspace();
    let server = MockServer::start_in_thread(vec![]);
    let marker = format!("eval-marker-{}", uuid::Uuid::new_v4().simple());
    let child = hanging_eval(&dir, &server, &marker);
    let pid = child.id();
    assert!(!processes_with(&marker).is_empty(), "no agent run found");
    unsafe { libc::kill(pid as i32, signal) };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}): {stderr}"));
    assert_eq!(report["all_met"], false);
    assert!(report["interrupted"].as_str().unwrap().starts_with("SIG"));
    // The run going on is reported as interrupted; the one never started is not counted.
    let runs = report["tasks"][0]["results"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{report:#}");
    assert!(
        runs[0]["failures"][0]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    assert!(dir.join("out/report.json").is_file());
    assert_eq!(
        processes_with(&marker),
        Vec::<String>::new(),
        "runs left going"
    );
    assert_eq!(
        scratch_of(pid),
        Vec::<PathBuf>::new(),
        "scratch left behind"
    );
    assert_eq!(
        server.request_count(),
        1,
        "the run went on asking the model"
    );
}

#[test]
fn ctrl_c_stops_every_run_removes_the_scratch_and_prints_the_report_so_far() {
    interrupted_eval_stops_its_runs(libc::SIGINT, 130);
}

#[test]
fn sigterm_stops_every_run_removes_the_scratch_and_prints_the_report_so_far() {
    interrupted_eval_stops_its_runs(libc::SIGTERM, 143);
}

#[test]
fn a_killed_evaluator_takes_its_runs_along_and_the_next_one_sweeps_its_scratch() {
    let (_tmp, dir) = workspace();
    let server = MockServer::start_in_thread(vec![]);
    let marker = format!("eval-marker-{}", uuid::Uuid::new_v4().simple());
    let mut child = hanging_eval(&dir, &server, &marker);
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = wait_until_blocking(Duration::from_secs(30), || {
        processes_with(&marker).is_empty()
    });
    assert!(
        gone,
        "runs outlived the evaluator: {:?}",
        processes_with(&marker)
    );
    // The next evaluator (here one refused for a missing suite) sweeps what the killed one left.
    let out = command(&dir).args(["eval", "nowhere"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        scratch_of(pid),
        Vec::<PathBuf>::new(),
        "scratch left behind"
    );
}

#[test]
fn a_report_that_cannot_be_written_exits_1_after_printing_it() {
    let (_tmp, dir) = workspace();
    let smoke = repo().join("evals/smoke");
    let out = dir.join("out");
    // A folder where report.json should go: the write fails.
    std::fs::create_dir_all(out.join("report.json")).unwrap();
    let output = command(&dir)
        .arg("eval")
        .arg(&smoke)
        .args(["--demo", "--output-format", "json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("report.json"), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["all_met"], true);
}
